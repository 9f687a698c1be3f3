// CUSCOPE_DISABLE: every scope compiles to nothing, in a translation unit of its own.
#define CUSCOPE_DISABLE
#include <catch2/catch.hpp>
#include <type_traits>

#include "session_fixture.hpp"

static_assert(std::is_empty_v<cuscope::Scope>, "a compiled-out scope holds nothing");
static_assert(!std::is_copy_constructible_v<cuscope::Scope> && !std::is_move_constructible_v<cuscope::Scope>,
              "a compiled-out scope keeps the same rules as a real one");

namespace {
int compiled_out_function(int x) {
  CUSCOPE_FUNCTION();
  CUSCOPE_SCOPE("compiled_out_inner");
  return x + 1;
}
}  // namespace

TEST_CASE("with CUSCOPE_DISABLE, scopes compile to nothing and record nothing", "[disable]") {
  cuscope_test::Session session;
  for (int i = 0; i < 10; ++i) {
    CUSCOPE_SCOPE("compiled_out");
    cuscope::Scope named{std::string_view("compiled_out_named")};
    cuscope::push("compiled_out_pushed");
    cuscope::pop();
    CUSCOPE_COUNT("compiled_out_count", 1);
    cuscope::count("compiled_out_count", 2);
    CHECK(compiled_out_function(i) == i + 1);
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.ranges.size() == 1);  // the root alone
  CHECK(r.root().counts.empty());
  CHECK(r.find("compiled_out") == nullptr);
  CHECK(r.diagnostics.unbalanced_ends == 0);
}

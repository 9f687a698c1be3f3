// Range names: sanitizing odd names and interning them once.
#include <catch2/catch.hpp>
#include <string>

#include "model/names.hpp"

using cuscope::model::kMaxNameBytes;
using cuscope::model::NameTable;
using cuscope::model::sanitize_name;

namespace {
std::string clean(std::string_view raw, bool expect_adjusted) {
  bool adjusted = !expect_adjusted;
  std::string out = sanitize_name(raw, &adjusted);
  CHECK(adjusted == expect_adjusted);
  return out;
}
}  // namespace

TEST_CASE("ordinary names are kept as they are", "[names]") {
  CHECK(clean("attention", false) == "attention");
  CHECK(clean("layer 3: qkv_proj (fp16)", false) == "layer 3: qkv_proj (fp16)");
  CHECK(clean("\xC3\xA9tape \xE2\x86\x92 \xF0\x9F\x9A\x80", false) ==
        "\xC3\xA9tape \xE2\x86\x92 \xF0\x9F\x9A\x80");
}

TEST_CASE("empty and null names get a placeholder", "[names]") {
  CHECK(clean("", true) == "(unnamed)");
  bool adjusted = false;
  CHECK(sanitize_name(nullptr, 0, &adjusted) == "(null)");
  CHECK(adjusted);
}

TEST_CASE("a slash in a name cannot split the path", "[names]") {
  CHECK(clean("read/write", true) == "read\u2215write");
}

TEST_CASE("control bytes and invalid UTF-8 become question marks", "[names]") {
  CHECK(clean("a\nb\tc\x7F", true) == "a?b?c?");
  CHECK(clean("bad \xC3 end", true) == "bad ? end");
  CHECK(clean("\xED\xA0\x80", true) == "???");  // a UTF-16 surrogate encoded in UTF-8
  CHECK(clean("\xC0\xAF", true) == "??");       // overlong '/'
}

TEST_CASE("long names are cut at a character boundary with an ellipsis", "[names]") {
  const std::string raw = std::string(198, 'x') + "\xC3\xA9\xC3\xA9";
  const std::string out = clean(raw, true);
  CHECK(out == std::string(198, 'x') + "\xC3\xA9" + "\u2026");  // the second one does not fit
  CHECK(clean(std::string(200, 'y'), false).size() == 200);
}

TEST_CASE("the name table interns each name once and reads it back", "[names]") {
  NameTable t;
  const auto a = t.intern("alpha");
  CHECK(t.intern(std::string("alpha")) == a);
  CHECK(t.intern("beta") != a);
  CHECK(t.name(a) == "alpha");
  CHECK(t.name(NameTable::kUnscopedId) == "(unscoped)");
  CHECK(t.adjusted() == 0);
}

TEST_CASE("names that sanitize alike share one id and are counted once each", "[names]") {
  NameTable t;
  const auto a = t.intern("x\ny");
  const auto b = t.intern("x\ty");
  CHECK(a == b);
  CHECK(t.name(a) == "x?y");
  CHECK(t.intern("x\ny") == a);
  CHECK(t.adjusted() == 2);
  CHECK(t.intern(static_cast<const char*>(nullptr)) == t.intern(static_cast<const char*>(nullptr)));
  CHECK(t.adjusted() == 3);
}

TEST_CASE("a full name table maps new names to one overflow name and counts them", "[names]") {
  NameTable t;
  std::uint32_t last = 0;
  for (std::uint32_t i = 0; i < NameTable::kMaxNames; ++i) last = t.intern("n" + std::to_string(i));
  CHECK(last == NameTable::kFullId);
  CHECK(t.name(last) == "(name table full)");
  CHECK(t.overflowed() == 4);  // the table holds kMaxNames - 1 ids, three of them built in
  CHECK(t.intern("n5") != NameTable::kFullId);
}

TEST_CASE("a name adjusted for its slash stays apart from a genuine name that prints alike", "[names]") {
  NameTable t;
  const auto adjusted = t.intern("a/b");
  const auto genuine = t.intern("a\u2215b");
  CHECK(adjusted != genuine);
  CHECK(t.name(adjusted) == "a\u2215b");
  CHECK(t.name(genuine) == "a\u2215b");
  CHECK(t.intern("a\u2215b") == genuine);
  CHECK(t.intern("a/b") == adjusted);
  CHECK(t.adjusted() == 1);
  CHECK(t.intern("x\ny") != t.intern("x?y"));
}

TEST_CASE("long names that shorten alike are stored once, at their adjusted length", "[names]") {
  NameTable t;
  std::string raw(4096, 'n');
  const auto first = t.intern(raw);
  const std::size_t bytes = t.text_bytes();
  for (int i = 1; i < 100'000; ++i) {
    const std::string tail = std::to_string(i);
    raw.replace(raw.size() - tail.size(), tail.size(), tail);
    REQUIRE(t.intern(raw) == first);
  }
  CHECK(t.size() == 4);  // three built in, one for all of them
  CHECK(t.name(first).size() == kMaxNameBytes + std::string_view("\u2026").size());
  CHECK(t.text_bytes() == bytes);
  CHECK(t.adjusted() == 100'000);
  CHECK(t.intern(std::string(4096, 'n')) == first);  // seen before: not counted again
  CHECK(t.adjusted() == 100'000);
}

TEST_CASE("the name table is bounded in bytes as well as in names", "[names]") {
  NameTable t;
  const std::size_t builtin = t.text_bytes();
  CHECK(builtin == std::string_view("(unscoped)(name table full)(counted steps)").size());
  const std::size_t fit = (NameTable::kMaxTextBytes - builtin) / kMaxNameBytes;
  auto nth = [](std::size_t i) {
    const std::string digits = std::to_string(i);
    return digits + std::string(kMaxNameBytes - digits.size(), 'b');
  };
  for (std::size_t i = 0; i < fit; ++i) REQUIRE(t.intern(nth(i)) != NameTable::kFullId);
  CHECK(t.text_bytes() == builtin + fit * kMaxNameBytes);
  CHECK(t.intern(nth(fit)) == NameTable::kFullId);
  CHECK(t.intern(nth(fit + 1)) == NameTable::kFullId);
  CHECK(t.overflowed() == 2);
  CHECK(t.intern(nth(7)) != NameTable::kFullId);   // names already held are still found
  CHECK(t.intern("short") != NameTable::kFullId);  // and a short one still fits
}

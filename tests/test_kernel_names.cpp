// Kernel names keyed by their text, not by the producer's pointer: an address that holds another
// name in a later batch (after a module unload) gives that name; the name cache is bounded, and
// what goes past it is counted and still named right.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "model/kernel_names.hpp"
#include "model_fixture.hpp"

using cuscope::model::KernelNames;

namespace {

using Fixture = cuscope_test::ModelFixture;

std::uint64_t kernel_calls(const cuscope::RangeStats& range, const std::string& name) {
  std::uint64_t calls = 0;
  for (const auto& k : range.kernels) {
    if (k.name == name) calls += k.duration.count;
  }
  return calls;
}

}  // namespace

TEST_CASE("kernel names: an address reused by another name gives the new name from the next batch on",
          "[kernel_names]") {
  KernelNames names;
  char reused[32] = "_Z5alphaPf";
  const std::uint32_t alpha = names.id(reused);
  CHECK(names.text(alpha) == "alpha(float*)");
  names.end_batch();
  std::strcpy(reused, "_Z4betaPf");  // the module unloaded; another name now lives here
  const std::uint32_t beta = names.id(reused);
  CHECK(names.text(beta) == "beta(float*)");
  CHECK(beta != alpha);
  names.end_batch();
  std::strcpy(reused, "_Z5alphaPf");
  CHECK(names.id(reused) == alpha);  // equal texts share one id, wherever they live
  CHECK(names.cached() == 2);
  CHECK(names.uncached() == 0);
}

TEST_CASE("kernel names: a predicted row's reused name pointer is checked again in the next batch",
          "[kernel_names][aggregator]") {
  Fixture f;
  auto a = f.begin("step");
  char alpha[32] = "_Z5alphaPf";
  char other[32] = "_Z4betaPf";
  // Batch 1: alpha, beta, alpha: each row learns which row followed it.
  for (const char* name : {alpha, other, alpha}) f.kernel(f.launch(a.instance), 1000, 1100, name);
  f.agg.settle(2, false);            // the batch (a CUPTI buffer) ends
  std::strcpy(other, "_Z5gammaPf");  // beta's module unloaded; gamma's name now lives at its address
  // Batch 2: alpha, then the address beta had: the row after alpha predicts beta, by pointer.
  for (const char* name : {alpha, other}) f.kernel(f.launch(a.instance), 2000, 2100, name);
  f.end(a);
  const cuscope::Report r = f.report();
  const cuscope::RangeStats* step = r.find("step");
  REQUIRE(step != nullptr);
  CHECK(step->kernels.size() == 3);
  CHECK(kernel_calls(*step, "alpha(float*)") == 3);
  CHECK(kernel_calls(*step, "beta(float*)") == 1);
  CHECK(kernel_calls(*step, "gamma(float*)") == 1);
}

TEST_CASE("kernel names: the cache holds kMaxCached names, past it lookups are counted and right",
          "[kernel_names]") {
  KernelNames names;
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < KernelNames::kMaxCached + 2; ++i)
    texts.push_back("kernel_" + std::to_string(i));
  std::vector<std::uint32_t> ids;
  for (const std::string& t : texts) ids.push_back(names.id(t.c_str()));
  CHECK(names.cached() == KernelNames::kMaxCached);
  CHECK(names.uncached() == 2);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) wrong += names.text(ids[i]) == texts[i] ? 0 : 1;
  CHECK(wrong == 0);
  // An uncached name again: demangled anew, counted, and the same id (equal texts share one).
  const std::string again = texts.back();  // another address, the same text
  CHECK(names.id(again.c_str()) == ids.back());
  CHECK(names.uncached() == 3);
  CHECK(names.id(texts.front().c_str()) == ids.front());  // a cached one: not counted
  CHECK(names.uncached() == 3);
  CHECK(names.cached() == KernelNames::kMaxCached);
}

TEST_CASE("kernel names past the cache are counted in the report, its JSON and its table",
          "[kernel_names][aggregator]") {
  Fixture f;
  auto a = f.begin("step");
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < KernelNames::kMaxCached + 1; ++i)
    texts.push_back("kernel_" + std::to_string(i));
  for (const std::string& t : texts) f.kernel(f.launch(a.instance), 1000, 1100, t.c_str());
  f.end(a);
  const cuscope::Report r = f.report();
  CHECK(r.diagnostics.kernel_names_uncached == 1);
  const cuscope::RangeStats* step = r.find("step");
  REQUIRE(step != nullptr);
  CHECK(step->kernels.size() == texts.size());
  CHECK(kernel_calls(*step, texts.back()) == 1);
  CHECK(cuscope::format_json(r).find("\"kernel_names_uncached\": 1") != std::string::npos);
  CHECK(cuscope::format_table(r).find("1 kernel name looked up past the name cache (demangled again)") !=
        std::string::npos);
}

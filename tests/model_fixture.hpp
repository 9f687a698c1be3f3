// One thread's range tree and an aggregator over it, for tests that feed range begin/end events
// and activity records to the model directly (no session, no clock).
#pragma once

#include <cstdint>
#include <cuscope/report.hpp>
#include <memory>

#include "model/aggregator.hpp"
#include "model/range_tree.hpp"

namespace cuscope_test {

struct ModelFixture {
  std::unique_ptr<cuscope::model::Forest> forest = std::make_unique<cuscope::model::Forest>();
  cuscope::model::Aggregator agg{*forest};
  cuscope::model::ThreadTree* tree = nullptr;

  ModelFixture() {
    forest->record_instances = true;
    tree = forest->make_tree();
  }
  std::uint32_t id(const char* name) { return forest->names.intern(name); }
  cuscope::model::ThreadTree::Token begin(const char* name, std::uint64_t t = 0) {
    return tree->begin(id(name), t);
  }
  void end(const cuscope::model::ThreadTree::Token& tok, std::uint64_t t = 1'000'000) {
    tree->end(tok.depth, t);
  }
  std::uint64_t next_correlation = 1;
  // An API call made inside `instance` (kNoInstance: outside every scope); returns its correlation.
  std::uint64_t launch(std::uint64_t instance, std::uint64_t api_start = 1) {
    const std::uint64_t c = next_correlation++;
    if (instance != cuscope::model::kNoInstance) agg.on(cuscope::model::ExternalCorrelation{c, instance});
    agg.on(cuscope::model::ApiCall{c, api_start, api_start + 1});
    return c;
  }
  void kernel(std::uint64_t correlation, std::uint64_t start, std::uint64_t end, const char* name = "_Z6kernelPfi",
              std::uint32_t grid_x = 128, std::uint32_t stream = 0) {
    cuscope::model::KernelActivity k;
    k.correlation = correlation;
    k.start_ns = start;
    k.end_ns = end;
    k.name = name;
    k.grid = {grid_x, 1, 1};
    k.block = {256, 1, 1};
    k.registers_per_thread = 32;
    k.static_shared_bytes = 1024;
    k.dynamic_shared_bytes = 2048;
    k.stream = stream;
    agg.on(k);
  }
  [[nodiscard]] cuscope::Report report() const {
    cuscope::Report r;
    agg.build(r);
    return r;
  }
};

}  // namespace cuscope_test

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
  [[nodiscard]] cuscope::Report report() const {
    cuscope::Report r;
    agg.build(r);
    return r;
  }
};

}  // namespace cuscope_test

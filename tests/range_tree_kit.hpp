// What the range tree's tests share (test_range_tree_paths.cpp, test_range_tree_threads.cpp): a
// range entered and left on a tree once per given duration. Never a test case here; never a clock.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "model/range_tree.hpp"
#include "model_fixture.hpp"

namespace cuscope_test::range_tree_kit {

// Enters and leaves `name` on `tree` once per duration, 1 µs apart.
inline void calls(ModelFixture& f, cuscope::model::ThreadTree* tree, const char* name,
                  std::initializer_list<std::uint64_t> durations) {
  std::uint64_t t = 0;
  for (std::uint64_t d : durations) {
    auto k = tree->begin(f.id(name), t);
    tree->end(k.depth, t + d);
    t += 1000;
  }
}

}  // namespace cuscope_test::range_tree_kit

// Building Reports by hand, for the tests of the views.
#pragma once

#include <cstddef>
#include <cuscope/report.hpp>
#include <string>
#include <utility>

namespace cuscope_test {

inline cuscope::RangeStats make_range(std::string name, std::string path, std::size_t parent, int depth) {
  cuscope::RangeStats r;
  r.name = std::move(name);
  r.path = std::move(path);
  r.parent = parent;
  r.depth = depth;
  return r;
}

}  // namespace cuscope_test

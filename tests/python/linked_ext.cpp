// tests/python/linked_ext.cpp — cuscope_linked_ext: a C++ Python extension that links its own copy
// of cuscope (the static library), as a user's extension would, loaded beside the cuscope module
// (test_linked_extension.py). Its scopes must join the process's one session, whichever copy
// starts it. Never: reach into the library's internals; only the public API a user has.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <string>

namespace nb = nanobind;

NB_MODULE(cuscope_linked_ext, m) {
  m.def("inner", [](int times) {
    for (int i = 0; i < times; ++i) {
      CUSCOPE_SCOPE("ext_inner");
      CUSCOPE_COUNT("ext_items", 2);
    }
  });
  m.def("around", [](const nb::callable& body) {  // a C++ scope with Python code inside it
    CUSCOPE_SCOPE("ext_around");
    body();
  });
  m.def("start", [] { return cuscope::start(); });
  m.def("calls", [](const std::string& path) -> std::uint64_t {  // as this copy's snapshot() sees it
    const cuscope::Report r = cuscope::snapshot();
    const cuscope::RangeStats* range = r.find(path);
    return range != nullptr ? range->calls : 0;
  });
}

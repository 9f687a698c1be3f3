// tests/handover/copy_lib.cpp — a shared library with a copy of cuscope of its own (the static
// library), built twice: libcuscope_copy_a.so and libcuscope_copy_b.so, COPY_NAME naming each one's
// scope. two_copies.cpp loads both with RTLD_LOCAL, as Python loads extensions: their copies must
// share one session (session/handover.hpp). Never: anything but the public API a user has.
#include <cstdint>
#include <cuscope/cuscope.hpp>

extern "C" {

/// cuscope::start() through this copy.
__attribute__((visibility("default"))) bool copy_start() { return cuscope::start(); }

/// `times` scopes named COPY_NAME, each calling `inside` (when given) while open.
__attribute__((visibility("default"))) void copy_scopes(int times, void (*inside)()) {
  for (int i = 0; i < times; ++i) {
    CUSCOPE_SCOPE(COPY_NAME);
    if (inside != nullptr) inside();
  }
}

/// The calls of range `path` as this copy's snapshot() sees them.
__attribute__((visibility("default"))) std::uint64_t copy_calls(const char* path) {
  const cuscope::Report r = cuscope::snapshot();
  const cuscope::RangeStats* range = r.find(path);
  return range != nullptr ? range->calls : 0;
}

}  // extern "C"

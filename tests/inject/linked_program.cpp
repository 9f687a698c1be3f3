// A program that links cuscope and also calls NVTX itself. Run plainly, its own cuscope runs the
// session and the NVTX ranges are invisible; run under `cuscope run`, its cuscope hands over to the
// injected one (session/handover.hpp): one session, every scope once, the NVTX ranges inside them.
// It prints what its own snapshot() sees, which check_inject.py compares with the exit report.
#include <nvtx3/nvToolsExt.h>

#include <cinttypes>
#include <cstdio>
#include <cuscope/cuscope.hpp>

int main() {
  for (int i = 0; i < 2; ++i) {
    CUSCOPE_SCOPE("scoped");
    CUSCOPE_COUNT("items", 5);
    nvtxRangePushA("raw");
    nvtxRangePop();
  }
  cuscope::step();
  const cuscope::Report r = cuscope::snapshot();
  const cuscope::RangeStats* scoped = r.find("scoped");
  const cuscope::RangeStats* raw = r.find("scoped/raw");
  double items = 0;
  if (scoped != nullptr) {
    for (const auto& c : scoped->counts) items += c.name == "items" ? c.total : 0;
  }
  std::printf("snapshot: scoped=%" PRIu64 " raw=%" PRIu64 " items=%g steps=%" PRIu64 "\n",
              scoped ? scoped->calls : 0, raw ? raw->calls : 0, items, r.steps);
  return 0;
}

// A program with NVTX ranges and nothing of cuscope, run under the installed `cuscope run`
// (tests/consumer/check.sh): zero-code mode from an install, as a user gets it.
#include <nvtx3/nvToolsExt.h>

int main() {
  for (int i = 0; i < 4; ++i) {
    nvtxRangePushA("nvtx_only_range");
    nvtxRangePop();
  }
  return 0;
}

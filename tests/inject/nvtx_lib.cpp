// A shared library with NVTX ranges and nothing of cuscope, for a Python program that loads it
// with ctypes under `cuscope run` (tests/inject/check_inject.py): how PyTorch's own NVTX calls
// reach cuscope, minus PyTorch.
#include <nvtx3/nvToolsExt.h>

extern "C" __attribute__((visibility("default"))) void work(int steps) {
  for (int i = 0; i < steps; ++i) {
    nvtxRangePushA("py_step");
    for (int j = 0; j < 2; ++j) {
      nvtxRangePushA("py_inner");
      nvtxRangePop();
    }
    nvtxRangePop();
  }
}

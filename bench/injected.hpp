// bench/injected.hpp — libcuscope_inject.so as NVTX drives it, for the benchmarks (cpu_bench.cpp,
// scope_instructions.cpp).
//
// Zero-code mode: an NVTX push/pop as libcuscope_inject.so receives it. The library is loaded the
// way NVTX loads it, and handed function tables of our own (what NVTX's export table gives it), so
// a range here is the call NVTX makes through its function pointer: the injected range, nothing
// less. The library's cuscope is a copy of its own (its own session, host only, like the scopes'),
// so the program's linked scopes are unchanged. Domain "Excluded" is left out by
// CUSCOPE_NVTX_DOMAINS.
#pragma once

#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "session/handover.hpp"

namespace cuscope_bench {

struct Injected {
  int (*push_a)(const char*) = nullptr;
  int (*pop)() = nullptr;
  int (*domain_push)(nvtxDomainHandle_t, const nvtxEventAttributes_t*) = nullptr;
  int (*domain_pop)(nvtxDomainHandle_t) = nullptr;
  nvtxDomainHandle_t domain = nullptr;
  nvtxDomainHandle_t excluded = nullptr;
  nvtxEventAttributes_t registered{};
  nvtxEventAttributes_t registered_outer{};  // the open range of the domain the measured ones sit in
  std::string error;
};

/// Loaded once; `max_wait_ms`: how long the first call waits for the copy's clock to settle.
inline Injected& injected(int max_wait_ms = 1000) {
  static Injected in = [max_wait_ms] {
    Injected r;
    setenv("CUSCOPE_GPU_EVENTS", "0", 1);
    setenv("CUSCOPE_ACTIVITIES", "0", 1);
    setenv("CUSCOPE_PRINT", "0", 1);
    setenv("CUSCOPE_NVTX_DOMAINS", "-Excluded", 1);
    void* lib = dlopen(CUSCOPE_INJECT_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    auto init =
        lib ? reinterpret_cast<int (*)(NvtxGetExportTableFunc_t)>(dlsym(lib, "InitializeInjectionNvtx2"))
            : nullptr;
    if (init == nullptr) {
      r.error = std::string("cannot load ") + CUSCOPE_INJECT_LIBRARY;
      return r;
    }
    static NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE], core2[NVTX_CBID_CORE2_SIZE];
    static NvtxFunctionPointer* core_slots[NVTX_CBID_CORE_SIZE];
    static NvtxFunctionPointer* core2_slots[NVTX_CBID_CORE2_SIZE];
    for (unsigned i = 0; i < NVTX_CBID_CORE_SIZE; ++i) core_slots[i] = &core[i];
    for (unsigned i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) core2_slots[i] = &core2[i];
    static const NvtxExportTableCallbacks callbacks{
        sizeof(NvtxExportTableCallbacks), [](NvtxCallbackModule m, NvtxFunctionTable* out, unsigned* size) {
          if (m == NVTX_CB_MODULE_CORE) {
            *out = core_slots;
            *size = NVTX_CBID_CORE_SIZE;
          } else if (m == NVTX_CB_MODULE_CORE2) {
            *out = core2_slots;
            *size = NVTX_CBID_CORE2_SIZE;
          } else {
            return 0;
          }
          return 1;
        }};
    if (init([](std::uint32_t id) -> const void* {
          return id == NVTX_ETID_CALLBACKS ? &callbacks : nullptr;
        }) == 0) {
      r.error = "InitializeInjectionNvtx2 refused";
      return r;
    }
    r.push_a = reinterpret_cast<int (*)(const char*)>(core[NVTX_CBID_CORE_RangePushA]);
    r.pop = reinterpret_cast<int (*)()>(core[NVTX_CBID_CORE_RangePop]);
    r.domain_push = reinterpret_cast<int (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*)>(
        core2[NVTX_CBID_CORE2_DomainRangePushEx]);
    r.domain_pop = reinterpret_cast<int (*)(nvtxDomainHandle_t)>(core2[NVTX_CBID_CORE2_DomainRangePop]);
    auto create = reinterpret_cast<nvtxDomainHandle_t (*)(const char*)>(core2[NVTX_CBID_CORE2_DomainCreateA]);
    auto reg = reinterpret_cast<nvtxStringHandle_t (*)(nvtxDomainHandle_t, const char*)>(
        core2[NVTX_CBID_CORE2_DomainRegisterStringA]);
    r.domain = create("Bench");
    r.excluded = create("Excluded");
    r.registered.version = NVTX_VERSION;
    r.registered.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    r.registered.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    r.registered.message.registered = reg(r.domain, "registered");
    r.registered_outer = r.registered;
    r.registered_outer.message.registered = reg(r.domain, "registered_outer");
    // Settle the copy's clock as the scopes' was (TSC once calibrated), and open its session.
    using EngineFn = const cuscope::detail::Engine* (*)();
    auto engine = reinterpret_cast<EngineFn>(dlsym(lib, "cuscope_v0_engine"));
    r.push_a("warm-up");
    r.pop();
    for (int waited = 0; engine != nullptr && waited < max_wait_ms &&
                         engine()->snapshot().clock.rfind("CLOCK_MONOTONIC (calibrating", 0) == 0;
         waited += 20)
      usleep(20'000);
    return r;
  }();
  return in;
}

// PyTorch's emit_nvtx(): each operator call formats a new message (its sequence numbers and input
// sizes) into a std::string that the allocator tends to place at the same address: the same pointer,
// new text. The benchmarks copy the next of these texts into one buffer, then push it.
inline constexpr int kOperatorMessages = 64;
inline constexpr std::size_t kOperatorMessageBytes = 160;
using OperatorMessages = char[kOperatorMessages][kOperatorMessageBytes];

inline const OperatorMessages& operator_messages() {
  static OperatorMessages texts = {};
  static const bool made = [] {
    for (int i = 0; i < kOperatorMessages; ++i)
      std::snprintf(texts[i], kOperatorMessageBytes,
                    "aten::addmm, seq = %d, op_id = %d, sizes = [[64, 1024], [1024, 4096], [4096]], "
                    "input_op_ids = [(%d, 0), (%d, 0)]",
                    1000 + i, 5000 + i, 4990 + i, 4991 + i);
    return true;
  }();
  static_cast<void>(made);
  return texts;
}

}  // namespace cuscope_bench

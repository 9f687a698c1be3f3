// A program that knows nothing of cuscope: NVTX calls only (it includes the NVTX headers and
// links nothing of cuscope's). tests/inject/check_inject.py runs it under `cuscope run` and checks
// the report against the counts below, which it repeats.
//
//   nvtx_program [EXIT_STATUS]
//   nvtx_program domains    600 domains: the ranges of the last two nest and pop in pairs
//
// Main thread and 2 workers, each: 3 x outer{ 2 x inner }, a wide-string range, and an
// emit_nvtx()-style operator range; a "MyLib" domain with an ASCII and a registered message; a
// "cuscope" domain (what a linked cuscope pushes: never counted twice); start/end ranges, one
// ended on another thread and one never ended.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

nvtxDomainHandle_t g_mylib = nullptr;
nvtxStringHandle_t g_registered = nullptr;

void domain_push(nvtxDomainHandle_t d, const char* ascii, nvtxStringHandle_t registered = nullptr) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  if (registered != nullptr) {
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = registered;
  } else {
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = ascii;
  }
  nvtxDomainRangePushEx(d, &a);
}

void work() {
  for (int i = 0; i < 3; ++i) {
    nvtxRangePushA("outer");
    for (int j = 0; j < 2; ++j) {
      nvtxRangePushA("inner");
      nvtxRangePop();
    }
    nvtxRangePop();
  }
  nvtxRangePushW(L"wide \u00e9t\u00e9");
  nvtxRangePop();
  for (int seq = 0; seq < 2; ++seq) {  // each call a different message, one operator
    char message[64];
    std::snprintf(message, sizeof(message), "aten::addmm, seq = %d, op_id = %d, sizes = [[8, 8]]", seq,
                  seq + 100);
    nvtxRangePushA(message);
    nvtxRangePop();
  }
  domain_push(g_mylib, "lib_call");
  domain_push(g_mylib, nullptr, g_registered);
  nvtxDomainRangePop(g_mylib);
  nvtxDomainRangePop(g_mylib);
}

}  // namespace

// More domains than cuscope gives an index of their own (510): the late ones share one, and their
// pops must still pair among themselves, never with the default domain's ranges.
int many_domains() {
  nvtxDomainHandle_t last = nullptr, before_last = nullptr;
  for (int i = 0; i < 600; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "D%d", i);
    before_last = last;
    last = nvtxDomainCreateA(name);
  }
  nvtxRangePushA("outer");
  domain_push(before_last, "x");
  domain_push(last, "y");
  nvtxDomainRangePop(last);
  nvtxDomainRangePop(before_last);
  nvtxRangePop();
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "domains") == 0) return many_domains();
  g_mylib = nvtxDomainCreateA("MyLib");
  g_registered = nvtxDomainRegisterStringA(g_mylib, "registered_step");
  const nvtxDomainHandle_t own = nvtxDomainCreateA("cuscope");
  domain_push(own, "linked_scope");  // a linked cuscope's scope: that copy counts it, not the injection
  nvtxDomainRangePop(own);

  const nvtxRangeId_t crossing = nvtxRangeStartA("load");
  nvtxRangeStartA("never_ended");
  std::thread a(work);
  std::thread b([crossing] {
    work();
    nvtxRangeEnd(crossing);  // started on the main thread
  });
  work();
  a.join();
  b.join();
  return argc > 1 ? std::atoi(argv[1]) : 0;
}

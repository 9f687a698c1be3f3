// A program that knows nothing of cuscope: NVTX calls only (it includes the NVTX headers and
// links nothing of cuscope's). tests/inject/check_inject.py runs it under `cuscope run` and checks
// the report against the counts below, which it repeats.
//
//   nvtx_program [EXIT_STATUS]
//   nvtx_program domains    600 domains: the ranges of the last two nest and pop in pairs
//   nvtx_program reuse      one buffer holds different messages in turn (the counts below)
//   nvtx_program family     3 "parent" ranges, then this program again as `child` (2 "child"
//                           ranges), waited for; prints "child PID"
//   nvtx_program child      2 "child" ranges
//   nvtx_program idle       NVTX loaded (a domain made), no range: an environment check
//
// Main thread and 2 workers, each: 3 x outer{ 2 x inner }, a wide-string range, and an
// emit_nvtx()-style operator range; a "MyLib" domain with an ASCII and a registered message; a
// "cuscope" domain (what a linked cuscope pushes: never counted twice); start/end ranges, one
// ended on another thread and one never ended; a start/end range in "MyLib" and one in "cuscope".
#include <nvtx3/nvToolsExt.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

nvtxDomainHandle_t g_mylib = nullptr;
nvtxStringHandle_t g_registered = nullptr;

nvtxEventAttributes_t attributes(const char* ascii, nvtxStringHandle_t registered = nullptr) {
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
  return a;
}

void domain_push(nvtxDomainHandle_t d, const char* ascii, nvtxStringHandle_t registered = nullptr) {
  const nvtxEventAttributes_t a = attributes(ascii, registered);
  nvtxDomainRangePushEx(d, &a);
}

void domain_span(nvtxDomainHandle_t d, const char* ascii) {
  const nvtxEventAttributes_t a = attributes(ascii);
  nvtxDomainRangeEnd(d, nvtxDomainRangeStartEx(d, &a));
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

// Messages at one address whose text changes between calls, as Python's and std::string's buffers
// do: each call is named by the text it passes, never by what the address held before. Ranges:
// alpha 2, beta 1, alphabet 1, alp 1, ab 2 (the bytes after its NUL change, the name does not),
// the two long ones (30 bytes, differing in the last) 1 each, edge 2 and edgy 1 (at the very end
// of a page followed by an unreadable one: a read past the NUL there would fault). Then
// emit_nvtx()-style messages, whose name is the text before ", seq = " (or another operator
// suffix): aten::add 2, aten::addmm 2 (one of them with no suffix), aten::add_extra 1 (the name kept
// for the address is its prefix, but no suffix follows), "aten::mm, unrelated" 1 (a comma, but no
// operator suffix).
void range(const char* message) {
  nvtxRangePushA(message);
  nvtxRangePop();
}

int reuse() {
  char buffer[64];
  for (const char* text : {"alpha", "beta", "alpha", "alphabet", "alp"}) {
    std::strcpy(buffer, text);
    range(buffer);
  }
  std::memcpy(buffer, "ab\0XYZ", 7);
  range(buffer);
  std::memcpy(buffer, "ab\0QRS", 7);
  range(buffer);
  std::strcpy(buffer, "a_long_message_of_30_bytes___1");
  range(buffer);
  std::strcpy(buffer, "a_long_message_of_30_bytes___2");
  range(buffer);
  for (const char* text : {"aten::add, seq = 1, op_id = 7, sizes = [[8, 8], [8, 8]]", "aten::add, seq = 2, op_id = 8",
                           "aten::add_extra", "aten::addmm, sizes = [[8, 8]]", "aten::addmm", "aten::mm, seq = 3",
                           "aten::mm, unrelated"}) {
    std::strcpy(buffer, text);
    range(buffer);
  }
  const long page = sysconf(_SC_PAGESIZE);
  void* pages = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED || mprotect(static_cast<char*>(pages) + page, page, PROT_NONE) != 0) {
    std::perror("nvtx_program: mmap");
    return 1;
  }
  char* edge = static_cast<char*>(pages) + page - 5;  // "edge" and its NUL end the page
  std::strcpy(edge, "edge");
  range(edge);
  range(edge);
  std::strcpy(edge, "edgy");
  range(edge);
  munmap(pages, 2 * page);
  return 0;
}

// Two processes of one `cuscope run`: this one starts its session first (its first range), then
// runs this program again as a child and waits for it.
int family(char* self) {
  for (int i = 0; i < 3; ++i) range("parent");
  char child_arg[] = "child";
  char* child_argv[] = {self, child_arg, nullptr};
  pid_t child = 0;
  if (posix_spawn(&child, self, nullptr, nullptr, child_argv, environ) != 0) {
    std::perror("nvtx_program: posix_spawn");
    return 1;
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  std::printf("child %d\n", static_cast<int>(child));
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "domains") == 0) return many_domains();
  if (argc > 1 && std::strcmp(argv[1], "reuse") == 0) return reuse();
  if (argc > 1 && std::strcmp(argv[1], "family") == 0) return family(argv[0]);
  if (argc > 1 && std::strcmp(argv[1], "idle") == 0) return nvtxDomainCreateA("idle") != nullptr ? 0 : 1;
  if (argc > 1 && std::strcmp(argv[1], "child") == 0) {
    range("child");
    range("child");
    return 0;
  }
  g_mylib = nvtxDomainCreateA("MyLib");
  g_registered = nvtxDomainRegisterStringA(g_mylib, "registered_step");
  const nvtxDomainHandle_t own = nvtxDomainCreateA("cuscope");
  domain_push(own, "linked_scope");  // a linked cuscope's scope: that copy counts it, not the injection
  nvtxDomainRangePop(own);
  domain_span(own, "linked_span");
  domain_span(g_mylib, "lib_load");

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

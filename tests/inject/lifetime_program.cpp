// Whole-process lifetimes of a program that knows nothing of cuscope (NVTX calls only), run under
// `cuscope run` by tests/inject/check_lifetime.py, which checks the table and the JSON report
// against the counts below, which it repeats.
//
//   lifetime_program fork         parent_before x2, around_fork open across fork(); the child runs
//                                 child_work x3 (and a domain's range), pops around_fork, exit(0);
//                                 the parent then pops around_fork and runs parent_after
//   lifetime_program fork_domains 20 forks while another thread creates domains (takes their lock):
//                                 each child creates a domain, runs a range in it and exits 0;
//                                 the parent runs forked x20
//   lifetime_program quick_exit   quick_work x3, then std::quick_exit(0) with quick_open open
//   lifetime_program exit_thread  main holds main_open, a worker holds worker_open, a third thread
//                                 runs exiting_work x2 and calls std::exit(5)
//   lifetime_program tl_dtor      2 threads: thread_body left open, closed by a thread_local's
//                                 destructor at thread exit, which also runs tl_dtor inside it;
//                                 main's thread_local destructor runs main_tl_dtor at exit()
//   lifetime_program static       a static constructor runs static_ctor and leaves before_main
//                                 open; main runs in_main inside it and pops it
//
// A mode's own failure (a child that did not exit 0, ...) exits 3 with a line on stderr.
#include <nvtx3/nvToolsExt.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace {

void range(const char* message) {
  nvtxRangePushA(message);
  nvtxRangePop();
}

void domain_range(nvtxDomainHandle_t d, const char* message) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  nvtxDomainRangePushEx(d, &a);
  nvtxDomainRangePop(d);
}

[[noreturn]] void failed(const char* what) {
  std::fprintf(stderr, "lifetime_program: FAILED: %s\n", what);
  std::_Exit(3);
}

const char* g_mode = "";

// --- static: before main ---------------------------------------------------------------------

struct BeforeMain {
  BeforeMain() {
    const char* mode = std::getenv("LIFETIME_MODE");
    if (mode == nullptr || std::strcmp(mode, "static") != 0) return;
    range("static_ctor");
    nvtxRangePushA("before_main");  // main pops it
  }
} g_before_main;

int run_static() {
  range("in_main");
  nvtxRangePop();  // before_main
  return 0;
}

// --- fork --------------------------------------------------------------------------------------

int run_fork() {
  for (int i = 0; i < 2; ++i) range("parent_before");
  nvtxRangePushA("around_fork");
  const pid_t child = ::fork();
  if (child < 0) failed("fork");
  if (child == 0) {
    for (int i = 0; i < 3; ++i) range("child_work");
    domain_range(nvtxDomainCreateA("ChildDomain"), "child_domain_work");
    nvtxRangePop();  // around_fork, opened by the parent
    nvtxRangePop();  // one too many
    std::exit(0);    // atexit handlers run: cuscope's must print and write nothing here
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    failed("the child did not exit with 0");
  nvtxRangePop();  // around_fork
  range("parent_after");
  return 0;
}

int run_fork_domains() {
  std::atomic<bool> stop{false};
  std::thread hammer([&stop] {
    char name[32];
    for (unsigned i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      std::snprintf(name, sizeof(name), "H%u", i % 100000);
      nvtxDomainCreateA(name);
    }
  });
  for (int i = 0; i < 20; ++i) {
    range("forked");
    const pid_t child = ::fork();
    if (child < 0) failed("fork");
    if (child == 0) {
      alarm(20);  // a lock held across fork() would hang here: SIGALRM ends the child instead
      domain_range(nvtxDomainCreateA("ChildDomain"), "child_domain_work");
      std::exit(0);
    }
    int status = 0;
    if (::waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      failed("a child forked beside domain creation did not exit with 0");
  }
  stop.store(true);
  hammer.join();
  return 0;
}

// --- quick_exit ------------------------------------------------------------------------------------

int run_quick_exit() {
  for (int i = 0; i < 3; ++i) range("quick_work");
  nvtxRangePushA("quick_open");
  std::quick_exit(0);
}

// --- std::exit from a thread while others hold open ranges -------------------------------------------

int run_exit_thread() {
  std::mutex m;
  std::condition_variable cv;
  bool worker_open = false;
  nvtxRangePushA("main_open");
  std::thread holder([&] {
    nvtxRangePushA("worker_open");
    std::unique_lock lock(m);
    worker_open = true;
    cv.notify_all();
    cv.wait(lock, [] { return false; });  // holds its range until the process ends
  });
  holder.detach();
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return worker_open; });
  }
  std::thread exiting([] {
    for (int i = 0; i < 2; ++i) range("exiting_work");
    std::exit(5);
  });
  exiting.join();  // never returns: the process exits from that thread
  failed("std::exit returned");
}

// --- thread_local destructors at thread exit ---------------------------------------------------------

// Constructed before the thread's first range, so destroyed after anything the first range made.
struct ClosesAtThreadExit {
  bool armed = false;
  ~ClosesAtThreadExit() {
    if (!armed) return;
    range("tl_dtor");
    nvtxRangePop();  // thread_body
  }
};
thread_local ClosesAtThreadExit t_closer;

struct MainAtExit {
  bool armed = false;
  ~MainAtExit() {
    if (armed) range("main_tl_dtor");  // main's thread_locals go in exit(), before its atexit handlers
  }
};
thread_local MainAtExit t_main_at_exit;

int run_tl_dtor() {
  t_main_at_exit.armed = true;
  auto body = [] {
    t_closer.armed = true;  // constructed here, before any NVTX call of this thread
    nvtxRangePushA("thread_body");
  };
  std::thread a(body);
  a.join();
  std::thread b(body);
  b.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  g_mode = argc > 1 ? argv[1] : "";
  const std::string mode = g_mode;
  if (mode == "static") return run_static();
  if (mode == "fork") return run_fork();
  if (mode == "fork_domains") return run_fork_domains();
  if (mode == "quick_exit") return run_quick_exit();
  if (mode == "exit_thread") return run_exit_thread();
  if (mode == "tl_dtor") return run_tl_dtor();
  std::fprintf(stderr, "usage: %s static|fork|fork_domains|quick_exit|exit_thread|tl_dtor\n", argv[0]);
  return 2;
}

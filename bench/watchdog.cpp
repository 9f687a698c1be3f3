// bench/watchdog.cpp — see watchdog.hpp.
#include "watchdog.hpp"

#include <dirent.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cuscope_bench {
namespace {

constexpr int kStackSignal = SIGUSR2;  // unused by CUDA, CUPTI and cuscope
std::atomic<bool> g_stack_written{false};

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The signalled thread's stack, to stderr. backtrace() was called once before (its library loaded),
// so this allocates nothing; backtrace_symbols_fd writes straight to the descriptor.
void write_stack(int) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  g_stack_written.store(true, std::memory_order_release);
}

// A line of /proc/self/task/<tid>/<file>: the thread's name ("comm": CUDA and CUPTI name some of
// theirs) or the kernel function it sleeps in ("wchan").
std::string task_file(long tid, const char* file) {
  char path[96];
  std::snprintf(path, sizeof path, "/proc/self/task/%ld/%s", tid, file);
  char line[128] = "?";
  if (FILE* f = std::fopen(path, "r")) {
    if (std::fgets(line, sizeof line, f) == nullptr) std::strcpy(line, "?");
    std::fclose(f);
  }
  line[std::strcspn(line, "\n")] = '\0';
  return line;
}

}  // namespace

Watchdog::Watchdog(int limit_s, const char* program) : limit_s_(limit_s), program_(program) {
  part_start_ms_ = now_ms();
  if (limit_s_ <= 0) return;
  void* warm[4];
  backtrace(warm, 4);  // loads libgcc's unwinder now, not inside the signal handler
  struct sigaction sa {};
  sa.sa_handler = write_stack;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(kStackSignal, &sa, nullptr);
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::part(const std::string& name) {
  std::fprintf(stderr, "%s: %s\n", program_, name.c_str());
  std::fflush(stderr);
  std::lock_guard lock(mutex_);
  part_ = name;
  part_start_ms_ = now_ms();
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::seconds(1));
    const long long ran_ms = now_ms() - part_start_ms_;
    if (!stop_ && ran_ms > 1000LL * limit_s_) stalled(part_, static_cast<long>(ran_ms / 1000));
  }
}

// Every other thread's stack, one at a time (each thread writes its own in the signal handler), then
// exit 3 without running exit handlers (they could wait on the very locks that hang).
void Watchdog::stalled(const std::string& name, long seconds) {
  std::fprintf(stderr,
               "%s: STALLED: '%s' has run %ld s (the watchdog's limit is %d s); every "
               "thread's stack follows (frames as module(symbol+offset) [address])\n",
               program_, name.c_str(), seconds, limit_s_);
  const long self = syscall(SYS_gettid);
  if (DIR* d = opendir("/proc/self/task")) {
    while (const dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const long tid = std::atol(e->d_name);
      std::fprintf(stderr, "--- thread %ld (%s)%s, waiting in %s\n", tid, task_file(tid, "comm").c_str(),
                   tid == getpid() ? ", the main thread" : "", task_file(tid, "wchan").c_str());
      std::fflush(stderr);
      if (tid == self) {
        std::fprintf(stderr, "(the watchdog itself)\n");
        continue;
      }
      g_stack_written.store(false, std::memory_order_release);
      if (syscall(SYS_tgkill, getpid(), tid, kStackSignal) != 0) continue;
      for (int i = 0; i < 200 && !g_stack_written.load(std::memory_order_acquire); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (!g_stack_written.load(std::memory_order_acquire))
        std::fprintf(stderr, "(no stack within 2 s: the thread blocks the signal)\n");
    }
    closedir(d);
  }
  std::fflush(stderr);
  std::_Exit(3);
}

}  // namespace cuscope_bench

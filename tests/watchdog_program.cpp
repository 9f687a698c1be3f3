// tests/watchdog_program.cpp — checks the GPU benchmark's stall watchdog (bench/watchdog.hpp) on the
// CPU: a child process names a quick part, then a part whose thread blocks on a mutex for good; the
// parent reads the child's stderr and requires the exit status 3, both progress lines, the STALLED
// line naming the stuck part, and the blocked thread's stack with the function that blocks in it.
// Never: sleep for time it does not need (the limit is 1 s), or leave the child running.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "bench/watchdog.hpp"

std::mutex g_held;

// Of external linkage and exported (the program links with ENABLE_EXPORTS): the stack names it.
[[gnu::noinline]] void blocks_forever_on_a_held_mutex() {
  std::lock_guard lock(g_held);
}

namespace {

[[noreturn]] void stalling_child() {
  cuscope_bench::Watchdog dog(1);
  dog.part("quick part");
  dog.part("part that deadlocks");
  g_held.lock();
  std::thread t(blocks_forever_on_a_held_mutex);
  t.join();  // never returns: the watchdog exits the process with 3
  std::_Exit(0);
}

int failures = 0;

void require(bool ok, const char* what, const std::string& output) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "FAILED: %s\n--- the child's stderr:\n%s---\n", what, output.c_str());
}

}  // namespace

int main() {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return 1;
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    stalling_child();
  }
  close(pipe_fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  int status = 0;
  waitpid(child, &status, 0);
  require(WIFEXITED(status) && WEXITSTATUS(status) == 3, "the child exits with status 3", out);
  require(out.find("cuscope_gpu_bench: quick part\n") != std::string::npos, "the first part's line", out);
  require(out.find("cuscope_gpu_bench: part that deadlocks\n") != std::string::npos, "the second part's line",
          out);
  require(out.find("STALLED: 'part that deadlocks' has run ") != std::string::npos,
          "the STALLED line names the stuck part", out);
  require(out.find("the main thread, waiting in ") != std::string::npos, "the main thread is listed", out);
  require(out.find("blocks_forever_on_a_held_mutex") != std::string::npos,
          "the blocked thread's stack names the function it blocks in", out);
  require(out.find("pthread_mutex_lock") != std::string::npos || out.find("futex") != std::string::npos ||
              out.find("lll_lock") != std::string::npos || out.find("libc.so") != std::string::npos,
          "the blocked thread's stack goes down into the C library's lock", out);
  if (failures == 0) std::printf("watchdog: stalled part named, stacks printed, exit 3\n");
  return failures == 0 ? 0 : 1;
}

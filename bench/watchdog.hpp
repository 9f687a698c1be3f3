// bench/watchdog.hpp — a stall watchdog for the GPU benchmarks: each part of a run names itself
// (a progress line on stderr), and a part that runs past its limit gets every thread's stack
// printed to stderr, and the process exits 3. On a short GPU lease a hang then says where it is
// (the configuration, the locks its threads wait on) instead of eating the lease: the 2026-11-26
// H200 run hung in cuscope_gpu_bench with no line saying in what.
// Never: touch CUDA, CUPTI or cuscope. It reads the clock and /proc, and signals threads.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace cuscope_bench {

class Watchdog {
 public:
  /// Starts watching; `limit_s` 0 leaves it off (progress lines only). `program` begins each line
  /// (the GPU tests use it too, with a part per test case).
  explicit Watchdog(int limit_s, const char* program = "cuscope_gpu_bench");
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// The run enters the part `name`: a line "<program>: <name>" on stderr, and the limit counts
  /// from now.
  void part(const std::string& name);

 private:
  void watch();
  [[noreturn]] void stalled(const std::string& name, long seconds);

  int limit_s_;
  const char* program_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string part_;             // guarded by mutex_
  long long part_start_ms_ = 0;  // guarded by mutex_
  bool stop_ = false;            // guarded by mutex_
  std::thread thread_;
};

}  // namespace cuscope_bench

// session/run_claim.hpp — claims a process holds on this host for its life: which process of a
// `cuscope run` came first (`cuscope run` gives its command CUSCOPE_RUN_ID, which every process
// started below it inherits; the first of them to start a session claims the run, and so the report
// paths that name no process, ranks.hpp), and which live process writes a report file (the first
// to claim it; another that would write it writes its own, ranks.hpp). A claim is an abstract Unix
// socket named after the run or the file, bound while it is held: the kernel drops it when that
// process ends, so nothing is left behind, and a crash frees it too. Abstract sockets belong to a
// network namespace: containers with their own network do not see each other's claims.
//
// Never: leave a file or a socket behind, or let a claim's descriptor reach an exec'd program
// (it is close-on-exec) or outlive its process in a child made by fork() (the child closes it).
#pragma once

#include <atomic>
#include <string>
#include <string_view>

namespace cuscope::inline v0::detail {

/// One claim on the run `run_id` (or, with a `kind` other than "run", on another name): held() when
/// no other claim on it was held at construction. A claim that cannot be tried (sockets refused: a
/// sandbox) counts as held, as before claims.
class RunClaim {
 public:
  explicit RunClaim(std::string_view run_id, std::string_view kind = "run") noexcept;
  ~RunClaim();
  RunClaim(const RunClaim&) = delete;
  RunClaim& operator=(const RunClaim&) = delete;

  [[nodiscard]] bool held() const { return held_; }

 private:
  int fd_ = -1;
  bool held_ = true;
  std::atomic<int>* slot_ = nullptr;  // where a fork() child finds fd_ to close (run_claim.cpp)
};

/// This process's claim on `run_id`, tried once and kept for the process's life: true when this
/// process holds the run's claim (it came first), false when another process of the run does.
bool claim_run(std::string_view run_id) noexcept;

/// This process's claim on the report file `file` (a name for it that every process would give it:
/// ranks.cpp's file identity): true when this process holds it, now or from before, false when
/// another live process on this host (its network namespace: abstract sockets are per namespace)
/// does. Kept until release_path_claims().
bool claim_path(const std::string& file) noexcept;
/// Ends this process's claims on report files (its session's files are final, or a test's
/// session ends).
void release_path_claims() noexcept;

}  // namespace cuscope::inline v0::detail

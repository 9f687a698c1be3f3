// session/run_claim.cpp — see run_claim.hpp.
#include "session/run_claim.hpp"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

namespace cuscope::inline v0::detail {
namespace {

// The descriptors of the claims held in this process (-1: a free slot). A child made by fork()
// inherits them, and a bound socket lives while any process holds it: the child closes its copies,
// so that a claim ends with the process that made it, not with a worker it forked.
constexpr int kClaimSlots = 8;  // one per process in use (claim_run); more only in tests
std::atomic<int> g_claim_fds[kClaimSlots] = {-1, -1, -1, -1, -1, -1, -1, -1};

void close_claims_in_child() noexcept {
  for (std::atomic<int>& fd : g_claim_fds) {
    const int held = fd.exchange(-1, std::memory_order_relaxed);
    if (held >= 0) close(held);
  }
}

// A free slot for `fd`, or nullptr when every slot is taken.
std::atomic<int>* remember(int fd) noexcept {
  static const bool registered = pthread_atfork(nullptr, nullptr, close_claims_in_child) == 0;
  if (!registered) return nullptr;
  for (std::atomic<int>& slot : g_claim_fds) {
    int free = -1;
    if (slot.compare_exchange_strong(free, fd, std::memory_order_relaxed)) return &slot;
  }
  return nullptr;
}

}  // namespace

RunClaim::RunClaim(std::string_view run_id) noexcept {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  // Abstract namespace: a leading NUL, then the name (not NUL-terminated; its length says where
  // it ends). No file is made.
  constexpr std::string_view kPrefix = "cuscope-run-";
  const std::size_t room = sizeof(address.sun_path) - 1;
  const std::size_t length = std::min(room, kPrefix.size() + run_id.size());
  std::string name(kPrefix);
  name += run_id;
  std::memcpy(address.sun_path + 1, name.data(), length);
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;  // refused: held, as before claims
  const auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length);
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&address), size) == 0) {
    slot_ = remember(fd_);
    return;
  }
  held_ = errno != EADDRINUSE;  // another process holds it; any other refusal: as before claims
  close(fd_);
  fd_ = -1;
}

RunClaim::~RunClaim() {
  // In a fork() child the slot no longer holds fd_: the child closed the descriptor it inherited.
  int held = fd_;
  if (slot_ != nullptr && !slot_->compare_exchange_strong(held, -1, std::memory_order_relaxed)) return;
  if (fd_ >= 0) close(fd_);
}

bool claim_run(std::string_view run_id) noexcept {
  static std::mutex mutex;
  static RunClaim* claim = nullptr;  // leaked: held until the process ends
  std::lock_guard lock(mutex);
  if (claim == nullptr) claim = new (std::nothrow) RunClaim(run_id);
  return claim == nullptr || claim->held();
}

}  // namespace cuscope::inline v0::detail

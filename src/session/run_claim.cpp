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
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace cuscope::inline v0::detail {
namespace {

// The descriptors of the claims held in this process (-1: a free slot). A child made by fork()
// inherits them, and a bound socket lives while any process holds it: the child closes its copies,
// so that a claim ends with the process that made it, not with a worker it forked.
// In use: the run's claim and the session's report files' (three at most); more only in tests.
constexpr int kClaimSlots = 16;
std::atomic<int> g_claim_fds[kClaimSlots] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};

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

RunClaim::RunClaim(std::string_view run_id, std::string_view kind) noexcept {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  // Abstract namespace: a leading NUL, then the name (not NUL-terminated; its length says where
  // it ends). No file is made.
  const std::size_t room = sizeof(address.sun_path) - 1;
  char name[sizeof(address.sun_path)] = {};
  const int written = std::snprintf(name, sizeof(name), "cuscope-%.*s-%.*s", static_cast<int>(kind.size()),
                                    kind.data(), static_cast<int>(run_id.size()), run_id.data());
  const std::size_t length = std::min(room, written > 0 ? static_cast<std::size_t>(written) : 0u);
  std::memcpy(address.sun_path + 1, name, length);
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

namespace {

// This process's claims on report files, by path (the registry leaked: claims may be asked for from
// an exit handler).
struct PathClaims {
  std::mutex mutex;
  pid_t owner = 0;  // whose claims `held` are: a child made by fork() holds none (it closed them)
  std::vector<std::pair<std::string, std::unique_ptr<RunClaim>>> held;
};

PathClaims& path_claims() {
  static auto* claims = new PathClaims;
  return *claims;
}

// FNV-1a of `text`, in 16 hex digits: a socket name for any path (an abstract name holds 107 bytes).
std::string name_of(const std::string& text) {
  std::uint64_t h = 14695981039346656037u;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211u;
  }
  char out[17] = {};
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace

bool claim_path(const std::string& path) noexcept {
  try {
    PathClaims& claims = path_claims();
    std::lock_guard lock(claims.mutex);
    if (claims.owner != getpid()) {
      claims.held.clear();
      claims.owner = getpid();
    }
    for (const auto& [claimed, claim] : claims.held) {
      if (claimed == path) return true;
    }
    auto claim = std::make_unique<RunClaim>(name_of(path), "file");
    if (!claim->held()) return false;
    claims.held.emplace_back(path, std::move(claim));
    return true;
  } catch (...) {  // out of memory: as if claims could not be tried
    return true;
  }
}

void release_path_claims() noexcept {
  PathClaims& claims = path_claims();
  std::lock_guard lock(claims.mutex);
  claims.held.clear();
}

}  // namespace cuscope::inline v0::detail

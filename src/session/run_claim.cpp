// session/run_claim.cpp — see run_claim.hpp.
#include "session/run_claim.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

namespace cuscope::inline v0::detail {

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
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&address), size) == 0) return;
  held_ = errno != EADDRINUSE;  // another process holds it; any other refusal: as before claims
  close(fd_);
  fd_ = -1;
}

RunClaim::~RunClaim() {
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

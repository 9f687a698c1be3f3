// inject/domains.cpp — the table of NVTX domains by name, and CUSCOPE_NVTX_DOMAINS, the filter that
// leaves domains out.
//
// Runs when a module creates a domain or hands NVTX's tables over, never on a push or pop. It must
// never free a Domain nor hold its lock across fork() unprepared: a child forked while another
// thread creates a domain finds the lock free.
#include "inject/domains.hpp"

#include <pthread.h>

#include <cuscope/session.hpp>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/names.hpp"
#include "session/session.hpp"

namespace cuscope::inline v0::detail::inject {
namespace {

struct Domains {
  std::mutex mutex;
  std::unordered_map<std::string, Domain*> by_name;  // guarded by mutex
  std::uint16_t next_index = 1;                      // guarded by mutex
  std::vector<std::string> filter;                   // CUSCOPE_NVTX_DOMAINS, read once
  bool default_counted = true;

  bool keeps(std::string_view name) const {
    if (filter.empty()) return true;
    const bool excluding = filter.front().front() == '-';
    for (const std::string& f : filter) {
      if ((excluding ? std::string_view(f).substr(1) : std::string_view(f)) == name) return !excluding;
    }
    return excluding;
  }
};

Domains* g_domains = nullptr;  // set once, by domains()

// fork(): the lock is held across it, so a child forked while another thread creates a domain
// finds it free. Taken before the name table's lock (whose handlers are installed first, and
// prepare handlers run in the reverse order), the order domain_named() takes them in.
void domains_fork_prepare() { g_domains->mutex.lock(); }
void domains_fork_release() { g_domains->mutex.unlock(); }

Domains& domains() {
  static auto* d = [] {
    auto* made = new Domains;
    made->filter = options_from_env().nvtx_domains;  // bad values are reported by the session's start
    made->default_counted = made->keeps("default");
    g_domains = made;
    static_cast<void>(process_names());  // its fork handlers first (see above)
    pthread_atfork(domains_fork_prepare, domains_fork_release, domains_fork_release);
    return made;
  }();
  return *d;
}

}  // namespace

std::atomic<bool> g_default_counted{true};

void read_domain_filter() { g_default_counted.store(domains().default_counted, std::memory_order_relaxed); }

Domain* domain_named(std::string name) {
  Domains& all = domains();
  std::lock_guard lock(all.mutex);
  if (auto it = all.by_name.find(name); it != all.by_name.end()) return it->second;
  auto* d = new Domain;
  d->counted = name != "cuscope" && all.keeps(name);
  d->name_id = process_names().intern(name);
  d->index = all.next_index < kSharedDomain ? all.next_index++ : kSharedDomain;
  all.by_name.emplace(std::move(name), d);
  return d;
}

}  // namespace cuscope::inline v0::detail::inject

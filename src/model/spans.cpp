// model/spans.cpp — NVTX start/end ranges, aggregated by (domain, name). Not the scope hot path:
// start/end take the table's mutex.
#include "model/spans.hpp"

#include <pthread.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace cuscope::model {
namespace {

std::uint64_t key_of(std::uint32_t domain_id, std::uint32_t name_id) {
  return std::uint64_t{domain_id} << 32 | name_id;
}

// Every live table, so that fork() can hold their locks.
std::mutex& registry_mutex() {
  static auto* m = new std::mutex;  // leaked: tables may be destroyed during static destruction
  return *m;
}
std::vector<SpanTable*>& registry() {
  static auto* r = new std::vector<SpanTable*>;
  return *r;
}

}  // namespace

SpanTable::SpanTable() {
  std::lock_guard lock(registry_mutex());
  static const bool registered = [] {
    return pthread_atfork(fork_prepare, fork_release, fork_release) == 0;
  }();
  (void)registered;
  registry().push_back(this);
}

SpanTable::~SpanTable() { retire(); }

void SpanTable::retire() noexcept {
  std::lock_guard lock(registry_mutex());
  auto& r = registry();
  if (const auto it = std::find(r.begin(), r.end(), this); it != r.end()) r.erase(it);
}

std::size_t SpanTable::held_at_fork_for_testing() noexcept {
  std::lock_guard lock(registry_mutex());
  return registry().size();
}

void SpanTable::fork_prepare() noexcept {
  registry_mutex().lock();
  for (SpanTable* t : registry()) t->mutex_.lock();
}

void SpanTable::fork_release() noexcept {
  for (SpanTable* t : registry()) t->mutex_.unlock();
  registry_mutex().unlock();
}

std::uint64_t SpanTable::start(std::uint32_t domain_id, std::uint32_t name_id, std::uint64_t thread,
                               std::uint64_t now_ns) {
  std::lock_guard lock(mutex_);
  if (open_.size() >= kMaxOpen) {
    ++dropped_;
    return 0;
  }
  const std::uint64_t id = next_id_++;
  open_.emplace(id, Open{key_of(domain_id, name_id), thread, now_ns});
  return id;
}

bool SpanTable::end(std::uint64_t id, std::uint64_t thread, std::uint64_t now_ns) {
  std::lock_guard lock(mutex_);
  const auto it = open_.find(id);
  if (it == open_.end()) {
    ++unmatched_ends_;
    return false;
  }
  const Open span = it->second;
  open_.erase(it);
  // Host clocks read on two threads may disagree by a little: a negative span is 0, not 2^64.
  const std::uint64_t ns = now_ns > span.start_ns ? now_ns - span.start_ns : 0;
  Row& row = rows_[span.key];
  DurationStats& d = row.host;
  d.min_ns = d.count == 0 ? ns : std::min(d.min_ns, ns);
  d.max_ns = std::max(d.max_ns, ns);
  ++d.count;
  d.total_ns += ns;
  if (thread != span.thread) ++row.cross_thread;
  return true;
}

void SpanTable::build(const NameTable& names, Report& report) const {
  absl::flat_hash_map<std::uint64_t, SpanStats> by_key;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, row] : rows_) {
      SpanStats& s = by_key[key];
      s.host = row.host;
      s.cross_thread = row.cross_thread;
    }
    for (const auto& [id, span] : open_) ++by_key[span.key].open;
    report.diagnostics.unmatched_span_ends = unmatched_ends_;
    report.diagnostics.spans_dropped = dropped_;
  }
  // Names are read outside the lock: the name table has its own, and reading is lock-free.
  std::vector<std::pair<std::uint64_t, SpanStats>> spans;
  spans.reserve(by_key.size());
  for (auto& [key, s] : by_key) {
    const auto domain_id = static_cast<std::uint32_t>(key >> 32);
    const auto name_id = static_cast<std::uint32_t>(key);
    if (domain_id != 0) s.domain = names.name(domain_id);
    s.name = names.name(name_id);
    spans.emplace_back(key, std::move(s));
  }
  // The key breaks the last ties (an adjusted and a genuine name can print alike), so the order
  // never depends on the hash map's.
  std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
    if (a.second.host.total_ns != b.second.host.total_ns)
      return a.second.host.total_ns > b.second.host.total_ns;
    return std::tie(a.second.domain, a.second.name, a.first) <
           std::tie(b.second.domain, b.second.name, b.first);
  });
  report.spans.clear();
  report.spans.reserve(spans.size());
  for (auto& [key, s] : spans) report.spans.push_back(std::move(s));
}

}  // namespace cuscope::model

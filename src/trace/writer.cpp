// trace/writer.cpp — trace mode's writer (see writer.hpp). record() is the hot path: no lock and
// no allocation once the calling thread has its ring; everything else runs on the writer thread
// or under the activity lock, which scopes never take. How each activity record is encoded is
// writer_activity.cpp's.
#include "trace/writer.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "trace/summary_record.hpp"

namespace cuscope::trace {

std::atomic<Writer*> g_writer{nullptr};
__thread HotRing t_hot_ring CUSCOPE_HOT_TLS = {nullptr, 0};

namespace {

// Writers alive, by id. A thread's ring outlives its writer when the writer is destroyed first
// (tests; a session's writer is never destroyed): the thread then frees it itself.
std::mutex g_live_mutex;
std::vector<std::uint64_t>* g_live = new std::vector<std::uint64_t>;  // leaked: used at thread exit
std::atomic<std::uint64_t> g_next_id{1};

bool alive(std::uint64_t id) { return std::find(g_live->begin(), g_live->end(), id) != g_live->end(); }

// The calling thread's ring (t_hot_ring). A thread that exits, or moves on to another writer,
// hands its ring back: released, for its writer to free once drained, or freed here.
void hand_back() {
  Writer::Ring* ring = t_hot_ring.ring;
  if (ring == nullptr) return;
  std::lock_guard lock(g_live_mutex);
  if (alive(t_hot_ring.writer_id)) {
    Writer::release(ring);
  } else {
    Writer::free(ring);
  }
  t_hot_ring = {nullptr, 0};
}
// Hands the ring back at thread exit (ring_for_this_thread arms it): by a pthread key's destructor,
// which glibc runs after every thread_local destructor of the thread, as make_thread_owned() frees
// the other per-thread objects (producers/hot_tls.hpp). A thread_local destroyed after the ring was
// made (one built before the thread's first scope) may still open a scope in its destructor: with a
// thread_local of its own, the ring would have gone back before it, and the ring that scope made
// again was never handed back (the writer kept draining it). A ring made again in a key destructor
// is set on the key again, so glibc hands it back in its next round.
void hand_back_at_exit(void*) { hand_back(); }
struct HandBackKey {
  pthread_key_t key{};
  bool made = false;
};
const HandBackKey& hand_back_key() {
  static const HandBackKey k = [] {
    HandBackKey h;
    h.made = pthread_key_create(&h.key, &hand_back_at_exit) == 0;
    return h;
  }();
  return k;
}
// Arms the calling thread's hand-back; without a key (the process used them up), a thread_local's
// destructor does it, in C++'s order, as before.
void arm_hand_back() {
  if (const HandBackKey& k = hand_back_key(); k.made && pthread_setspecific(k.key, &t_hot_ring) == 0) return;
  struct HandBackAtExit {
    ~HandBackAtExit() { hand_back(); }
  };
  static thread_local HandBackAtExit hand_back_at_exit_fallback;
  static_cast<void>(&hand_back_at_exit_fallback);
}

}  // namespace

std::unique_ptr<Writer> Writer::open(const std::string& path, std::uint64_t limit_bytes,
                                     const model::NameTable& names, std::string* error) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    if (error != nullptr) *error = "cannot open '" + path + "' for writing";
    return nullptr;
  }
  std::unique_ptr<Writer> w(new Writer(f, limit_bytes, names));
  std::string header(kMagic, sizeof(kMagic));
  Encoder e(header);
  e.put(kVersion);
  e.put(kHeaderBytes);
  if (std::fwrite(header.data(), 1, header.size(), f) != header.size()) {
    if (error != nullptr) *error = "cannot write to '" + path + "'";
    return nullptr;
  }
  w->written_.store(header.size(), std::memory_order_relaxed);
  return w;
}

Writer::Writer(std::FILE* file, std::uint64_t limit_bytes, const model::NameTable& names)
    : id_(g_next_id.fetch_add(1)), file_(file), limit_bytes_(limit_bytes), names_(names) {
  std::lock_guard lock(g_live_mutex);
  g_live->push_back(id_);
}

Writer::~Writer() {
  if (thread_.joinable()) finish_events();
  if (file_ != nullptr) std::fclose(file_);
  std::lock_guard lock(g_live_mutex);
  std::erase(*g_live, id_);
  // Rings still held by their threads are theirs to free now (ThreadRing::hand_back).
  for (Ring* r : rings_)
    if (r->released.load(std::memory_order_acquire)) delete r;
}

void Writer::release(Ring* r) { r->released.store(true, std::memory_order_release); }
void Writer::free(Ring* r) { delete r; }

void Writer::meta(std::string_view key, std::string_view value) {
  std::string out;
  Encoder e(out);
  const std::size_t at = e.begin(RecordType::Meta);
  e.str(key);
  e.str(value);
  e.finish(at);
  put_record(out, 1);
}

void Writer::start() {
  thread_ = std::thread([this] { loop(); });
}

Writer::Ring* Writer::ring_for_this_thread() noexcept {
  if (!accepting_.load(std::memory_order_acquire)) return nullptr;
  try {
    auto ring = std::make_unique<Ring>();
    Ring* r = ring.get();
    {
      std::lock_guard lock(rings_mutex_);
      rings_.push_back(r);
    }
    ring.release();
    hand_back();
    arm_hand_back();
    t_hot_ring = {r, id_};
    return r;
  } catch (...) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
}

void Writer::attach_this_thread(std::uint32_t slot, std::uint64_t ns) noexcept {
  if (t_hot_ring.writer_id == id_ || ring_for_this_thread() == nullptr) return;
  record(ScopeKind::Attach, slot, 0, ns, static_cast<std::uint64_t>(::gettid()));  // a fresh ring has room
}

bool Writer::this_thread_attached() const noexcept { return t_hot_ring.writer_id == id_; }

std::size_t Writer::rings_for_testing() const {
  std::lock_guard lock(rings_mutex_);
  return rings_.size();
}

void Writer::record_slow(ScopeKind kind, std::uint32_t slot, std::uint32_t arg, std::uint64_t ns,
                         std::uint64_t value) noexcept {
  if (t_hot_ring.writer_id != id_) {
    attach_this_thread(slot, ns);  // a thread attached before this writer opened
    if (t_hot_ring.writer_id != id_) return;
  }
  Ring* r = t_hot_ring.ring;
  const std::uint64_t h = r->head.load(std::memory_order_relaxed);
  if (h - r->cached_tail >= kRingEvents) {
    r->cached_tail = r->tail.load(std::memory_order_acquire);
    if (h - r->cached_tail >= kRingEvents) {
      r->dropped.store(r->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return;
    }
  }
  record(kind, slot, arg, ns, value);  // room now: the inline path
}

// --- the writer thread ---

void Writer::loop() {
  std::unique_lock lock(wake_mutex_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(5));
    const std::uint64_t n = ++passes_started_;
    lock.unlock();
    pass();
    lock.lock();
    passes_done_ = n;
    passed_.notify_all();
  }
  passed_.notify_all();
}

void Writer::pass_now() {
  std::unique_lock lock(wake_mutex_);
  if (stop_ || !thread_.joinable()) return;
  const std::uint64_t want = passes_started_ + 1;
  wake_.notify_all();
  passed_.wait_for(lock, std::chrono::seconds(1), [&] { return stop_ || passes_done_ >= want; });
}

void Writer::put_record(const std::string& bytes, std::uint64_t events) {
  const std::uint64_t budget =
      limit_bytes_ > 2 * kEndReserveBytes ? limit_bytes_ - kEndReserveBytes : limit_bytes_ / 2;
  const std::uint64_t w = written_.load(std::memory_order_relaxed);
  if (full_ || io_failed_ || w + bytes.size() > budget) {
    full_ = true;
    dropped_.fetch_add(events, std::memory_order_relaxed);
    return;
  }
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    io_failed_ = true;
    dropped_.fetch_add(events, std::memory_order_relaxed);
    return;
  }
  written_.store(w + bytes.size(), std::memory_order_relaxed);
}

void Writer::name_record(std::uint32_t id) {
  if (id < named_.size() && named_[id]) return;
  if (id >= named_.size()) named_.resize(id + 1024, false);
  named_[id] = true;
  Encoder e(names_out_);
  const std::size_t at = e.begin(RecordType::Name);
  e.put(id);
  e.str(names_.name(id));
  e.finish(at);
}

void Writer::flush_scope_batch() {
  if (batch_events_ == 0) return;
  // Names first: a reader knows every id before the events that use it.
  for (std::size_t at = 0; at < names_out_.size();) {
    std::uint32_t n = 0;
    std::memcpy(&n, names_out_.data() + at + 4, 4);
    put_record(names_out_.substr(at, kRecordHeaderBytes + n), 1);
    at += kRecordHeaderBytes + n;
  }
  names_out_.clear();
  std::string out;
  Encoder e(out);
  const std::size_t at = e.begin(RecordType::ScopeEvents);
  e.put(batch_events_);
  out += batch_;
  e.finish(at);
  put_record(out, batch_events_);
  batch_.clear();
  batch_events_ = 0;
}

void Writer::drain(Ring& ring) {
  const std::uint64_t head = ring.head.load(std::memory_order_acquire);
  std::uint64_t tail = ring.tail.load(std::memory_order_relaxed);
  constexpr std::uint32_t kBatchEvents = (kMaxRecordBytes - 64) / kScopeEventBytes;
  for (; tail != head; ++tail) {
    const ScopeEvent& ev = ring.events[tail & (kRingEvents - 1)];
    const ScopeKind k = kind_of(ev);
    if (k == ScopeKind::Enter || k == ScopeKind::Count) name_record(ev.arg);
    char bytes[kScopeEventBytes];
    std::memcpy(bytes, &ev, kScopeEventBytes);
    batch_.append(bytes, kScopeEventBytes);
    if (++batch_events_ == kBatchEvents) flush_scope_batch();
  }
  ring.tail.store(tail, std::memory_order_release);
}

void Writer::pass() {
  std::string chunk;
  {
    std::lock_guard lock(activity_mutex_);
    chunk.swap(activity_);
    activity_records_ = 0;
  }
  std::vector<Ring*> rings;
  {
    std::lock_guard lock(rings_mutex_);
    rings = rings_;
  }
  std::vector<Ring*> done;
  for (Ring* r : rings) {
    const bool released = r->released.load(std::memory_order_acquire);
    drain(*r);
    if (released) done.push_back(r);
  }
  flush_scope_batch();
  for (std::size_t at = 0; at < chunk.size();) {
    std::uint32_t n = 0;
    std::memcpy(&n, chunk.data() + at + 4, 4);
    put_record(chunk.substr(at, kRecordHeaderBytes + n), 1);
    at += kRecordHeaderBytes + n;
  }
  // Each pass in the file, not in stdio's buffer: a program killed later leaves all of it.
  if (!io_failed_ && std::fflush(file_) != 0) io_failed_ = true;
  if (done.empty()) return;
  std::lock_guard lock(rings_mutex_);
  for (Ring* r : done) {
    dropped_.fetch_add(r->dropped.load(std::memory_order_relaxed), std::memory_order_relaxed);
    std::erase(rings_, r);
    delete r;
  }
}

void Writer::finish_events() {
  accepting_.store(false, std::memory_order_release);
  if (thread_.joinable()) {
    {
      std::lock_guard lock(wake_mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  pass();
}

std::uint64_t Writer::dropped() const {
  std::uint64_t n = dropped_.load(std::memory_order_relaxed);
  std::lock_guard lock(rings_mutex_);
  for (const Ring* r : rings_) n += r->dropped.load(std::memory_order_relaxed);
  return n;
}

bool Writer::close(const Summary& s) {
  if (file_ == nullptr) return false;
  if (thread_.joinable() || accepting_.load(std::memory_order_acquire)) finish_events();
  std::string out;
  Encoder e(out);
  std::size_t at = e.begin(RecordType::Summary);
  encode_summary(e, s);
  e.finish(at);
  at = e.begin(RecordType::End);
  e.put(dropped());
  e.finish(at);
  // The end is always written (its room was kept), unless the disk itself refused.
  const bool ok = !io_failed_ && std::fwrite(out.data(), 1, out.size(), file_) == out.size();
  if (ok) written_.fetch_add(out.size(), std::memory_order_relaxed);
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  return ok && closed;
}

}  // namespace cuscope::trace

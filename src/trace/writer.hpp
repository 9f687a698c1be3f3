// trace/writer.hpp — trace mode's writer: per-thread rings filled by the scopes' hot path, a
// locked chunk filled by the activity decoder and the step marks, and one thread that moves both
// to the file, in an order a reader can replay into the model.
//
// Hot path (record()): a thread-local pointer check and one slot of the thread's own ring, no
// lock, no allocation after the thread's first event. A full ring drops the event, counted.
// The file is bounded: records past the limit are dropped and counted, and the End record and the
// report say how many. The writer thread does all I/O; nothing here ever blocks a scope.
//
// Order: each pass first takes the activity chunk, then drains every ring, then writes the rings'
// events before the chunk. Every scope event that happened before an activity record was taken is
// therefore in the file before it (a kernel's external correlation names an instance that exists).
#pragma once

#include <absl/container/flat_hash_map.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model/events.hpp"
#include "model/names.hpp"
#include "model/range_tree.hpp"
#include "producers/hot_tls.hpp"
#include "trace/format.hpp"

namespace cuscope::trace {

class Writer {
 public:
  static constexpr std::uint64_t kDefaultLimitBytes = 256ull << 20;
  static constexpr std::uint32_t kRingEvents = 1u << 16;              ///< per thread (1.5 MiB)
  static constexpr std::size_t kMaxPendingActivityBytes = 64u << 20;  ///< between two passes
  static constexpr std::uint64_t kEndReserveBytes = 1u << 20;         ///< kept for Summary and End

  /// A writer to `path` (truncated), bounded to `limit_bytes`; nullptr with `error` set when the
  /// file cannot be opened. `names` resolves the name ids of scope events (lock-free reads).
  static std::unique_ptr<Writer> open(const std::string& path, std::uint64_t limit_bytes,
                                      const model::NameTable& names, std::string* error);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Session metadata; call before start().
  void meta(std::string_view key, std::string_view value);
  /// Starts the writer thread.
  void start();

  /// A host event of the calling thread (hot path, inline below).
  void record(ScopeKind kind, std::uint32_t slot, std::uint32_t arg, std::uint64_t ns,
              std::uint64_t value) noexcept;

  // The activity stream, in the order the aggregator sees it (any thread, serialized here).
  void on(const model::ApiCall& a);
  void on(const model::ExternalCorrelation& e);
  void on(const model::GraphNodeCloned& c);  ///< after the GraphNode event of its original
  void on(const model::GraphExecNodes& n);   ///< after the GraphNodeCloned of its nodes
  /// A graph node made on a thread with no scope state: its GraphNode event with thread slot 0, in
  /// the activity stream (before the node's clones), never in a thread ring (whose first event
  /// names the thread's tree).
  void unscoped_graph_node(std::uint32_t graph_id, std::uint64_t node_id);
  void on(const model::GraphExecUpdated& u);
  void on(const model::KernelActivity& k);
  void on(const model::MemcpyActivity& m);
  void on(const model::MemsetActivity& m);
  void on(const model::SyncActivity& s);
  void on(const model::MemoryActivity& m);
  void on(const model::OverheadActivity& o);
  void buffer_end(std::uint64_t dropped, std::uint64_t unknown);
  void final_flush();
  /// A scope's CUDA-event time, for the range `node` (resolver thread).
  void gpu_time(const model::Node* node, std::uint64_t ns);
  /// A step mark: step number `step` (1-based) ended at `now_ns`; 0 is the session's start. `recording`:
  /// whether the steps from now on are inside the window.
  void step(std::uint64_t now_ns, std::uint64_t step, bool recording);
  /// The program switched recording on or off (set_enabled()) at `now_ns`.
  void recording(std::uint64_t now_ns, bool on);
  /// CUPTI attached again at `now_ns` after a detach between step windows (its ids start again).
  void reattached(std::uint64_t now_ns);
  /// Waits (1 s at most) for a whole pass of the writer thread that begins after this call: every
  /// ring event and activity record so far is then in the file, before any recorded later.
  void pass_now();

  /// Stops the writer thread after writing everything recorded so far; record() drops from now.
  void finish_events();
  /// Writes the session's summary and the End record and closes the file (finishing the events first).
  /// Returns false when the file could not be written completely.
  bool close(const Summary& summary);

  /// Records that did not fit (file bound, full ring, pending activity bound), so far.
  [[nodiscard]] std::uint64_t dropped() const;
  [[nodiscard]] std::uint64_t bytes_written() const { return written_.load(std::memory_order_relaxed); }

  /// A thread's ring: its owner writes at head, the writer thread reads at tail. A thread hands
  /// its own back with release() or free().
  struct Ring {
    // Storage the owner writes before the writer reads it, so never filled in advance: `new
    // ScopeEvent[n]` would zero 1.5 MiB (ScopeEvent's members have initializers), about 1 ms of
    // the thread's first scope; untouched, its pages come as the ring first fills.
    struct FreeEvents {
      void operator()(ScopeEvent* p) const noexcept { ::operator delete[](p); }
    };
    std::unique_ptr<ScopeEvent[], FreeEvents> events{
        static_cast<ScopeEvent*>(::operator new[](sizeof(ScopeEvent) * kRingEvents))};
    std::atomic<std::uint64_t> head{0};  // written by the owner thread
    std::atomic<std::uint64_t> tail{0};  // written by the writer thread
    std::uint64_t cached_tail = 0;       // owner thread only
    std::atomic<std::uint64_t> dropped{0};
    std::atomic<bool> released{false};  // the owner thread exited: freed once drained
  };
  static void release(Ring* r);
  static void free(Ring* r);
  /// The calling thread's ring in this writer, made now with its Attach event (slot `slot`, at `ns`)
  /// unless the thread has one: for a thread attached to the session (session/threads.cpp), before
  /// its first scope reads the clock, so that making the ring is never inside a range's time. A
  /// thread attached before the writer opened makes it at its first event instead.
  void attach_this_thread(std::uint32_t slot, std::uint64_t ns) noexcept;
  /// Whether the calling thread has its ring in this writer (tests).
  [[nodiscard]] bool this_thread_attached() const noexcept;
  /// Rings this writer holds now: those of live threads, and those handed back not yet drained (tests).
  [[nodiscard]] std::size_t rings_for_testing() const;

 private:
  Writer(std::FILE* file, std::uint64_t limit_bytes, const model::NameTable& names);
  Ring* ring_for_this_thread() noexcept;
  void put_graph_ids(const std::vector<std::uint64_t>& ids);  // u32 n, n × u64 (activity_mutex_ held)
  // record() past its inline part: the thread's first event in this writer, or a full ring.
  [[gnu::noinline]] void record_slow(ScopeKind kind, std::uint32_t slot, std::uint32_t arg, std::uint64_t ns,
                                     std::uint64_t value) noexcept;
  void loop();
  void pass();
  void drain(Ring& ring);
  void put_record(const std::string& bytes, std::uint64_t events);  // writer thread only
  void flush_scope_batch();
  std::size_t begin_activity(RecordType t);  // activity_mutex_ held
  void end_activity(std::size_t at);         // activity_mutex_ held
  // One activity record of fixed-size fields, in order, under activity_mutex_.
  template <class... Fields>
  void put_activity(RecordType t, Fields... fields) {
    std::lock_guard lock(activity_mutex_);
    const std::size_t at = begin_activity(t);
    Encoder e(activity_);
    (e.put(fields), ...);
    end_activity(at);
  }
  void name_record(std::uint32_t id);

  const std::uint64_t id_;  // unique per writer: a thread's ring is found by it, never by address
  std::FILE* file_;
  const std::uint64_t limit_bytes_;
  const model::NameTable& names_;
  std::atomic<std::uint64_t> written_{0};
  std::atomic<std::uint64_t> dropped_{0};
  bool full_ = false;  // writer thread only: once a record did not fit, the rest is dropped
  bool io_failed_ = false;

  mutable std::mutex rings_mutex_;
  std::vector<Ring*> rings_;  // in the order threads first recorded; guarded by rings_mutex_
  std::atomic<bool> accepting_{true};

  std::mutex activity_mutex_;
  std::string activity_;  // encoded records waiting for the next pass; guarded by activity_mutex_
  std::uint64_t activity_records_ = 0;
  absl::flat_hash_map<std::string, std::uint32_t> kernel_names_;  // guarded by activity_mutex_

  // Writer thread only.
  std::string batch_;
  std::uint32_t batch_events_ = 0;
  std::string names_out_;
  std::vector<bool> named_;

  std::thread thread_;
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  std::condition_variable passed_;    // a pass ended (pass_now)
  std::uint64_t passes_started_ = 0;  // guarded by wake_mutex_
  std::uint64_t passes_done_ = 0;     // guarded by wake_mutex_: the number of the last pass ended
  bool stop_ = false;
};

/// The writer scopes record into while trace mode is on (nullptr otherwise).
extern std::atomic<Writer*> g_writer;

/// The calling thread's ring and the writer it belongs to: a plain __thread pair (initial-exec,
/// no TLS wrapper), read by the inline record(). Who frees the ring at thread exit lives in
/// writer.cpp (set up by the thread's first event).
struct HotRing {
  Writer::Ring* ring;
  std::uint64_t writer_id;
};
extern __thread HotRing t_hot_ring CUSCOPE_HOT_TLS;

[[gnu::always_inline]] inline void Writer::record(ScopeKind kind, std::uint32_t slot, std::uint32_t arg,
                                                  std::uint64_t ns, std::uint64_t value) noexcept {
  Ring* r = t_hot_ring.ring;
  std::uint64_t h = 0;
  if (t_hot_ring.writer_id != id_ ||
      (h = r->head.load(std::memory_order_relaxed)) - r->cached_tail >= kRingEvents) [[unlikely]]
    return record_slow(kind, slot, arg, ns, value);  // a tail call: the path above saves no register
  r->events[h & (kRingEvents - 1)] = ScopeEvent{event_word(kind, slot), arg, ns, value};
  r->head.store(h + 1, std::memory_order_release);
}

/// Writer::attach_this_thread() of g_writer, if there is one.
inline void attach_this_thread(std::uint32_t slot, std::uint64_t ns) noexcept {
  if (Writer* w = g_writer.load(std::memory_order_acquire)) w->attach_this_thread(slot, ns);
}

/// Hot path: records into g_writer if there is one.
[[gnu::always_inline]] inline void record(ScopeKind kind, std::uint32_t slot, std::uint32_t arg,
                                          std::uint64_t ns, std::uint64_t value = 0) noexcept {
  if (Writer* w = g_writer.load(std::memory_order_acquire)) w->record(kind, slot, arg, ns, value);
}

}  // namespace cuscope::trace

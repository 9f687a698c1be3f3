// trace/format.hpp — the trace file (CUSCOPE_TRACE): what the producers produced, in the order
// the model must see it, so that a reader can replay it into the same model as the live session.
//
// Layout (every integer little-endian, no padding):
//   header  : magic "CUSCOPE-TRACE\n\0\0" (16 bytes), u32 version, u32 header bytes (24)
//   records : u32 type, u32 payload bytes, payload
// The last record is End; a file without it was cut short (the process died, or the disk
// filled). Strings are u32 length + bytes. Every record is bounded (kMaxRecordBytes) so that a
// reader needs bounded memory whatever the file's size.
//
// Nothing here knows CUDA, CUPTI or the session: the writer and the reader both build on it.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <cuscope/report.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace cuscope::trace {

inline constexpr char kMagic[16] = {'C', 'U', 'S', 'C', 'O', 'P',  'E', '-',
                                    'T', 'R', 'A', 'C', 'E', '\n', 0,   0};
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::uint32_t kHeaderBytes = 24;
inline constexpr std::uint32_t kRecordHeaderBytes = 8;
inline constexpr std::uint32_t kMaxRecordBytes = 1u << 20;
inline constexpr std::uint32_t kMaxPathDepth = 256;  ///< range paths are at most this deep (GpuTime)
/// A Memcpy record's flags: the copy made the host wait (model::MemcpyActivity::blocking).
inline constexpr std::uint8_t kCopyBlocking = 1;

enum class RecordType : std::uint32_t {
  Meta = 1,         ///< string key, string value: version, clock, options, device, max_depth
  Name = 2,         ///< u32 id, string: a range or counter name, before its first use
  ScopeEvents = 3,  ///< u32 count, then count ScopeEvent (24 bytes each)
  KernelName = 4,   ///< u32 id, string: a kernel name as the producer got it (maybe mangled)
  /// u64 correlation, start, end; u32 name id, grid[3], block[3], registers, static and dynamic
  /// shared bytes, device, stream; then, for a graph's kernel only, u64 graph node id, u32 graph id,
  /// and u8 1 for a device-launched graph's (kernels outside graphs, and files before graphs, have
  /// no such tail: ids 0; host-launched graph kernels stop after the graph id)
  Kernel = 5,
  Memcpy = 6,       ///< u64 correlation, start, end, bytes; u8 kind; u32 device, stream; then,
                    ///< optionally (older files lack it), u8 source and destination memory kinds;
                    ///< then, optionally (files before 2026-11-27 lack it: 0), u8 flags, bit 0 blocking
  Memset = 7,       ///< u64 correlation, start, end, bytes; u32 device, stream
  Sync = 8,         ///< u64 correlation, start, end
  Memory = 9,       ///< u64 correlation, timestamp, address, bytes; u8 is_alloc; u32 device
  Overhead = 10,    ///< u64 start, end
  ApiCall = 11,     ///< u64 correlation, start, end
  External = 12,    ///< u64 correlation, instance
  BufferEnd = 13,   ///< u64 dropped, unknown: the end of one decoded activity buffer
  FinalFlush = 14,  ///< records after it with a zero timestamp were running at exit
  Step = 15,        ///< u64 now_ns, step, u8 recording: step `step` ended (0: the session began)
  Summary = 16,     ///< the session's own fields of its exit report (see Summary)
  End = 17,         ///< u64 records dropped (trace bound or a full thread buffer)
  GpuTime = 18,     ///< u64 ns, u32 n, n u32 name ids: a scope's CUDA-event time, by its range path
  /// u64 node id, u64 original node id: a CUDA graph node was cloned; then, optionally (files
  /// before exec updates were traced lack it), u32 the id of the exec the clone belongs to
  GraphClone = 19,
  /// u32 exec id, u32 n, n × u64 node ids: cudaGraphInstantiate made the exec of these clones
  /// (their GraphClone records came first). At most kMaxGraphIds ids; past that, none (and the
  /// record counts as a dropped one): an update of the exec then finds none of its nodes, counted.
  GraphExecNodes = 20,
  /// u32 exec id, u64 correlation, u32 n, n × u64 node ids: cudaGraphExecUpdate of the exec with
  /// the graph whose top-level nodes these are succeeded in the API call `correlation` (bounded
  /// like GraphExecNodes).
  GraphExecUpdate = 21,
  /// u64 now_ns, u8 on: the program switched recording on (1) or off (0) from now on
  /// (set_enabled(), or CUSCOPE_ENABLE=0 at the start): work launched outside every scope while it is
  /// off counts as outside the window, as between windows. Files before 2026-11-28 lack it.
  Recording = 22,
  /// u64 now_ns: CUPTI attached again after a detach between step windows or while recording was off
  /// (Options::detach_between):
  /// its correlation and graph node ids start again, so the model forgets every book keyed by them
  /// (Aggregator::reattached(): records still waiting count as unresolved). Files before 2026-11-28
  /// lack it.
  Reattach = 23,
};
inline constexpr RecordType kLastRecordType = RecordType::Reattach;
/// The most node ids a graph record holds (its payload stays under kMaxRecordBytes).
inline constexpr std::uint32_t kMaxGraphIds = (kMaxRecordBytes - 64) / 8;

/// One host event of a thread. `word` = kind (low 8 bits) | thread slot << 8.
struct ScopeEvent {
  std::uint32_t word = 0;
  std::uint32_t arg = 0;    ///< Enter, Count: name id; Exit: tree depth
  std::uint64_t ns = 0;     ///< session clock
  std::uint64_t value = 0;  ///< Enter: instance id; Count: the amount's bits (double)
};
static_assert(sizeof(ScopeEvent) == 24);
inline constexpr std::uint32_t kScopeEventBytes = 24;

enum class ScopeKind : std::uint8_t {
  Attach = 1,  ///< a thread took this slot's tree (a reused tree forgets what was open)
  Enter = 2,
  Exit = 3,
  Count = 4,
  Overflow = 5,  ///< a push() too deep to remember (counted as a depth overflow)
  /// A CUDA graph node created on this thread (arg: graph id, value: node id), tied to the range
  /// innermost on the thread at that point of its events; slot 0: created on a thread with no
  /// scope state (no range: its kernels count in the breakdown's "(unscoped)" row, as live).
  GraphNode = 6,
  /// The thread's open ranges resumed counting at a step window's start (value: the nanoseconds
  /// they were open outside the windows, moved off their host time; producers/suspended_frames.hpp).
  Shift = 7,
};

inline ScopeKind kind_of(const ScopeEvent& e) { return static_cast<ScopeKind>(e.word & 0xFF); }
inline std::uint32_t slot_of(const ScopeEvent& e) { return e.word >> 8; }
inline std::uint32_t event_word(ScopeKind k, std::uint32_t slot) {
  return static_cast<std::uint32_t>(k) | (slot << 8);
}

/// The session's fields of a report that the model does not hold (they come from the session).
struct Summary {
  std::string device, gpu_timing, activity_status, counters_status, clock;
  std::vector<std::string> notes;
  double dram_bytes_per_s = 0, fp64_flop_per_s = 0, fp32_flop_per_s = 0, fp16_flop_per_s = 0;
  std::string peaks_source;
  std::uint64_t steps = 0, recorded_steps = 0, wall_ns = 0;
  std::uint64_t cross_thread_ends = 0, stray_pops = 0, gpu_event_failures = 0, scopes_in_capture = 0;
  std::uint64_t adjusted_names = 0, name_table_full = 0, refused_buffers = 0;
  std::uint64_t window_start_step = 0, outside_window_scopes = 0, rejected_counts = 0, unrecorded_scopes = 0;
  /// NVTX start/end ranges (zero-code mode), as the report has them: an optional tail of the record
  /// (files without it read as having none). At most kMaxSummarySpans rows; `spans_cut` counts the
  /// rest, which the replay adds to the trace's dropped records.
  std::vector<SpanStats> spans;
  std::uint64_t unmatched_span_ends = 0, spans_dropped = 0, spans_cut = 0;
  /// cuscope's own processing of CUPTI's records in the live session (Diagnostics::activity_buffers,
  /// activity_processing_ns): a second optional tail, after the spans' (files from before
  /// 2026-11-27 lack it and read as 0, as their replays always showed). A reader older than a tail
  /// refuses the summary that has it ("malformed"), as with the spans' tail: the version stays 1, and
  /// a trace is read by the cuscope that wrote it or a newer one.
  std::uint64_t activity_buffers = 0, activity_processing_ns = 0;
  /// The steps cuscope's clock ended (Report::clock_steps, step_ms): a third optional tail (files
  /// from before 2026-11-28 lack it and read as 0: the program's own steps, as they all were).
  std::uint64_t clock_steps = 0, step_ms = 0;
};
inline constexpr std::size_t kMaxSummarySpans = 1024;

/// Appends little-endian fields to a byte string (x86 and every CUDA host are little-endian).
class Encoder {
 public:
  explicit Encoder(std::string& out) : out_(out) {}
  template <class T>
  void put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
  }
  void str(std::string_view s) {
    put(static_cast<std::uint32_t>(s.size()));
    out_.append(s.data(), s.size());
  }
  /// Starts a record; returns where its length goes (finish() fills it).
  std::size_t begin(RecordType t) {
    put(static_cast<std::uint32_t>(t));
    put(std::uint32_t{0});
    return out_.size();
  }
  void finish(std::size_t payload_at) {
    const auto n = static_cast<std::uint32_t>(out_.size() - payload_at);
    std::memcpy(out_.data() + payload_at - 4, &n, 4);
  }

 private:
  std::string& out_;
};

/// Reads fields from a record's payload; any read past its end sets failed() and yields zeros.
class Decoder {
 public:
  Decoder(const char* data, std::size_t size) : p_(data), end_(data + size) {}
  template <class T>
  T get() {
    T v{};
    if (static_cast<std::size_t>(end_ - p_) < sizeof(T)) {
      failed_ = true;
      p_ = end_;
      return v;
    }
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  std::string_view str() {
    const auto n = get<std::uint32_t>();
    if (static_cast<std::size_t>(end_ - p_) < n) {
      failed_ = true;
      p_ = end_;
      return {};
    }
    std::string_view s(p_, n);
    p_ += n;
    return s;
  }
  [[nodiscard]] std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }
  [[nodiscard]] const char* at() const { return p_; }
  void skip(std::size_t n) { p_ += n < left() ? n : left(); }
  [[nodiscard]] bool failed() const { return failed_; }
  [[nodiscard]] bool done() const { return !failed_ && p_ == end_; }

 private:
  const char* p_;
  const char* end_;
  bool failed_ = false;
};

}  // namespace cuscope::trace

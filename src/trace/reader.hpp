// trace/reader.hpp — reads a trace file (format.hpp) record by record, in bounded memory, and
// hands each decoded record to a visitor. Any defect (missing file, not a trace, another version,
// a record cut off or malformed, no End record) stops the read with one line saying what and
// where; nothing in a file can make it crash, allocate without bound or loop forever. A file cut
// short (no End record) can be read up to its last whole record when asked (accept_cut: the trace
// of a program that was killed or crashed).
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "model/events.hpp"
#include "trace/format.hpp"

namespace cuscope::trace {

/// What a trace holds, record by record. Names (range and kernel) are announced before use.
class Visitor {
 public:
  virtual ~Visitor() = default;
  virtual void meta(std::string_view /*key*/, std::string_view /*value*/) {}
  virtual void name(std::uint32_t /*id*/, std::string_view /*text*/) {}
  virtual void scope(const ScopeEvent& /*e*/) {}
  /// `k.name` points at the kernel's name, valid until the reader is destroyed.
  virtual void on(const model::KernelActivity& /*k*/) {}
  virtual void on(const model::ApiCall& /*a*/) {}
  virtual void on(const model::ExternalCorrelation& /*e*/) {}
  virtual void on(const model::MemcpyActivity& /*m*/) {}
  virtual void on(const model::MemsetActivity& /*m*/) {}
  virtual void on(const model::SyncActivity& /*s*/) {}
  virtual void on(const model::MemoryActivity& /*m*/) {}
  virtual void on(const model::OverheadActivity& /*o*/) {}
  virtual void on(const model::GraphNodeCloned& /*c*/) {}
  virtual void on(const model::GraphExecNodes& /*n*/) {}
  virtual void on(const model::GraphExecUpdated& /*u*/) {}
  virtual void buffer_end(std::uint64_t /*dropped*/, std::uint64_t /*unknown*/) {}
  virtual void final_flush() {}
  /// A scope's CUDA-event time for the range whose path is `names` (name ids, top-level first).
  virtual void gpu_time(std::uint64_t /*ns*/, const std::vector<std::uint32_t>& /*names*/) {}
  virtual void step(std::uint64_t /*now_ns*/, std::uint64_t /*step*/, bool /*recording*/) {}
  /// The program switched recording on or off (set_enabled()): not a step's end.
  virtual void recording(std::uint64_t /*now_ns*/, bool /*on*/) {}
  /// CUPTI attached again after a detach between step windows: its ids start again.
  virtual void reattached(std::uint64_t /*now_ns*/) {}
  virtual void summary(const Summary& /*s*/) {}
  virtual void end(std::uint64_t /*dropped*/) {}
};

class Reader {
 public:
  Reader() = default;
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  /// Opens `path` and checks its header; false with `error` set otherwise.
  bool open(const std::string& path, std::string* error);
  /// Reads from memory (the fuzzer); `data` must outlive the reader.
  bool open_memory(const std::uint8_t* data, std::size_t size, std::string* error);

  /// Visits every record up to End; false with `error` set (one line) at the first defect.
  bool read(Visitor& v, std::string* error);

  /// Whether read() accepts a file cut short (no End record, or the file ends inside a record: a
  /// program killed, crashed or still running): it then visits every whole record, returns true,
  /// and cut() says where. Off by default, when a cut file is an error. A malformed record is an
  /// error either way.
  void accept_cut(bool on) { accept_cut_ = on; }
  /// What read() found cut ("truncated: ...", the error it gives without accept_cut); "" when the
  /// file was whole.
  [[nodiscard]] const std::string& cut() const { return cut_; }

  /// Kernel names seen so far (distinct), by the id kernel records use.
  [[nodiscard]] const std::deque<std::string>& kernel_names() const { return kernel_names_; }

 private:
  bool check_header(std::string* error);
  std::size_t fill(char* out, std::size_t n);
  bool dispatch(RecordType type, Decoder& d, Visitor& v, std::string* error);

  // A cut file: with accept_cut, noted in cut_ and read() ends well; else its error.
  bool stop_at_cut(std::string message, std::string* error);

  bool accept_cut_ = false;
  std::string cut_;
  std::FILE* file_ = nullptr;
  const std::uint8_t* mem_ = nullptr;
  std::size_t mem_size_ = 0, mem_at_ = 0;
  std::uint64_t offset_ = 0;
  std::string payload_;
  std::deque<std::string> kernel_names_;  // index = id - 1; a deque: names never move
  std::vector<bool> names_;               // range/counter name ids announced
  std::vector<std::uint32_t> path_;
  model::GraphExecNodes exec_nodes_;  // reused: a graph record's ids
  model::GraphExecUpdated exec_update_;
};

/// A record type in words, for error lines.
std::string describe(RecordType t);

}  // namespace cuscope::trace

// libFuzzer target: the trace reader on arbitrary bytes. Built with clang++-14
// -fsanitize=fuzzer,address,undefined (tests/CMakeLists.txt); CTest runs it briefly over the seed
// corpus in tests/trace/corpus. Any crash, sanitizer finding, or unbounded allocation fails it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/reader.hpp"

namespace {

// Reads every field of every record, as a replay or a conversion would.
struct Touch final : cuscope::trace::Visitor {
  std::uint64_t sum = 0;
  void meta(std::string_view k, std::string_view v) override { sum += k.size() + v.size(); }
  void name(std::uint32_t id, std::string_view t) override { sum += id + t.size(); }
  void scope(const cuscope::trace::ScopeEvent& e) override { sum += e.word + e.arg + e.ns + e.value; }
  void on(const cuscope::model::KernelActivity& k) override {
    sum += k.correlation + k.start_ns + k.end_ns + std::string(k.name).size() + k.grid[2] + k.stream;
  }
  void on(const cuscope::model::ApiCall& a) override { sum += a.correlation + a.end_ns; }
  void on(const cuscope::model::ExternalCorrelation& e) override { sum += e.instance; }
  void on(const cuscope::model::MemcpyActivity& m) override { sum += m.bytes + static_cast<int>(m.kind); }
  void on(const cuscope::model::MemsetActivity& m) override { sum += m.bytes + m.stream; }
  void on(const cuscope::model::SyncActivity& s) override { sum += s.end_ns; }
  void on(const cuscope::model::MemoryActivity& m) override { sum += m.address + m.is_alloc; }
  void on(const cuscope::model::OverheadActivity& o) override { sum += o.end_ns; }
  void on(const cuscope::model::GraphNodeCloned& c) override { sum += c.node_id + c.exec_id; }
  void on(const cuscope::model::GraphExecNodes& n) override {
    for (std::uint64_t id : n.node_ids) sum += id;
  }
  void on(const cuscope::model::GraphExecUpdated& u) override {
    sum += u.exec_id + u.correlation;
    for (std::uint64_t id : u.graph_node_ids) sum += id;
  }
  void buffer_end(std::uint64_t d, std::uint64_t u) override { sum += d + u; }
  void step(std::uint64_t n, std::uint64_t s, bool r) override { sum += n + s + r; }
  void recording(std::uint64_t n, bool on) override { sum += n + on; }
  void reattached(std::uint64_t n) override { sum += n; }
  void summary(const cuscope::trace::Summary& s) override { sum += s.device.size() + s.notes.size(); }
  void end(std::uint64_t d) override { sum += d; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Strict (the default), then accepting a cut file (--partial), which must end well exactly
  // where strict reading stopped at a cut.
  for (const bool partial : {false, true}) {
    cuscope::trace::Reader reader;
    reader.accept_cut(partial);
    std::string error;
    if (!reader.open_memory(data, size, &error)) return 0;
    Touch touch;
    const bool read = reader.read(touch, &error);
    if (!read && error.empty()) __builtin_trap();  // a failure must say why
    if (read && !reader.cut().empty() && (!partial || reader.cut().rfind("truncated: ", 0) != 0))
      __builtin_trap();  // only a cut file is read short, and only when asked
    if (partial && !read && error.rfind("truncated: ", 0) == 0) __builtin_trap();  // a cut is not an error
  }
  return 0;
}

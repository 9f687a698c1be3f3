// model/events.hpp — the plain structs producers hand to the model.
//
// Range begin/end events go straight into the thread's ThreadTree (range_tree.hpp). GPU
// activities arrive here, decoded by a producer (CUPTI adapter, tests): nothing in this file
// knows CUDA or CUPTI. Times are nanoseconds on the session clock; `correlation` is the id that
// ties a record to the API call that launched it; ExternalCorrelation ties that call to the
// scope instance open on the launching thread.
#pragma once

#include <array>
#include <cstdint>
#include <cuscope/report.hpp>
#include <vector>

namespace cuscope::model {

/// An API call (runtime or driver) that was traced: it launched work with this correlation.
struct ApiCall {
  std::uint64_t correlation = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

/// The scope instance that was innermost when the API call with `correlation` was made.
struct ExternalCorrelation {
  std::uint64_t correlation = 0;
  std::uint64_t instance = 0;  ///< as pushed by the scope (range_tree.hpp: instance ids)
};

struct KernelActivity {
  std::uint64_t correlation = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  const char* name = nullptr;  ///< as the producer got it (may be mangled); must outlive the call
  std::array<std::uint32_t, 3> grid{};
  std::array<std::uint32_t, 3> block{};
  std::uint32_t registers_per_thread = 0;
  std::uint32_t static_shared_bytes = 0;
  std::uint32_t dynamic_shared_bytes = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  // Graphs (docs/cuda-graphs.md): the node that launched the kernel, 0 outside graph launches.
  std::uint64_t graph_node_id = 0;
  std::uint32_t graph_id = 0;
  bool device_launched = false;  ///< part of a graph launched from the device (CUPTI's isDeviceLaunched)
};

/// Where one side of a copy lives (CUPTI's memory kinds, in its order). A pageable host side is
/// staged through a pinned buffer, and the copy is synchronous with the host.
enum class MemoryKind : std::uint8_t {
  unknown,
  pageable,
  pinned,
  device,
  array,
  managed,
  device_static,
  managed_static
};
inline constexpr std::uint8_t kMemoryKinds = 8;

struct MemcpyActivity {
  std::uint64_t correlation = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint64_t bytes = 0;
  CopyKind kind = CopyKind::Other;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  MemoryKind src_kind = MemoryKind::unknown;
  MemoryKind dst_kind = MemoryKind::unknown;
  /// A copy between host and device (or a CUDA array) made by a synchronous call (cudaMemcpy, not
  /// cudaMemcpyAsync: CUPTI's record lacks its async flag). The calling thread waited in the call
  /// for the GPU's earlier work on the stream and for the copy itself (CUDA's "API synchronization
  /// behavior"); a synchronous device-to-device copy does not make the host wait and is not one,
  /// nor is a CUDA graph's copy node.
  bool blocking = false;
  [[nodiscard]] bool pageable() const {
    return src_kind == MemoryKind::pageable || dst_kind == MemoryKind::pageable;
  }
};

struct MemsetActivity {
  std::uint64_t correlation = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint64_t bytes = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
};

struct SyncActivity {
  std::uint64_t correlation = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

/// A device allocation or release, as the memory API saw it.
struct MemoryActivity {
  std::uint64_t correlation = 0;
  std::uint64_t timestamp_ns = 0;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;  ///< a free's may be 0: not known to its producer (live_memory.hpp)
  bool is_alloc = true;
  std::uint32_t device = 0;
};

/// Time the tracer itself spent (CUPTI buffer flushes, instrumentation, ...).
struct OverheadActivity {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

struct Node;  // range_tree.hpp

/// A graph node was created (stream capture, cudaGraphAdd*Node) on a thread whose innermost open
/// range was `range` (nullptr: none). Nodes live as long as the forest, so replays long after the
/// range ended still find it.
struct GraphNodeCreated {
  std::uint64_t node_id = 0;
  std::uint32_t graph_id = 0;
  const Node* range = nullptr;
};

/// A graph node was cloned (cudaGraphInstantiate, cudaGraphClone, cudaGraphExecUpdate): the clone
/// was captured where its original was.
struct GraphNodeCloned {
  std::uint64_t node_id = 0;
  std::uint64_t original_node_id = 0;
  std::uint32_t exec_id = 0;  ///< the executable graph the clone belongs to (0: not one, or not known)
};

/// cudaGraphInstantiate made exec `exec_id` of these clones (their GraphNodeCloned came first).
struct GraphExecNodes {
  std::uint32_t exec_id = 0;
  std::vector<std::uint64_t> node_ids;
};

/// cudaGraphExecUpdate(exec, graph) succeeded in the API call with `correlation`: launches with a
/// larger correlation run the exec's nodes with the parameters of `graph`'s nodes (`graph_node_ids`,
/// its top-level nodes). The exec's own node ids (what kernel records carry) do not change.
struct GraphExecUpdated {
  std::uint32_t exec_id = 0;
  std::uint64_t correlation = 0;
  std::vector<std::uint64_t> graph_node_ids;
};

}  // namespace cuscope::model

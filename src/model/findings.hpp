// model/findings.hpp — from numbers to answers: rules over a range's statistics, each stating an
// observation with its evidence, the likely cause and the fix, in the words of the profiling
// guides users learn from ("observation → likely cause → fix").
//
// Each rule is a small function of one range (and the report around it for context); it returns
// a finding or nothing. A rule whose data is missing (no GPU activity, no counters) stays silent:
// it never guesses. Thresholds are the named constants below (docs/findings.md); the tests try
// each rule on both sides of each threshold.
#pragma once

#include <cstdint>
#include <cuscope/report.hpp>
#include <optional>

namespace cuscope::model {

// GPU idle gaps: busy less than this share of the range's GPU span...
inline constexpr double kIdleBusyShare = 0.80;
// ...with at least this many kernels (fewer cannot leave "gaps between kernels" worth naming).
inline constexpr std::uint64_t kIdleMinKernels = 10;
// Many small kernels: at least this many of the range's own kernels, averaging under kSmallKernelNs.
inline constexpr std::uint64_t kManySmallKernels = 50;
inline constexpr std::uint64_t kSmallKernelNs = 10'000;
// Synchronization: waits that take at least this share of the range's host time.
inline constexpr double kSyncHostShare = 0.05;
// Many small copies: at least this many copies of one direction, averaging under kSmallCopyBytes.
inline constexpr std::uint64_t kManySmallCopies = 20;
inline constexpr std::uint64_t kSmallCopyBytes = 64 * 1024;
// Allocation churn: at least one cudaMalloc or cudaFree per call, over at least kChurnMinCalls calls.
inline constexpr std::uint64_t kChurnMinCalls = 2;
// Step variance (top-level ranges): the slowest call over kSlowCallFactor times the mean of the
// others, by at least kSlowCallMinNs, over at least kVarianceMinCalls calls. Which call it was
// (DurationStats::max_call) tells the cause: the first, first-time work; a later one, a hiccup.
inline constexpr std::uint64_t kVarianceMinCalls = 3;
inline constexpr double kSlowCallFactor = 2.0;
inline constexpr std::uint64_t kSlowCallMinNs = 100'000;
// NCCL: its kernels take at least this share of the range's own kernel time.
inline constexpr double kNcclShare = 0.20;
// Hardware counters: DRAM at or above this % of peak is memory-bound.
inline constexpr double kMemoryBoundPct = 60.0;
// Occupancy under this %, with kernels over kManyRegisters registers per thread.
inline constexpr double kLowOccupancyPct = 50.0;
inline constexpr std::uint32_t kManyRegisters = 128;
// Low tensor-pipe share: a compute-bound range (by its verdict) whose tensor pipe was active under
// this % of peak (the "compute" set's Tensor %). The guides' bar for GEMM kernels: "should be >60%".
inline constexpr double kLowTensorPipePct = 60.0;
// Pageable host copies: at least this many of the range's own copies with a pageable host side, or
// at least this many bytes of them.
inline constexpr std::uint64_t kPageableMinCopies = 10;
inline constexpr std::uint64_t kPageableMinBytes = 64ull << 20;
// Blocking copies: at least one synchronous copy between host and device per call (cudaMemcpy, not
// cudaMemcpyAsync), over at least kBlockingMinCalls calls.
inline constexpr std::uint64_t kBlockingMinCalls = 2;
// Serialized streams: own kernels on at least 2 streams, at least kSerialMinKernels of them, with at
// least kSerialMinOffBusiest of their time off the busiest stream (work that could overlap it), of
// which under kSerialMaxOverlap did overlap (kernel time minus GPU busy time).
inline constexpr std::uint64_t kSerialMinKernels = 10;
inline constexpr double kSerialMinOffBusiest = 0.10;
inline constexpr double kSerialMaxOverlap = 0.10;

// The rules, one each (tests call them one by one). `depth1` ranges are the top-level ones.
std::optional<Finding> launch_bound_rule(const RangeStats& r);
std::optional<Finding> idle_gaps_rule(const RangeStats& r);
std::optional<Finding> small_kernels_rule(const RangeStats& r);
std::optional<Finding> sync_rule(const RangeStats& r);
std::optional<Finding> small_copies_rule(const RangeStats& r);
std::optional<Finding> alloc_churn_rule(const RangeStats& r);
std::optional<Finding> step_variance_rule(const RangeStats& r);
std::optional<Finding> nccl_share_rule(const RangeStats& r);
std::optional<Finding> memory_bound_rule(const RangeStats& r);
std::optional<Finding> low_tensor_pipe_rule(const RangeStats& r);
std::optional<Finding> occupancy_rule(const RangeStats& r);
std::optional<Finding> pageable_copies_rule(const RangeStats& r);
std::optional<Finding> blocking_copies_rule(const RangeStats& r);
std::optional<Finding> serialized_streams_rule(const RangeStats& r);

/// Every rule on every range but the root: RangeStats::findings, warnings first, then by rule order.
void apply_findings(Report& report);

}  // namespace cuscope::model

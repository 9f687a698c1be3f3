// docs/validation/probes/tracing_toggle.cu — can a CUPTI tracer's cost be taken back between traced
// windows? On the H200 runs of 2026-11-27 a minimal client tracing kernels only took a bare launch to
// 1.07-1.10x: no tracer that traces every launch can keep a launch-bound step within 1.05x. A tracer
// that traces one window of steps in N (as Kineto's on-demand traces do) costs, between windows,
// whatever CUPTI still costs once its kinds and callbacks are off. This probe measures that, and
// what switching costs. Raw CUDA and CUPTI, no cuscope; exits 77 without a CUDA device. The CUPTI
// side (the counted records and callbacks, the Tracer that switches states) is tracing_toggle_tracer.cuh.
//
// A launch-bound loop (empty kernels by <<<>>>, the stream waited for once a batch), per launch, in
// four states of one process, cycled round by round in a changing order: `on` (CONCURRENT_KERNEL,
// MEMCPY and MEMSET records, and a subscriber's callbacks on every driver call whose name holds
// "Launch", as a tracer with launch callbacks sets CUPTI up), `paused` (those kinds disabled and
// those callbacks disabled, the subscriber kept), `unsubscribed` (kinds off and the subscriber
// gone), `finalized` (cuptiFinalize: CUPTI detached, as Kineto's teardown does); and `never`, a
// child process that never touched CUPTI (this process cannot go back to that). RESULT and RATIO
// lines (each over `never`); TOGGLE lines: the host time of each switch, medians over the rounds;
// RESULT on.first_batch: the first batch after switching on (instrumentation paid again?); COUNTS:
// kernel records and launch callbacks per state against the launches made (on: one record each;
// every other state: none). REATTACH: for each switch on after a detach, the last launch's
// correlation id before the detach and the first one after (do CUPTI's ids start again at a
// re-attach? A tracer that detaches between windows keys its books by them). GRAPHNODE: the same
// question of CUPTI's graph node ids (cuptiGetGraphNodeId of a new graph's kernel node, made just
// before the detach and just after the re-attach, outside the timed switch). CONCLUSION lines are
// computed from the data.
//
// INFLIGHT, once after the rounds and their lines: what a tracer that pauses at a step boundary,
// while the program's GPU work still runs, gets of that work. While `on`: a kernel held on the GPU
// until the host releases it (a flag in mapped host memory, set after the pause; kHoldMaxNs at
// most: a fixed 5 ms spin, on 2026-11-27's H200, had ended before the 1000 launches behind it were
// made, ~6.6 us each traced, and the check was void), then 500 empty kernels (kHeldLaunches: well
// under the launches CUDA queues before one waits for the GPU), a cudaMemsetAsync and a small
// device-to-device cudaMemcpyAsync on the same stream, not waited for; at once paused as `paused`
// is reached (kinds, then callbacks, disabled) but with no forced flush; whether the stream still
// ran then (if not, the check is void; gate= says whether the held kernel was released or timed
// out); then the held kernel released; once the stream is waited for, the kernel, set and copy
// records that came with a normal flush (cuptiActivityFlushAll(0)), and with a forced flush after
// it, and how many of them
// have a zero start or end. Then on again: one record for each of 1000 launches? CONCLUSION
// inflight is computed from those counts.
//
// DRAIN, in the same check: a normal flush made after the pause while the held kernel still runs
// (as a collector polls), and the one after the stream was waited for; after each, how many buffers
// CUPTI still holds (asked for, not handed back) beyond those it held after the forced flush before
// the held kernel. CONCLUSION drain: whether "no buffer held after a normal flush" told the running
// work from the finished, a signal a detach could wait for instead of cuscope's fixed second
// (kDetachWaitNs).
//
// Never: cuscope, or a figure not measured here.
#include <cuda_runtime.h>
#include <cupti.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "probe_common.hpp"
#include "probe_kernels.cuh"
#include "tracing_toggle_tracer.cuh"

namespace {

constexpr const char* kName = "tracing_toggle";
constexpr int kRounds = 7;
constexpr int kBatches = 10;
constexpr int kLaunchesPerBatch = 1000;
constexpr unsigned kWatchdogSeconds = 45;  // about 10 s expected; a stuck switch must not eat the lease
constexpr int kInFlightLaunches = 1000;    // empty kernels launched once on again
// Empty kernels queued behind the held kernel: well under the ~1000 launches CUDA queues before a
// launch waits for the GPU (a launch waiting behind the held kernel would wait out kHoldMaxNs).
constexpr int kHeldLaunches = 500;
constexpr std::uint64_t kHoldMaxNs = 2'000'000'000;  // the held kernel's limit: the probe never hangs on it
constexpr std::size_t kCopyBytes = 4096;

__global__ void empty_kernel() {}

using probe::hold_kernel;  // probe_kernels.cuh
using probe::spin_kernel;

using namespace toggle_probe;  // tracing_toggle_tracer.cuh

void watchdog(int) {
  static const char kText[] = "TIMEOUT: tracing_toggle ran past its watchdog; a switch of CUPTI's state is stuck\n";
  (void)!write(STDOUT_FILENO, kText, sizeof kText - 1);
  _exit(1);
}

/// One batch: kLaunchesPerBatch empty kernels, then the stream waited for; ns per launch.
double batch(cudaStream_t s) {
  const std::uint64_t start = probe::now_ns();
  for (int i = 0; i < kLaunchesPerBatch; ++i) empty_kernel<<<1, 1, 0, s>>>();
  PROBE_CUDA(cudaStreamSynchronize(s));
  return static_cast<double>(probe::now_ns() - start) / kLaunchesPerBatch;
}

std::vector<double> batches(cudaStream_t s) {
  std::vector<double> v;
  for (int b = 0; b < kBatches; ++b) v.push_back(batch(s));
  return v;
}

/// The record counters at one moment; since() gives what came between two moments.
struct Tally {
  std::uint64_t kernels = 0, memsets = 0, memcpys = 0, zero_timestamps = 0;

  static Tally now() {
    return {g_kernel_records.load(), g_memset_records.load(), g_memcpy_records.load(),
            g_zero_timestamps.load()};
  }
  Tally since(const Tally& before) const {
    return {kernels - before.kernels, memsets - before.memsets, memcpys - before.memcpys,
            zero_timestamps - before.zero_timestamps};
  }
  /// Exactly the records of `kernels_launched` kernels, one set and one copy, each with its start and end.
  bool complete(std::uint64_t kernels_launched) const {
    return kernels == kernels_launched && memsets == 1 && memcpys == 1 && zero_timestamps == 0;
  }
  /// Of the kernels_launched + 2 records expected, how many never came.
  std::uint64_t missing(std::uint64_t kernels_launched) const {
    return (kernels < kernels_launched ? kernels_launched - kernels : 0) + (memsets == 0 ? 1 : 0) +
           (memcpys == 0 ? 1 : 0);
  }
};

void print_tally(const char* key, const Tally& t, const char* what) {
  std::printf(
      "INFLIGHT %s kernel_records=%llu zero_timestamps=%llu memset_records=%llu memcpy_records=%llu | %s\n",
      key, static_cast<unsigned long long>(t.kernels), static_cast<unsigned long long>(t.zero_timestamps),
      static_cast<unsigned long long>(t.memsets), static_cast<unsigned long long>(t.memcpys), what);
}

/// Whether the stream's work is still running (cudaStreamQuery: not ready).
bool still_running(cudaStream_t s) {
  const cudaError_t status = cudaStreamQuery(s);
  if (status == cudaErrorNotReady) return true;
  PROBE_CUDA(status);
  return false;
}

void launch_empty(cudaStream_t s, int n) {
  for (int i = 0; i < n; ++i) empty_kernel<<<1, 1, 0, s>>>();
}

/// The in-flight check (the header's INFLIGHT): work traced while `on` and still running when the
/// kinds are disabled; then `on` again. Leaves CUPTI paused; its switches are not TOGGLE samples.
void in_flight(Tracer& tracer, cudaStream_t s) {
  std::vector<double> not_timed[kStates][kStates];
  char* device = nullptr;
  PROBE_CUDA(cudaMalloc(&device, 2 * kCopyBytes));
  // The held kernel's flags, in mapped host memory: [0] set by the host to release it, [1] written
  // by the kernel (1 released, 2 timed out).
  unsigned* gate = nullptr;
  unsigned* gate_on_device = nullptr;
  PROBE_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&gate), 2 * sizeof(unsigned), cudaHostAllocMapped));
  PROBE_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&gate_on_device), gate, 0));
  gate[0] = gate[1] = 0;
  // Untimed and untraced (CUPTI's kinds are off here): the first set and copy's own setup.
  PROBE_CUDA(cudaMemsetAsync(device, 0, kCopyBytes, s));
  PROBE_CUDA(cudaMemcpyAsync(device + kCopyBytes, device, kCopyBytes, cudaMemcpyDeviceToDevice, s));
  spin_kernel<<<1, 1, 0, s>>>(1000);
  PROBE_CUDA(cudaStreamSynchronize(s));

  tracer.go(kOn, not_timed);
  // One traced launch waited for and flushed: what switching on costs a first launch is paid here.
  launch_empty(s, 1);
  PROBE_CUDA(cudaStreamSynchronize(s));
  probe::Buffers::flush_forced();
  const Tally before = Tally::now();
  const long base_buffers = probe::Buffers::held();  // kept even after a forced flush
  hold_kernel<<<1, 1, 0, s>>>(gate_on_device, gate_on_device + 1, kHoldMaxNs);
  launch_empty(s, kHeldLaunches);
  PROBE_CUDA(cudaMemsetAsync(device, 0, kCopyBytes, s));
  PROBE_CUDA(cudaMemcpyAsync(device + kCopyBytes, device, kCopyBytes, cudaMemcpyDeviceToDevice, s));
  const bool running_before_pause = still_running(s);
  const std::uint64_t pause_start = probe::now_ns();
  tracer.pause_unflushed();
  const double pause_us = static_cast<double>(probe::now_ns() - pause_start) / 1e3;
  const bool running = still_running(s);
  // DRAIN: a collector's normal flush while the paused work still runs.
  probe::Buffers::flush();
  const Tally held_flush = Tally::now().since(before);
  const long held_buffers = probe::Buffers::held() - base_buffers;
  const bool held_still_running = still_running(s);
  reinterpret_cast<volatile unsigned*>(gate)[0] = 1;  // release the held kernel: the work behind it runs
  PROBE_CUDA(cudaStreamSynchronize(s));
  const unsigned how = reinterpret_cast<volatile unsigned*>(gate)[1];
  const char* gate_said = how == 1 ? "released" : how == 2 ? "timed_out" : "unknown";
  probe::Buffers::flush();
  const Tally normal = Tally::now().since(before);
  const long done_buffers = probe::Buffers::held() - base_buffers;
  probe::Buffers::flush_forced();
  const Tally forced = Tally::now().since(before);

  tracer.go(kOn, not_timed);
  const Tally resume_before = Tally::now();
  launch_empty(s, kInFlightLaunches);
  PROBE_CUDA(cudaStreamSynchronize(s));
  probe::Buffers::flush();
  const Tally resumed = Tally::now().since(resume_before);
  probe::Buffers::flush_forced();
  const Tally resumed_forced = Tally::now().since(resume_before);
  tracer.go(kPaused, not_timed);
  PROBE_CUDA(cudaFree(device));
  PROBE_CUDA(cudaFreeHost(gate));

  const std::uint64_t launches = kHeldLaunches + 1;  // the held kernel too
  std::printf(
      "DRAIN while_running still_running=%d buffers_held=%ld base=%ld kernel_records=%llu "
      "zero_timestamps=%llu | a normal flush after the pause, the held kernel not released\n",
      held_still_running ? 1 : 0, held_buffers, base_buffers,
      static_cast<unsigned long long>(held_flush.kernels),
      static_cast<unsigned long long>(held_flush.zero_timestamps));
  std::printf(
      "DRAIN after_run buffers_held=%ld kernel_records=%llu complete=%d | a normal flush once the "
      "stream was waited for\n",
      done_buffers, static_cast<unsigned long long>(normal.kernels), normal.complete(launches) ? 1 : 0);
  std::printf("CONCLUSION drain: ");
  if (!held_still_running) {
    std::printf("void: the held work had finished by the first normal flush\n");
  } else if (held_buffers > 0 && done_buffers == 0 && normal.complete(launches)) {
    std::printf(
        "a normal flush left %ld buffer(s) with CUPTI while the paused work ran and none once it had "
        "run, every record complete: 'no buffer held after a normal flush' marked the window's "
        "records all in here\n",
        held_buffers);
  } else {
    std::printf(
        "no signal: buffers held after a normal flush %ld while the work ran, %ld once it had run "
        "(records complete then: %s)\n",
        held_buffers, done_buffers, normal.complete(launches) ? "yes" : "no");
  }
  std::printf(
      "INFLIGHT still_running=%d running_before_pause=%d pause_us=%.1f launches=%llu memsets=1 memcpys=1 "
      "gate=%s\n",
      running ? 1 : 0, running_before_pause ? 1 : 0, pause_us, static_cast<unsigned long long>(launches),
      gate_said);
  print_tally("normal_flush", normal, "after the stream was waited for and a normal flush");
  print_tally("after_forced", forced, "after a forced flush too (both flushes together)");
  const bool resumed_right = resumed_forced.kernels == kInFlightLaunches &&
                             resumed_forced.zero_timestamps == 0 && resumed_forced.memsets == 0 &&
                             resumed_forced.memcpys == 0;
  std::printf(
      "INFLIGHT resumed launches=%d kernel_records=%llu zero_timestamps=%llu after_forced=%llu "
      "copy_records=%llu %s\n",
      kInFlightLaunches, static_cast<unsigned long long>(resumed.kernels),
      static_cast<unsigned long long>(resumed.zero_timestamps),
      static_cast<unsigned long long>(resumed_forced.kernels),
      static_cast<unsigned long long>(resumed_forced.memsets + resumed_forced.memcpys),
      resumed_right ? "as expected" : "NOT as expected");

  const unsigned long long expected = launches + 2;
  std::printf("CONCLUSION inflight: ");
  if (!running) {
    std::printf(
        "void: the stream had finished when the kinds were disabled (still running just before: %s; "
        "the pause took %.1f us; the held kernel %s), so the counts say nothing of work in flight",
        running_before_pause ? "yes" : "no", pause_us, gate_said);
  } else if (normal.complete(launches)) {
    std::printf(
        "records of the work running when the kinds were disabled all arrived complete (%llu, non-zero "
        "start and end) once it finished and a normal flush was made",
        expected);
  } else if (forced.complete(launches)) {
    std::printf(
        "records of the work running when the kinds were disabled arrived complete only with a forced "
        "flush: after the normal flush %llu of %llu missing, %llu zero-timestamped",
        static_cast<unsigned long long>(normal.missing(launches)), expected,
        static_cast<unsigned long long>(normal.zero_timestamps));
  } else {
    std::printf(
        "records of the work running when the kinds were disabled: %llu of %llu lost, %llu "
        "zero-timestamped, even after a forced flush (kernel records %llu for %llu launches)",
        static_cast<unsigned long long>(forced.missing(launches)), expected,
        static_cast<unsigned long long>(forced.zero_timestamps),
        static_cast<unsigned long long>(forced.kernels), static_cast<unsigned long long>(launches));
  }
  std::printf("; on again: %s\n", resumed_right
                                      ? "one complete record per launch"
                                      : "NOT one complete record per launch (see INFLIGHT resumed)");
}

/// The child process: one round of batches in a process where CUPTI was never touched.
int child_never() {
  cudaStream_t s = nullptr;
  PROBE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  batch(s);  // untimed: the module's load
  probe::print_batches("never", batches(s));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a section killed at its timeout keeps what was printed
  if (argc > 1 && std::strcmp(argv[1], "--child-never") == 0) return child_never();
  probe::exit_77_without_device(kName);
  std::signal(SIGALRM, &watchdog);
  alarm(kWatchdogSeconds);
  probe::print_device(kName);
  cudaStream_t s = nullptr;
  PROBE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  batch(s);  // untimed: the module's load, before CUPTI
  Tracer tracer;
  tracer.begin();
  std::printf("%s: %d rounds; each state %d timed batches of %d launches a round; %zu driver launch callbacks\n",
              kName, kRounds, kBatches, kLaunchesPerBatch, tracer.callbacks());

  probe::Samples samples[kStates];
  probe::Samples never, first_on;
  std::vector<double> toggle_ns[kStates][kStates];  // [from][to]
  std::uint64_t launches[kStates] = {}, records[kStates] = {}, callbacks[kStates] = {};
  for (int round = 0; round < kRounds; ++round) {
    never.add_round(probe::child_batches(probe::run_self("--child-never"), "never"));
    // From wherever the last round left CUPTI: each state once, `on` at a place that changes.
    for (int k = 0; k < kStates; ++k) {
      const auto to = static_cast<State>((k + round) % kStates);
      if (to == kFinalized && tracer.finalize_refused()) continue;
      // A state is reached from `on` (the switch a windowed tracer makes), except `on` itself.
      if (to != kOn && tracer.state() != kOn) tracer.go(kOn, toggle_ns);
      if (to == kOn && tracer.state() == kOn) tracer.go(kPaused, toggle_ns);
      const std::uint64_t callbacks_before = g_launch_callbacks.load();
      tracer.go(to, toggle_ns);
      if (tracer.state() != to) continue;  // cuptiFinalize refused (said above)
      const std::uint64_t after_switch = g_kernel_records.load();  // the forced flush of the last window
      std::vector<double> v = batches(s);
      if (to == kOn) first_on.add_round({v.front()});
      samples[to].add_round(std::move(v));
      launches[to] += static_cast<std::uint64_t>(kBatches) * kLaunchesPerBatch;
      probe::Buffers::flush_forced();
      records[to] += g_kernel_records.load() - after_switch;
      callbacks[to] += g_launch_callbacks.load() - callbacks_before;
    }
    std::fprintf(stderr, "%s: round %d of %d done\n", kName, round + 1, kRounds);
  }
  if (tracer.state() == kOn) tracer.go(kPaused, toggle_ns);

  probe::print_result("never", never, kLaunchesPerBatch, "a process that never touched CUPTI");
  for (int st = 0; st < kStates; ++st) {
    const std::string key = kStateNames[st];
    probe::print_result(key.c_str(), samples[st], kLaunchesPerBatch, kStateWhat[st]);
  }
  probe::print_result("on.first_batch", first_on, kLaunchesPerBatch,
                      "the first batch after each switch on (every batch of `on` is in `on` too)");
  for (int st = 0; st < kStates; ++st) probe::print_ratio(kStateNames[st], samples[st], "never", never);
  for (int from = 0; from < kStates; ++from) {
    for (int to = 0; to < kStates; ++to) {
      const std::vector<double>& v = toggle_ns[from][to];
      if (v.empty()) continue;
      std::printf("TOGGLE %s_to_%s median_us=%.1f max_us=%.1f switches=%zu\n", kStateNames[from], kStateNames[to],
                  probe::percentile(v, 0.5) / 1e3, probe::percentile(v, 1.0) / 1e3, v.size());
    }
  }
  bool counts_right = true;
  for (int st = 0; st < kStates; ++st) {
    if (launches[st] == 0) {
      std::printf("COUNTS %-13s not measured\n", kStateNames[st]);
      continue;
    }
    const bool right = st == kOn ? records[st] == launches[st] && callbacks[st] >= launches[st]
                                 : records[st] == 0 && callbacks[st] == 0;
    counts_right &= right;
    std::printf("COUNTS %-13s launches=%llu kernel_records=%llu launch_callbacks=%llu %s\n", kStateNames[st],
                static_cast<unsigned long long>(launches[st]), static_cast<unsigned long long>(records[st]),
                static_cast<unsigned long long>(callbacks[st]), right ? "as expected" : "NOT as expected");
  }
  const double base = never.median();
  std::printf("CONCLUSION: per launch over a process that never touched CUPTI: on %.3fx, paused %.3fx, "
              "unsubscribed %.3fx, finalized %.3fx; switching on from paused took %.1f us, pausing %.1f us, detaching %.1f us (TOGGLE: re-attaching) "
              "(medians); %s\n",
              samples[kOn].median() / base, samples[kPaused].median() / base,
              samples[kUnsubscribed].median() / base, samples[kFinalized].median() / base,
              probe::percentile(toggle_ns[kPaused][kOn], 0.5) / 1e3, probe::percentile(toggle_ns[kOn][kPaused], 0.5) / 1e3,
              probe::percentile(toggle_ns[kOn][kFinalized], 0.5) / 1e3,
              counts_right ? "every launch traced while on, none otherwise, re-attached after each detach"
                           : "the records or callbacks do NOT match the states (see COUNTS)");
  int restarted = 0, continued = 0;
  for (const auto& [before, after] : tracer.reattaches()) {
    std::printf("REATTACH last_before_detach=%u first_after=%u\n", before, after);
    if (after == 0) continue;
    (after <= before ? restarted : continued) += 1;
  }
  if (restarted + continued == 0) {
    std::printf("CONCLUSION reattach: no launch after a re-attach was seen (no finalized state?)\n");
  } else {
    std::printf("CONCLUSION reattach: of %d re-attaches, correlation ids started again at or below the "
                "last id before the detach in %d, went on above it in %d\n",
                restarted + continued, restarted, continued);
  }
  int graph_restarted = 0, graph_continued = 0;
  for (const auto& [before, after] : tracer.graph_ids()) {
    std::printf("GRAPHNODE before_detach=%llu after_reattach=%llu\n", static_cast<unsigned long long>(before),
                static_cast<unsigned long long>(after));
    if (before == 0 || after == 0) continue;
    (after <= before ? graph_restarted : graph_continued) += 1;
  }
  std::printf("CONCLUSION graphnode: of %d re-attaches with both ids, a new graph node's id started again at "
              "or below the last one before the detach in %d, went on above it in %d\n",
              graph_restarted + graph_continued, graph_restarted, graph_continued);
  in_flight(tracer, s);
  PROBE_CUDA(cudaStreamDestroy(s));
  return 0;
}

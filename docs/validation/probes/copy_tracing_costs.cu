// docs/validation/probes/copy_tracing_costs.cu — what CUPTI's copy records cost a copy, the question
// the H200 runs of 2026-11-27 left: the benchmark step (the demo's: a 1 MiB copy from pageable
// memory, then 13 kernels) took 1.10x without cuscope under cuscope's defaults, and 1.01-1.07x under
// a client tracing kernels only, while cuscope also traces copies and sets. Raw CUDA and CUPTI, no
// cuscope.
//
// RESULT lines: per copy, host nanoseconds of cudaMemcpyAsync + cudaStreamSynchronize of 1 MiB
// host to device, from pageable memory and from pinned memory, with CUPTI attached and idle, with
// CONCURRENT_KERNEL records only (the minimal client), and with MEMCPY, MEMCPY2 and MEMSET records
// too (the kinds of GPU work cuscope's defaults trace); configurations interleaved round by round in
// an order that changes. RATIO lines: each over the idle one. COUNTS: the MEMCPY records each
// configuration delivered (one per copy where the kind is on, else none).
//
// Never: cuscope, or a figure not measured here; without a GPU it prints why and exits 77.
#include <cuda_runtime.h>
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "probe_common.hpp"

namespace {

constexpr const char* kName = "copy_tracing_costs";
constexpr int kRounds = 7;
constexpr int kBatches = 10;
constexpr int kCopiesPerBatch = 20;
constexpr std::size_t kBytes = 1u << 20;  // the demo's batch: 512 tokens x 1024 fp16

std::atomic<std::uint64_t> g_memcpy_records{0};

void parse(const CUpti_Activity* r) {
  if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) g_memcpy_records.fetch_add(1, std::memory_order_relaxed);
}

enum Config { kIdle, kKernels, kCopies, kConfigs };
const char* const kConfigNames[kConfigs] = {"idle", "kernels", "copies"};
const char* const kConfigWhat[kConfigs] = {
    "CUPTI attached, no kind on", "CONCURRENT_KERNEL records only (the minimal client)",
    "CONCURRENT_KERNEL, MEMCPY, MEMCPY2 and MEMSET records (the GPU work cuscope's defaults trace)"};

std::vector<CUpti_ActivityKind> kinds_of(int config) {
  if (config == kKernels) return {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
  if (config == kCopies)
    return {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
            CUPTI_ACTIVITY_KIND_MEMSET};
  return {};
}

// One batch: kCopiesPerBatch copies of kBytes to the device, each waited for; ns per copy.
double batch(void* device, const void* host, cudaStream_t s) {
  const std::uint64_t start = probe::now_ns();
  for (int i = 0; i < kCopiesPerBatch; ++i) {
    PROBE_CUDA(cudaMemcpyAsync(device, host, kBytes, cudaMemcpyHostToDevice, s));
    PROBE_CUDA(cudaStreamSynchronize(s));
  }
  return static_cast<double>(probe::now_ns() - start) / kCopiesPerBatch;
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a section killed at its timeout keeps what was printed
  probe::exit_77_without_device(kName);
  probe::print_device(kName);
  probe::Buffers::start(&parse);
  cudaStream_t s = nullptr;
  PROBE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* device = nullptr;
  PROBE_CUDA(cudaMalloc(&device, kBytes));
  std::vector<unsigned char> pageable(kBytes, 1);
  void* pinned = nullptr;
  PROBE_CUDA(cudaMallocHost(&pinned, kBytes));
  const void* sources[2] = {pageable.data(), pinned};
  const char* const memory[2] = {"pageable", "pinned"};
  std::printf("%s: %d rounds; each configuration and memory %d timed batches of %d copies of %zu bytes a round\n",
              kName, kRounds, kBatches, kCopiesPerBatch, kBytes);

  probe::Samples samples[2][kConfigs];
  std::uint64_t records[kConfigs] = {};
  std::uint64_t copies[kConfigs] = {};
  for (int round = 0; round < kRounds; ++round) {
    for (int k = 0; k < kConfigs; ++k) {
      const int config = (k + round) % kConfigs;  // the order changes round by round
      for (CUpti_ActivityKind kind : kinds_of(config)) PROBE_CUPTI(cuptiActivityEnable(kind));
      probe::Buffers::flush_forced();
      const std::uint64_t before = g_memcpy_records.load();
      for (int m = 0; m < 2; ++m) {
        batch(device, sources[m], s);  // untimed
        std::vector<double> v;
        for (int b = 0; b < kBatches; ++b) v.push_back(batch(device, sources[m], s));
        samples[m][config].add_round(std::move(v));
        copies[config] += static_cast<std::uint64_t>((kBatches + 1) * kCopiesPerBatch);
      }
      for (CUpti_ActivityKind kind : kinds_of(config)) cuptiActivityDisable(kind);
      probe::Buffers::flush_forced();
      records[config] += g_memcpy_records.load() - before;
    }
    std::fprintf(stderr, "%s: round %d of %d done\n", kName, round + 1, kRounds);
  }

  for (int m = 0; m < 2; ++m) {
    for (int c = 0; c < kConfigs; ++c) {
      const std::string key = std::string(memory[m]) + "." + kConfigNames[c];
      const std::string what = std::string("1 MiB HtoD from ") + memory[m] + " memory, waited for; " + kConfigWhat[c];
      probe::print_result(key.c_str(), samples[m][c], kCopiesPerBatch, what.c_str());
    }
    for (int c = kKernels; c < kConfigs; ++c) {
      const std::string key = std::string(memory[m]) + "." + kConfigNames[c];
      const std::string base = std::string(memory[m]) + ".idle";
      probe::print_ratio(key.c_str(), samples[m][c], base.c_str(), samples[m][kIdle]);
    }
    const std::string key = std::string(memory[m]) + ".copies";
    const std::string base = std::string(memory[m]) + ".kernels";
    probe::print_ratio(key.c_str(), samples[m][kCopies], base.c_str(), samples[m][kKernels]);
  }
  for (int c = 0; c < kConfigs; ++c) {
    std::printf("COUNTS %-8s copies=%llu memcpy_records=%llu\n", kConfigNames[c],
                static_cast<unsigned long long>(copies[c]), static_cast<unsigned long long>(records[c]));
  }
  const double pageable_share = samples[0][kCopies].median() - samples[0][kKernels].median();
  std::printf(
      "CONCLUSION: copy records cost a 1 MiB pageable copy %.0f ns over kernel records only (%.3fx), a pinned "
      "one %.0f ns (%.3fx); %s\n",
      pageable_share, samples[0][kCopies].median() / samples[0][kKernels].median(),
      samples[1][kCopies].median() - samples[1][kKernels].median(),
      samples[1][kCopies].median() / samples[1][kKernels].median(),
      records[kCopies] == copies[kCopies] && records[kIdle] == 0 && records[kKernels] == 0
          ? "one MEMCPY record per copy where the kind was on, none elsewhere"
          : "the MEMCPY records do NOT match the copies (see COUNTS)");

  PROBE_CUDA(cudaFreeHost(pinned));
  PROBE_CUDA(cudaFree(device));
  PROBE_CUDA(cudaStreamDestroy(s));
  return 0;
}

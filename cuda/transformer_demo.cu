// cuscope_demo: one transformer layer (RMSNorm, attention, SwiGLU MLP) run for a number of steps,
// every phase in its own cuscope scope, the way the NVTX-annotated layer of the profiling guides is.
//
// GEMMs go through cuBLAS (fp16 storage, fp32 accumulation) on one stream; norms, softmax,
// residual adds and SiLU*up are hand-written kernels (transformer_kernels.cuh), so the number of
// kernels each phase launches is known and checked against what cuscope attributed to it. After the steps the
// demo queries the live report once; the summary table is printed by cuscope at exit.
// Without a GPU every CUDA call is skipped and the scopes time a small host stand-in instead.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuscope/cuscope.hpp>
#include <utility>
#include <vector>

#include "transformer_kernels.cuh"

namespace {

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, call, cudaGetErrorName(status),
               cudaGetErrorString(status));
  std::exit(EXIT_FAILURE);
}

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, call, cublasGetStatusString(status));
  std::exit(EXIT_FAILURE);
}

#define CHECK_CUDA(call) check_cuda((call), #call, __FILE__, __LINE__)
#define CHECK_CUBLAS(call) check_cublas((call), #call, __FILE__, __LINE__)
#define CHECK_LAUNCH() check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

constexpr int kTokens = 512;
constexpr int kHidden = 1024;
constexpr int kHeads = 16;
constexpr int kHeadDim = kHidden / kHeads;
constexpr int kFfn = 2816;
constexpr int kThreads = 256;
constexpr float kNormEps = 1e-5f;

/// Kernels each phase launches per step. cuBLAS may add kernels of its own (split-K reductions),
/// so a phase with cuBLAS calls expects at least handwritten_kernels + cublas_calls kernels.
/// A parent's counts are the sums of its children's.
struct Phase {
  const char* path;
  int handwritten_kernels;
  int cublas_calls;
};

constexpr Phase kPhases[] = {
    {"step", 5, 7},
    {"step/load_batch", 0, 0},
    {"step/norm_1", 1, 0},
    {"step/attention", 1, 4},
    {"step/attention/qkv_proj", 0, 1},
    {"step/attention/scores", 1, 2},
    {"step/attention/o_proj", 0, 1},
    {"step/residual_1", 1, 0},
    {"step/norm_2", 1, 0},
    {"step/mlp", 1, 3},
    {"step/mlp/gate_up_proj", 0, 2},
    {"step/mlp/silu_mul", 1, 0},
    {"step/mlp/down_proj", 0, 1},
    {"step/residual_2", 1, 0},
};

using namespace demo_kernels;  // the kernels below launch

/// The layer's weights and activations, row-major, carved out of one device allocation.
struct Buffers {
  __half* x;         // [tokens, hidden] layer input, the same every step
  __half* norm_1_w;  // [hidden]
  __half* norm_2_w;  // [hidden]
  __half* w_qkv;     // [hidden, 3 * hidden]
  __half* w_o;       // [hidden, hidden]
  __half* w_gate;    // [hidden, ffn]
  __half* w_up;      // [hidden, ffn]
  __half* w_down;    // [ffn, hidden]
  __half* h;         // [tokens, hidden] normed input
  __half* qkv;       // [tokens, 3 * hidden]: q, k, v side by side, heads contiguous within each
  __half* scores;    // [heads, tokens, tokens]
  __half* attn;      // [tokens, hidden]
  __half* attn_out;  // [tokens, hidden]
  __half* x1;        // [tokens, hidden] after the first residual
  __half* gate;      // [tokens, ffn]
  __half* up;        // [tokens, ffn]
  __half* act;       // [tokens, ffn]
  __half* mlp_out;   // [tokens, hidden]
  __half* y;         // [tokens, hidden] layer output
};

/// What every phase needs. With gpu == false, stream and cublas are null and no buffer exists.
struct Layer {
  bool gpu = false;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  void* arena = nullptr;
  Buffers b{};
  std::vector<__half> batch;  // the layer input on the host, in pageable memory (not pinned)
};

volatile std::uint64_t g_stand_in_sink = 0;

/// The no-GPU stand-in for a phase's device work: a deterministic host loop whose length is the
/// phase's FLOP count scaled down 10^4 times, so that host times keep the phases' proportions.
void host_stand_in(double flops) {
  std::uint64_t state = 0x9e3779b97f4a7c15u;
  const auto iterations = static_cast<std::uint64_t>(flops * 1e-4);
  for (std::uint64_t i = 0; i < iterations; ++i) state = state * 6364136223846793005u + 1442695040888963407u;
  g_stand_in_sink = g_stand_in_sink + state;
}

unsigned blocks_for(int n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

constexpr double gemm_flops(int m, int n, int k) { return 2.0 * m * n * k; }

/// y[m, n] = a[m, k] * b[k, n], all row-major. cuBLAS is column-major, so it computes y^T = b^T a^T.
void gemm(const Layer& layer, const __half* a, const __half* b, __half* y, int m, int n, int k) {
  if (!layer.gpu) return host_stand_in(gemm_flops(m, n, k));
  const float one = 1.0f;
  const float zero = 0.0f;
  CHECK_CUBLAS(cublasGemmEx(layer.cublas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, CUDA_R_16F, n, a,
                            CUDA_R_16F, k, &zero, y, CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void rms_norm(const Layer& layer, const __half* x, const __half* w, __half* y) {
  if (!layer.gpu) return host_stand_in(4.0 * kTokens * kHidden);
  rms_norm_kernel<<<kTokens, kThreads, 0, layer.stream>>>(x, w, y, kHidden, kNormEps);
  CHECK_LAUNCH();
}

void add(const Layer& layer, const __half* a, const __half* b, __half* y) {
  constexpr int n = kTokens * kHidden;
  if (!layer.gpu) return host_stand_in(n);
  add_kernel<<<blocks_for(n), kThreads, 0, layer.stream>>>(a, b, y, n);
  CHECK_LAUNCH();
}

void silu_mul(const Layer& layer, const __half* gate, const __half* up, __half* y) {
  constexpr int n = kTokens * kFfn;
  if (!layer.gpu) return host_stand_in(6.0 * n);
  silu_mul_kernel<<<blocks_for(n), kThreads, 0, layer.stream>>>(gate, up, y, n);
  CHECK_LAUNCH();
}

/// Naive causal attention over all heads at once: S = Q K^T / sqrt(d) (one strided-batched GEMM),
/// softmax, then O = P V (a second one). Head h of q, k and v is columns h*d..h*d+d-1 of its block.
void attention_scores(const Layer& layer) {
  constexpr long long score_stride = static_cast<long long>(kTokens) * kTokens;
  if (!layer.gpu) {
    return host_stand_in(2.0 * gemm_flops(kTokens, kTokens, kHeadDim) * kHeads + 5.0 * kHeads * score_stride);
  }
  const Buffers& b = layer.b;
  const __half* q = b.qkv;
  const __half* k = b.qkv + kHidden;
  const __half* v = b.qkv + 2 * kHidden;
  constexpr int qkv_ld = 3 * kHidden;
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  const float one = 1.0f;
  const float zero = 0.0f;
  // Column-major S^T[key, query] = K Q^T: op(A) = K^T read transposed, B = Q^T as stored.
  CHECK_CUBLAS(cublasGemmStridedBatchedEx(layer.cublas, CUBLAS_OP_T, CUBLAS_OP_N, kTokens, kTokens, kHeadDim,
                                          &scale, k, CUDA_R_16F, qkv_ld, kHeadDim, q, CUDA_R_16F, qkv_ld,
                                          kHeadDim, &zero, b.scores, CUDA_R_16F, kTokens, score_stride,
                                          kHeads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  causal_softmax_kernel<<<kHeads * kTokens, kThreads, 0, layer.stream>>>(b.scores, kTokens);
  CHECK_LAUNCH();
  // Column-major O^T[d, query] = V^T P^T, written into head h's columns of attn.
  CHECK_CUBLAS(cublasGemmStridedBatchedEx(layer.cublas, CUBLAS_OP_N, CUBLAS_OP_N, kHeadDim, kTokens, kTokens,
                                          &one, v, CUDA_R_16F, qkv_ld, kHeadDim, b.scores, CUDA_R_16F,
                                          kTokens, score_stride, &zero, b.attn, CUDA_R_16F, kHidden, kHeadDim,
                                          kHeads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void run_step(const Layer& layer) {
  const Buffers& b = layer.b;
  cudaStream_t s = layer.stream;
  CUSCOPE_SCOPE("step", s);
  CUSCOPE_COUNT("tokens", kTokens);  // the table shows tokens per second of host and GPU time
  {
    // From pageable memory, as a DataLoader without pin_memory=True hands it over: the copy is
    // staged and synchronous with the host, which the pageable-copies finding points out.
    CUSCOPE_SCOPE("load_batch", s);
    if (layer.gpu)
      CHECK_CUDA(cudaMemcpyAsync(b.x, layer.batch.data(), layer.batch.size() * sizeof(__half),
                                 cudaMemcpyHostToDevice, s));
  }
  {
    CUSCOPE_SCOPE("norm_1", s);
    rms_norm(layer, b.x, b.norm_1_w, b.h);
  }
  {
    CUSCOPE_SCOPE("attention", s);
    {
      CUSCOPE_SCOPE("qkv_proj", s);
      gemm(layer, b.h, b.w_qkv, b.qkv, kTokens, 3 * kHidden, kHidden);
    }
    {
      CUSCOPE_SCOPE("scores", s);
      attention_scores(layer);
    }
    {
      CUSCOPE_SCOPE("o_proj", s);
      gemm(layer, b.attn, b.w_o, b.attn_out, kTokens, kHidden, kHidden);
    }
  }
  {
    CUSCOPE_SCOPE("residual_1", s);
    add(layer, b.x, b.attn_out, b.x1);
  }
  {
    CUSCOPE_SCOPE("norm_2", s);
    rms_norm(layer, b.x1, b.norm_2_w, b.h);
  }
  {
    CUSCOPE_SCOPE("mlp", s);
    {
      CUSCOPE_SCOPE("gate_up_proj", s);
      gemm(layer, b.h, b.w_gate, b.gate, kTokens, kFfn, kHidden);
      gemm(layer, b.h, b.w_up, b.up, kTokens, kFfn, kHidden);
    }
    {
      CUSCOPE_SCOPE("silu_mul", s);
      silu_mul(layer, b.gate, b.up, b.act);
    }
    {
      CUSCOPE_SCOPE("down_proj", s);
      gemm(layer, b.act, b.w_down, b.mlp_out, kTokens, kHidden, kFfn);
    }
  }
  {
    CUSCOPE_SCOPE("residual_2", s);
    add(layer, b.x1, b.mlp_out, b.y);
  }
}

void fill(const Layer& layer, __half* p, int n, std::uint32_t seed, float scale, float offset) {
  fill_kernel<<<blocks_for(n), kThreads, 0, layer.stream>>>(p, n, seed, scale, offset);
  CHECK_LAUNCH();
}

/// Allocates the buffers and fills them: inputs in [-1, 1), weights scaled by 1/sqrt(fan-in).
void init_gpu(Layer& layer) {
  constexpr std::size_t T = kTokens, H = kHidden, F = kFfn;
  Buffers& b = layer.b;
  const std::pair<__half**, std::size_t> slots[] = {{&b.x, T * H},
                                                    {&b.norm_1_w, H},
                                                    {&b.norm_2_w, H},
                                                    {&b.w_qkv, H * 3 * H},
                                                    {&b.w_o, H * H},
                                                    {&b.w_gate, H * F},
                                                    {&b.w_up, H * F},
                                                    {&b.w_down, F * H},
                                                    {&b.h, T * H},
                                                    {&b.qkv, T * 3 * H},
                                                    {&b.scores, kHeads * T * T},
                                                    {&b.attn, T * H},
                                                    {&b.attn_out, T * H},
                                                    {&b.x1, T * H},
                                                    {&b.gate, T * F},
                                                    {&b.up, T * F},
                                                    {&b.act, T * F},
                                                    {&b.mlp_out, T * H},
                                                    {&b.y, T * H}};
  std::size_t total = 0;
  for (const auto& slot : slots) total += slot.second;
  CHECK_CUDA(cudaStreamCreateWithFlags(&layer.stream, cudaStreamNonBlocking));
  CHECK_CUBLAS(cublasCreate(&layer.cublas));
  CHECK_CUBLAS(cublasSetStream(layer.cublas, layer.stream));
  CHECK_CUDA(cudaMalloc(&layer.arena, total * sizeof(__half)));
  __half* next = static_cast<__half*>(layer.arena);
  for (const auto& [field, elements] : slots) {
    *field = next;
    next += elements;
  }
  const float inv_sqrt_h = 1.0f / std::sqrt(static_cast<float>(kHidden));
  const float inv_sqrt_f = 1.0f / std::sqrt(static_cast<float>(kFfn));
  fill(layer, b.x, kTokens * kHidden, 1, 1.0f, 0.0f);
  fill(layer, b.norm_1_w, kHidden, 0, 0.0f, 1.0f);
  fill(layer, b.norm_2_w, kHidden, 0, 0.0f, 1.0f);
  fill(layer, b.w_qkv, kHidden * 3 * kHidden, 2, inv_sqrt_h, 0.0f);
  fill(layer, b.w_o, kHidden * kHidden, 3, inv_sqrt_h, 0.0f);
  fill(layer, b.w_gate, kHidden * kFfn, 4, inv_sqrt_h, 0.0f);
  fill(layer, b.w_up, kHidden * kFfn, 5, inv_sqrt_h, 0.0f);
  fill(layer, b.w_down, kFfn * kHidden, 6, inv_sqrt_f, 0.0f);
  CHECK_CUDA(cudaStreamSynchronize(layer.stream));
  layer.batch.resize(T * H);  // each step loads the same input back
  CHECK_CUDA(cudaMemcpy(layer.batch.data(), b.x, T * H * sizeof(__half), cudaMemcpyDeviceToHost));
}

void release_gpu(Layer& layer) {
  CHECK_CUDA(cudaFree(layer.arena));
  CHECK_CUBLAS(cublasDestroy(layer.cublas));
  CHECK_CUDA(cudaStreamDestroy(layer.stream));
}

/// True when a device is usable; otherwise says why on stdout.
bool find_gpu() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess && count > 0) {
    cudaDeviceProp prop{};
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    std::printf("cuscope demo: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
    return true;
  }
  if (status != cudaSuccess) {
    std::printf(
        "cuscope demo: no GPU found (cudaGetDeviceCount: error %d: %s); running the step with host "
        "timing only\n",
        static_cast<int>(status), cudaGetErrorString(status));
  } else {
    std::printf(
        "cuscope demo: no GPU found (cudaGetDeviceCount: 0 devices); running the step with host timing "
        "only\n");
  }
  return false;
}

struct Args {
  int steps = 20;
  int warmup = 3;
};

bool parse_count(const char* text, int& out) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value > 1000000) return false;
  out = static_cast<int>(value);
  return true;
}

bool parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--steps") == 0 && has_value && parse_count(argv[i + 1], args.steps)) {
      ++i;
    } else if (std::strcmp(argv[i], "--warmup") == 0 && has_value && parse_count(argv[i + 1], args.warmup)) {
      ++i;
    } else {
      return false;
    }
  }
  return true;
}

double percent(std::uint64_t part, std::uint64_t whole) { return 100.0 * double(part) / double(whole); }

void print_mlp_share(const cuscope::Report& report) {
  const cuscope::RangeStats* step = report.find("step");
  const cuscope::RangeStats* mlp = report.find("step/mlp");
  if ((step == nullptr || mlp == nullptr) && report.find("(counted steps)/step/mlp") != nullptr) {
    std::printf("MLP share of the step: not measured (every recorded step ran with hardware counters, "
                "whose kernel replay distorts its times)\n");
    return;
  }
  if (step == nullptr || mlp == nullptr || step->host.total_ns == 0) {
    std::printf("MLP share of the step: not recorded (no completed step in the report)\n");
    return;
  }
  std::printf("MLP share of the step: %.1f%% of host time", percent(mlp->host.total_ns, step->host.total_ns));
  if (step->gpu.count > 0 && mlp->gpu.count > 0 && step->gpu.total_ns > 0) {
    std::printf(", %.1f%% of GPU-event time", percent(mlp->gpu.total_ns, step->gpu.total_ns));
  }
  std::printf("\n");
}

/// Prints expected against attributed kernels per recorded step; false if any phase is off.
bool check_kernel_counts(const cuscope::Report& report) {
  if (!report.tracing_on()) {
    std::printf("kernel counts per phase: check skipped, activity off: %s\n", report.activity_status.c_str());
    return true;
  }
  if (report.recorded_steps == 0) {
    std::printf("kernel counts per phase: check skipped, no recorded steps\n");
    return true;
  }
  const std::uint64_t steps = report.recorded_steps;
  std::printf("kernels per phase and step, over %llu recorded steps:\n",
              static_cast<unsigned long long>(steps));
  std::printf("  %-28s %-18s %s\n", "phase", "expected", "measured");
  bool all_ok = true;
  for (const Phase& phase : kPhases) {
    // Steps that ran with hardware counters are reported apart, under "(counted steps)". Kernels
    // replayed for counters have no activity time (not in kernel_calls): profiled_kernels counts them.
    const cuscope::RangeStats* range = report.find(phase.path);
    const cuscope::RangeStats* counted = report.find(std::string("(counted steps)/") + phase.path);
    const std::uint64_t calls =
        (range == nullptr ? 0 : range->total.kernel_calls + range->profiled_kernels) +
        (counted == nullptr ? 0 : counted->total.kernel_calls + counted->profiled_kernels);
    if (range == nullptr) range = counted;
    const auto expected = static_cast<std::uint64_t>(phase.handwritten_kernels + phase.cublas_calls);
    const bool ok = phase.cublas_calls > 0 ? calls >= expected * steps : calls == expected * steps;
    all_ok = all_ok && ok;
    char expectation[32];
    if (phase.cublas_calls == 0) {
      std::snprintf(expectation, sizeof expectation, "%d", phase.handwritten_kernels);
    } else if (phase.handwritten_kernels == 0) {
      std::snprintf(expectation, sizeof expectation, ">=%d cuBLAS", phase.cublas_calls);
    } else {
      std::snprintf(expectation, sizeof expectation, "%d + >=%d cuBLAS", phase.handwritten_kernels,
                    phase.cublas_calls);
    }
    std::printf("  %-28s %-18s %-8.2f %s\n", phase.path, expectation, double(calls) / double(steps),
                range == nullptr ? "MISSING" : (ok ? "ok" : "MISMATCH"));
  }
  return all_ok;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, args)) {
    std::fprintf(stderr,
                 "usage: %s [--steps N] [--warmup W]\n"
                 "  runs W + N steps of a transformer layer under cuscope scopes (defaults: N=20, W=3);\n"
                 "  CUSCOPE_* environment variables override the options the demo sets\n",
                 argv[0]);
    return 2;
  }
  cuscope::Options base;
  base.warmup_steps = static_cast<std::uint32_t>(args.warmup);
  cuscope::start(cuscope::options_from_env(base));

  Layer layer;
  layer.gpu = find_gpu();
  if (layer.gpu) init_gpu(layer);
  std::printf("cuscope demo: %d steps after %d warm-up steps; tokens=%d hidden=%d heads=%d ffn=%d, fp16\n",
              args.steps, args.warmup, kTokens, kHidden, kHeads, kFfn);

  for (int i = 0; i < args.warmup + args.steps; ++i) {
    run_step(layer);
    // Outside the "step" scope: its host time is the time to launch the step, its GPU-event
    // time the time the GPU took.
    if (layer.gpu) CHECK_CUDA(cudaStreamSynchronize(layer.stream));
    cuscope::step();
  }

  cuscope::flush();
  const cuscope::Report report = cuscope::snapshot();
  print_mlp_share(report);
  const bool counts_ok = check_kernel_counts(report);
  if (layer.gpu) release_gpu(layer);
  std::fflush(stdout);  // ahead of the exit table cuscope writes to stderr
  return counts_ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

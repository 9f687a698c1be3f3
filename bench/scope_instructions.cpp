// bench/scope_instructions.cpp — instructions per enabled scope, and per injected NVTX range, for
// bench/run-callgrind.sh.
//
// Times are noisy on a shared machine; instruction counts are not. Under
// `valgrind --tool=callgrind --toggle-collect=run_scopes`, callgrind counts only what
// run_scopes() executes: run once with N scopes and once with 2N, and the difference over N is
// the cost of one scope's enter and exit in the steady state (host only: no GPU events, no CUPTI).
// `scope_instructions N injected` does the same for run_injected(): an NVTX push/pop (ASCII
// message) as libcuscope_inject.so receives it in zero-code mode (bench/injected.hpp);
// `registered` for run_registered(): a domain push/pop with a registered string, inside another
// range of the domain (as bench/cpu_bench.cpp measures it); `excluded` for run_excluded(): a domain
// left out by CUSCOPE_NVTX_DOMAINS; `nvtx_call` for run_nvtx_call(): the same two calls to empty
// functions (what an NVTX call costs at the least), so that excluded - nvtx_call is what the
// left-out domain adds. `operators` counts run_operators(): emit_nvtx()-style messages, a new text at
// the same address on every push. `traced` counts run_scopes() in trace mode (CUSCOPE_TRACE=/dev/null; N at
// most 16,000, so that 2N scopes' events fit a thread's ring even if the writer thread never runs
// under valgrind, and none is dropped, which would be cheaper). `cupti` counts run_scopes() in a
// session as CUPTI tracing leaves it, with CUSCOPE_EVENTS' default (no CUDA events where CUPTI
// traces): each scope pushes and pops its instance as the external correlation id, here into two
// empty functions in place of CUPTI's (trace_with_fake_cupti_for_testing()), so that the count is
// cuscope's own work. `launch` counts it with CUSCOPE_ATTRIBUTION=launch, where scopes push nothing
// and the launch callbacks read the instance each scope publishes. `note_launch` counts
// run_note_launch(): what the launch callback does at the entry of each launch with launch notes
// (note_launch(): the thread's ring, its innermost scope's instance, one push), inside an open scope,
// the ring drained between batches outside the count. CUPTI's own callback dispatch is not in it.
// `call_note` counts run_call_notes(): what the call callbacks do for one synchronize seen without
// synchronization records (the defaults; producers/cupti/call_callbacks.hpp): its entry (the clock
// into correlationData) and its successful exit (the clock, the thread's innermost scope, one push
// into the call queue under its lock), inside an open scope, the queue drained between batches
// outside the count. CUPTI's dispatch is not in it either. `outside` counts run_scopes() in a wait
// step (outside the step window): each scope counted as left out and kept on the thread's stack of
// scopes open outside the window (producers/outside_scopes.hpp), for a window that would open
// inside it. `windows` counts run_windows(): a step window that repeats (one step outside it, one
// recorded) opened and closed by two step() calls, no scope; `window_scopes` the same with a scope in
// each window, whose exit is the thread's first since the window before it closed (the general exit:
// its open frames caught up, producers/suspended_frames.hpp), so that window_scopes - windows is what a
// scope costs there; `windows_threads` counts `windows` with 255 more threads each holding a scope
// open, every one of which the closing step() marks, so that (windows_threads - windows) / 255 is the
// step's cost per thread.
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuscope/cuscope.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host_session.hpp"
#include "injected.hpp"
#include "producers/cupti/call_callbacks.hpp"
#include "producers/launch_notes.hpp"
#include "session/session.hpp"

extern "C" __attribute__((noinline)) void run_scopes(long n) {
  for (long i = 0; i < n; ++i) {
    CUSCOPE_SCOPE("counted");
    __asm__ volatile("" ::: "memory");
  }
}

// Window cycles: step() opens the window, step() closes it; with `scope`, one recorded scope between.
extern "C" __attribute__((noinline)) void run_windows(long n, bool scope) {
  for (long i = 0; i < n; ++i) {
    cuscope::step();
    if (scope) {
      CUSCOPE_SCOPE("counted");
      __asm__ volatile("" ::: "memory");
    }
    cuscope::step();
  }
}

// Threads each holding a scope open until released (the quiet threads the closing step() marks).
class ParkedThreads {
 public:
  explicit ParkedThreads(int count) {
    for (int i = 0; i < count; ++i)
      threads_.emplace_back([this] {
        CUSCOPE_SCOPE("parked");
        std::unique_lock lock(mutex_);
        ++parked_;
        changed_.notify_all();
        changed_.wait(lock, [this] { return released_; });
      });
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return parked_ == count; });
  }
  ~ParkedThreads() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int parked_ = 0;
  bool released_ = false;
  std::vector<std::thread> threads_;
};

// Launch notes as the launch callback makes them, `n` at most LaunchRing::kNotes (the ring is not
// drained here).
extern "C" __attribute__((noinline)) void run_note_launch(cuscope::detail::Sink* sink, std::uint64_t first, long n) {
  for (long i = 0; i < n; ++i) {
    cuscope::detail::note_launch(*sink, first + static_cast<std::uint64_t>(i));
    __asm__ volatile("" ::: "memory");
  }
}

// Synchronizes as the call callbacks see them (entry, then a successful exit), `n` at most
// kMaxCallNotes (the queue is not drained here).
extern "C" __attribute__((noinline)) void run_call_notes(cuscope::detail::Sink* sink, std::uint64_t first, long n) {
  CUresult success = CUDA_SUCCESS;
  for (long i = 0; i < n; ++i) {
    std::uint64_t shared = 0;
    CUpti_CallbackData cb{};
    cb.correlationId = static_cast<std::uint32_t>(first + static_cast<std::uint64_t>(i));
    cb.correlationData = &shared;
    cb.callbackSite = CUPTI_API_ENTER;
    cuscope::detail::on_timed_call(*sink, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, cb);
    cb.callbackSite = CUPTI_API_EXIT;
    cb.functionReturnValue = &success;
    cuscope::detail::on_timed_call(*sink, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, cb);
    __asm__ volatile("" ::: "memory");
  }
}

extern "C" __attribute__((noinline)) void run_injected(const cuscope_bench::Injected* in, long n) {
  for (long i = 0; i < n; ++i) {
    in->push_a("counted");
    in->pop();
    __asm__ volatile("" ::: "memory");
  }
}

// emit_nvtx()-style messages (bench/injected.hpp): the next text copied into one buffer, then pushed.
extern "C" __attribute__((noinline)) void run_operators(const cuscope_bench::Injected* in,
                                                        const cuscope_bench::OperatorMessages* texts, long n) {
  static char buffer[cuscope_bench::kOperatorMessageBytes];
  for (long i = 0; i < n; ++i) {
    std::memcpy(buffer, (*texts)[i % cuscope_bench::kOperatorMessages], sizeof(buffer));
    in->push_a(buffer);
    in->pop();
    __asm__ volatile("" ::: "memory");
  }
}

extern "C" __attribute__((noinline)) void run_registered(const cuscope_bench::Injected* in, long n) {
  for (long i = 0; i < n; ++i) {
    in->domain_push(in->domain, &in->registered);
    in->domain_pop(in->domain);
    __asm__ volatile("" ::: "memory");
  }
}

extern "C" __attribute__((noinline)) void run_excluded(const cuscope_bench::Injected* in, long n) {
  for (long i = 0; i < n; ++i) {
    in->domain_push(in->excluded, &in->registered);
    in->domain_pop(in->excluded);
    __asm__ volatile("" ::: "memory");
  }
}

namespace {
__attribute__((noinline)) int empty_push(nvtxDomainHandle_t, const nvtxEventAttributes_t*) {
  __asm__ volatile("");
  return 0;
}
__attribute__((noinline)) int empty_pop(nvtxDomainHandle_t) {
  __asm__ volatile("");
  return 0;
}
}  // namespace

namespace {
__attribute__((noinline)) void empty_correlation_push(std::uint64_t) noexcept { __asm__ volatile(""); }
__attribute__((noinline)) void empty_correlation_pop() noexcept { __asm__ volatile(""); }
}  // namespace

extern "C" __attribute__((noinline)) void run_nvtx_call(const cuscope_bench::Injected* in, long n) {
  for (long i = 0; i < n; ++i) {
    in->domain_push(in->excluded, &in->registered);
    in->domain_pop(in->excluded);
    __asm__ volatile("" ::: "memory");
  }
}

constexpr int kParkedThreads = 255;

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 100'000;
  const bool traced = argc > 2 && std::strcmp(argv[2], "traced") == 0;
  const bool cupti = argc > 2 && std::strcmp(argv[2], "cupti") == 0;
  const bool launch = argc > 2 && std::strcmp(argv[2], "launch") == 0;
  const bool notes = argc > 2 && std::strcmp(argv[2], "note_launch") == 0;
  const bool calls = argc > 2 && std::strcmp(argv[2], "call_note") == 0;
  const bool outside = argc > 2 && std::strcmp(argv[2], "outside") == 0;
  const bool windows = argc > 2 && std::strcmp(argv[2], "windows") == 0;
  const bool window_scopes = argc > 2 && std::strcmp(argv[2], "window_scopes") == 0;
  const bool windows_threads = argc > 2 && std::strcmp(argv[2], "windows_threads") == 0;
  if (windows || window_scopes || windows_threads) {
    cuscope_bench::start_host_only_session(5000, "", 1, true);
    ParkedThreads parked(windows_threads ? kParkedThreads : 0);
    run_windows(2, window_scopes);  // the steady state: the call site interned, each thread marked
    run_windows(n, window_scopes);
    const cuscope::Report r = cuscope::snapshot();
    const cuscope::RangeStats* counted = r.find("counted");
    const std::uint64_t recorded = counted != nullptr ? counted->calls : 0;
    std::printf("window cycles %ld (%s), scopes recorded %llu, parked threads %d, clock: %s\n", n, argv[2],
                static_cast<unsigned long long>(recorded), windows_threads ? kParkedThreads : 0,
                r.clock.c_str());
    return window_scopes && recorded != static_cast<std::uint64_t>(n + 2) ? 1 : 0;
  }
  if (argc > 2 && !traced && !cupti && !launch && !notes && !calls && !outside) {
    const std::string mode = argv[2];
    cuscope_bench::Injected& in = cuscope_bench::injected(5000);
    if (!in.error.empty()) {
      std::fprintf(stderr, "scope_instructions: %s\n", in.error.c_str());
      return 1;
    }
    if (mode == "injected") {
      in.push_a("counted");  // the steady state: the message cached
      in.pop();
      run_injected(&in, n);
    } else if (mode == "operators") {
      const cuscope_bench::OperatorMessages& texts = cuscope_bench::operator_messages();
      run_operators(&in, &texts, cuscope_bench::kOperatorMessages);  // the steady state: the name interned
      run_operators(&in, &texts, n);
    } else if (mode == "registered") {
      in.domain_push(in.domain, &in.registered_outer);
      in.domain_push(in.domain, &in.registered);  // the steady state: the child node made
      in.domain_pop(in.domain);
      run_registered(&in, n);
      in.domain_pop(in.domain);
    } else if (mode == "excluded") {
      run_excluded(&in, n);
    } else if (mode == "nvtx_call") {
      cuscope_bench::Injected empty = in;
      empty.domain_push = &empty_push;
      empty.domain_pop = &empty_pop;
      run_nvtx_call(&empty, n);
    } else {
      std::fprintf(stderr, "scope_instructions: unknown mode '%s'\n", mode.c_str());
      return 2;
    }
    std::printf("%s ranges %ld\n", mode.c_str(), n);
    return 0;
  }
  cuscope_bench::start_host_only_session(5000, traced ? "/dev/null" : "", outside ? 1'000'000'000 : 0);
  if (cupti || launch || notes || calls)
    cuscope::detail::trace_with_fake_cupti_for_testing(empty_correlation_push, empty_correlation_pop,
                                                       launch || notes || calls);
  if (calls || notes) {
    if (calls) cuscope::detail::set_call_callbacks({false, false});  // the defaults: no records
    cuscope::detail::Session& s = cuscope::detail::session();
    CUSCOPE_SCOPE("noting");
    // One batch for the steady state (the ring leased, the queue reserved), then `n` notes; the
    // notes drained after each batch, outside the count.
    const long batch_notes = calls ? static_cast<long>(cuscope::detail::kMaxCallNotes / 2)
                                   : static_cast<long>(cuscope::detail::LaunchRing::kNotes / 2);
    std::uint64_t correlation = 1;
    for (long done = -batch_notes; done < n; done += batch_notes) {
      const long batch = done < 0 || n - done >= batch_notes ? batch_notes : n - done;
      if (calls) {
        run_call_notes(&s, correlation, batch);
      } else {
        run_note_launch(&s, correlation, batch);
      }
      correlation += static_cast<std::uint64_t>(batch);
      std::lock_guard lock(s.aggregator_mutex);
      cuscope::detail::drain_launches(s);
    }
    const std::uint64_t lost = cuscope::detail::take_lost_launch_notes(cuscope::detail::session());
    // The call notes land in the model as synchronizations (the launch notes wait for kernels).
    const cuscope::RangeStats* range = cuscope::snapshot().find("noting");
    const std::uint64_t seen = range != nullptr ? range->self.sync_count : 0;
    const bool all_seen = !calls || seen == static_cast<std::uint64_t>(n + batch_notes);
    std::printf("%s notes %ld, lost %llu%s\n", calls ? "call" : "launch", n, static_cast<unsigned long long>(lost),
                all_seen ? "" : ", not every call seen");
    return lost == 0 && all_seen ? 0 : 1;
  }
  { CUSCOPE_SCOPE("counted"); }  // the steady state: the call site interned
  run_scopes(n);
  const cuscope::Report r = cuscope::snapshot();
  std::printf("scopes %ld%s, clock: %s\n", n,
              traced    ? " (trace mode)"
              : cupti   ? " (CUPTI tracing, fake hooks)"
              : launch  ? " (CUPTI tracing, launch notes)"
              : outside ? " (outside the step window)"
                        : "",
              r.clock.c_str());
  if (traced && r.diagnostics.trace_records_dropped != 0) {
    std::fprintf(stderr, "scope_instructions: %llu trace events dropped\n",
                 static_cast<unsigned long long>(r.diagnostics.trace_records_dropped));
    return 1;
  }
  return 0;
}

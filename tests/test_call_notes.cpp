// The synchronizes, allocations and frees that the driver callbacks note where their CUPTI records
// are off (the defaults; producers/cupti/call_callbacks.hpp, launch_notes.hpp's call notes),
// without CUPTI: the notes land in the scope open at the call, with the call's wait, size and
// address, as CUPTI's SYNCHRONIZATION and MEMORY2 records would; the callbacks read the driver's
// parameters and times and note only successful calls; a full queue refuses and counts; many
// threads note while the decoder drains; trace mode replays them to the exit report. Never here: a
// GPU.
#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "model/range_tree.hpp"
#include "noted_session.hpp"
#include "producers/clock.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/call_callbacks.hpp"
#include "producers/launch_notes.hpp"
#include "session/internal.hpp"
#include "trace/replay.hpp"
#include "trace_kit.hpp"

using cuscope::detail::CallNote;
using cuscope::detail::RecordChoice;
using cuscope_test::NotedSession;

namespace {

CallNote wait(std::uint64_t correlation, std::uint64_t start, std::uint64_t end) {
  CallNote n;
  n.kind = CallNote::Kind::wait;
  n.correlation = correlation;
  n.start_ns = start;
  n.end_ns = end;
  return n;
}

CallNote memory(CallNote::Kind kind, std::uint64_t correlation, std::uint64_t address, std::uint64_t bytes) {
  CallNote n;
  n.kind = kind;
  n.correlation = correlation;
  n.start_ns = 1'000 + correlation;
  n.end_ns = 1'100 + correlation;
  n.address = address;
  n.bytes = bytes;
  return n;
}

const cuscope::RangeStats& range(const cuscope::Report& r, const char* path) {
  const cuscope::RangeStats* found = r.find(path);
  REQUIRE(found != nullptr);
  return *found;
}

// One driver call as CUPTI hands it to the callback: its entry, then (after `during`) its exit
// returning `result`.
template <class Params, class During>
void call(CUpti_CallbackId cbid, std::uint32_t correlation, Params& params, CUresult result,
          During&& during) {
  auto& sink = cuscope::detail::session();
  std::uint64_t shared = 0;  // CUPTI's correlationData: one value from the entry to the exit
  CUpti_CallbackData cb{};
  cb.correlationId = correlation;
  cb.correlationData = &shared;
  cb.functionParams = &params;
  cb.callbackSite = CUPTI_API_ENTER;
  CHECK(cuscope::detail::on_timed_call(sink, cbid, cb));
  during(params);
  cb.callbackSite = CUPTI_API_EXIT;
  cb.functionReturnValue = &result;
  CHECK(cuscope::detail::on_timed_call(sink, cbid, cb));
}

template <class Params>
void call(CUpti_CallbackId cbid, std::uint32_t correlation, Params& params, CUresult result = CUDA_SUCCESS) {
  call(cbid, correlation, params, result, [](Params&) {});
}

}  // namespace

TEST_CASE("noted synchronizes land in the scope open at the call, with their wait", "[launch][calls]") {
  NotedSession s;
  {
    CUSCOPE_SCOPE("outer");
    cuscope::detail::note_call(s.sink(), wait(201, 10'000, 10'500));
    {
      CUSCOPE_SCOPE("inner");
      cuscope::detail::note_call(s.sink(), wait(202, 20'000, 20'250));
      cuscope::detail::note_call(s.sink(), wait(203, 30'000, 30'100));
    }
  }
  cuscope::detail::note_call(s.sink(), wait(204, 40'000, 40'040));  // outside every scope
  cuscope::detail::own_calls_begin(cuscope::model::kCuscopeInternal);
  cuscope::detail::note_call(s.sink(), wait(205, 50'000, 59'000));  // cuscope's own: not the program's
  cuscope::detail::own_calls_end();
  s.kernels({});
  const cuscope::Report r = cuscope::snapshot();
  CHECK(range(r, "outer").self.sync_count == 1);
  CHECK(range(r, "outer").self.sync_ns == 500);
  CHECK(range(r, "outer/inner").self.sync_count == 2);
  CHECK(range(r, "outer/inner").self.sync_ns == 350);
  CHECK(range(r, "outer").total.sync_ns == 850);
  CHECK(range(r, "(unscoped)").self.sync_count == 1);
  CHECK(range(r, "(unscoped)").self.sync_ns == 40);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(cuscope::detail::take_lost_launch_notes(cuscope::detail::session()) == 0);
}

TEST_CASE("noted allocations and frees: counts, sizes, frees sized from the books, live peaks",
          "[launch][calls]") {
  NotedSession s;
  using K = CallNote::Kind;
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("churn");
    const std::uint64_t c = 300 + 10 * i;
    cuscope::detail::note_call(s.sink(), memory(K::alloc, c, 0xA000, 1 << 20));
    cuscope::detail::note_call(s.sink(), memory(K::alloc, c + 1, 0xB000, 4'096));
    cuscope::detail::note_call(s.sink(), memory(K::free, c + 2, 0xA000, 0));
    cuscope::detail::note_call(s.sink(), memory(K::free, c + 3, 0xB000, 0));
  }
  {
    CUSCOPE_SCOPE("keep");
    cuscope::detail::note_call(s.sink(), memory(K::alloc, 400, 0xC000, 512));
  }
  s.kernels({});
  const cuscope::Report r = cuscope::snapshot();
  const auto& churn = range(r, "churn");
  CHECK(churn.self.alloc_count == 6);
  CHECK(churn.self.alloc_bytes == 3 * ((1u << 20) + 4'096));
  CHECK(churn.self.free_count == 6);
  CHECK(churn.self.free_bytes == 3 * ((1u << 20) + 4'096));
  CHECK(churn.self.peak_bytes == (1u << 20) + 4'096);
  CHECK(range(r, "keep").self.peak_bytes == 512);
  bool churn_found = false;
  for (const cuscope::Finding& f : churn.findings) churn_found = churn_found || f.id == "allocation-churn";
  CHECK(churn_found);
  CHECK(r.diagnostics.unresolved_records == 0);
}

TEST_CASE(
    "the calls noted: synchronizes without synchronization records, device allocations and frees "
    "without memory records, nothing else",
    "[launch][calls]") {
  using cuscope::detail::timed_call_kind;
  const RecordChoice none{false, false};
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, none) == CallNote::Kind::wait);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz, none) == CallNote::Kind::wait);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, none) == CallNote::Kind::wait);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2, none) == CallNote::Kind::wait);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, none) == CallNote::Kind::wait);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, none) == CallNote::Kind::alloc);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz, none) == CallNote::Kind::alloc);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, none) == CallNote::Kind::alloc);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, none) == CallNote::Kind::free);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, none) == CallNote::Kind::free);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuMemMap, none) == CallNote::Kind::alloc);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, none) == CallNote::Kind::free);
  // Not the frequent calls that do not block the host, nor host memory, nor launches, nor the
  // physical handles that a mapping maps (their memory counts where it is mapped).
  for (CUpti_CallbackId other :
       {CUPTI_DRIVER_TRACE_CBID_cuEventQuery, CUPTI_DRIVER_TRACE_CBID_cuStreamQuery,
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
        CUPTI_DRIVER_TRACE_CBID_cuMemCreate, CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
        CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess})
    CHECK(timed_call_kind(other, none) == std::nullopt);
  // Where their records are on, the records say it: no call is noted twice.
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, {true, false}) == std::nullopt);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, {true, false}) == CallNote::Kind::alloc);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, {false, true}) == std::nullopt);
  CHECK(timed_call_kind(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, {false, true}) == CallNote::Kind::wait);
}

TEST_CASE("the callbacks read the driver's parameters and times, and note only successful calls",
          "[launch][calls]") {
  NotedSession s;
  cuscope::detail::set_call_callbacks({false, false});
  std::uint64_t outside = 0;
  {
    CUSCOPE_SCOPE("calls");
    const std::uint64_t before = cuscope::detail::now_ns();
    cuStreamSynchronize_params sync{};
    call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, 501, sync, CUDA_SUCCESS,
         [](auto&) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
    outside = cuscope::detail::now_ns() - before;
    CUdeviceptr dptr = 0;
    cuMemAlloc_v2_params alloc{&dptr, 4'096};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 502, alloc, CUDA_SUCCESS, [](auto& p) { *p.dptr = 0xD000; });
    CUdeviceptr pitched = 0;
    std::size_t pitch = 0;
    cuMemAllocPitch_v2_params alloc_pitch{&pitched, &pitch, 300, 8, 4};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, 503, alloc_pitch, CUDA_SUCCESS, [](auto& p) {
      *p.dptr = 0xE000;
      *p.pPitch = 512;  // the driver's row pitch: 8 rows of 512 bytes
    });
    CUdeviceptr failed = 0;
    cuMemAlloc_v2_params refused{&failed, std::size_t{1} << 40};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 504, refused, CUDA_ERROR_OUT_OF_MEMORY);  // not noted
    cuMemFree_v2_params nothing{0};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, 505, nothing);  // cudaFree(nullptr): frees nothing
    cuMemFree_v2_params free_d{0xD000};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, 506, free_d);
    cuMemFreeAsync_params free_e{0xE000, nullptr};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, 507, free_e);
    // A call that is not noted: the callback says so, and leaves it alone.
    CUpti_CallbackData query{};
    query.callbackSite = CUPTI_API_ENTER;
    CHECK_FALSE(cuscope::detail::on_timed_call(s.sink(), CUPTI_DRIVER_TRACE_CBID_cuEventQuery, query));
  }
  s.kernels({});
  const cuscope::Report r = cuscope::snapshot();
  const auto& calls = range(r, "calls");
  CHECK(calls.self.sync_count == 1);
  CHECK(calls.self.sync_ns >= 2'000'000);  // the entry's clock to the exit's: the sleep between
  CHECK(calls.self.sync_ns <= outside);
  CHECK(calls.self.alloc_count == 2);
  CHECK(calls.self.alloc_bytes == 4'096 + 8 * 512);
  CHECK(calls.self.free_count == 2);
  CHECK(calls.self.free_bytes == 4'096 + 8 * 512);
  CHECK(calls.self.peak_bytes == 4'096 + 8 * 512);
  CHECK(r.diagnostics.unresolved_records == 0);
  // Records on (CUSCOPE_SYNC_RECORDS=1, CUSCOPE_MEMORY_RECORDS=1): no call is noted by callback.
  cuscope::detail::set_call_callbacks({true, true});
  CUpti_CallbackData cb{};
  cb.callbackSite = CUPTI_API_ENTER;
  CHECK_FALSE(cuscope::detail::on_timed_call(s.sink(), CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, cb));
  cuscope::detail::clear_call_callbacks();
}

TEST_CASE(
    "mapped memory (cuMemMap, as PyTorch's expandable segments map it): a mapping is an allocation "
    "at its address, its unmap the free, each sized by the call",
    "[launch][calls][vmm]") {
  NotedSession s;
  cuscope::detail::set_call_callbacks({false, false});
  constexpr std::size_t kPage = std::size_t{2} << 20;  // PyTorch maps 2 MiB pages in small pools
  {
    CUSCOPE_SCOPE("grow");
    cuMemMap_params first{0xA00000, kPage, 0, 1, 0};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemMap, 601, first);
    cuMemMap_params second{0xA00000 + kPage, kPage, 0, 2, 0};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemMap, 602, second);
    cuMemMap_params refused{0xF00000, kPage, 0, 3, 0};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemMap, 603, refused, CUDA_ERROR_INVALID_VALUE);  // not noted
  }
  {
    CUSCOPE_SCOPE("shrink");
    cuMemUnmap_params second{0xA00000 + kPage, kPage};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, 604, second);
    cuMemUnmap_params before{0x100000000, 4 * kPage};  // mapped before tracing: off the books
    call(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, 605, before);
  }
  {
    CUSCOPE_SCOPE("regrow");  // the unmapped page's address mapped again: a new allocation
    cuMemMap_params again{0xA00000 + kPage, kPage, 0, 4, 0};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemMap, 606, again);
  }
  s.kernels({});
  const cuscope::Report r = cuscope::snapshot();
  const auto& grow = range(r, "grow");
  CHECK(grow.self.alloc_count == 2);
  CHECK(grow.self.alloc_bytes == 2 * kPage);
  CHECK(grow.self.peak_bytes == 2 * kPage);
  CHECK(grow.self.free_count == 0);
  const auto& shrink = range(r, "shrink");
  CHECK(shrink.self.free_count == 2);
  CHECK(shrink.self.free_bytes == kPage + 4 * kPage);  // each unmap's size, as the call gave it
  CHECK(shrink.self.alloc_count == 0);
  CHECK(range(r, "regrow").self.alloc_count == 1);
  CHECK(range(r, "regrow").self.peak_bytes == kPage);
  // Each address was unmapped before it was mapped again: nothing booked twice.
  CHECK(r.diagnostics.allocations_untracked == 0);
  cuscope::detail::clear_call_callbacks();
}

TEST_CASE(
    "mapped memory: one cuMemUnmap of a range mapped in pieces (as CUDA's multi-device sample stripes "
    "it) frees every piece",
    "[launch][calls][vmm]") {
  NotedSession s;
  cuscope::detail::set_call_callbacks({false, false});
  constexpr std::size_t kPage = std::size_t{2} << 20;
  constexpr std::uint64_t kFirst = 0x40000000, kSecond = 0x80000000;
  const auto map_pieces = [](std::uint64_t base, std::uint32_t correlation) {
    for (std::uint64_t i = 0; i < 4; ++i) {
      cuMemMap_params piece{base + i * kPage, kPage, 0, i + 1, 0};
      call(CUPTI_DRIVER_TRACE_CBID_cuMemMap, correlation + static_cast<std::uint32_t>(i), piece);
    }
  };
  {
    CUSCOPE_SCOPE("serve");
    {
      CUSCOPE_SCOPE("grow");
      map_pieces(kFirst, 700);
    }
    {
      CUSCOPE_SCOPE("shrink");
      cuMemUnmap_params whole{kFirst, 4 * kPage};
      call(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, 710, whole);
    }
    {
      CUSCOPE_SCOPE("regrow");  // elsewhere, then where the first range was
      map_pieces(kSecond, 720);
      cuMemUnmap_params whole{kSecond, 4 * kPage};
      call(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, 730, whole);
      map_pieces(kFirst, 740);
    }
  }
  s.kernels({});
  const cuscope::Report r = cuscope::snapshot();
  CHECK(range(r, "serve/shrink").self.free_count == 1);
  CHECK(range(r, "serve/shrink").self.free_bytes == 4 * kPage);
  // Never more than one range's four pages live at once.
  CHECK(range(r, "serve").total.peak_bytes == 4 * kPage);
  CHECK(range(r, "serve/regrow").self.peak_bytes == 4 * kPage);
  // Each piece was unmapped before its address was mapped again: nothing booked twice.
  CHECK(r.diagnostics.allocations_untracked == 0);
  cuscope::detail::clear_call_callbacks();
}

TEST_CASE("a full call queue refuses notes and counts them, and what it held lands", "[launch][calls]") {
  NotedSession s;
  // No collector: its tick would take the lost count into the model as soon as the lock below is
  // released, before this case reads it (ThreadSanitizer's slower run lost that race 2 times in 3).
  cuscope::detail::stop_collector(s.sink());
  {
    CUSCOPE_SCOPE("flood");
    // No drain mid-flood: the model's lock is held (a launch ring's own drain would take it too).
    std::lock_guard no_drain(s.sink().aggregator_mutex);
    for (std::uint64_t c = 1; c <= cuscope::detail::kMaxCallNotes + 3; ++c)
      cuscope::detail::note_call(s.sink(), wait(c, 1'000, 1'002));
  }
  CHECK(cuscope::detail::take_lost_launch_notes(cuscope::detail::session()) == 3);
  s.kernels({});
  const cuscope::Report r = cuscope::snapshot();
  CHECK(range(r, "flood").self.sync_count == cuscope::detail::kMaxCallNotes);
  CHECK(range(r, "flood").self.sync_ns == 2 * cuscope::detail::kMaxCallNotes);
}

// Refusals are counted per session: one made after the session's last drain, once the stop has
// turned its launch attribution off (stop_activity_tracing), is in that session's final report, and
// the next session starts with none. Before, the count was the process's, taken only by a session
// still attributing launches: such a refusal was missing from its own report and came up in the
// next session's.
TEST_CASE("a note refused just before the stop counts in its own session and not in the next",
          "[launch][calls][session]") {
  NotedSession s;
  cuscope::detail::stop_collector(s.sink());  // no tick: nothing drains but this case
  {
    CUSCOPE_SCOPE("flood");
    std::lock_guard no_drain(s.sink().aggregator_mutex);
    for (std::uint64_t c = 1; c <= cuscope::detail::kMaxCallNotes + 2; ++c)
      cuscope::detail::note_call(s.sink(), wait(c, 1'000, 1'002));
  }
  s.sink().launch_attributed.store(false, std::memory_order_release);  // as the stop turns it off
  CHECK(cuscope::snapshot().diagnostics.launch_notes_lost == 2);
  {
    std::lock_guard lock(s.sink().aggregator_mutex);
    cuscope::detail::drain_launches(s.sink());  // the queue's notes stay this session's
  }

  cuscope::detail::reset_for_testing();
  cuscope::detail::trace_with_fake_cupti_for_testing(cuscope_test::no_push, cuscope_test::no_pop, true);
  const cuscope::Report next = cuscope::snapshot();
  CHECK(next.diagnostics.launch_notes_lost == 0);
  CHECK(next.find("flood") == nullptr);
}

TEST_CASE("call notes from many threads, drained while they wait, are exact", "[launch][calls][threads]") {
  NotedSession s;
  constexpr int kThreads = 8;
  constexpr std::uint64_t kWaits = 1'000;  // 8,000 in all: the queue's bound is never reached
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      CUSCOPE_SCOPE("waiter");
      for (std::uint64_t i = 0; i < kWaits; ++i)
        cuscope::detail::note_call(s.sink(), wait(1 + t * kWaits + i, 100 * i + 1, 100 * i + 4));
      done.fetch_add(1);
    });
  }
  while (done.load() < kThreads) {  // the decoder drains while the threads note
    std::lock_guard lock(s.sink().aggregator_mutex);
    cuscope::detail::drain_launches(s.sink());
  }
  for (auto& th : threads) th.join();
  s.kernels({});
  const cuscope::Report r = cuscope::snapshot();
  CHECK(range(r, "waiter").self.sync_count == kThreads * kWaits);
  CHECK(range(r, "waiter").self.sync_ns == 3 * kThreads * kWaits);
  CHECK(range(r, "waiter").threads == kThreads);
  CHECK(cuscope::detail::take_lost_launch_notes(cuscope::detail::session()) == 0);
}

TEST_CASE("trace mode: noted synchronizes and allocations replay to the exit report",
          "[launch][calls][trace]") {
  const std::string trace_path = cuscope_test::trace_kit::temp_path("calls.cuscope");
  const std::string json_path = cuscope_test::trace_kit::temp_path("calls.json");
  // The test notes the calls itself.
  const cuscope::Options o = cuscope_test::replayable_options(trace_path, json_path);
  {
    NotedSession s(o);
    using K = CallNote::Kind;
    for (int i = 0; i < 2; ++i) {
      CUSCOPE_SCOPE("step");
      const std::uint64_t c = 700 + 10 * i;
      cuscope::detail::note_call(s.sink(), memory(K::alloc, c, 0xF000, 256));
      cuscope::detail::note_call(s.sink(), wait(c + 1, 5'000, 5'300));
      cuscope::detail::note_call(s.sink(), memory(K::free, c + 2, 0xF000, 0));
    }
    s.kernels({});
    // One drain as the collector's tick makes it, counted as cuscope's own processing: the ticks
    // themselves may not come before the shutdown on a loaded machine (an H200's CTest run, -j16).
    cuscope::detail::drain_launch_notes(s.sink());
    cuscope::shutdown();
  }
  // The exit report exactly, cuscope's own processing time (the collector's drains) included: the
  // trace's summary carries it.
  const cuscope::Report replayed = cuscope_test::trace_kit::replay_as_exit(trace_path, json_path);
  CHECK(replayed.diagnostics.activity_processing_ns > 0);
  const auto& step = range(replayed, "step");
  CHECK(step.self.sync_count == 2);
  CHECK(step.self.sync_ns == 600);
  CHECK(step.self.alloc_count == 2);
  CHECK(step.self.free_bytes == 512);
}

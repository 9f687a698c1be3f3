// Launch attribution (CUSCOPE_ATTRIBUTION=launch) without CUPTI: note_launch() called as the launch
// callback calls it, inside and outside scopes, on many threads, drained into the model; kernel
// records with those correlation ids must land in exactly the scope that was open at the launch.
// A full ring drains itself when the drainer's locks are free, spills behind itself when they are
// not, and refuses (counts) the note past its spill rings.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "model/events.hpp"
#include "noted_session.hpp"
#include "producers/launch_notes.hpp"
#include "session/internal.hpp"
#include "session/session.hpp"

using cuscope::detail::LaunchNote;
using cuscope::detail::LaunchRing;

namespace {

using cuscope_test::NotedSession;

std::uint64_t kernels_in(const cuscope::Report& r, const char* path) {
  const cuscope::RangeStats* range = r.find(path);
  return range != nullptr ? range->self.kernel_calls : 0;
}

// Holds `m` on a thread of its own from construction until release(): a drainer busy elsewhere
// (try_lock on a mutex the calling thread holds itself would be undefined).
class HeldElsewhere {
 public:
  explicit HeldElsewhere(std::mutex& m) {
    std::future<void> held = held_.get_future();
    holder_ = std::thread([this, &m, until = release_.get_future()] {
      std::lock_guard lock(m);
      held_.set_value();
      until.wait();
    });
    held.wait();
  }
  ~HeldElsewhere() { release(); }
  HeldElsewhere(const HeldElsewhere&) = delete;
  HeldElsewhere& operator=(const HeldElsewhere&) = delete;
  void release() {
    if (!holder_.joinable()) return;
    release_.set_value();
    holder_.join();
  }

 private:
  std::promise<void> held_;
  std::promise<void> release_;
  std::thread holder_;
};

// Correlation ids first..last.
std::vector<std::uint64_t> ids(std::uint64_t first, std::uint64_t last) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t c = first; c <= last; ++c) out.push_back(c);
  return out;
}

// `threads` threads, each noting `launches` launches (ids 1 up, thread by thread) inside one scope
// `scope` (entered by name), then counting itself in `done`.
std::vector<std::thread> noting_threads(NotedSession& s, const char* scope, int threads,
                                        std::uint64_t launches, std::atomic<int>& done) {
  std::vector<std::thread> out;
  for (int t = 0; t < threads; ++t) {
    out.emplace_back([&s, &done, scope, launches, t] {
      const cuscope::Scope in_scope(scope);
      for (std::uint64_t i = 0; i < launches; ++i) s.note(1 + t * launches + i);
      done.fetch_add(1);
    });
  }
  return out;
}

// The collector's processing so far (its last tick runs as it stops): the baseline of a case that
// stopped it.
std::uint64_t processing_ns() { return cuscope::snapshot().diagnostics.activity_processing_ns; }

}  // namespace

TEST_CASE("a launch ring keeps its notes in order and refuses past its bound", "[launch]") {
  auto ring = std::make_unique<LaunchRing>();
  for (std::uint64_t i = 1; i <= LaunchRing::kNotes; ++i) REQUIRE(ring->push(LaunchNote{i, i * 10, 0}));
  CHECK_FALSE(ring->push(LaunchNote{99'999, 0, 0}));
  std::uint64_t expected = 1;
  bool in_order = true;
  ring->drain([&](const LaunchNote& n) {
    in_order = in_order && n.correlation == expected && n.instance == expected * 10;
    ++expected;
  });
  CHECK(in_order);
  CHECK(expected == LaunchRing::kNotes + 1);
  CHECK(ring->push(LaunchNote{7, 70, 0}));  // room again
  int drained = 0;
  ring->drain([&](const LaunchNote& n) { drained += n.correlation == 7 ? 1 : 100; });
  CHECK(drained == 1);
}

TEST_CASE("launch notes tie each launch to the scope open on its thread", "[launch]") {
  NotedSession s;
  using cuscope::detail::g_flags;
  CHECK(g_flags.load() == (cuscope::detail::kRecording | cuscope::detail::kInstances));  // no pushes
  {
    CUSCOPE_SCOPE("outer");
    s.note(101);
    {
      CUSCOPE_SCOPE("inner");
      s.note(102);
      s.note(103);
    }
    s.note(104);
  }
  s.note(105);  // outside every scope
  cuscope::detail::own_calls_begin(cuscope::model::kCuscopeInternal);
  s.note(106);  // cuscope's own call (the collector's event queries)
  cuscope::detail::own_calls_end();
  s.kernels({101, 102, 103, 104, 105, 106});
  const cuscope::Report r = cuscope::snapshot();
  CHECK(kernels_in(r, "outer") == 2);
  CHECK(kernels_in(r, "outer/inner") == 2);
  CHECK(kernels_in(r, "(unscoped)") == 1);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.launch_notes_lost == 0);
  CHECK(cuscope::detail::take_lost_launch_notes(cuscope::detail::session()) == 0);
}

// No collector here (stopped): only the writer's own drain can make room. Past a full ring, the
// first refused note drains every ring into the model (its locks are free), then goes in.
TEST_CASE("a full launch ring drains itself when the model is free, so no note is lost", "[launch]") {
  NotedSession s;
  cuscope::detail::stop_collector(s.sink());
  const std::uint64_t collector_ns = processing_ns();
  constexpr std::uint64_t kMore = 1'000;  // past the ring's bound, less than a second ring
  {
    CUSCOPE_SCOPE("first");
    for (std::uint64_t c = 1; c <= LaunchRing::kNotes; ++c) s.note(c);
  }
  CHECK(cuscope::detail::launch_notes_pending_for_testing() == LaunchRing::kNotes);
  {
    CUSCOPE_SCOPE("then");
    // CUPTI never reuses an id; here the note that finds the ring full names id 1 again, so the
    // model's last word on id 1 says whether it came after the ring's earlier notes.
    s.note(1);
    for (std::uint64_t c = LaunchRing::kNotes + 1; c < LaunchRing::kNotes + kMore; ++c) s.note(c);
  }
  // The ring's 4,096 went to the model; the kMore since wait in it.
  CHECK(cuscope::detail::launch_notes_pending_for_testing() == kMore);
  CHECK(cuscope::detail::take_lost_launch_notes(cuscope::detail::session()) == 0);
  const cuscope::Report drained = cuscope::snapshot();
  CHECK(drained.diagnostics.activity_processing_ns > collector_ns);  // the writer's drain, as cuscope's own
  CHECK(drained.diagnostics.activity_buffers == 0);
  s.kernels(ids(1, LaunchRing::kNotes + kMore - 1));
  const cuscope::Report r = cuscope::snapshot();
  CHECK(kernels_in(r, "first") == LaunchRing::kNotes - 1);
  CHECK(kernels_in(r, "then") == kMore);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.launch_notes_lost == 0);
}

// The model's lock held elsewhere (the decoder inside CUPTI's buffer callback, a report being
// built): the writer never waits for it; each note past the full ring spills into a ring of the
// thread's own behind it, and every note lands once the lock is free. The spill ring is kept: the
// next flood while the lock is busy makes none.
TEST_CASE("a full launch ring whose model lock is busy spills behind it, and every note lands", "[launch]") {
  NotedSession s;
  cuscope::detail::stop_collector(s.sink());
  const std::uint64_t collector_ns = processing_ns();
  constexpr std::uint64_t kMore = 1'000;
  constexpr std::uint64_t kFlood = LaunchRing::kNotes + kMore;
  const std::uint64_t pending_before = cuscope::detail::launch_notes_pending_for_testing();
  const auto before = cuscope::detail::launch_ring_counts_for_testing();
  {
    HeldElsewhere busy(s.sink().aggregator_mutex);
    CUSCOPE_SCOPE("flood");
    for (std::uint64_t c = 1; c <= kFlood; ++c) s.note(c);
    CHECK(cuscope::detail::launch_notes_pending_for_testing() == pending_before + kFlood);
  }
  const auto spilled = cuscope::detail::launch_ring_counts_for_testing();
  CHECK(spilled.spills <=
        before.spills + 1);                // one made, or none: the leased ring kept one from a case before
  CHECK(spilled.made <= before.made + 1);  // the ring this thread leased at its first note, if new
  s.kernels(ids(1, kFlood));
  const cuscope::Report r = cuscope::snapshot();
  CHECK(kernels_in(r, "flood") == kFlood);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.launch_notes_lost == 0);
  CHECK(r.diagnostics.activity_processing_ns == collector_ns);  // no drain of the writer's: none counted
  {
    HeldElsewhere busy(s.sink().aggregator_mutex);
    CUSCOPE_SCOPE("again");
    for (std::uint64_t c = kFlood + 1; c <= 2 * kFlood; ++c) s.note(c);
  }
  CHECK(cuscope::detail::launch_ring_counts_for_testing().spills == spilled.spills);
  s.kernels(ids(kFlood + 1, 2 * kFlood));
  CHECK(kernels_in(cuscope::snapshot(), "again") == kFlood);
  CHECK(cuscope::detail::take_lost_launch_notes(cuscope::detail::session()) == 0);
}

// Spill rings stay behind the ring they spilled from, which goes back to the free list when its thread
// exits: a new thread gets a drained ring with spill rings before one without, so the process's
// spill rings are used again before new ones are made (or, past kMaxSpillRings, notes refused).
TEST_CASE("a thread that floods after one that spilled reuses its spill rings", "[launch][threads]") {
  NotedSession s;
  cuscope::detail::stop_collector(s.sink());
  constexpr std::uint64_t kFlood = LaunchRing::kNotes + 1'000;
  const auto flood = [&](std::uint64_t first) {
    CUSCOPE_SCOPE("flood");
    for (std::uint64_t c = first; c < first + kFlood; ++c) s.note(c);
  };
  {
    // Two rings on the free list, the one without spill rings first: its thread (one note) exits
    // while the other, which spilled, still runs.
    std::promise<void> spilled;
    std::promise<void> other_gone;
    HeldElsewhere busy(s.sink().aggregator_mutex);
    std::thread spiller([&] {
      flood(1);
      spilled.set_value();
      other_gone.get_future().wait();
    });
    std::thread other([&] {
      spilled.get_future().wait();
      s.note(kFlood + 1);
    });
    other.join();
    other_gone.set_value();
    spiller.join();
  }
  {
    std::lock_guard lock(s.sink().aggregator_mutex);
    cuscope::detail::drain_launches(s.sink());
  }
  const auto before = cuscope::detail::launch_ring_counts_for_testing();
  {
    HeldElsewhere busy(s.sink().aggregator_mutex);
    std::thread([&] { flood(kFlood + 2); }).join();
  }
  const auto after = cuscope::detail::launch_ring_counts_for_testing();
  CHECK(after.spills == before.spills);
  CHECK(after.made == before.made);
  CHECK(cuscope::detail::launch_notes_pending_for_testing() == kFlood);
  s.kernels(ids(1, 2 * kFlood + 1));
  const cuscope::Report r = cuscope::snapshot();
  CHECK(kernels_in(r, "flood") == 2 * kFlood);
  CHECK(r.diagnostics.launch_notes_lost == 0);
}

// Past every spill ring the process may make, with the model's lock busy throughout: each note past
// them is refused and counted, in the next report already (the collector stopped: no drain has
// taken the count before it), and its work is unresolved. In a process of its own (CTest's) the
// notes held are exactly the ring's and kMaxSpillRings spill rings'.
TEST_CASE("past its spill rings a launch note is refused and counted in the next report", "[launch]") {
  NotedSession s;
  cuscope::detail::stop_collector(s.sink());
  constexpr std::uint64_t kRooms = 1 + cuscope::detail::kMaxSpillRings;
  constexpr std::uint64_t kTotal = kRooms * LaunchRing::kNotes + 1'000;
  const std::uint64_t pending_before = cuscope::detail::launch_notes_pending_for_testing();
  const auto before = cuscope::detail::launch_ring_counts_for_testing();
  std::uint64_t held = 0;
  {
    HeldElsewhere busy(s.sink().aggregator_mutex);
    CUSCOPE_SCOPE("flood");
    for (std::uint64_t c = 1; c <= kTotal; ++c) s.note(c);
    held = cuscope::detail::launch_notes_pending_for_testing() - pending_before;
  }
  CHECK(cuscope::detail::launch_ring_counts_for_testing().spills == cuscope::detail::kMaxSpillRings);
  CHECK(held % LaunchRing::kNotes == 0);  // the ring and each spill ring full
  CHECK(held >= (kRooms - before.spills) * LaunchRing::kNotes);
  CHECK(held <= kRooms * LaunchRing::kNotes);
  if (before.spills == 0) CHECK(held == kRooms * LaunchRing::kNotes);
  CHECK(cuscope::snapshot().diagnostics.launch_notes_lost == kTotal - held);
  CHECK(cuscope::detail::take_lost_launch_notes(cuscope::detail::session()) == 0);  // the report took them
  s.kernels(ids(1, kTotal));
  const cuscope::Report r = cuscope::snapshot();
  CHECK(kernels_in(r, "flood") == held);
  CHECK(r.diagnostics.unresolved_records == kTotal - held);
  CHECK(r.diagnostics.launch_notes_lost == kTotal - held);
}

TEST_CASE("launch notes from many threads, drained while they launch, are exact", "[launch][threads]") {
  NotedSession s;
  constexpr int kThreads = 8;
  constexpr std::uint64_t kLaunches = 3'000;
  const auto before = cuscope::detail::launch_ring_counts_for_testing();
  std::atomic<int> done{0};
  std::vector<std::thread> threads = noting_threads(s, "worker", kThreads, kLaunches, done);
  while (done.load() < kThreads) {  // the decoder drains while the threads note
    std::lock_guard lock(s.sink().aggregator_mutex);
    cuscope::detail::drain_launches(s.sink());
  }
  for (auto& th : threads) th.join();
  s.kernels(ids(1, kThreads * kLaunches));
  const cuscope::Report r = cuscope::snapshot();
  CHECK(kernels_in(r, "worker") == kThreads * kLaunches);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(cuscope::detail::take_lost_launch_notes(cuscope::detail::session()) == 0);
  // Each thread's ring went back at its exit, to be leased again.
  const auto after = cuscope::detail::launch_ring_counts_for_testing();
  CHECK(after.leased == before.leased);
  CHECK(after.made <= before.made + kThreads);
}

// The collector drains the rings every 10 ms, between CUPTI's deliveries (every 100 ms, or a full
// buffer): a thread that notes more than a ring holds between two deliveries loses nothing as long
// as it takes 10 ms to fill half a ring. Here: three rings' worth of notes, half a ring at a time,
// each half waited out until the collector (no CUPTI here: no delivery at all) has drained it.
TEST_CASE(
    "the collector drains launch rings between CUPTI deliveries so a thread noting more than a ring loses "
    "none",
    "[launch][threads]") {
  NotedSession s;
  constexpr std::uint64_t kHalf = LaunchRing::kNotes / 2;
  constexpr std::uint64_t kTotal = 3 * LaunchRing::kNotes;
  bool drained_each_time = true;
  {
    CUSCOPE_SCOPE("fast_launcher");
    for (std::uint64_t c = 1; c <= kTotal; ++c) {
      s.note(c);
      if (c % kHalf != 0) continue;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (cuscope::detail::launch_notes_pending_for_testing() != 0 &&
             std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      drained_each_time = drained_each_time && cuscope::detail::launch_notes_pending_for_testing() == 0;
    }
  }
  CHECK(drained_each_time);  // by the collector alone: nothing else drains in this case until kernels()
  CHECK(cuscope::detail::take_lost_launch_notes(cuscope::detail::session()) == 0);
  s.kernels(ids(1, kTotal));
  const cuscope::Report r = cuscope::snapshot();
  CHECK(kernels_in(r, "fast_launcher") == kTotal);
  CHECK(r.diagnostics.unresolved_records == 0);
}

// Writers overflowing their rings at once, each draining all rings when it gets the locks, beside a
// drainer that takes the model's lock as the decoder does (and the collector's ticks): whoever
// drains, every note is either in the model or counted as lost in the report, and each lost note's
// kernel is unresolved. Which are lost depends on the timing; that none is lost silently does not,
// nor whether a collector tick came between the last refusal and the report (on a loaded machine
// the report once missed the refusals not yet taken by a tick).
TEST_CASE("writers overflowing their rings while another thread drains lose no note silently",
          "[launch][threads]") {
  NotedSession s;
  constexpr int kThreads = 4;
  constexpr std::uint64_t kLaunches = 3 * LaunchRing::kNotes;
  std::atomic<int> done{0};
  std::vector<std::thread> threads = noting_threads(s, "overflowing", kThreads, kLaunches, done);
  while (done.load() < kThreads) {
    {
      std::lock_guard lock(s.sink().aggregator_mutex);
      cuscope::detail::drain_launches(s.sink());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  for (auto& th : threads) th.join();
  s.kernels(ids(1, kThreads * kLaunches));
  const cuscope::Report r = cuscope::snapshot();
  const std::uint64_t lost = r.diagnostics.launch_notes_lost;
  CHECK(cuscope::detail::take_lost_launch_notes(cuscope::detail::session()) == 0);
  CHECK(kernels_in(r, "overflowing") + lost == kThreads * kLaunches);
  CHECK(r.diagnostics.unresolved_records == lost);
  CHECK(cuscope::detail::launch_notes_pending_for_testing() == 0);
}

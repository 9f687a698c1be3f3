// Many threads at once: exact counts, and snapshots taken while other threads keep going.
#include <atomic>
#include <catch2/catch.hpp>
#include <latch>
#include <thread>
#include <vector>

#include "session_fixture.hpp"

TEST_CASE("scopes on many threads at once give exact counts", "[threads]") {
  cuscope_test::Session session;
  constexpr int kThreads = 8;
  constexpr int kIterations = 20'000;
  std::vector<std::thread> threads;
  std::latch all_alive(kThreads);  // so no thread exits and hands its tree to another
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&all_alive] {
      { CUSCOPE_SCOPE("mt_ready"); }  // the thread's first scope gives it a tree of its own
      all_alive.arrive_and_wait();
      for (int i = 0; i < kIterations; ++i) {
        CUSCOPE_SCOPE("mt_outer");
        CUSCOPE_SCOPE("mt_inner");
      }
    });
  }
  for (auto& t : threads) t.join();
  const cuscope::Report r = cuscope::snapshot();
  const auto* outer = r.find("mt_outer");
  REQUIRE(outer != nullptr);
  CHECK(outer->calls == kThreads * kIterations);
  CHECK(outer->threads == kThreads);
  CHECK(r.find("mt_outer/mt_inner")->calls == kThreads * kIterations);
  CHECK(r.diagnostics.open_scopes == 0);
  CHECK(r.diagnostics.unbalanced_ends == 0);
}

TEST_CASE("a snapshot taken while other threads add scopes is consistent", "[threads]") {
  cuscope_test::Session session;
  constexpr int kWorkers = 4;
  std::atomic<bool> stop{false};
  std::atomic<int> running{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kWorkers; ++t) {
    workers.emplace_back([&stop, &running, t] {
      for (bool first = true; !stop.load(std::memory_order_relaxed); first = false) {
        {
          CUSCOPE_SCOPE("busy");
          CUSCOPE_SCOPE("child");
          if (t == 0) {
            // A path that appears while snapshots are being taken.
            cuscope::Scope late{std::string_view("late_child")};
          }
        }
        if (first) running.fetch_add(1);
      }
    });
  }
  while (running.load() < kWorkers) std::this_thread::yield();
  std::uint64_t last_busy = 0;
  for (int i = 0; i < 200; ++i) {
    const cuscope::Report r = cuscope::snapshot();
    const auto* busy = r.find("busy");
    REQUIRE(busy != nullptr);
    const auto* child = r.find("busy/child");
    REQUIRE(child != nullptr);
    CHECK(busy->calls >= last_busy);  // never goes back
    last_busy = busy->calls;
    // Ranges are read one after another while the workers go on, the parent first: the child,
    // read later, can have run ahead, but can lag by at most one entry in flight per worker.
    CHECK(child->calls + kWorkers >= busy->calls);
    CHECK(r.diagnostics.open_scopes <= 3 * kWorkers);
  }
  stop = true;
  for (auto& w : workers) w.join();
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.find("busy") != nullptr);
  CHECK(r.find("busy/child")->calls == r.find("busy")->calls);
  CHECK(r.find("busy")->calls >= last_busy);
  CHECK(r.diagnostics.open_scopes == 0);
}

TEST_CASE("threads that exit keep their ranges in the report", "[threads]") {
  cuscope_test::Session session;
  for (int i = 0; i < 50; ++i) {
    std::thread([] { CUSCOPE_SCOPE("short_lived"); }).join();
  }
  std::vector<std::thread> wave;
  for (int i = 0; i < 6; ++i) wave.emplace_back([] { CUSCOPE_SCOPE("short_lived"); });
  for (auto& t : wave) t.join();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("short_lived")->calls == 56);
  CHECK(r.diagnostics.open_scopes == 0);
}

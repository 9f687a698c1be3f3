// Tests of the NVTX start/end range table (model/spans.hpp): spans that overlap without nesting,
// end on other threads, ids that are not open, the bound on open spans, and the report's order.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "model/names.hpp"
#include "model/spans.hpp"
#include "session_fixture.hpp"

using cuscope::DurationStats;
using cuscope::Report;
using cuscope::SpanStats;
using cuscope::model::NameTable;
using cuscope::model::SpanTable;

namespace {

constexpr std::uint64_t kThreadA = 11;
constexpr std::uint64_t kThreadB = 22;

Report built(const SpanTable& spans, const NameTable& names) {
  Report r;
  spans.build(names, r);
  return r;
}

bool same(const DurationStats& d, std::uint64_t count, std::uint64_t total, std::uint64_t min,
          std::uint64_t max) {
  return d.count == count && d.total_ns == total && d.min_ns == min && d.max_ns == max;
}

}  // namespace

TEST_CASE("spans that overlap without nesting are each timed from their own start to end", "[spans]") {
  NameTable names;
  SpanTable spans;
  const std::uint32_t load = names.intern("load");
  const std::uint32_t decode = names.intern("decode");
  const std::uint64_t a = spans.start(0, load, kThreadA, 100);
  const std::uint64_t b = spans.start(0, decode, kThreadA, 110);
  REQUIRE(spans.end(a, kThreadA, 130));  // ends while b, started later, is still open
  REQUIRE(spans.end(b, kThreadA, 150));

  const Report r = built(spans, names);
  REQUIRE(r.spans.size() == 2);
  CHECK(r.spans[0].name == "decode");
  CHECK(r.spans[0].domain.empty());
  CHECK(same(r.spans[0].host, 1, 40, 40, 40));
  CHECK(r.spans[1].name == "load");
  CHECK(same(r.spans[1].host, 1, 30, 30, 30));
  for (const SpanStats& s : r.spans) {
    CHECK(s.open == 0);
    CHECK(s.cross_thread == 0);
  }
  CHECK(r.diagnostics.unmatched_span_ends == 0);
  CHECK(r.diagnostics.spans_dropped == 0);
}

TEST_CASE("spans of one name aggregate into one row with count, total, min and max", "[spans]") {
  NameTable names;
  SpanTable spans;
  const std::uint32_t load = names.intern("load");
  for (std::uint64_t ns : {5, 20, 8}) spans.end(spans.start(0, load, kThreadA, 1'000), kThreadA, 1'000 + ns);
  const Report r = built(spans, names);
  REQUIRE(r.spans.size() == 1);
  CHECK(same(r.spans[0].host, 3, 33, 5, 20));
}

TEST_CASE("a span ended on another thread than it began is counted cross_thread", "[spans]") {
  NameTable names;
  SpanTable spans;
  const std::uint32_t load = names.intern("load");
  const std::uint64_t there = spans.start(0, load, kThreadA, 0);
  const std::uint64_t here = spans.start(0, load, kThreadA, 0);
  REQUIRE(spans.end(there, kThreadB, 10));
  REQUIRE(spans.end(here, kThreadA, 10));
  const Report r = built(spans, names);
  REQUIRE(r.spans.size() == 1);
  CHECK(r.spans[0].host.count == 2);
  CHECK(r.spans[0].cross_thread == 1);
}

TEST_CASE("ends of ids that are not open are counted and change nothing", "[spans]") {
  NameTable names;
  SpanTable spans;
  const std::uint32_t load = names.intern("load");
  const std::uint64_t id = spans.start(0, load, kThreadA, 0);
  CHECK_FALSE(spans.end(0, kThreadA, 5));       // zero: a refused start's id
  CHECK_FALSE(spans.end(id + 1, kThreadA, 5));  // never started
  CHECK(spans.end(id, kThreadA, 5));
  CHECK_FALSE(spans.end(id, kThreadA, 9));  // already ended
  const Report r = built(spans, names);
  CHECK(r.diagnostics.unmatched_span_ends == 3);
  REQUIRE(r.spans.size() == 1);
  CHECK(same(r.spans[0].host, 1, 5, 5, 5));
}

TEST_CASE("span ids are never 0 and never reused", "[spans]") {
  NameTable names;
  SpanTable spans;
  const std::uint32_t load = names.intern("load");
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 100; ++i) {
    const std::uint64_t id = spans.start(0, load, kThreadA, 0);
    CHECK(id != 0);
    CHECK(seen.insert(id).second);
    spans.end(id, kThreadA, 1);  // the id is free again in the table, but never handed out again
  }
  CHECK(seen.size() == 100);
}

TEST_CASE("a span that ends before it starts by the clock is timed 0 ns", "[spans]") {
  NameTable names;
  SpanTable spans;
  const std::uint32_t load = names.intern("load");
  REQUIRE(spans.end(spans.start(0, load, kThreadA, 1'000), kThreadB, 990));
  const Report r = built(spans, names);
  REQUIRE(r.spans.size() == 1);
  CHECK(same(r.spans[0].host, 1, 0, 0, 0));
}

TEST_CASE("starts past kMaxOpen are refused and counted, and work again once spans end", "[spans]") {
  NameTable names;
  SpanTable spans;
  const std::uint32_t held = names.intern("held");
  const std::uint32_t late = names.intern("late");
  std::vector<std::uint64_t> ids;
  for (std::size_t i = 0; i < SpanTable::kMaxOpen; ++i) ids.push_back(spans.start(0, held, kThreadA, 0));
  CHECK(std::set<std::uint64_t>(ids.begin(), ids.end()).size() == SpanTable::kMaxOpen);
  CHECK(std::set<std::uint64_t>(ids.begin(), ids.end()).count(0) == 0);

  CHECK(spans.start(0, late, kThreadA, 0) == 0);
  CHECK(spans.start(0, late, kThreadA, 0) == 0);
  CHECK_FALSE(spans.end(0, kThreadA, 1));  // the caller ends the refused span: unmatched, harmless

  REQUIRE(spans.end(ids[7], kThreadA, 4));
  const std::uint64_t again = spans.start(0, late, kThreadA, 10);
  CHECK(again != 0);
  CHECK(again > ids.back());
  CHECK(spans.start(0, late, kThreadA, 10) == 0);  // full again
  REQUIRE(spans.end(again, kThreadA, 13));

  const Report r = built(spans, names);
  CHECK(r.diagnostics.spans_dropped == 3);
  CHECK(r.diagnostics.unmatched_span_ends == 1);
  REQUIRE(r.spans.size() == 2);
  CHECK(r.spans[0].name == "held");
  CHECK(r.spans[0].open == SpanTable::kMaxOpen - 1);
  CHECK(same(r.spans[0].host, 1, 4, 4, 4));
  CHECK(r.spans[1].name == "late");
  CHECK(r.spans[1].open == 0);
  CHECK(same(r.spans[1].host, 1, 3, 3, 3));
}

TEST_CASE("open spans are counted per domain and name, with or without completed ones", "[spans]") {
  NameTable names;
  SpanTable spans;
  const std::uint32_t io = names.intern("io");
  const std::uint32_t load = names.intern("load");
  const std::uint32_t save = names.intern("save");
  spans.start(0, load, kThreadA, 0);
  spans.start(0, load, kThreadB, 0);
  spans.start(io, load, kThreadA, 0);
  spans.end(spans.start(io, save, kThreadA, 0), kThreadA, 2);
  spans.start(io, save, kThreadA, 0);

  const Report r = built(spans, names);
  REQUIRE(r.spans.size() == 3);
  CHECK(r.spans[0].domain == "io");  // the one with host time comes first
  CHECK(r.spans[0].name == "save");
  CHECK(r.spans[0].open == 1);
  CHECK(same(r.spans[0].host, 1, 2, 2, 2));
  CHECK(r.spans[1].domain.empty());  // then ties by domain ("" first), then name
  CHECK(r.spans[1].name == "load");
  CHECK(r.spans[1].open == 2);
  CHECK(same(r.spans[1].host, 0, 0, 0, 0));
  CHECK(r.spans[2].domain == "io");
  CHECK(r.spans[2].name == "load");
  CHECK(r.spans[2].open == 1);
}

TEST_CASE("spans are sorted by host total, longest first, then by domain, then by name", "[spans]") {
  NameTable names;
  SpanTable spans;
  const std::uint32_t io = names.intern("io");
  const std::uint32_t net = names.intern("net");
  const std::uint32_t a = names.intern("a");
  const std::uint32_t b = names.intern("b");
  const auto span = [&](std::uint32_t domain, std::uint32_t name, std::uint64_t ns) {
    spans.end(spans.start(domain, name, kThreadA, 0), kThreadA, ns);
  };
  span(net, a, 5);
  span(io, b, 5);
  span(0, b, 5);
  span(io, a, 5);
  span(0, a, 5);
  span(net, b, 9);
  const Report r = built(spans, names);
  std::vector<std::string> order;
  for (const SpanStats& s : r.spans) order.push_back(s.domain + ":" + s.name);
  CHECK(order == std::vector<std::string>{"net:b", ":a", ":b", "io:a", "io:b", "net:a"});
}

TEST_CASE("a report built twice from the same table is the same and replaces what it held", "[spans]") {
  NameTable names;
  SpanTable spans;
  const std::uint32_t load = names.intern("load");
  spans.end(spans.start(0, load, kThreadA, 0), kThreadA, 7);
  Report r;
  r.spans.push_back(SpanStats{"stale", "stale", {}, 1, 1});
  spans.build(names, r);
  spans.build(names, r);
  REQUIRE(r.spans.size() == 1);
  CHECK(r.spans[0].name == "load");
  CHECK(same(r.spans[0].host, 1, 7, 7, 7));
}

TEST_CASE("spans started on some threads and ended on others give exact totals", "[spans][threads]") {
  NameTable names;
  SpanTable spans;
  constexpr std::size_t kThreads = 4;
  constexpr std::size_t kPerThread = 10'000;  // all open at once stays below kMaxOpen
  constexpr std::uint64_t kNs = 7;
  const std::uint32_t load = names.intern("load");
  // Thread t starts its spans and hands their ids to thread t+1, which ends them as they come.
  std::vector<std::vector<std::atomic<std::uint64_t>>> handed(kThreads);
  for (auto& slots : handed) slots = std::vector<std::atomic<std::uint64_t>>(kPerThread);
  std::atomic<bool> done{false};
  std::atomic<int> odd_snapshots{0};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto& mine = handed[t];
      auto& theirs = handed[(t + kThreads - 1) % kThreads];
      std::size_t ended = 0;
      for (std::size_t i = 0; i < kPerThread || ended < kPerThread;) {
        if (i < kPerThread) {
          mine[i].store(spans.start(0, load, t, i), std::memory_order_release);
          ++i;
        }
        while (ended < kPerThread) {
          const std::uint64_t id = theirs[ended].load(std::memory_order_acquire);
          if (id == 0) break;
          spans.end(id, t, ended + kNs);
          ++ended;
        }
      }
    });
  }
  // Snapshots race with the starts and ends.
  std::thread reader([&] {
    while (!done.load(std::memory_order_relaxed)) {
      Report r;
      spans.build(names, r);
      if (r.spans.size() > 1 || r.diagnostics.unmatched_span_ends != 0) ++odd_snapshots;
    }
  });
  for (auto& t : threads) t.join();
  done = true;
  reader.join();

  CHECK(odd_snapshots == 0);
  const Report r = built(spans, names);
  REQUIRE(r.spans.size() == 1);
  CHECK(r.spans[0].host.count == kThreads * kPerThread);
  CHECK(r.spans[0].host.total_ns == kThreads * kPerThread * kNs);
  CHECK(r.spans[0].host.min_ns == kNs);
  CHECK(r.spans[0].host.max_ns == kNs);
  CHECK(r.spans[0].cross_thread == kThreads * kPerThread);
  CHECK(r.spans[0].open == 0);
  CHECK(r.diagnostics.unmatched_span_ends == 0);
  CHECK(r.diagnostics.spans_dropped == 0);
}

TEST_CASE("snapshot() reports the session's spans and their diagnostics", "[spans][session]") {
  cuscope_test::Session session;
  auto& s = cuscope::detail::session();
  const std::uint32_t domain = s.forest.names.intern("spans_test_domain");
  const std::uint32_t name = s.forest.names.intern("spans_test_load");
  s.spans.end(s.spans.start(domain, name, kThreadA, 100), kThreadB, 350);
  s.spans.start(domain, name, kThreadA, 400);
  s.spans.end(0, kThreadA, 500);

  const Report r = cuscope::snapshot();
  REQUIRE(r.spans.size() == 1);
  CHECK(r.spans[0].domain == "spans_test_domain");
  CHECK(r.spans[0].name == "spans_test_load");
  CHECK(same(r.spans[0].host, 1, 250, 250, 250));
  CHECK(r.spans[0].open == 1);
  CHECK(r.spans[0].cross_thread == 1);
  CHECK(r.diagnostics.unmatched_span_ends == 1);
  CHECK(r.diagnostics.spans_dropped == 0);
}

// fork() holds the lock of every span table in use (pthread_atfork). A session that
// reset_for_testing() retires stays allocated (threads may still point into it) but is never used
// again: its table must leave those fork() holds, or a process that resets many sessions (this test
// binary) takes one more lock at each fork per reset, and past 64 ThreadSanitizer's deadlock
// detector aborts the fork (seen running every [session] case under TSan).
TEST_CASE("sessions retired by reset_for_testing leave the span tables fork() holds",
          "[spans][session][threads]") {
  cuscope_test::Session session;
  const std::size_t held = SpanTable::held_at_fork_for_testing();
  for (int i = 0; i < 100; ++i) cuscope::detail::reset_for_testing();
  CHECK(SpanTable::held_at_fork_for_testing() == held);

  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(0);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

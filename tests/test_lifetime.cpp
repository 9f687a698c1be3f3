// Thread lifetimes and process events around scopes: thread_local destructors, thread trees
// handed from exited threads to new ones, the thread limit, scopes ended on another thread
// (with the CUPTI correlation stack of each thread), recording switched while threads run, fork.
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#define CATCH_CONFIG_ENABLE_PAIR_STRINGMAKER
#include <catch2/catch.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "session_fixture.hpp"

namespace {

// A one-shot flag a thread can wait for.
class Latch {
 public:
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

Latch* g_in_destructor = nullptr;
Latch* g_other_done = nullptr;

// Built before the thread's first scope, so destroyed after cuscope's own per-thread objects.
struct LateScopes {
  void touch() {}
  ~LateScopes() {
    CUSCOPE_SCOPE("late_outer");
    g_in_destructor->open();
    g_other_done->wait();  // another thread starts, scopes and exits meanwhile
    for (int i = 0; i < 1'000; ++i) {
      CUSCOPE_SCOPE("late");
    }
  }
};

int count_trees() {
  int n = 0;
  cuscope::detail::session().forest.for_each_tree([&n](const cuscope::model::ThreadTree&) { ++n; });
  return n;
}

}  // namespace

TEST_CASE("scopes in a late thread_local destructor count exactly, in the thread's own tree",
          "[threads][lifetime]") {
  cuscope_test::Session session;
  Latch in_destructor, other_done;
  g_in_destructor = &in_destructor;
  g_other_done = &other_done;
  std::thread first([] {
    thread_local LateScopes late;
    late.touch();
    CUSCOPE_SCOPE("first_work");
  });
  in_destructor.wait();
  std::thread([] { CUSCOPE_SCOPE("second_work"); }).join();
  other_done.open();
  first.join();
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.find("late_outer") != nullptr);
  CHECK(r.find("late_outer")->calls == 1);
  REQUIRE(r.find("late_outer/late") != nullptr);
  CHECK(r.find("late_outer/late")->calls == 1'000);
  CHECK(r.find("second_work")->calls == 1);
  CHECK(r.find("second_work")->threads == 1);
  CHECK(r.find("first_work")->calls == 1);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
  CHECK(count_trees() == 2);  // the second thread could not take the first one's tree
}

TEST_CASE("scopes in a pthread key destructor after cuscope's own are recorded and released again",
          "[threads][lifetime]") {
  cuscope_test::Session session;
  { CUSCOPE_SCOPE("main_first"); }  // cuscope's key exists before the one below
  pthread_key_t key{};
  REQUIRE(pthread_key_create(&key, [](void*) {
            for (int i = 0; i < 100; ++i) {
              CUSCOPE_SCOPE("key_late");
            }
          }) == 0);
  std::thread([key] {
    pthread_setspecific(key, reinterpret_cast<void*>(1));
    CUSCOPE_SCOPE("worker");
  }).join();
  std::thread([] { CUSCOPE_SCOPE("next_worker"); }).join();  // takes the released tree
  pthread_key_delete(key);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("key_late")->calls == 100);
  CHECK(r.find("worker")->calls == 1);
  CHECK(r.find("next_worker")->calls == 1);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
  CHECK(count_trees() == 2);  // main's, and one handed from thread to thread
}

TEST_CASE("threads that take over an exited thread's tree count as distinct threads", "[threads][lifetime]") {
  cuscope_test::Session session;
  for (int i = 0; i < 5; ++i) {
    std::thread([] {
      for (int k = 0; k < 3; ++k) {
        CUSCOPE_SCOPE("work");
      }
    }).join();
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(count_trees() == 1);  // one tree, handed on four times
  CHECK(r.find("work")->calls == 15);
  CHECK(r.find("work")->threads == 5);
}

TEST_CASE("past the thread limit, scopes are counted as unrecorded and retried without a lock",
          "[threads][lifetime]") {
  cuscope_test::Session session;
  cuscope::detail::session().forest.max_trees = 2;
  { CUSCOPE_SCOPE("main_work"); }  // tree 1
  Latch holding, release;
  std::thread holder([&] {
    { CUSCOPE_SCOPE("holder_work"); }  // tree 2: the forest is full
    holding.open();
    release.wait();
  });
  holding.wait();
  std::thread([] {
    for (int i = 0; i < 10; ++i) {
      CUSCOPE_SCOPE("refused");
      cuscope::push("refused_push");
      cuscope::pop();
    }
  }).join();
  release.open();
  holder.join();
  std::thread([] { CUSCOPE_SCOPE("after_release"); }).join();  // takes the holder's tree
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.diagnostics.unrecorded_scopes == 20);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.find("refused") == nullptr);
  CHECK(r.find("after_release")->calls == 1);
  CHECK(cuscope::format_table(r).find("20 scopes not recorded (thread limit or out of memory)") != std::string::npos);
  CHECK(cuscope::format_json(r).find("\"unrecorded_scopes\": 20") != std::string::npos);
}

namespace {

// Fake CUPTI correlation hooks: pushes and pops per thread.
std::mutex g_hook_mutex;
std::map<std::thread::id, std::pair<int, int>>* g_hook_counts = nullptr;

// cuscope's own CUDA calls (a snapshot resolving CUDA events, with a GPU) push and pop an id of
// their own: paired too, but not a scope's, so not counted. t_own_calls: whether each open push
// was one of those.
thread_local std::vector<bool> t_own_calls;
void fake_push(std::uint64_t id) noexcept {
  const bool own = id == cuscope::model::kCuscopeInternal;
  t_own_calls.push_back(own);
  if (own) return;
  std::lock_guard lock(g_hook_mutex);
  ++(*g_hook_counts)[std::this_thread::get_id()].first;
}
void fake_pop() noexcept {
  const bool own = !t_own_calls.empty() && t_own_calls.back();
  if (!t_own_calls.empty()) t_own_calls.pop_back();
  if (own) return;
  std::lock_guard lock(g_hook_mutex);
  ++(*g_hook_counts)[std::this_thread::get_id()].second;
}

struct FakeCorrelation {
  std::map<std::thread::id, std::pair<int, int>> counts;
  FakeCorrelation() {
    g_hook_counts = &counts;
    cuscope::detail::g_push_correlation.store(fake_push);
    cuscope::detail::g_pop_correlation.store(fake_pop);
    cuscope::detail::g_flags.fetch_or(cuscope::detail::kCorrelation);
  }
  ~FakeCorrelation() {
    cuscope::detail::g_flags.fetch_and(~std::uint32_t{cuscope::detail::kCorrelation});
    cuscope::detail::g_push_correlation.store(nullptr);
    cuscope::detail::g_pop_correlation.store(nullptr);
    g_hook_counts = nullptr;
  }
  std::pair<int, int> of(std::thread::id id) {
    std::lock_guard lock(g_hook_mutex);
    return counts[id];
  }
};

}  // namespace

TEST_CASE("a scope ended on another thread is closed and popped on its own thread", "[threads][lifetime]") {
  cuscope_test::Session session;
  FakeCorrelation hooks;
  static cuscope::detail::Site wanderer{"wanderer", __FILE__, __LINE__};
  std::optional<cuscope::Scope> scope;
  scope.emplace(wanderer);
  std::thread::id ender;
  std::thread([&] {
    ender = std::this_thread::get_id();
    scope.reset();
  }).join();
  std::thread::id stray;
  std::thread([&] {
    stray = std::this_thread::get_id();
    cuscope::pop();  // a stray pop pops nothing
  }).join();
  CHECK(hooks.of(std::this_thread::get_id()) == std::make_pair(1, 0));
  { CUSCOPE_SCOPE("after_wanderer"); }
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("after_wanderer");
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(hooks.of(std::this_thread::get_id()) == std::make_pair(5, 5));
  CHECK(hooks.of(ender) == std::make_pair(0, 0));
  CHECK(hooks.of(stray) == std::make_pair(0, 0));
  CHECK(r.find("wanderer")->calls == 1);
  CHECK(r.find("after_wanderer")->calls == 4);
  CHECK(r.find("wanderer/after_wanderer") == nullptr);
  CHECK(r.diagnostics.cross_thread_ends == 1);
  CHECK(r.diagnostics.unbalanced_ends == 1);  // the stray pop
  CHECK(r.diagnostics.open_scopes == 0);
}

TEST_CASE("an entry ended elsewhere under an open scope closes when that scope ends", "[threads][lifetime]") {
  cuscope_test::Session session;
  FakeCorrelation hooks;
  static cuscope::detail::Site wanderer{"wanderer", __FILE__, __LINE__};
  std::optional<cuscope::Scope> scope;
  {
    CUSCOPE_SCOPE("outer");
    scope.emplace(wanderer);
    {
      CUSCOPE_SCOPE("inner");
      std::thread([&] { scope.reset(); }).join();
    }  // inner ends, then wanderer closes here, innermost again
    { CUSCOPE_SCOPE("sibling"); }
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(hooks.of(std::this_thread::get_id()) == std::make_pair(4, 4));
  CHECK(r.find("outer/wanderer")->calls == 1);
  CHECK(r.find("outer/wanderer/inner")->calls == 1);
  CHECK(r.find("outer/sibling")->calls == 1);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
}

TEST_CASE("push and pop stay paired while recording is switched on and off under them",
          "[threads][lifetime]") {
  cuscope_test::Session session;
  std::atomic<bool> done{false};
  std::atomic<int> toggled{0};       // workers through the toggled loop
  std::atomic<bool> settled{false};  // toggling stopped, recording on
  auto loop = [](int times) {
    for (int i = 0; i < times; ++i) {
      cuscope::push("p");
      { CUSCOPE_SCOPE("s"); }
      cuscope::push("q");
      cuscope::pop();
      cuscope::pop();
    }
  };
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&] {
      loop(20'000);
      toggled.fetch_add(1);
      while (!settled.load()) std::this_thread::yield();
      loop(1'000);  // on the same thread's push stack: any pair left open shows up here
    });
  }
  std::thread toggler([&] {
    for (bool on = false; !done.load(); on = !on) cuscope::set_enabled(on);
  });
  while (toggled.load() < 4) std::this_thread::yield();
  done = true;
  toggler.join();
  cuscope::set_enabled(true);
  const cuscope::Report toggled_report = cuscope::snapshot();
  settled = true;
  for (auto& w : workers) w.join();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
  // With recording on, each of the 4,000 later iterations adds one call to p, p/s and p/q, and none
  // anywhere else: a push stack left unpaired by the toggling would nest them under it.
  auto calls = [](const cuscope::Report& report, const char* path) {
    const cuscope::RangeStats* found = report.find(path);
    return found != nullptr ? found->calls : 0;
  };
  for (const char* path : {"p", "p/s", "p/q"}) {
    INFO(path);
    CHECK(calls(r, path) == calls(toggled_report, path) + 4'000);
  }
  CHECK(calls(r, "s") == calls(toggled_report, "s"));
  CHECK(calls(r, "q") == calls(toggled_report, "q"));
}

TEST_CASE("a child forked while other threads intern names and attach does not deadlock",
          "[threads][lifetime][fork]") {
  cuscope_test::Session session;
  std::atomic<bool> stop{false};
  std::atomic<int> warm{0};
  std::vector<std::thread> hammers;
  // The names are made up front: once each is interned, a hammer's scopes allocate nothing, so the
  // only locks a fork can catch held are cuscope's (the name table's), not the allocator's.
  std::vector<std::vector<std::string>> names(2);
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < 5000; ++i)
      names[t].push_back("hammer_" + std::to_string(t) + "_" + std::to_string(i));
  }
  for (int t = 0; t < 2; ++t) {
    hammers.emplace_back([&stop, &warm, &mine = names[t]] {
      for (std::size_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        cuscope::Scope s{std::string_view(mine[i % mine.size()])};
        if (i + 1 == mine.size()) warm.fetch_add(1);
      }
    });
  }
#if !defined(__SANITIZE_ADDRESS__)
  // Threads come and go: attach and release take the thread lock. Not under ASan: starting a
  // thread allocates, and ASan's allocator (unlike glibc's malloc) is not fork-safe: a child
  // forked while another thread allocates can deadlock inside ASan, whatever cuscope does.
  hammers.emplace_back([&stop] {
    while (!stop.load(std::memory_order_relaxed)) std::thread([] { CUSCOPE_SCOPE("short"); }).join();
  });
#endif
  while (warm.load() < 2) std::this_thread::yield();
  int failures = 0;
  for (int k = 0; k < 20; ++k) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      alarm(10);  // a deadlocked child dies of SIGALRM
      // cuscope is off in a forked child (docs/api.md, "Lifetime"): its scopes and snapshots must run
      // through without waiting on a lock some parent thread held, and record nothing.
      const std::string name = "child_" + std::to_string(k);
      { cuscope::Scope s{std::string_view(name)}; }
      bool ok = true;
#if !defined(__SANITIZE_THREAD__)  // TSan does not support threads started in a forked child
      std::thread([] { CUSCOPE_SCOPE("child_thread"); }).join();
      ok = ok && cuscope::snapshot().find("child_thread") == nullptr;
#endif
      const cuscope::Report r = cuscope::snapshot();
      ok = ok && r.find(name) == nullptr && r.notes.size() == 1 &&
           r.notes[0].find("created by fork()") != std::string::npos;
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }
  stop = true;
  for (auto& h : hammers) h.join();
  CHECK(failures == 0);
}

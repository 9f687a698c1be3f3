// Whole-process lifetime cases, each checked from outside: `lifetime_program check-<case>` runs the
// program again as `lifetime_program <case>` with the environment the case needs, its stderr in a
// file, then checks its exit status, its stderr and the files it wrote. Exit 0 when every check
// holds; otherwise each failed check is printed and the exit status is 1.
//
// Cases:
//   static       entry points used in a global's constructor (before main; a bad CUSCOPE_ROWS
//                warns from there) and in globals' destructors (before and after the exit summary)
//   quick_exit   the program ends with std::quick_exit: the table and the JSON are written
//   fork         fork() inside an open scope of a started session; the child runs scopes, then exit()
//   fork_early   fork() before the session starts; both processes run scopes afterwards
//   fork_output  as fork, with the table going to CUSCOPE_OUTPUT
//   fork_busy    fork() again and again while other threads make their first scopes, which make the
//                session: the fork handlers must see no session or a whole one (run under TSan too)
//   two_writers  two processes with the same CUSCOPE_JSON, alive at once: the first writes the file,
//                the second its own (its pid before the extension), saying so; once both ended, a
//                third writes the file again
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuscope/cuscope.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_failures = 0;

void check(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "lifetime_program: FAILED: %s\n", what.c_str());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// A file of this check's in the temporary folder: its pid in the name, so that two test runs on one
// machine never share one (a live session's report file is its own: the other's would be renamed).
std::string tmp_file(const std::string& stem, const char* extension) {
  return std::string(P_tmpdir) + "/cuscope_lifetime_" + stem + "." + std::to_string(::getpid()) + extension;
}

std::uint64_t calls(const cuscope::Report& r, const char* path) {
  const cuscope::RangeStats* range = r.find(path);
  return range == nullptr ? 0 : range->calls;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const std::string& mode() {
  static const std::string m = [] {
    const char* value = std::getenv("LIFETIME_MODE");
    return std::string(value == nullptr ? "" : value);
  }();
  return m;
}

// --- static: globals constructed before main and destroyed after it ---------------------------

// Constructed first, so destroyed last: after cuscope's at-exit summary has run.
struct AfterSummary {
  AfterSummary() = default;  // nothing: its destructor is registered before the session starts
  ~AfterSummary() {
    if (mode() != "static") return;
    { CUSCOPE_SCOPE("after_summary_scope"); }
    cuscope::count("after_summary_count", 1);
    cuscope::step();
    cuscope::flush();
    const cuscope::Report r = cuscope::snapshot();
    check(calls(r, "main_scope") == 3, "after the summary, the snapshot still holds main's scopes");
    check(r.find("after_summary_scope") == nullptr, "a scope after the summary records nothing");
    check(!cuscope::enabled(), "enabled() is false once the session has shut down");
    cuscope::shutdown();  // idempotent
    if (g_failures != 0) std::_Exit(1);
  }
} g_after_summary;

// Constructed before main (before cuscope's own translation units are initialized, as this object
// file comes first on the link line); destroyed before the summary, which its constructor
// registered by starting the session.
struct Early {
  Early() {
    if (mode() != "static") return;
    check(cuscope::enabled(), "enabled() before the session starts says the first scope will record");
    std::vector<cuscope::OptionError> errors;
    (void)cuscope::options_from_env({}, &errors);  // warns about CUSCOPE_ROWS from a static constructor
    check(errors.size() == 1, "one bad option found from a static constructor");
    { CUSCOPE_SCOPE("static_ctor_scope"); }
    CUSCOPE_COUNT("static_ctor_count", 2);
    const cuscope::Report r = cuscope::snapshot();
    check(calls(r, "static_ctor_scope") == 1, "a scope in a static constructor records");
    check(r.notes.size() == 1 && r.notes[0] == "CUSCOPE_ROWS='ten' is not a whole number; keeping 50",
          "the warning is a note of the snapshot taken in the constructor");
    if (g_failures != 0) std::_Exit(1);
  }
  ~Early() {
    if (mode() != "static") return;
    { CUSCOPE_SCOPE("static_dtor_scope"); }
    check(calls(cuscope::snapshot(), "static_dtor_scope") == 1, "a scope in a static destructor records");
    if (g_failures != 0) std::_Exit(1);
  }
} g_early;

int run_static() {
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("main_scope");
  }
  return g_failures == 0 ? 0 : 1;
}

// --- quick_exit -----------------------------------------------------------------------------------

int run_quick_exit() {
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("quick_scope");
  }
  std::quick_exit(0);
}

// --- fork -----------------------------------------------------------------------------------------

// The child's part: cuscope is off in it, whatever it does, and it ends with exit().
[[noreturn]] void child_part() {
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("child_work");
    CUSCOPE_COUNT("child_items", 1);
  }
  cuscope::step();
  const cuscope::Report r = cuscope::snapshot();
  check(!cuscope::enabled(), "enabled() is false in the child");
  check(!cuscope::start(), "start() does nothing in the child");
  check(r.ranges.size() == 1, "the child's snapshot holds the root alone");
  check(r.notes.size() == 1 &&
            r.notes[0] == "cuscope is off in this process: it was created by fork() from process " +
                              std::to_string(::getppid()) +
                              ", whose session goes on there (see docs/api.md, Lifetime)",
        "the child's snapshot says why it is empty");
  check(!cuscope::current_options().print_at_exit, "the child prints no table");
  std::exit(g_failures == 0 ? 0 : 3);  // atexit handlers run: cuscope's must write nothing
}

int run_fork(bool start_first) {
  const char* json = std::getenv("CUSCOPE_JSON");
  const char* table = std::getenv("CUSCOPE_OUTPUT");
  pid_t child = 0;
  if (start_first) {
    for (int i = 0; i < 2; ++i) {
      CUSCOPE_SCOPE("parent_before");
    }
    CUSCOPE_SCOPE("around_fork");  // open across fork(): the child leaves it too
    child = ::fork();
  } else {
    child = ::fork();  // no cuscope call before: the session has not started
  }
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  if (child == 0) child_part();
  int status = 0;
  check(::waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the child exited with 0 (status " + std::to_string(status) + ")");
  check(json == nullptr || !exists(json), "the child wrote no JSON");
  check(table == nullptr || !exists(table), "the child wrote no table");
  CUSCOPE_SCOPE("parent_after");
  const cuscope::Report r = cuscope::snapshot();
  check(calls(r, "parent_before") == (start_first ? 2 : 0), "the parent's scopes before fork are kept");
  check(calls(r, "around_fork") == (start_first ? 1 : 0),
        "the scope open across fork() closed once, in the parent");
  check(r.find("child_work") == nullptr, "the child's scopes are not the parent's");
  return g_failures == 0 ? 0 : 1;
}

// --- fork_busy: fork() while the first scopes make the session ------------------------------------

constexpr int kBusyThreads = 4;
constexpr int kBusyScopes = 200;  // each thread's

int run_fork_busy() {
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kBusyThreads; ++t) {
    threads.emplace_back([&go] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int i = 0; i < kBusyScopes; ++i) {
        CUSCOPE_SCOPE("busy_first");
      }
    });
  }
  // No cuscope call on this thread before the forks: only the threads' first scopes make the
  // session, and nothing orders them with the fork handlers but what the session publishes.
  go.store(true, std::memory_order_release);
  int bad_children = 0;
  for (int k = 0; k < 30; ++k) {
    const pid_t child = ::fork();
    if (child < 0) {
      std::perror("fork");
      return 1;
    }
    if (child == 0) {
      { CUSCOPE_SCOPE("busy_child"); }  // off in the child: returns without a lock
      std::_Exit(0);
    }
    int status = 0;
    if (::waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      ++bad_children;
  }
  for (auto& t : threads) t.join();
  check(bad_children == 0, std::to_string(bad_children) + " of 30 children did not exit with 0");
  const cuscope::Report r = cuscope::snapshot();
  check(calls(r, "busy_first") == std::uint64_t{kBusyThreads} * kBusyScopes,
        "busy_first has every thread's calls, not " + std::to_string(calls(r, "busy_first")));
  return g_failures == 0 ? 0 : 1;
}

// --- two_writers: one report file, two live processes ----------------------------------------------

// A writer: its session starts (claiming its report file), it says so on WRITER_READY_FD, runs one
// scope named WRITER_NAME, waits for the end of WRITER_HOLD_FD when given, and exits (writing its
// report).
int run_writer() {
  const char* name = std::getenv("WRITER_NAME");
  const char* ready = std::getenv("WRITER_READY_FD");
  const char* hold = std::getenv("WRITER_HOLD_FD");
  if (name == nullptr || ready == nullptr) return 2;
  cuscope::start();
  { cuscope::Scope scope(name); }
  const char byte = 1;
  if (::write(std::atoi(ready), &byte, 1) != 1) return 3;
  if (hold != nullptr) {
    char c = 0;
    while (::read(std::atoi(hold), &c, 1) > 0) {
    }
  }
  return 0;
}

// --- the checks, from outside ---------------------------------------------------------------------

struct Run {
  int status = -1;
  std::string err;
};

Run run_case(const std::string& self, const std::string& name, const std::vector<std::string>& env) {
  const std::string err_path = tmp_file(name, ".stderr");
  std::remove(err_path.c_str());
  Run run;
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
    ::setenv("LIFETIME_MODE", name.c_str(), 1);
    if (std::freopen(err_path.c_str(), "w", stderr) == nullptr) std::_Exit(126);
    ::execl(self.c_str(), self.c_str(), name.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.err = read_file(err_path);
  std::remove(err_path.c_str());  // printed below, whole
  std::fprintf(stdout, "--- stderr of '%s' (exit %d) ---\n%s---\n", name.c_str(), run.status,
               run.err.c_str());
  return run;
}

std::uint64_t json_calls(const nlohmann::json& j, const std::string& path) {
  for (const auto& range : j.at("ranges")) {
    if (range.at("path") == path) return range.at("calls").get<std::uint64_t>();
  }
  return 0;
}

bool json_has(const nlohmann::json& j, const std::string& path) {
  for (const auto& range : j.at("ranges")) {
    if (range.at("path") == path) return true;
  }
  return false;
}

nlohmann::json parse_json_file(const std::string& path) {
  try {
    return nlohmann::json::parse(read_file(path));
  } catch (const std::exception& e) {
    check(false, "'" + path + "' is valid JSON: " + e.what());
    return nlohmann::json::parse(R"({"ranges": [], "notes": []})");
  }
}

// One table printed: its first line starts "cuscope <version> — device:".
std::size_t tables_in(const std::string& text) {
  return occurrences(text, "cuscope " + std::string(cuscope::version()) + " — device:");
}

int check_static(const std::string& self) {
  const std::string json = tmp_file("static", ".json");
  std::remove(json.c_str());
  const Run run = run_case(self, "static", {"CUSCOPE_ROWS=ten", "CUSCOPE_JSON=" + json});
  check(run.status == 0, "'static' exits with 0, not " + std::to_string(run.status));
  check(occurrences(run.err, "cuscope: CUSCOPE_ROWS='ten' is not a whole number; keeping 50\n") == 1,
        "the warning from the static constructor is printed once");
  check(tables_in(run.err) == 1, "one table is printed");
  const nlohmann::json j = parse_json_file(json);
  check(json_calls(j, "static_ctor_scope") == 1, "JSON: static_ctor_scope has 1 call");
  check(json_calls(j, "main_scope") == 3, "JSON: main_scope has 3 calls");
  check(json_calls(j, "static_dtor_scope") == 1, "JSON: static_dtor_scope (before the summary) has 1 call");
  check(!json_has(j, "after_summary_scope"), "JSON: nothing after the summary");
  std::remove(json.c_str());
  return g_failures == 0 ? 0 : 1;
}

int check_quick_exit(const std::string& self) {
  const std::string json = tmp_file("quick", ".json");
  std::remove(json.c_str());
  const Run run = run_case(self, "quick_exit", {"CUSCOPE_JSON=" + json});
  check(run.status == 0, "'quick_exit' exits with 0, not " + std::to_string(run.status));
  check(tables_in(run.err) == 1, "std::quick_exit prints the table once");
  check(run.err.find("\nquick_scope ") != std::string::npos, "the table lists quick_scope");
  check(exists(json), "std::quick_exit writes the JSON");
  if (exists(json))
    check(json_calls(parse_json_file(json), "quick_scope") == 3, "JSON: quick_scope has 3 calls");
  std::remove(json.c_str());
  return g_failures == 0 ? 0 : 1;
}

int check_fork_busy(const std::string& self) {
  const Run run = run_case(self, "fork_busy", {});
  check(run.status == 0, "'fork_busy' exits with 0, not " + std::to_string(run.status));
  check(run.err.find("ThreadSanitizer") == std::string::npos, "no ThreadSanitizer report");
  check(tables_in(run.err) == 1, "one table is printed, the parent's");
  return g_failures == 0 ? 0 : 1;
}

int check_fork(const std::string& self, const std::string& name) {
  const std::string json = tmp_file(name, ".json");
  const std::string table = tmp_file(name, ".txt");
  std::remove(json.c_str());
  std::remove(table.c_str());
  std::vector<std::string> env{"CUSCOPE_JSON=" + json};
  const bool to_file = name == "fork_output";
  if (to_file) env.push_back("CUSCOPE_OUTPUT=" + table);
  const Run run = run_case(self, name, env);
  check(run.status == 0, "'" + name + "' exits with 0, not " + std::to_string(run.status));
  const std::string text = to_file ? read_file(table) : run.err;
  check(tables_in(run.err) == (to_file ? 0u : 1u),
        "stderr holds " + std::string(to_file ? "no" : "one") + " table");
  check(tables_in(text) == 1, "one table, the parent's");
  check(text.find("parent_after") != std::string::npos, "the table is the parent's");
  check(text.find("child_work") == std::string::npos, "the table holds nothing of the child");
  const nlohmann::json j = parse_json_file(json);
  check(json_calls(j, "parent_before") == (name == "fork_early" ? 0u : 2u), "JSON: parent_before");
  check(json_calls(j, "parent_after") == 1, "JSON: parent_after has 1 call");
  check(json_calls(j, "around_fork") == (name == "fork_early" ? 0u : 1u), "JSON: around_fork");
  check(!json_has(j, "child_work"), "JSON: nothing of the child");
  std::remove(json.c_str());
  std::remove(table.c_str());
  return g_failures == 0 ? 0 : 1;
}


// Starts `lifetime_program writer` with `env` (stderr to ERR_PATH), without waiting for it.
pid_t start_writer(const std::string& self, const std::vector<std::string>& env, const std::string& err_path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
    if (std::freopen(err_path.c_str(), "w", stderr) == nullptr) std::_Exit(126);
    ::execl(self.c_str(), self.c_str(), "writer", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  return pid;
}

int wait_status(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int check_two_writers(const std::string& self) {
  const std::string dir = std::string(P_tmpdir) + "/cuscope_lifetime_two_writers." + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0700);
  const std::string json = dir + "/report.json";
  int ready[2] = {-1, -1};
  int hold[2] = {-1, -1};
  if (::pipe(ready) != 0 || ::pipe(hold) != 0) return 1;
  // The writers inherit only their ends: the first must see the end of `hold` when this closes it.
  ::fcntl(ready[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(hold[1], F_SETFD, FD_CLOEXEC);
  const std::vector<std::string> common = {"CUSCOPE_JSON=" + json, "CUSCOPE_ACTIVITIES=0", "CUSCOPE_GPU_EVENTS=0",
                                           "WRITER_READY_FD=" + std::to_string(ready[1])};
  std::vector<std::string> first_env = common;
  first_env.push_back("WRITER_NAME=first_writer");
  first_env.push_back("WRITER_HOLD_FD=" + std::to_string(hold[0]));
  const pid_t first = start_writer(self, first_env, dir + "/first.stderr");
  ::close(hold[0]);
  // The first's session has started (its byte), or it failed: 30 s at most, never a hang.
  pollfd started{ready[0], POLLIN, 0};
  char c = 0;
  const bool first_started = ::poll(&started, 1, 30'000) == 1 && ::read(ready[0], &c, 1) == 1;
  check(first_started, "the first writer started its session within 30 s");
  if (!first_started) {
    ::kill(first, SIGKILL);
    wait_status(first);
    std::fprintf(stdout, "--- stderr of the first writer ---\n%s---\n", read_file(dir + "/first.stderr").c_str());
    return 1;
  }
  // The second names the same file another way: the claim is the file's, not the spelling's.
  std::vector<std::string> second_env = {"CUSCOPE_JSON=" + dir + "/./report.json", "CUSCOPE_ACTIVITIES=0",
                                         "CUSCOPE_GPU_EVENTS=0", "WRITER_READY_FD=" + std::to_string(ready[1])};
  second_env.push_back("WRITER_NAME=second_writer");
  const pid_t second = start_writer(self, second_env, dir + "/second.stderr");
  check(wait_status(second) == 0, "the second writer exits with 0");
  ::close(hold[1]);  // the first ends
  check(wait_status(first) == 0, "the first writer exits with 0");
  const std::string own = dir + "/./report-" + std::to_string(second) + ".json";
  check(exists(json) && exists(own), "both reports are written: " + json + " and " + own);
  if (exists(json)) {
    const nlohmann::json j = parse_json_file(json);
    check(json_calls(j, "first_writer") == 1 && !json_has(j, "second_writer"), "report.json is the first's");
  }
  if (exists(own)) {
    const nlohmann::json j = parse_json_file(own);
    check(json_calls(j, "second_writer") == 1 && !json_has(j, "first_writer"), own + " is the second's");
  }
  const std::string note = "CUSCOPE_JSON: another live cuscope session on this host is writing " + dir +
                           "/./report.json (it started first); this process (" + std::to_string(second) +
                           ") writes " + own;
  check(read_file(dir + "/second.stderr").find(note) != std::string::npos, "the second says: " + note);
  check(read_file(dir + "/first.stderr").find("another live cuscope session") == std::string::npos,
        "the first says nothing of it");
  // Both ended: the file is nobody's, and a third writes it again.
  std::vector<std::string> third_env = common;
  third_env.push_back("WRITER_NAME=third_writer");
  check(wait_status(start_writer(self, third_env, dir + "/third.stderr")) == 0, "the third writer exits with 0");
  ::close(ready[0]);
  ::close(ready[1]);
  if (exists(json)) check(json_calls(parse_json_file(json), "third_writer") == 1, "report.json is the third's");
  if (g_failures != 0) {
    for (const char* f : {"first.stderr", "second.stderr", "third.stderr"})
      std::fprintf(stdout, "--- %s ---\n%s---\n", f, read_file(dir + "/" + f).c_str());
  }
  for (const char* f : {"report.json", "first.stderr", "second.stderr", "third.stderr"})
    std::remove((dir + "/" + f).c_str());
  std::remove(own.c_str());
  ::rmdir(dir.c_str());
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  const std::string self = "/proc/self/exe";
  if (what == "static") return run_static();
  if (what == "quick_exit") return run_quick_exit();
  if (what == "fork" || what == "fork_output") return run_fork(true);
  if (what == "fork_early") return run_fork(false);
  if (what == "fork_busy") return run_fork_busy();
  if (what == "writer") return run_writer();
  // Checking: the environment must not leak into the cases.
  if (what == "check-static") return check_static(self);
  if (what == "check-quick_exit") return check_quick_exit(self);
  if (what == "check-fork_busy") return check_fork_busy(self);
  if (what == "check-two_writers") return check_two_writers(self);
  if (what.rfind("check-fork", 0) == 0) return check_fork(self, what.substr(6));
  std::fprintf(stderr, "usage: %s check-{static,quick_exit,fork,fork_early,fork_output,fork_busy,two_writers}\n",
               argv[0]);
  return 2;
}

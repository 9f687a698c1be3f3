// CUSCOPE_REPORT_EVERY: the report's files rewritten while the session runs (session/report_files.cpp),
// each replaced whole; the warnings when there is no file to rewrite or the period is out of range.
// The periodic case waits for the collector's writes (a second apart), polling, with a bound.
//
// Never: a GPU, or a check of how long a write took.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "child_kit.hpp"
#include "session/internal.hpp"
#include "session_fixture.hpp"
#include "trace_kit.hpp"

namespace {

using cuscope_test::trace_kit::read_file;
using cuscope_test::trace_kit::temp_path;

// The calls of `path` in the JSON report at `file`; -1 while the file is missing, cut or unparsable.
long long calls_in(const std::string& file, const char* path) {
  const nlohmann::json j = nlohmann::json::parse(read_file(file), nullptr, false);
  if (j.is_discarded() || !j.contains("ranges")) return -1;
  for (const auto& range : j["ranges"]) {
    if (range["path"] == path) return range["calls"].get<long long>();
  }
  return 0;
}

// Waits (10 s at most) until the report at `file` gives `path` `calls` calls; whether it did.
bool wait_for_calls(const std::string& file, const char* path, long long calls) {
  for (int i = 0; i < 1000; ++i) {
    if (calls_in(file, path) == calls) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Files in the temporary folder whose name starts with `prefix` (the temporaries replace_file
// leaves, if any).
int files_starting(const std::string& prefix) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    n += entry.path().filename().string().rfind(prefix, 0) == 0;
  return n;
}

// Occurrences of `text` in `s`.
int count_of(const std::string& s, const std::string& text) {
  int n = 0;
  for (std::size_t at = s.find(text); at != std::string::npos; at = s.find(text, at + 1)) ++n;
  return n;
}

// The process's stderr sent to the file `path` while it lives, as a shell's `2> path` would.
class StderrToFile {
 public:
  explicit StderrToFile(const std::string& path) : saved_(::dup(STDERR_FILENO)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
  }
  ~StderrToFile() {
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
  }
  StderrToFile(const StderrToFile&) = delete;
  StderrToFile& operator=(const StderrToFile&) = delete;

 private:
  int saved_;
};

// The working folder changed to `path` while it lives.
class InFolder {
 public:
  explicit InFolder(const std::string& path) : saved_(std::filesystem::current_path()) {
    std::filesystem::create_directories(path);
    std::filesystem::current_path(path);
  }
  ~InFolder() { std::filesystem::current_path(saved_); }
  InFolder(const InFolder&) = delete;
  InFolder& operator=(const InFolder&) = delete;

 private:
  std::filesystem::path saved_;
};

bool has_note(const cuscope::Report& r, const std::string& text) {
  for (const std::string& note : r.notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("CUSCOPE_REPORT_EVERY rewrites the JSON report and the table file while the session runs",
          "[session][report_every][threads]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.print_at_exit = true;
  o.output_path = temp_path("every_table.txt");
  o.json_path = temp_path("every_report.json");
  o.report_every_s = 1;
  std::remove(o.output_path.c_str());
  std::remove(o.json_path.c_str());
  cuscope_test::Session session(o);
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("served");
  }
  REQUIRE(wait_for_calls(o.json_path, "served", 3));
  CHECK(read_file(o.output_path).find("served") != std::string::npos);
  for (int i = 0; i < 2; ++i) {
    CUSCOPE_SCOPE("served");
  }
  CHECK(wait_for_calls(o.json_path, "served", 5));  // the next write has them
  // Written while the program runs, and they say so: later work is not in them.
  CHECK(nlohmann::json::parse(read_file(o.json_path)).at("final") == false);
  const std::string running_table = read_file(o.output_path);
  CHECK(running_table.substr(0, running_table.find('\n')).ends_with(" — while running"));
  // Each file was replaced whole: no temporary is left beside it.
  CHECK(files_starting("cuscope_test_every_report.json.cuscope-tmp.") == 0);
  CHECK(files_starting("cuscope_test_every_table.txt.cuscope-tmp.") == 0);
  { CUSCOPE_SCOPE("last"); }
  cuscope::shutdown();  // and at exit, as without the option
  CHECK(calls_in(o.json_path, "served") == 5);
  CHECK(calls_in(o.json_path, "last") == 1);
  CHECK(read_file(o.output_path).find("last") != std::string::npos);
  CHECK(nlohmann::json::parse(read_file(o.json_path)).at("final") == true);  // the exit report
  CHECK(read_file(o.output_path).find("while running") == std::string::npos);
  std::remove(o.output_path.c_str());
  std::remove(o.json_path.c_str());
}

TEST_CASE("CUSCOPE_REPORT_EVERY without a file to rewrite, or out of range, says so and writes at exit only",
          "[session][report_every]") {
  cuscope::Options o = cuscope_test::quiet_options();
  SECTION("the table goes to stderr and there is no JSON") {
    o.print_at_exit = true;
    o.report_every_s = 5;
    cuscope_test::Session session(o);
    CHECK(has_note(cuscope::snapshot(),
                   "CUSCOPE_REPORT_EVERY=5: no file to rewrite (set CUSCOPE_JSON, or "
                   "CUSCOPE_OUTPUT to a file); the report is written at exit only"));
  }
  SECTION("the table goes to the program's own stderr by name (CUSCOPE_OUTPUT=/dev/stderr)") {
    o.print_at_exit = true;
    o.output_path = "/dev/stderr";
    o.report_every_s = 5;
    cuscope_test::Session session(o);
    CHECK(has_note(cuscope::snapshot(),
                   "CUSCOPE_REPORT_EVERY=5: no file to rewrite (set CUSCOPE_JSON, or "
                   "CUSCOPE_OUTPUT to a file); the report is written at exit only"));
  }
  SECTION("out of range") {
    o.json_path = temp_path("every_never.json");
    o.report_every_s = 86'401;
    cuscope_test::Session session(o);
    CHECK(has_note(
        cuscope::snapshot(),
        "Options::report_every_s=86401 is out of range [0, 86400]; writing the report at exit only"));
    CHECK(cuscope::current_options().report_every_s == 0);
  }
  SECTION("a file named") {
    o.json_path = temp_path("every_named.json");
    o.report_every_s = 5;
    cuscope_test::Session session(o);
    CHECK_FALSE(has_note(cuscope::snapshot(), "CUSCOPE_REPORT_EVERY"));
  }
}

TEST_CASE(
    "replace_file replaces a regular file whole, writes in place what is not one (a device, a link), "
    "says when it cannot",
    "[session][report_every]") {
  using cuscope::detail::replace_file;
  const std::string path = temp_path("every_replaced.txt");
  std::remove(path.c_str());
  REQUIRE(replace_file(path, "first version, longer\n"));
  REQUIRE(replace_file(path, "second\n"));
  CHECK(read_file(path) == "second\n");  // nothing of the longer first version left
  CHECK(files_starting("cuscope_test_every_replaced.txt.cuscope-tmp.") == 0);
  std::remove(path.c_str());
  // Not a regular file: written in place, and still what it was.
  CHECK(replace_file("/dev/null", "gone\n"));
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  // A symbolic link: its target rewritten, the link kept.
  const std::string target = temp_path("every_link_target.txt");
  const std::string link = temp_path("every_link.txt");
  std::remove(link.c_str());
  REQUIRE(replace_file(target, "old\n"));
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  CHECK(replace_file(link, "through the link\n"));
  CHECK(read_file(target) == "through the link\n");
  REQUIRE(::lstat(link.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  std::remove(link.c_str());
  std::remove(target.c_str());
  // A folder that does not exist: false, nothing made, and why.
  std::string why;
  CHECK_FALSE(replace_file(temp_path("every_no_such_folder/report.json"), "x", &why));
  CHECK(why == "No such file or directory");
}

// A report path that is a FIFO (CUSCOPE_OUTPUT=/tmp/pipe): with no process reading it, opening it
// to write waited for one, so the reporter thread, and at exit the program itself, blocked for as
// long as nobody read it. Now the write fails at once and says why (at exit the table goes to stderr
// instead); with a reader, the text goes to it. The write without a reader runs in a child, so
// that a write that waits fails this case after 5 s instead of hanging the test binary.
TEST_CASE("replace_file never waits for a FIFO's reader and says when there is none", "[session][report_every]") {
  using cuscope::detail::replace_file;
  const std::string fifo = temp_path("every_fifo");
  std::remove(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::string why;
    const bool written = replace_file(fifo, "unread\n", &why);
    _exit(!written && why == "a FIFO that no process has open for reading" ? 0 : 1);
  }
  int status = 0;
  const pid_t done = cuscope_test::wait_child(child, &status);
  if (done == 0) FAIL("replace_file waited 5 s for a reader of the FIFO");
  REQUIRE(done == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // 1: written, or another reason given

  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  std::string why;
  CHECK(replace_file(fifo, "read\n", &why));
  char got[16] = {};
  CHECK(::read(reader, got, sizeof got) == 5);
  CHECK(std::string(got, 5) == "read\n");
  ::close(reader);
  struct stat st {};
  REQUIRE(::stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));  // written in place, not replaced by a file
  std::remove(fifo.c_str());
}

TEST_CASE("replace_file keeps the permissions of the file it replaces", "[session][report_every]") {
  using cuscope::detail::replace_file;
  const std::string path = temp_path("every_private.json");
  std::remove(path.c_str());
  const mode_t umask_before = ::umask(022);
  REQUIRE(replace_file(path, "first\n"));
  REQUIRE(::chmod(path.c_str(), 0600) == 0);  // the user's: a report only they may read
  REQUIRE(replace_file(path, "second\n"));
  ::umask(umask_before);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(read_file(path) == "second\n");
  std::remove(path.c_str());
}

TEST_CASE("replace_file: a write that fails (no room: here the file-size limit) leaves the old file whole",
          "[session][report_every]") {
  using cuscope::detail::replace_file;
  const std::string path = temp_path("every_no_room.json");
  std::remove(path.c_str());
  REQUIRE(replace_file(path, "the last whole report\n"));
  rlimit before{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
  rlimit small = before;
  small.rlim_cur = 4096;
  auto* const handler = std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails (EFBIG) instead
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string why;
  const bool replaced = replace_file(path, std::string(10'000, 'x'), &why);
  ::setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, handler);
  CHECK_FALSE(replaced);
  CHECK(why == "File too large");  // EFBIG, the write's, not a later call's
  CHECK(read_file(path) == "the last whole report\n");
  CHECK(files_starting("cuscope_test_every_no_room.json.cuscope-tmp.") == 0);
  std::remove(path.c_str());
}

TEST_CASE("replace_file never writes through a link found at its temporary's name",
          "[session][report_every]") {
  using cuscope::detail::replace_file;
  const std::string path = temp_path("every_planted.json");
  const std::string victim = temp_path("every_victim.txt");
  const std::string temp = path + ".cuscope-tmp." + std::to_string(::getpid());
  std::remove(path.c_str());
  std::remove(temp.c_str());
  REQUIRE(replace_file(victim, "not cuscope's\n"));
  REQUIRE(::symlink(victim.c_str(), temp.c_str()) == 0);  // left there, or planted in a shared folder
  CHECK(replace_file(path, "the report\n"));
  CHECK(read_file(victim) == "not cuscope's\n");
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK(read_file(path) == "the report\n");
  std::remove(temp.c_str());
  std::remove(path.c_str());
  std::remove(victim.c_str());
}

TEST_CASE(
    "CUSCOPE_REPORT_EVERY never rewrites the program's own stderr (CUSCOPE_OUTPUT=/dev/stderr sent to a "
    "log), the table going there at exit only, after what the program wrote",
    "[session][report_every][threads]") {
  const std::string log = temp_path("every_stderr.log");
  cuscope::Options o = cuscope_test::quiet_options();
  o.print_at_exit = true;
  o.output_path = "/dev/stderr";
  o.json_path = temp_path("every_stderr.json");
  o.report_every_s = 1;
  std::remove(o.json_path.c_str());
  std::string before_exit;
  {
    const StderrToFile redirected(log);
    const char line[] = "the program's own line\n";
    REQUIRE(::write(STDERR_FILENO, line, sizeof(line) - 1) == static_cast<ssize_t>(sizeof(line) - 1));
    cuscope_test::Session session(o);
    { CUSCOPE_SCOPE("served"); }
    REQUIRE(wait_for_calls(o.json_path, "served", 1));  // a periodic write came (the table's is first)
    before_exit = read_file(log);
    cuscope::shutdown();
  }
  CHECK(before_exit.find("the program's own line\n") != std::string::npos);
  CHECK(before_exit.find("served") == std::string::npos);
  const std::string after_exit = read_file(log);
  CHECK(after_exit.find("the program's own line\n") != std::string::npos);
  CHECK(count_of(after_exit, "served") == 1);
  CHECK(after_exit.find("served") > after_exit.find("the program's own line\n"));
  std::remove(log.c_str());
  std::remove(o.json_path.c_str());
}

TEST_CASE("a relative report path is the folder's the session started in, wherever the program goes after",
          "[session][report_every][threads]") {
  const std::string started_in = temp_path("every_started_in");
  const std::string moved_to = temp_path("every_moved_to");
  const std::string name = "every_relative.json";
  std::filesystem::remove_all(started_in);
  std::filesystem::remove_all(moved_to);
  cuscope::Options o = cuscope_test::quiet_options();
  o.json_path = name;
  o.report_every_s = 1;
  {
    const InFolder start_folder(started_in);
    cuscope_test::Session session(o);
    { CUSCOPE_SCOPE("served"); }
    REQUIRE(wait_for_calls(started_in + "/" + name, "served", 1));
    const InFolder later_folder(moved_to);  // the program's chdir()
    { CUSCOPE_SCOPE("served"); }
    cuscope::shutdown();
  }
  CHECK(calls_in(started_in + "/" + name, "served") == 2);
  CHECK_FALSE(std::filesystem::exists(moved_to + "/" + name));
  std::filesystem::remove_all(started_in);
  std::filesystem::remove_all(moved_to);
}

TEST_CASE(
    "below a cuscope run, a process that recorded nothing removes its trace where it began, after a chdir",
    "[session][report_every]") {
  const std::string started_in = temp_path("every_trace_started_in");
  const std::string moved_to = temp_path("every_trace_moved_to");
  const std::string name = "every_idle.cuscope";
  std::filesystem::remove_all(started_in);
  std::filesystem::remove_all(moved_to);
  std::filesystem::create_directories(moved_to);
  std::ofstream(moved_to + "/" + name) << "another program's file";
  cuscope::Options o = cuscope_test::quiet_options();
  o.trace_path = name;
  o.gpu_events = false;
  o.activities = false;
  {
    const InFolder start_folder(started_in);
    cuscope_test::Session session(o, false);
    ::setenv("CUSCOPE_RUN_ID", "1-1000000000", 1);  // below a run (another process's), begun long ago
    cuscope::start(o);
    ::unsetenv("CUSCOPE_RUN_ID");
    REQUIRE(std::filesystem::exists(started_in + "/" + name));
    const InFolder later_folder(moved_to);  // the program's chdir()
    cuscope::shutdown();                    // nothing recorded: its trace removed, and no other file
  }
  CHECK_FALSE(std::filesystem::exists(started_in + "/" + name));
  CHECK(read_file(moved_to + "/" + name) == "another program's file");
  std::filesystem::remove_all(started_in);
  std::filesystem::remove_all(moved_to);
}

TEST_CASE("a temporary that a killed process left beside the report goes at the next start, a living one's stays",
          "[session][report_every]") {
  const std::string json = temp_path("sweep.json");
  const pid_t gone = fork();  // a process id that is no one's now: a child made and reaped
  if (gone == 0) _exit(0);
  REQUIRE(gone > 0);
  REQUIRE(waitpid(gone, nullptr, 0) == gone);
  const std::string stale = json + ".cuscope-tmp." + std::to_string(gone);
  const std::string living = json + ".cuscope-tmp." + std::to_string(getppid());  // whoever ran the test
  const std::string not_ours = json + ".cuscope-tmp.x12";
  const std::string other_file = temp_path("sweep_other.json") + ".cuscope-tmp." + std::to_string(gone);
  for (const std::string& f : {stale, living, not_ours, other_file}) std::ofstream(f) << "{\"half";
  cuscope::Options o = cuscope_test::quiet_options();
  o.json_path = json;
  {
    cuscope_test::Session session(o);
    CHECK_FALSE(std::filesystem::exists(stale));
    CHECK(std::filesystem::exists(living));
    CHECK(std::filesystem::exists(not_ours));
    CHECK(std::filesystem::exists(other_file));  // another report's: not this session's to judge
  }
  for (const std::string& f : {json, living, not_ours, other_file}) std::remove(f.c_str());
}

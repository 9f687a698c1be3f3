// Tests of a process's rank in its job (launcher variables), of %r/%p/%h in output paths, of the
// rank or pid a path gets where several processes would write it (ranks, `cuscope run`'s claim),
// and of the rank and world size in the report's JSON and table.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli.hpp"
#include "cuscope/report.hpp"
#include "session/ranks.hpp"
#include "session/run_claim.hpp"
#include "session_fixture.hpp"

using cuscope::detail::expand_output_path;
using cuscope::detail::process_identity;
using cuscope::detail::ProcessIdentity;
using cuscope::detail::RunClaim;

namespace {

std::map<std::string, std::string> g_env;
const char* lookup(const char* name) {
  const auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

ProcessIdentity identity(std::map<std::string, std::string> env) {
  g_env = std::move(env);
  return process_identity(&lookup, 4242, "node7");
}

}  // namespace

TEST_CASE("the rank comes from the first launcher variable set, the size from its companion", "[ranks]") {
  ProcessIdentity id = identity({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
  CHECK(id.rank == 3);
  CHECK(id.world_size == 4);
  CHECK(id.rank_variable == "OMPI_COMM_WORLD_RANK");
  CHECK(id.problems.empty());

  // torchrun's RANK comes first; Open MPI's size is not torchrun's.
  id = identity({{"RANK", "1"}, {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
  CHECK(id.rank == 1);
  CHECK(id.world_size == 0);
  id = identity({{"PMI_RANK", "2"}, {"PMI_SIZE", "8"}});
  CHECK((id.rank == 2 && id.world_size == 8));
  id = identity({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "16"}});
  CHECK((id.rank == 0 && id.world_size == 16));

  id = identity({{"WORLD_SIZE", "4"}});  // a size without a rank says nothing about this process
  CHECK(id.rank == -1);
  CHECK(id.world_size == 0);
  CHECK(id.rank_variable.empty());
  CHECK(id.pid == 4242);
  CHECK(id.host == "node7");
}

TEST_CASE("a launcher variable that is not a number is reported, not guessed", "[ranks]") {
  ProcessIdentity id = identity({{"RANK", "three"}, {"WORLD_SIZE", "0"}});
  CHECK(id.rank == -1);
  CHECK(id.world_size == 0);
  REQUIRE(id.problems.size() == 2);
  CHECK(id.problems[0] ==
        "RANK='three' is not a rank (a whole number from 0); the report has no rank and %r in output paths "
        "is 0");
  CHECK(id.problems[1] == "WORLD_SIZE='0' is not a world size (a whole number from 1); the report has none");
  id = identity({{"SLURM_PROCID", "-1"}, {"SLURM_NTASKS", "2x"}});
  CHECK(id.rank == -1);
  CHECK(id.problems.size() == 2);
}

TEST_CASE("output paths expand %r, %p, %h and %%, and keep other percent signs", "[ranks]") {
  const ProcessIdentity id = identity({{"RANK", "12"}, {"WORLD_SIZE", "16"}});
  CHECK(expand_output_path("out/report-%r.json", id) == "out/report-12.json");
  CHECK(expand_output_path("%h-%p-%r.cuscope", id) == "node7-4242-12.cuscope");
  CHECK(expand_output_path("100%%-%r", id) == "100%-12");
  CHECK(expand_output_path("%d %x 50% %", id) == "%d %x 50% %");
  CHECK(expand_output_path("%%r", id) == "%r");
  CHECK(expand_output_path("", id).empty());
  CHECK(expand_output_path("%r", identity({})) == "0");  // no launcher: one process, rank 0's name
}

TEST_CASE("a session's report names its process and host", "[ranks][session]") {
  cuscope_test::Session session;
  char host[256] = {};
  REQUIRE(gethostname(host, sizeof(host) - 1) == 0);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.pid == getpid());
  CHECK(r.host == host);
}

TEST_CASE(
    "the report's rank, world size, pid and host are in its JSON, the rank in its table too, and read back",
    "[ranks][json][cli]") {
  cuscope::Report r;
  r.device = "no GPU";
  nlohmann::json j = nlohmann::json::parse(cuscope::format_json(r));
  CHECK(j.at("rank").is_null());
  CHECK(j.at("world_size").is_null());
  CHECK(j.at("pid").is_null());
  CHECK(j.at("host").is_null());
  CHECK(cuscope::format_table(r).find(" — rank") == std::string::npos);

  r.rank = 3;
  r.world_size = 4;
  r.pid = 4242;
  r.host = "node7";
  j = nlohmann::json::parse(cuscope::format_json(r));
  CHECK(j.at("rank") == 3);
  CHECK(j.at("world_size") == 4);
  CHECK(j.at("pid") == 4242);
  CHECK(j.at("host") == "node7");
  const std::string table = cuscope::format_table(r);
  CHECK(table.substr(0, table.find('\n')).find(" — steps 0/0 — rank 3 of 4") != std::string::npos);

  cuscope::Report back;
  std::string error;
  REQUIRE(cuscope::cli::report_from_json(cuscope::format_json(r), &back, &error));
  CHECK(back.rank == 3);
  CHECK(back.world_size == 4);
  CHECK(back.pid == 4242);
  CHECK(back.host == "node7");
  for (const char* field : {"rank", "world_size", "pid", "host"}) j.erase(field);  // a report from before them
  REQUIRE(cuscope::cli::report_from_json(j.dump(), &back, &error));
  CHECK(back.rank == -1);
  CHECK(back.world_size == 0);
  CHECK(back.pid == 0);
  CHECK(back.host.empty());
}

namespace {

using cuscope::detail::own_output_path;

// own_output_path's file for `pattern`, and its note.
std::pair<std::string, std::string> own(std::string_view pattern, const ProcessIdentity& id) {
  std::string note;
  std::string path = own_output_path("CUSCOPE_JSON", pattern, id, &note);
  return {path, note};
}

std::string own_path(std::string_view pattern, const ProcessIdentity& id) { return own(pattern, id).first; }

std::uint64_t epoch_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

}  // namespace

TEST_CASE("several ranks: a path naming neither %r nor %p gets the rank before its extension", "[ranks]") {
  const ProcessIdentity id = identity({{"RANK", "3"}, {"WORLD_SIZE", "4"}});
  const auto [path, note] = own("out/report.json", id);
  CHECK(path == "out/report-3.json");
  CHECK(note ==
        "CUSCOPE_JSON=out/report.json names neither the rank (%r) nor the process (%p), and this is rank 3 of "
        "4: it writes out/report-3.json, as each rank writes its own");
  CHECK(own_path("run.cuscope", id) == "run-3.cuscope");
  CHECK(own_path("report", id) == "report-3");
  CHECK(own_path("dir.d/report", id) == "dir.d/report-3");
  CHECK(own_path(".hidden", id) == ".hidden-3");
  CHECK(own_path("%h.json", id) == "node7-3.json");
  CHECK(own_path("100%%.json", id) == "100%-3.json");
  // A path that names the process already, or is not a regular file, stays as it is, unremarked.
  for (const auto& [pattern, expanded] : {std::pair{"r%r.json", "r3.json"}, std::pair{"t-%p.json", "t-4242.json"},
                                          std::pair{"%%r.json", "%r-3.json"}, std::pair{"/dev/null", "/dev/null"},
                                          std::pair{"", ""}}) {
    const auto [kept, none] = own(pattern, id);
    CHECK(kept == expanded);
    CHECK(none == (std::string_view(pattern) == "%%r.json" ? "CUSCOPE_JSON=%%r.json names neither the rank (%r) "
                                                             "nor the process (%p), and this is rank 3 of 4: it "
                                                             "writes %r-3.json, as each rank writes its own"
                                                           : ""));
  }
  {
    // stderr sent to a log (a regular file): /dev/stderr is still the program's stream, not a file to name.
    const std::string log = std::filesystem::temp_directory_path() / fmt::format("cuscope-log-{}", epoch_ns());
    const int saved = dup(2);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE((saved >= 0 && fd >= 0 && dup2(fd, 2) == 2));
    const auto kept = own("/dev/stderr", id);
    dup2(saved, 2);
    ::close(saved);
    ::close(fd);
    std::remove(log.c_str());
    CHECK(kept == std::pair<std::string, std::string>{"/dev/stderr", ""});
  }
  CHECK(own_path("report.json", identity({{"RANK", "0"}, {"WORLD_SIZE", "4"}})) == "report-0.json");
  // Rank 2 of an unknown number: there are others; rank 0 of one, or of an unknown number: alone.
  CHECK(own("report.json", identity({{"RANK", "2"}})).second ==
        "CUSCOPE_JSON=report.json names neither the rank (%r) nor the process (%p), and this is rank 2: it "
        "writes report-2.json, as each rank writes its own");
  CHECK(own("report.json", identity({{"RANK", "0"}, {"WORLD_SIZE", "1"}})) ==
        std::pair<std::string, std::string>{"report.json", ""});
  CHECK(own("report.json", identity({{"RANK", "0"}})) == std::pair<std::string, std::string>{"report.json", ""});
  CHECK(own("report.json", identity({})) == std::pair<std::string, std::string>{"report.json", ""});
}

TEST_CASE(
    "several ranks: a table path with the table off (CUSCOPE_PRINT=0) gets no note of a file never written",
    "[ranks]") {
  const ProcessIdentity id = identity({{"RANK", "3"}, {"WORLD_SIZE", "4"}});
  cuscope::Options o;
  o.print_at_exit = false;
  o.output_path = "table.txt";
  o.json_path = "report.json";
  std::vector<std::string> notes;
  cuscope::detail::expand_output_paths(o, id, &notes);
  CHECK(o.json_path == "report-3.json");
  CHECK(notes ==
        std::vector<std::string>{"CUSCOPE_JSON=report.json names neither the rank (%r) nor the process "
                                 "(%p), and this is rank 3 of 4: it writes report-3.json, as each rank "
                                 "writes its own"});
}

TEST_CASE("under cuscope run, a later process, or one whose file the run wrote already, adds its pid", "[ranks]") {
  // A second before now: a file's time comes from a coarse clock, a few milliseconds behind.
  const std::uint64_t start = epoch_ns() - 1'000'000'000u;
  ProcessIdentity id = identity({{"CUSCOPE_RUN_ID", fmt::format("100-{}", start)}});
  CHECK(id.run_start_ns == start);
  CHECK(id.run_id == fmt::format("100-{}", start));
  CHECK(id.problems.empty());
  const std::string dir = std::filesystem::temp_directory_path() / fmt::format("cuscope-own-{}", epoch_ns());
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/report.json";
  CHECK(own(file, id) == std::pair<std::string, std::string>{file, ""});  // the first process, a new file

  id.run_later = true;  // another process of the run came first
  CHECK(own(file, id) ==
        std::pair<std::string, std::string>{
            dir + "/report-4242.json",
            fmt::format("CUSCOPE_JSON={0}/report.json: another process of this `cuscope run` started first, and "
                        "{0}/report.json is its; this process (4242) writes {0}/report-4242.json",
                        dir)});
  CHECK(own_path(dir + "/t-%p.json", id) == dir + "/t-4242.json");  // names the process already
  CHECK(own_path("/dev/null", id) == "/dev/null");

  id.run_later = false;
  std::ofstream(file) << "{}";  // written since the run began: by a process of the run that ended
  CHECK(own(file, id) ==
        std::pair<std::string, std::string>{
            dir + "/report-4242.json",
            fmt::format("CUSCOPE_JSON={0}/report.json: another process of this `cuscope run` wrote "
                        "{0}/report.json already; this process (4242) writes {0}/report-4242.json",
                        dir)});
  // A file from before the run (the run began an hour after it) is replaced, as without a run.
  id = identity({{"CUSCOPE_RUN_ID", fmt::format("100-{}", epoch_ns() + 3'600'000'000'000u)}});
  CHECK(own(file, id) == std::pair<std::string, std::string>{file, ""});
  // Ranks keep the processes apart already: the rank, not the pid.
  id = identity({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"CUSCOPE_RUN_ID", fmt::format("100-{}", start)}});
  id.run_later = true;
  CHECK(own_path(file, id) == dir + "/report-1.json");
  std::filesystem::remove_all(dir);

  for (const char* bad : {"abc", "100", "-5", "100-", "0-5", "100-0", "100-5x", "1-99999999999999999999999"}) {
    id = identity({{"CUSCOPE_RUN_ID", bad}});
    CHECK(id.run_start_ns == 0);
    CHECK(id.run_id.empty());
    REQUIRE(id.problems.size() == 1);
    CHECK(id.problems[0] ==
          fmt::format("CUSCOPE_RUN_ID='{}' is not what `cuscope run` sets (PID-NANOSECONDS); ignored", bad));
  }
}

TEST_CASE("the first claim on a run holds it while it lives, and a second, here or in a child, does not", "[ranks]") {
  const std::string run = fmt::format("{}-{}", getpid(), epoch_ns());
  {
    const RunClaim first(run);
    CHECK(first.held());
    const RunClaim second(run);
    CHECK_FALSE(second.held());
    CHECK(RunClaim(run + "0").held());  // another run
    const pid_t child = fork();
    if (child == 0) _exit(RunClaim(run).held() ? 1 : 0);  // another process of the run
    int status = -1;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  CHECK(RunClaim(run).held());  // the first ended: nothing was left behind
}

TEST_CASE(
    "a run's claim is its process's own: a child made by fork() does not keep it after the claimer ends",
    "[ranks]") {
  const std::string run = fmt::format("{}-{}", getpid(), epoch_ns());
  auto first = std::make_unique<RunClaim>(run);
  REQUIRE(first->held());
  int go[2] = {-1, -1};
  REQUIRE(::pipe(go) == 0);
  const pid_t child = fork();
  if (child == 0) {  // a worker forked without exec (a multiprocessing pool, a daemon): lives on
    ::close(go[1]);
    char c = 0;
    const bool ended = ::read(go[0], &c, 1) == 0;  // the claimer's claim is gone
    _exit(ended && RunClaim(run).held() ? 0 : 1);
  }
  ::close(go[0]);
  first.reset();  // the claimer ends
  ::close(go[1]);
  int status = -1;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

TEST_CASE("a report file's claim: this process's until released, no other live process's meanwhile",
          "[ranks]") {
  const std::string path = fmt::format("/tmp/cuscope-claim-test-{}-{}/report.json", getpid(), epoch_ns());
  // Whether a child (another live process on this host) gets the claim on `p`; its claim ends with it.
  const auto child_claims = [](const std::string& p) {
    const pid_t child = fork();
    if (child == 0) _exit(cuscope::detail::claim_path(p) ? 0 : 1);
    int status = -1;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    return WEXITSTATUS(status) == 0;
  };
  CHECK(child_claims(path));  // nobody held it
  CHECK(cuscope::detail::claim_path(path));
  CHECK(cuscope::detail::claim_path(path));  // this process's already: still its
  CHECK_FALSE(child_claims(path));
  CHECK(child_claims(path + ".other"));  // another file is another claim
  cuscope::detail::release_path_claims();
  CHECK(child_claims(path));  // released: the next process may write it
}

TEST_CASE("a report file's claim is its process's own: a child made by fork() does not keep it after a release",
          "[ranks]") {
  const std::string path = fmt::format("/tmp/cuscope-claim-fork-{}-{}/report.json", getpid(), epoch_ns());
  REQUIRE(cuscope::detail::claim_path(path));
  int go[2] = {-1, -1};
  int ready[2] = {-1, -1};
  REQUIRE(::pipe(go) == 0);
  REQUIRE(::pipe(ready) == 0);
  const pid_t worker = fork();
  if (worker == 0) {  // a worker forked without exec that lives on and never claims anything
    ::close(go[1]);
    ::close(ready[0]);
    // fork()'s child handlers (which close the claims' descriptors) have run by now; say so. The
    // parent must not release before: on a busy machine the child may not have run at all yet
    // (a ctest -j run on 2026-11-27 failed that way).
    (void)!::write(ready[1], "r", 1);
    char c = 0;
    while (::read(go[0], &c, 1) > 0) {
    }
    _exit(0);
  }
  ::close(go[0]);
  ::close(ready[1]);
  char started = 0;
  REQUIRE(::read(ready[0], &started, 1) == 1);
  ::close(ready[0]);
  cuscope::detail::release_path_claims();  // the worker still lives
  const pid_t other = fork();
  if (other == 0) _exit(cuscope::detail::claim_path(path) ? 0 : 1);  // another process claims it
  int status = -1;
  REQUIRE(waitpid(other, &status, 0) == other);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  ::close(go[1]);
  REQUIRE(waitpid(worker, &status, 0) == worker);
}

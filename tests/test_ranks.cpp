// Tests of a process's rank in its job (launcher variables), of %r/%p/%h in output paths, and of
// the rank and world size in the report's JSON and table.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli.hpp"
#include "cuscope/report.hpp"
#include "session/ranks.hpp"

using cuscope::detail::expand_output_path;
using cuscope::detail::process_identity;
using cuscope::detail::ProcessIdentity;

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

TEST_CASE("the report's rank and world size are in its JSON and table, and read back", "[ranks][json][cli]") {
  cuscope::Report r;
  r.device = "no GPU";
  nlohmann::json j = nlohmann::json::parse(cuscope::format_json(r));
  CHECK(j.at("rank").is_null());
  CHECK(j.at("world_size").is_null());
  CHECK(cuscope::format_table(r).find(" — rank") == std::string::npos);

  r.rank = 3;
  r.world_size = 4;
  j = nlohmann::json::parse(cuscope::format_json(r));
  CHECK(j.at("rank") == 3);
  CHECK(j.at("world_size") == 4);
  const std::string table = cuscope::format_table(r);
  CHECK(table.substr(0, table.find('\n')).find(" — steps 0/0 — rank 3 of 4") != std::string::npos);

  cuscope::Report back;
  std::string error;
  REQUIRE(cuscope::cli::report_from_json(cuscope::format_json(r), &back, &error));
  CHECK(back.rank == 3);
  CHECK(back.world_size == 4);
  j.erase("rank");  // a report written before ranks
  j.erase("world_size");
  REQUIRE(cuscope::cli::report_from_json(j.dump(), &back, &error));
  CHECK(back.rank == -1);
  CHECK(back.world_size == 0);
}

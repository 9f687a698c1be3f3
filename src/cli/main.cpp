// cli/main.cpp — `cuscope <command> ...`: dispatch and the top-level help.
#include <cstdio>
#include <cstring>
#include <cuscope/version.hpp>
#include <exception>
#include <string_view>

#include "cli/cli.hpp"
#include "cli/output.hpp"

namespace {

constexpr const char* kUsage =
    "usage: cuscope <command> [options] FILE\n"
    "       cuscope run [options] [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs a program with cuscope injected (zero-code mode), and reads what a cuscope session wrote:\n"
    "a trace file (CUSCOPE_TRACE) or a JSON report (CUSCOPE_JSON).\n"
    "\n"
    "commands:\n"
    "  run COMMAND ARGS...  COMMAND with its NVTX ranges as cuscope ranges; the table prints at exit\n"
    "  show FILE            the report's table (a trace file or a JSON report)\n"
    "  json TRACE           the report of a trace as JSON (the session's own CUSCOPE_JSON)\n"
    "  trace TRACE -o OUT   a Chrome/Perfetto trace (Kineto's JSON shape) of a trace file\n"
    "  diff BASE NEW        a regression gate: two reports compared range by range (exit 1 if worse)\n"
    "  flame FILE -o SVG    the range tree as an icicle graph (SVG), sized by host, GPU or kernel time\n"
    "  merge FILE...        the reports of a job's ranks as one table (min/median/max, stragglers)\n"
    "\n"
    "`cuscope <command> --help` describes a command. `cuscope --version` prints the version.\n";

}  // namespace

int main(int argc, char** argv) {
  const std::string_view command = argc < 2 ? "" : argv[1];
  try {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
        std::strcmp(argv[1], "help") == 0) {
      std::fputs(kUsage, argc < 2 ? stderr : stdout);
      return argc < 2 ? cuscope::cli::kUsageError : 0;
    }
    if (std::strcmp(argv[1], "--version") == 0) {
      std::printf("cuscope %s\n", cuscope::version());
      return 0;
    }
    const cuscope::cli::Args args(argv + 2, argv + argc);
    int (*run)(const cuscope::cli::Args&) = command == "show"    ? &cuscope::cli::show
                                            : command == "json"  ? &cuscope::cli::json
                                            : command == "trace" ? &cuscope::cli::trace
                                            : command == "run"   ? &cuscope::cli::run
                                            : command == "diff"  ? &cuscope::cli::diff
                                            : command == "flame" ? &cuscope::cli::flame
                                            : command == "merge" ? &cuscope::cli::merge
                                                                 : nullptr;
    if (run == nullptr) {
      std::fprintf(stderr, "cuscope: unknown command '%s'\n\n%s", argv[1], kUsage);
      return cuscope::cli::kUsageError;
    }
    const int status = run(args);
    // What a command printed that did not reach standard output (a full disk, a closed pipe) is a
    // failure of the command, never its success: a report lost, or a diff's verdict unread.
    if (command != "run" && status != cuscope::cli::failure_status(command) &&
        !cuscope::cli::stdout_written(argv[1]))
      return cuscope::cli::failure_status(command);
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuscope%s%.*s: %s\n", command.empty() ? "" : " ", static_cast<int>(command.size()),
                 command.data(), e.what());
    return cuscope::cli::failure_status(command);
  }
}

// cli/cli.hpp — the `cuscope` command: one file per subcommand, over the library's public API
// (Report, format_table, format_json, options) and the trace reader. Nothing here reaches into
// producers or the session.
#pragma once

#include <cstdint>
#include <cuscope/report.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace cuscope::cli {

using Args = std::vector<std::string_view>;

int show(const Args& args);
int json(const Args& args);
int trace(const Args& args);
int run(const Args& args);
int diff(const Args& args);
int flame(const Args& args);
int merge(const Args& args);

/// A report from a trace file or from a JSON report (cuscope.report/1), told apart by content.
bool load_report(const std::string& path, Report* out, std::string* error);
/// A JSON report's text back into a Report (the fields format_json writes).
bool report_from_json(const std::string& text, Report* out, std::string* error);

/// Parses "FILE [-o OUT]" (and --help), the command line of `json` and `trace`. Returns -1 when the
/// command should go on, else the exit status to return (0 after --help, kUsageError after
/// printing `help` for a line it cannot run). `out_required`: -o must be given.
int parse_file_and_output(const Args& args, const char* help, bool out_required, std::string* path,
                          std::string* out);

/// "0.1" or "10%" as 0.1; false for anything else (negative, not a number).
bool parse_share(std::string_view text, double* out);
/// "250us", "1.5ms", "2s", "300ns" or "300" (nanoseconds) as nanoseconds; false for anything else.
bool parse_duration_ns(std::string_view text, std::uint64_t* out);
/// The report's ranges below the root, parents before children, siblings in the report's order.
std::vector<std::size_t> tree_order(const Report& report);

/// Prints "cuscope <command>: <message>" to stderr and returns the exit status for bad input.
int fail(std::string_view command, std::string_view message);
/// The exit status for a command line that cannot be run (after printing the usage).
inline constexpr int kUsageError = 2;
inline constexpr int kInputError = 1;

}  // namespace cuscope::cli

// cli/cli.hpp — the `cuscope` command: one file per subcommand, over the library's public API
// (Report, format_table, format_json, options) and the trace reader. Nothing here reaches into
// producers or the session.
#pragma once

#include <cstdint>
#include <cuscope/report.hpp>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace cuscope::cli {

using Args = std::vector<std::string_view>;

/// The exit status for a command line that cannot be run (after printing the usage).
inline constexpr int kUsageError = 2;
inline constexpr int kInputError = 1;
/// `cuscope diff`'s for bad input: 1 is "regressed" there.
inline constexpr int kDiffBadInput = 2;
/// `cuscope run`'s own failures: apart from any status its command may exit with.
inline constexpr int kRunError = 125;
/// The status of a command that failed on its own (an error no command caught): never one that
/// means something else for that command.
inline int failure_status(std::string_view command) {
  return command == "run" ? kRunError : command == "diff" ? kDiffBadInput : kInputError;
}

int show(const Args& args);
int json(const Args& args);
int trace(const Args& args);
int run(const Args& args);
int diff(const Args& args);
int flame(const Args& args);
int merge(const Args& args);

/// The largest JSON report read (a report of 100,000 ranges is about 380 MB).
inline constexpr std::size_t kMaxReportBytes = std::size_t{4} << 30;
/// A report from a trace file or from a JSON report (cuscope.report/1), told apart by content.
/// `partial`: a trace cut short is read up to its last whole record (--partial), and `cut`, when
/// given, says where it was cut ("" when whole).
bool load_report(const std::string& path, Report* out, std::string* error, bool partial = false,
                 std::string* cut = nullptr);
/// The line --partial prints on stderr when it read a cut trace: "cuscope COMMAND: PATH: why".
void say_cut(std::string_view command, const std::string& path, const std::string& cut);
/// The help line of --partial, the same in every command that takes it.
inline constexpr const char* kPartialHelp =
    "  --partial   read a trace cut short (no end record: a program killed, crashed or still\n"
    "              running) up to its last whole record; a line on stderr says where it was cut\n";
/// A JSON report's text back into a Report (the fields format_json writes).
bool report_from_json(const std::string& text, Report* out, std::string* error);

/// One walk over a command's words, shared by every command, so that all of them read options the
/// same way and say what is wrong the same way: "cuscope COMMAND: why", a blank line, the usage,
/// on stderr, and the command's usage status. --help or -h prints the usage on stdout (status 0).
///
///     CommandLine cl("diff", kHelp, args);
///     while (cl.next()) {
///       std::string_view v;
///       if (cl.flag("--json")) json = true;
///       else if (cl.value("--threshold", &v)) { if (!parse_share(v, &t)) return cl.error(...); }
///       else if (cl.operand(&v)) files.emplace_back(v);
///       else return cl.unknown();
///     }
///     if (cl.stopped()) return cl.status();
class CommandLine {
 public:
  CommandLine(std::string_view command, const char* help, const Args& args, int usage_status = kUsageError)
      : command_(command), help_(help), args_(args), usage_status_(usage_status) {}

  /// Steps to the next word. False at the end, after --help, or after an error.
  bool next();
  /// The word is the option `name`, which takes no value.
  bool flag(std::string_view name) const { return args_[at_] == name; }
  /// The word is the option `name`; `*value` is the word after it. An option at the end of the
  /// line, without its value, is an error (the walk stops; `*value` is empty).
  bool value(std::string_view name, std::string_view* value);
  /// The word is not an option (it does not start with '-'): a file, a command.
  bool operand(std::string_view* word) const;
  /// Prints "cuscope COMMAND: why" and the usage (only the first error is printed); returns the
  /// usage status and stops the walk.
  int error(std::string_view why);
  /// error() for the current word: not an option of this command.
  int unknown();
  /// True when the walk stopped early (--help or an error): return status() then.
  [[nodiscard]] bool stopped() const { return status_ >= 0; }
  [[nodiscard]] int status() const { return status_; }
  /// The index of the current word in args.
  [[nodiscard]] std::size_t at() const { return at_; }

 private:
  std::string_view command_;
  const char* help_;
  const Args& args_;
  int usage_status_;
  std::size_t at_ = static_cast<std::size_t>(-1);
  int status_ = -1;
};

/// Parses "FILE [-o OUT]" (and --help), the command line of `json`, `trace` and `flame` (after
/// its own options, which `extra` reads: it returns true for a word it took, and may take the
/// value with cl.value or stop the walk with cl.error). Returns -1 when the command should go
/// on, else the exit status to return. `out_required`: -o must be given.
int parse_file_and_output(std::string_view command, const char* help, const Args& args, bool out_required,
                          std::string* path, std::string* out,
                          const std::function<bool(CommandLine&)>& extra = nullptr);

/// "0.1" or "10%" as 0.1; false for anything else (negative, not a number).
bool parse_share(std::string_view text, double* out);
/// "250us", "1.5ms", "2s", "300ns" or "300" (nanoseconds) as nanoseconds; false for anything else.
bool parse_duration_ns(std::string_view text, std::uint64_t* out);
/// The report's ranges below the root, parents before children, siblings in the report's order.
std::vector<std::size_t> tree_order(const Report& report);

/// Prints "cuscope <command>: <message>" to stderr and returns the exit status for bad input.
int fail(std::string_view command, std::string_view message);

}  // namespace cuscope::cli

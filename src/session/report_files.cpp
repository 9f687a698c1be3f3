// session/report_files.cpp — the report's files: the table (CUSCOPE_OUTPUT, else stderr) and the
// JSON (CUSCOPE_JSON), written at exit, and rewritten while the session runs every
// CUSCOPE_REPORT_EVERY seconds (by the collector) for programs that are stopped rather than exit,
// or read while they run. A regular file is replaced whole (written beside it, then renamed over
// it), so a reader never sees half a report.
//
// Never: write the table to stderr while the session runs (only at exit), print the same failure
// twice, or throw.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "producers/log.hpp"
#include "session/internal.hpp"

namespace cuscope::inline v0::detail {
namespace {

bool write_to(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

}  // namespace

bool replace_file(const std::string& path, const std::string& text) {
  struct stat st {};
  // Not a regular file (/dev/stdout, a pipe), or a symbolic link (which a rename would replace by
  // a file): written in place.
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return write_to(path, text);
  const std::string temp = fmt::format("{}.cuscope-tmp.{}", path, ::getpid());
  if (write_to(temp, text) && std::rename(temp.c_str(), path.c_str()) == 0) return true;
  std::remove(temp.c_str());
  return write_to(path, text);  // a folder cuscope may not create files in, but the file is writable
}

void write_report_files(const Options& o, const Report& r, ReportMoment when) {
  const bool at_exit = when == ReportMoment::exit;
  const auto failed = [at_exit](const std::string& path, const char* what) {
    if (at_exit) {
      warn_once(fmt::format("could not write the {} to '{}'; printing it to stderr instead", what, path));
    } else {
      warn_once(fmt::format("CUSCOPE_REPORT_EVERY: could not write the {} to '{}'; trying again later", what,
                            path));
    }
    return at_exit;
  };
  if (o.print_at_exit && (at_exit || !o.output_path.empty())) {
    const std::string table = format_table(r, o.table);
    if (o.output_path.empty()) {
      std::fputs(table.c_str(), stderr);
      std::fflush(stderr);
    } else if (!replace_file(o.output_path, table) && failed(o.output_path, "table")) {
      std::fputs(table.c_str(), stderr);
    }
  }
  if (!o.json_path.empty()) {
    const std::string json = format_json(r);
    if (!replace_file(o.json_path, json) && failed(o.json_path, "JSON report"))
      std::fputs(json.c_str(), stderr);
  }
}

bool has_report_file(const Options& o) {
  return !o.json_path.empty() || (o.print_at_exit && !o.output_path.empty());
}

}  // namespace cuscope::inline v0::detail

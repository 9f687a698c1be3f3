// cli/show.cpp — `cuscope show FILE`: the table of a trace file or of a JSON report, with the
// table options the session takes from CUSCOPE_SORT, CUSCOPE_ROWS and CUSCOPE_TOP_KERNELS (parsed
// by the same code, so the values and messages are the same).
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cuscope/session.hpp>
#include <fstream>
#include <string>

#include "cli/cli.hpp"
#include "trace/format.hpp"
#include "trace/replay.hpp"

namespace cuscope::cli {

namespace {

constexpr const char* kHelp =
    "usage: cuscope show [--sort KEY] [--rows N] [--top-kernels N] [--partial] FILE\n"
    "\n"
    "Prints the table of FILE, a trace file (CUSCOPE_TRACE) or a JSON report (CUSCOPE_JSON): the\n"
    "table the program printed at exit.\n"
    "\n"
    "  --sort KEY         order siblings by host_total (default), host_self, gpu_total,\n"
    "                     kernel_total, gpu_busy, calls or name (as CUSCOPE_SORT)\n"
    "  --rows N           ranges shown, the rest counted in a last line; 0 = all (CUSCOPE_ROWS)\n"
    "  --top-kernels N    kernels listed under each range; 0 = none (CUSCOPE_TOP_KERNELS)\n"
    "  --partial          read a trace cut short (no end record: a program killed, crashed or\n"
    "                     still running) up to its last whole record; stderr says where it was cut\n";

// options_from() reads settings through a lookup; the command line is that lookup here.
std::string g_sort, g_rows, g_top;
const char* lookup(const char* name) {
  const std::string_view n = name;
  if (n == "CUSCOPE_SORT" && !g_sort.empty()) return g_sort.c_str();
  if (n == "CUSCOPE_ROWS" && !g_rows.empty()) return g_rows.c_str();
  if (n == "CUSCOPE_TOP_KERNELS" && !g_top.empty()) return g_top.c_str();
  return nullptr;
}

}  // namespace

int fail(std::string_view command, std::string_view message) {
  std::fprintf(stderr, "cuscope %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
  return kInputError;
}

void say_cut(std::string_view command, const std::string& path, const std::string& cut) {
  if (cut.empty()) return;
  std::fprintf(stderr, "cuscope %.*s: %s: %s; read up to there (--partial)\n",
               static_cast<int>(command.size()), command.data(), path.c_str(), cut.c_str());
}

bool load_report(const std::string& path, Report* out, std::string* error, bool partial, std::string* cut) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  char head[sizeof(trace::kMagic)] = {};
  in.read(head, sizeof(head));
  if (in.gcount() == sizeof(head) && std::memcmp(head, trace::kMagic, sizeof(head)) == 0)
    return trace::replay_file(path, out, error, partial, cut);
  // Not a trace: a JSON report, which opens with '{' (after white space), read whole up to a bound,
  // the bytes already read first (no seek: a pipe reads too).
  std::string text(head, static_cast<std::size_t>(in.gcount()));
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] != '{') {
    *error = "not a cuscope trace or JSON report";
    return false;
  }
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxReportBytes) {
      *error =
          "larger than " + std::to_string(kMaxReportBytes >> 30) + " GiB: not a JSON report cuscope wrote";
      return false;
    }
  }
  return report_from_json(text, out, error);
}

int show(const Args& args) {
  std::string path;
  bool partial = false;
  CommandLine cl("show", kHelp, args);
  while (cl.next()) {
    std::string_view v;
    if (cl.flag("--partial")) {
      partial = true;
    } else if (cl.value("--sort", &v)) {
      g_sort = std::string(v);
    } else if (cl.value("--rows", &v)) {
      g_rows = std::string(v);
    } else if (cl.value("--top-kernels", &v)) {
      g_top = std::string(v);
    } else if (cl.operand(&v)) {
      if (!path.empty()) return cl.error(fmt::format("one file at a time ('{}' and '{}')", path, v));
      path = std::string(v);
    } else {
      return cl.unknown();
    }
  }
  if (cl.stopped()) return cl.status();
  if (path.empty()) return cl.error("no file given");
  std::vector<OptionError> errors;
  const Options o = options_from(&lookup, Options{}, &errors);
  if (!errors.empty()) {
    std::string message = errors.front().message;
    for (const char* env : {"CUSCOPE_SORT", "CUSCOPE_ROWS", "CUSCOPE_TOP_KERNELS"}) {
      const std::string flag = env == std::string_view("CUSCOPE_SORT")   ? "--sort"
                               : env == std::string_view("CUSCOPE_ROWS") ? "--rows"
                                                                         : "--top-kernels";
      if (const auto at = message.find(env); at != std::string::npos)
        message.replace(at, std::strlen(env), flag);
    }
    return cl.error(message);
  }
  Report r;
  std::string error;
  std::string cut;
  if (!load_report(path, &r, &error, partial, &cut)) return fail("show", path + ": " + error);
  say_cut("show", path, cut);
  std::fputs(format_table(r, o.table).c_str(), stdout);
  return 0;
}

}  // namespace cuscope::cli

// cli/json.cpp — `cuscope json TRACE`: the report a trace replays to, as the session's JSON.
#include <cstdio>
#include <string>

#include "cli/cli.hpp"
#include "cli/output.hpp"
#include "trace/replay.hpp"

namespace cuscope::cli {

namespace {

const std::string kHelp =
    "usage: cuscope json [--partial] TRACE [-o OUT]\n"
    "\n"
    "Replays the trace file TRACE (written by a program run with CUSCOPE_TRACE=TRACE) through\n"
    "cuscope's model and prints its report as JSON: the same report, built by the same code, as the\n"
    "session's own CUSCOPE_JSON of that run. Schema: docs/json-schema.md.\n"
    "\n"
    "  -o OUT      write to OUT instead of standard output\n" +
    std::string(kPartialHelp);

}  // namespace

int json(const Args& args) {
  std::string path, out;
  bool partial = false;
  const auto extra = [&partial](CommandLine& cl) { return cl.flag("--partial") && (partial = true); };
  if (const int status = parse_file_and_output("json", kHelp.c_str(), args, false, &path, &out, extra);
      status >= 0)
    return status;
  Report r;
  std::string error;
  std::string cut;
  if (!trace::replay_file(path, &r, &error, partial, &cut)) return fail("json", path + ": " + error);
  say_cut("json", path, cut);
  const std::string text = format_json(r);
  if (out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;  // main() checks that standard output took it all
  }
  OutputFile file;
  if (!file.open(out, &error)) return fail("json", error);
  file.write(text);
  if (!file.commit(&error)) return fail("json", error);
  return 0;
}

}  // namespace cuscope::cli

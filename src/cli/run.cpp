// cli/run.cpp — `cuscope run [options] [--] COMMAND ARGS...`: zero-code mode. Points NVTX and the
// CUDA driver at libcuscope_inject.so, sets the CUSCOPE_* variables the options ask for, and
// replaces itself with COMMAND, so the exit status is the command's own.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "cli/cli.hpp"

namespace cuscope::cli {

namespace {

constexpr const char* kHelp =
    "usage: cuscope run [--json FILE] [--trace FILE] [--output FILE] [--domains LIST] [--report-every S]\n"
    "                   [--sample-ms MS] [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND (any program: a C++ or CUDA binary, `python train.py`, ...) with cuscope injected:\n"
    "its NVTX push/pop ranges (torch.cuda.nvtx.range, emit_nvtx(), NCCL, hand-written nvtxRangePush)\n"
    "become cuscope ranges, GPU work is attributed to them, and the table prints at exit. Nothing in\n"
    "the program changes; every CUSCOPE_* variable applies as usual (docs/options.md).\n"
    "\n"
    "  --json FILE      also write the report as JSON (CUSCOPE_JSON)\n"
    "  --trace FILE     record a trace file (CUSCOPE_TRACE), for `cuscope show|json|trace`\n"
    "  --output FILE    write the table to FILE instead of standard error (CUSCOPE_OUTPUT)\n"
    "  --domains LIST   NVTX domains to keep (\"default,Megatron\"), or to leave out (\"-NCCL\")\n"
    "                   (CUSCOPE_NVTX_DOMAINS)\n"
    "  --report-every S rewrite the JSON (and a table FILE) every S seconds while COMMAND runs, so a\n"
    "                   program stopped by a signal leaves its report (CUSCOPE_REPORT_EVERY)\n"
    "  --sample-ms MS   leave it on: record COMMAND whole for its first MS milliseconds, then 100 ms\n"
    "                   (a tenth of MS, at most 100) every MS, CUPTI detached in between\n"
    "                   (CUSCOPE_SAMPLE_MS; docs/options.md)\n"
    "A relative FILE is taken from the folder cuscope run is run in, wherever COMMAND goes.\n"
    "\n"
    "Processes COMMAND starts inherit the injection: the first to start a session writes FILE, any\n"
    "other one FILE with its pid before the extension, and says so (docs/zero-code.md).\n"
    "\n"
    "The exit status is COMMAND's. cuscope run's own failures exit with 125 (bad command line, no\n"
    "injection library), 126 (COMMAND cannot be run) or 127 (COMMAND not found).\n"
    "The injection library is found next to this program (CUSCOPE_INJECT_LIBRARY overrides it).\n";

// A readable regular file that is a shared library (ELF): CUSCOPE_INJECT_LIBRARY=/tmp or a text file
// would otherwise run the program with nothing injected, and nothing said.
bool is_library(const std::string& path) {
  constexpr char kElf[4] = {0x7f, 'E', 'L', 'F'};
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::FILE* f = std::fopen(path.c_str(), "rb");  // unreadable: none
  if (f == nullptr) return false;
  char magic[4] = {};
  const bool elf =
      std::fread(magic, 1, sizeof magic, f) == sizeof magic && std::memcmp(magic, kElf, sizeof kElf) == 0;
  std::fclose(f);
  return elf;
}

// Where libcuscope_inject.so is: the override, then the installed layout next to this program,
// then the build tree this program was built in.
std::string injection_library(std::string* looked) {
  if (const char* env = std::getenv("CUSCOPE_INJECT_LIBRARY"); env != nullptr && *env != '\0') {
    *looked = std::string("CUSCOPE_INJECT_LIBRARY=") + env;
    return is_library(env) ? env : std::string{};
  }
  std::vector<std::string> candidates;
  char self[PATH_MAX] = {};
  if (const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1); n > 0) {
    std::string dir(self, static_cast<std::size_t>(n));
    dir.erase(dir.rfind('/') + 1);
    candidates.push_back(dir + CUSCOPE_INJECT_INSTALL_RELPATH);
  }
  candidates.emplace_back(CUSCOPE_INJECT_BUILD_PATH);
  for (const std::string& c : candidates) {
    if (is_library(c)) return c;
    *looked += (looked->empty() ? "" : ", ") + c;
  }
  return {};
}

void set(const char* variable, const std::string& value) { setenv(variable, value.c_str(), 1); }

// A relative FILE of --json, --trace or --output, anchored here: COMMAND (or a script's command
// after its `cd`) may change folder before its session starts, and the session takes a relative
// path from the folder it starts in. A '%' of this folder's name is doubled, so that the session
// does not expand it (%p, %r, %h). Without a working folder, the path stays as given.
std::string anchored(const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  char* here = getcwd(nullptr, 0);
  if (here == nullptr) return path;
  std::string out;
  for (const char* c = here; *c != '\0'; ++c) out += *c == '%' ? std::string("%%") : std::string(1, *c);
  std::free(here);
  return out + (out.back() == '/' ? "" : "/") + path;
}

// Another tool's injection (Nsight Systems sets NVTX_INJECTION64_PATH) cannot run beside cuscope's.
void inject(const char* variable, const std::string& library) {
  if (const char* was = std::getenv(variable); was != nullptr && *was != '\0' && library != was)
    std::fprintf(stderr, "cuscope run: %s was '%s' (another tool); cuscope's library replaces it\n", variable,
                 was);
  set(variable, library);
}

// The file execvp would run for `command`: itself when it names a folder, else the first regular
// file of that name in PATH ("/bin:/usr/bin" without one); "" when there is none.
std::string program_file(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  const char* path = std::getenv("PATH");
  std::string folders = path != nullptr ? path : "/bin:/usr/bin";
  for (std::size_t at = 0; at <= folders.size();) {
    const std::size_t end = std::min(folders.find(':', at), folders.size());
    const std::string folder = end > at ? folders.substr(at, end - at) : ".";
    const std::string file = folder + "/" + command;
    if (struct stat st{}; stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return file;
    at = end + 1;
  }
  return {};
}

// Why execvp found no file (ENOENT) for `command` when its file is there: what that file names to
// run it, which is missing. "" when the file is not there either.
std::string missing_runner(const std::string& command) {
  const std::string file = program_file(command);
  std::FILE* f = file.empty() ? nullptr : std::fopen(file.c_str(), "rb");
  if (f == nullptr) return {};
  char head[256] = {};
  const std::size_t n = std::fread(head, 1, sizeof(head) - 1, f);
  std::fclose(f);
  const std::string_view text(head, n);
  if (text.substr(0, 2) == "#!") {
    const std::size_t start = text.find_first_not_of(" \t", 2);
    const std::size_t end = text.find_first_of(" \t\r\n", start);
    if (start != std::string_view::npos)
      return "its interpreter '" + std::string(text.substr(start, end - start)) +
             "' (its #! line) is not found";
  }
  if (text.substr(0, 4) ==
      "\x7f"
      "ELF")
    return "the dynamic loader it names is not found (built for another system?)";
  return "it exists, but what it names to run it is not found";
}

}  // namespace

int run(const Args& args) {
  struct Setting {
    const char* flag;
    const char* variable;
    bool path;
  };
  static constexpr Setting kSettings[] = {{"--json", "CUSCOPE_JSON", true},
                                          {"--trace", "CUSCOPE_TRACE", true},
                                          {"--output", "CUSCOPE_OUTPUT", true},
                                          {"--domains", "CUSCOPE_NVTX_DOMAINS", false},
                                          {"--report-every", "CUSCOPE_REPORT_EVERY", false},
                                          {"--sample-ms", "CUSCOPE_SAMPLE_MS", false}};
  std::vector<std::pair<const char*, std::string>> settings;
  CommandLine cl("run", kHelp, args, kRunError);
  std::size_t command = args.size();
  while (cl.next()) {
    std::string_view v;
    if (cl.flag("--")) {
      command = cl.at() + 1;
      break;
    }
    if (cl.operand(&v)) {
      command = cl.at();
      break;
    }
    const Setting* s = nullptr;
    for (const Setting& k : kSettings) s = cl.value(k.flag, &v) ? &k : s;
    if (s == nullptr) return cl.unknown();
    // An empty FILE would set the variable to "", which writes no file and says nothing.
    if (s->path && v.empty()) return cl.error(std::string(s->flag) + " needs a file name, not ''");
    settings.emplace_back(s->variable, s->path ? anchored(std::string(v)) : std::string(v));
  }
  if (cl.stopped()) return cl.status();
  if (command >= args.size()) return cl.error("no command to run");

  std::string looked;
  std::string library = injection_library(&looked);
  if (library.empty()) {
    std::fprintf(
        stderr,
        "cuscope run: cannot find libcuscope_inject.so (looked at: %s); set CUSCOPE_INJECT_LIBRARY to "
        "its path\n",
        looked.c_str());
    return kRunError;
  }
  // The program may change directory before its first NVTX or CUDA call: the path must be absolute.
  if (char* real = realpath(library.c_str(), nullptr)) {
    library = real;
    std::free(real);
  }
  inject("NVTX_INJECTION64_PATH", library);
  inject("CUDA_INJECTION64_PATH", library);
  for (const auto& [variable, value] : settings) set(variable, value);
  // The run's id, for every process below it: the first to start a session writes the report files
  // that name no process; the others write theirs with their pid (docs/zero-code.md).
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  set("CUSCOPE_RUN_ID",
      std::to_string(getpid()) + "-" +
          std::to_string(std::uint64_t(now.tv_sec) * 1'000'000'000u + std::uint64_t(now.tv_nsec)));

  std::vector<std::string> owned(args.begin() + static_cast<std::ptrdiff_t>(command), args.end());
  std::vector<char*> argv;
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  execvp(argv[0], argv.data());
  const int err = errno;
  const std::string missing = err == ENOENT ? missing_runner(argv[0]) : std::string{};
  std::fprintf(stderr, "cuscope run: cannot run '%s': %s\n", argv[0],
               missing.empty() ? std::strerror(err) : missing.c_str());
  return err == ENOENT ? 127 : 126;
}

}  // namespace cuscope::cli

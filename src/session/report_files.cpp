// session/report_files.cpp — the report's files: the table (CUSCOPE_OUTPUT, else stderr) and the
// JSON (CUSCOPE_JSON), written at exit, and rewritten while the session runs every
// CUSCOPE_REPORT_EVERY seconds (by the reporter thread, collector.cpp) for programs that are
// stopped rather than exit, or read while they run. A regular file is replaced whole (written
// beside it, then renamed over it, with its permissions), so a reader never sees half a report,
// and a write that fails leaves the last one whole; a temporary a killed process left beside a file
// is removed at the next start. A process below a `cuscope run` that recorded
// nothing (an environment check the program runs) writes nothing: no file, no table, no note.
//
// Never: write the table to stderr while the session runs (only at exit), rewrite or cut the
// program's own stdout or stderr (CUSCOPE_OUTPUT=/dev/stderr), print the same failure twice, wait
// for a FIFO's reader, or throw.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "producers/log.hpp"
#include "session/internal.hpp"

namespace cuscope::inline v0::detail {
namespace {

// Writes all of `text` to `fd`, then closes it: 0 when every byte was written and kept, else the
// errno of the call that failed (the write's, not a later close's).
int write_and_close(int fd, const std::string& text) {
  const char* at = text.data();
  std::size_t left = text.size();
  int error = 0;
  while (left > 0) {
    const ssize_t n = ::write(fd, at, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : EIO;
      break;
    }
    at += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  return error;
}

// Writes `text` over what `path` holds, in place: 0, or the errno of the call that failed. A FIFO
// is opened without waiting: one that no process reads fails at once (ENXIO) instead of blocking
// the reporter, and at exit the program, for as long as nobody reads it; once open, the writes wait
// as any writer's would. Anything else opens as before (a file under a lease waits for it).
int write_to(const std::string& path, const std::string& text) {
  struct stat st {};
  const bool fifo = ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (fifo ? O_NONBLOCK : 0), 0666);
  if (fd < 0) return errno;
  if (const int flags = ::fcntl(fd, F_GETFL); fifo && flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return write_and_close(fd, text);
}

// The temporary a write of `path` by process `pid` goes through (replace_file), which
// sweep_stale_temporaries knows by the same name.
constexpr std::string_view kTemporaryInfix = ".cuscope-tmp.";
std::string temporary_of(const std::string& path, long pid) {
  return fmt::format("{}{}{}", path, kTemporaryInfix, pid);
}

}  // namespace

std::FILE* standard_stream(const std::string& path) {
  struct stat file {};
  if (::stat(path.c_str(), &file) != 0) return nullptr;
  for (std::FILE* stream : {stdout, stderr}) {
    struct stat st {};
    if (::fstat(::fileno(stream), &st) == 0 && st.st_dev == file.st_dev && st.st_ino == file.st_ino)
      return stream;
  }
  return nullptr;
}

namespace {

// replace_file: 0 when replaced, else the errno of the call that failed.
int replace_in(const std::string& path, const std::string& text) {
  struct stat st {};
  const bool exists = ::lstat(path.c_str(), &st) == 0;
  // Not a regular file (/dev/stdout, a pipe), or a symbolic link (which a rename would replace by
  // a file): written in place.
  if (exists && !S_ISREG(st.st_mode)) return write_to(path, text);
  const std::string temp = temporary_of(path, ::getpid());
  std::remove(temp.c_str());  // one left by a process of the same id; never written through
  const mode_t mode = exists ? st.st_mode & 0777 : 0666;
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  // No file made beside it (a folder cuscope may not create files in): the file may be writable.
  if (fd < 0) return write_to(path, text);
  if (exists) ::fchmod(fd, mode);  // the file's permissions, whatever the umask took off
  const int not_written = write_and_close(fd, text);
  if (not_written == 0 && std::rename(temp.c_str(), path.c_str()) == 0) return 0;
  std::remove(temp.c_str());
  // Not written (no room): the old file stays whole. Written but not renamed over the file (a
  // sticky folder lets cuscope make files but not replace another user's): in place.
  return not_written != 0 ? not_written : write_to(path, text);
}

}  // namespace

bool replace_file(const std::string& path, const std::string& text, std::string* why) {
  const int error = replace_in(path, text);
  if (error != 0 && why != nullptr) {
    struct stat st {};
    const bool fifo = error == ENXIO && ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
    *why = fifo ? "a FIFO that no process has open for reading" : std::strerror(error);
  }
  return error == 0;
}

void write_report_files(const Options& o, const Report& r, ReportMoment when) {
  const bool at_exit = when == ReportMoment::exit;
  const auto failed = [at_exit](const std::string& path, const char* what, const std::string& why) {
    if (at_exit) {
      warn_once(fmt::format("could not write the {} to '{}' ({}); printing it to stderr instead", what, path, why));
    } else {
      warn_once(fmt::format("CUSCOPE_REPORT_EVERY: could not write the {} to '{}' ({}); trying again later",
                            what, path, why));
    }
    return at_exit;
  };
  // The program's own stdout or stderr (no path: stderr) is written through its stream, and at
  // exit only: a file opened anew there would cut what the program wrote.
  const auto write = [&](const std::string& path, const char* what, const auto& make_text) {
    std::FILE* const stream = path.empty() ? stderr : standard_stream(path);
    if (stream != nullptr && !at_exit) return;
    const std::string text = make_text();
    if (stream != nullptr) {
      std::fputs(text.c_str(), stream);
      std::fflush(stream);
    } else if (std::string why; !replace_file(path, text, &why) && failed(path, what, why)) {
      std::fputs(text.c_str(), stderr);
    }
  };
  if (o.print_at_exit) write(o.output_path, "table", [&] { return format_table(r, o.table); });
  if (!o.json_path.empty()) write(o.json_path, "JSON report", [&] { return format_json(r); });
}

bool leaves_nothing(const Session& s, const Report& r) {
  return s.below_run && r.ranges.size() <= 1 && r.spans.empty();  // the root alone
}

bool say_path_notes(Session& s) {
  if (s.path_notes.empty() || s.path_notes_said.exchange(true, std::memory_order_acq_rel)) return false;
  for (const std::string& note : s.path_notes) warn_once(note);
  return true;
}

void write_periodic_report(Session& s) {
  Report r = report_of(s);
  if (leaves_nothing(s, r)) return;
  if (say_path_notes(s)) r = report_of(s);  // with them
  write_report_files(s.options, r, ReportMoment::periodic);
}

void anchor_report_paths(Options& o) {
  for (std::string* path : {&o.output_path, &o.json_path, &o.trace_path}) {
    if (path->empty() || path->front() == '/') continue;
    std::error_code error;
    std::filesystem::path absolute = std::filesystem::absolute(*path, error);
    if (!error) *path = absolute.string();  // else (no working folder) as given
  }
}

void sweep_stale_temporaries(const Options& o) {
  constexpr int kMaxEntries = 10'000;  // a folder's entries looked at, at most: a start stays quick
  for (const std::string* path : {&o.output_path, &o.json_path}) {
    if (path->empty() || standard_stream(*path) != nullptr) continue;
    const std::filesystem::path file(*path);
    const std::string prefix = file.filename().string() + std::string(kTemporaryInfix);
    std::error_code error;
    std::filesystem::directory_iterator it(file.has_parent_path() ? file.parent_path() : ".", error);
    for (int seen = 0; !error && it != std::filesystem::directory_iterator() && seen < kMaxEntries;
         it.increment(error), ++seen) {
      const std::string name = it->path().filename().string();
      if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
      long pid = 0;
      const char* digits = name.c_str() + prefix.size();
      const auto [end, ec] = std::from_chars(digits, name.c_str() + name.size(), pid);
      if (ec != std::errc{} || *end != '\0' || pid <= 0 || pid == ::getpid()) continue;
      // A process of that id still lives (or is another user's): its write may be under way.
      if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
      std::error_code ignored;
      if (it->is_regular_file(ignored)) std::filesystem::remove(it->path(), ignored);
    }
  }
}

bool has_report_file(const Options& o) {
  const auto rewritten = [](const std::string& path) {
    return !path.empty() && standard_stream(path) == nullptr;
  };
  return rewritten(o.json_path) || (o.print_at_exit && rewritten(o.output_path));
}

}  // namespace cuscope::inline v0::detail

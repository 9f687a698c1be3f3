// cli/output.hpp — a command's output file (-o OUT), written whole or not at all, and its standard
// output checked: what `trace`, `json`, `flame` and `merge` write.
//
// Never here: removing or truncating anything the command did not make. OUT as it was stays as it
// was until the new one is whole.
#pragma once

#include <cstdio>
#include <string>

namespace cuscope::cli {

/// OUT, written whole or not at all. A regular file, or a path with no file yet, is written beside
/// it (OUT.cuscope-tmp.PID, with an existing file's permissions) and renamed over it once whole; a
/// link to one, over the file it names. Anything else (a device such as /dev/stdout, a FIFO) is
/// written in place and never removed. A failure, or an end without commit() (an exception), removes
/// only the file written beside OUT.
class OutputFile {
 public:
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile() { abandon(); }

  /// Opens OUT for writing; false, with `error` ("cannot write 'OUT': why"), where it cannot be.
  bool open(const std::string& path, std::string* error);
  std::FILE* file() const { return file_; }
  /// Writes `text`; commit() says whether it all went.
  void write(const std::string& text);
  /// Closes it and puts it in place; false, with `error`, where a write, the close or the rename
  /// failed (OUT then as it was).
  bool commit(std::string* error);
  /// Closes it and removes what was written beside OUT; nothing where it was written in place.
  void abandon();

 private:
  std::FILE* file_ = nullptr;
  std::string path_;  // OUT as given
  std::string dest_;  // what the rename replaces: OUT, or the file a link names
  std::string temp_;  // the file written beside dest_; empty when written in place
};

/// Whether everything written to standard output reached it (flushed; no write error on the way):
/// else prints "cuscope COMMAND: cannot write to standard output: why" and returns false.
bool stdout_written(const char* command);

}  // namespace cuscope::cli

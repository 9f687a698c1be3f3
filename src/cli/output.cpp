// cli/output.cpp — see output.hpp.
#include "cli/output.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace cuscope::cli {

bool OutputFile::open(const std::string& path, std::string* error) {
  path_ = dest_ = path;
  temp_.clear();
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;  // through a link: the file it names
  if (!exists || S_ISREG(st.st_mode)) {
    if (exists) {
      char resolved[PATH_MAX];
      if (::realpath(path.c_str(), resolved) != nullptr) dest_ = resolved;  // a link: its file
    }
    temp_ = dest_ + ".cuscope-tmp." + std::to_string(::getpid());
    file_ = std::fopen(temp_.c_str(), "w");
    if (file_ != nullptr && exists) ::fchmod(::fileno(file_), st.st_mode & 07777);
  } else {
    file_ = std::fopen(path.c_str(), "w");  // a device or a FIFO: in place
  }
  if (file_ == nullptr) {
    *error = "cannot write '" + path + "': " + std::strerror(errno);
    temp_.clear();
    return false;
  }
  return true;
}

void OutputFile::write(const std::string& text) {
  if (file_ != nullptr) std::fwrite(text.data(), 1, text.size(), file_);  // an error stays in ferror()
}

bool OutputFile::commit(std::string* error) {
  if (file_ == nullptr) {
    *error = "cannot write '" + path_ + "'";
    return false;
  }
  const bool written = std::fflush(file_) == 0 && std::ferror(file_) == 0;
  const int write_errno = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!written || !closed) {
    *error = "cannot write '" + path_ + "': " + std::strerror(written ? errno : write_errno);
    abandon();  // the file beside OUT, if any
    return false;
  }
  if (!temp_.empty() && std::rename(temp_.c_str(), dest_.c_str()) != 0) {
    *error = "cannot write '" + path_ + "': " + std::strerror(errno);
    abandon();
    return false;
  }
  temp_.clear();
  return true;
}

void OutputFile::abandon() {
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
  if (!temp_.empty()) std::remove(temp_.c_str());
  temp_.clear();
}

bool stdout_written(const char* command) {
  if (std::fflush(stdout) == 0 && std::ferror(stdout) == 0) return true;
  std::fprintf(stderr, "cuscope %s: cannot write to standard output: %s\n", command,
               errno != 0 ? std::strerror(errno) : "a write failed");
  return false;
}

}  // namespace cuscope::cli

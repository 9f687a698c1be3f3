// session/warnings.cpp — cuscope's own messages (producers/log.hpp): each printed once, as one
// line, to stderr through the "cuscope:" logger, and kept as a note for every later report.
//
// Never: throw into the program (a warning must never take it down), or take any lock but the
// notes' own and the logger's. Works before main and after it: the set and the logger are leaked
// function-local statics, the lock is constant-initialized.
#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "model/utf8.hpp"
#include "producers/log.hpp"
#include "session/internal.hpp"

namespace cuscope::inline v0::detail {
namespace {

spdlog::logger& logger() {
  static spdlog::logger* l = [] {
    auto* made = new spdlog::logger("cuscope", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    made->set_pattern("cuscope: %v");
    return made;
  }();
  return *l;
}

std::mutex g_notes_mutex;  // constexpr-constructed: usable before any dynamic initializer ran

// Function-local, so a warning in a static constructor finds it made; leaked: used until the end.
std::set<std::string>& warned() {
  static auto* set = new std::set<std::string>;
  return *set;
}

}  // namespace

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::size_t len = model::utf8_sequence_length(text, i);
    if (byte == '\n') {
      out += "\\n";
    } else if (byte == '\r') {
      out += "\\r";
    } else if (byte == '\t') {
      out += "\\t";
    } else if (len == 0 || byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out.append(text, i, len);
      i += len;
      continue;
    }
    ++i;
  }
  return out;
}

void warn_once(const std::string& message) noexcept {
  try {
    const std::string line = one_line(message);  // one message, one line, whatever it quotes
    std::lock_guard lock(g_notes_mutex);
    if (!warned().insert(line).second) return;
    if (forked_child()) {
      // The logger's lock may be held by a thread the parent had: plain stdio, which fork resets.
      std::fputs(("cuscope: " + line + "\n").c_str(), stderr);
      return;
    }
    logger().warn("{}", line);
  } catch (...) {  // a warning must never take the program down
  }
}

std::vector<std::string> notes_so_far() {
  std::lock_guard lock(g_notes_mutex);
  return std::vector<std::string>(warned().begin(), warned().end());
}

void forget_warnings() noexcept {
  std::lock_guard lock(g_notes_mutex);
  warned().clear();
}

void lock_notes() noexcept { g_notes_mutex.lock(); }

void unlock_notes() noexcept { g_notes_mutex.unlock(); }

}  // namespace cuscope::inline v0::detail

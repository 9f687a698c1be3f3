// views/table_header.cpp — the table's header (table_header.hpp): what was measured, on which
// device, over how many steps; why GPU timing, activity tracing or counters are off, or what they
// left out; the report's notes, each said once; what was lost; cuscope's own processing of
// activity records; the totals. Depends only on the Report. Never repeats a reason already
// printed, and never prints a status that is plainly "on".
#include "views/table_header.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "cuscope/version.hpp"
#include "model/diagnostic_fields.hpp"
#include "views/format.hpp"

namespace cuscope::inline v0::views {
namespace {

std::string diagnostics_line(const Diagnostics& d) {
  std::vector<std::string> parts;
  for (const model::DiagnosticField& c : model::kDiagnosticFields) {
    const std::uint64_t n = d.*c.field;
    if (n != 0 && !c.one.empty()) parts.push_back(fmt::format("{} {}", n, n == 1 ? c.one : c.many));
  }
  if (d.overhead_ns != 0) parts.push_back(format_duration(d.overhead_ns) + " of CUPTI overhead");
  if (parts.empty()) return {};
  std::string line = "lost or off: " + parts.front();
  for (std::size_t i = 1; i < parts.size(); ++i) line += ", " + parts[i];
  return line + "\n";
}

// cuscope's own processing of activity records, where it did any (a live session that traced).
std::string own_work_line(const Diagnostics& d, std::uint64_t wall_ns) {
  if (d.activity_buffers == 0) return {};
  std::string line =
      fmt::format("cuscope's own work: {} CUPTI buffer{} processed in {}", d.activity_buffers,
                  d.activity_buffers == 1 ? "" : "s", format_duration(d.activity_processing_ns));
  if (wall_ns != 0)
    line += fmt::format(" ({:.2f}% of the wall time)",
                        100.0 * static_cast<double>(d.activity_processing_ns) / static_cast<double>(wall_ns));
  return line + "\n";
}

std::string status_line(std::string_view what, std::string_view status) {
  if (status == "on") return {};
  if (status.rfind("on, ", 0) == 0 || status.rfind("projected: ", 0) == 0)
    return fmt::format("{}: {}\n", what, status);
  if (status.empty()) return fmt::format("{}: off\n", what);
  return fmt::format("{}: off — {}\n", what, status);
}

}  // namespace

std::string table_header(const Report& report) {
  std::string out = fmt::format("cuscope {} — device: {} — wall {} — steps {}/{}", version(), report.device,
                                format_duration(report.wall_ns), report.recorded_steps, report.steps);
  if (report.clock_steps != 0)  // a window that counts time, not the program's steps
    out +=
        report.clock_steps == report.steps
            ? fmt::format(" (ended by cuscope's clock every {} ms)", report.step_ms)
            : fmt::format(" ({} ended by cuscope's clock every {} ms)", report.clock_steps, report.step_ms);
  if (report.rank >= 0) {
    out += report.world_size > 0 ? fmt::format(" — rank {} of {}", report.rank, report.world_size)
                                 : fmt::format(" — rank {}", report.rank);
  }
  if (!report.final) out += " — while running";  // later work is not in it
  out += '\n';
  if (report.gpu_timing != "on" && report.gpu_timing == report.activity_status) {
    out += status_line("GPU timing and activity", report.gpu_timing);  // one reason, said once
  } else {
    out += status_line("GPU timing", report.gpu_timing);
    out += status_line("GPU activity", report.activity_status);
  }
  if (report.counters_status.rfind("on", 0) == 0) {
    out += fmt::format("hardware counters: {}\n", report.counters_status);
  } else if (report.counters_status != kCountersNotRequested &&
             (report.gpu_timing.rfind("on", 0) == 0 || report.tracing_on())) {
    out += status_line("hardware counters", report.counters_status);
  }
  // A reason is printed once: notes repeating a status reason or an earlier note are left out.
  std::vector<std::string_view> said;
  for (const std::string* status : {&report.gpu_timing, &report.activity_status}) {
    if (*status != "on") said.push_back(*status);
  }
  for (const std::string& note : report.notes) {
    if (std::find(said.begin(), said.end(), note) != said.end()) continue;
    said.push_back(note);
    out += fmt::format("note: {}\n", note);
  }
  out += diagnostics_line(report.diagnostics);
  out += own_work_line(report.diagnostics, report.wall_ns);

  std::uint64_t host_ns = 0;
  std::uint64_t kernel_ns = 0;
  std::uint64_t busy_ns = 0;
  if (!report.ranges.empty()) {
    for (std::size_t child : report.root().children) {
      if (child < report.ranges.size()) host_ns = saturating_add(host_ns, report.ranges[child].host.total_ns);
    }
    kernel_ns = report.root().total.kernel_ns;
    busy_ns = report.root().total.gpu_busy_ns;
  }
  out += fmt::format("total: host {} in top-level ranges", format_duration(host_ns));
  if (report.tracing_on()) {
    out +=
        fmt::format(" — kernel time {} — GPU busy {}", format_duration(kernel_ns), format_duration(busy_ns));
  }
  return out + "\n";
}

}  // namespace cuscope::inline v0::views

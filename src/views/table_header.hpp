// views/table_header.hpp — the first lines of the table (views/table.cpp): the header.
#pragma once

#include <string>

#include "cuscope/report.hpp"

namespace cuscope::inline v0::views {

/// The header: version, device, wall time and steps; each status that is not plainly "on" (GPU
/// timing, activity, counters); the notes, each once; what was lost or off; the totals.
std::string table_header(const Report& report);

}  // namespace cuscope::inline v0::views

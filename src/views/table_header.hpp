// views/table_header.hpp — the first lines of the table (views/table.cpp): the header.
#pragma once

#include <string>

#include "cuscope/report.hpp"

namespace cuscope::inline v0::views {

/// Whether CUPTI traced: the activity status is "on", or "on, ..." when the session left some
/// records out (CUSCOPE_SYNC_RECORDS, CUSCOPE_MEMORY_RECORDS) and says what still sees those calls.
bool tracing_on(const Report& report);

/// The header: version, device, wall time and steps; each status that is not plainly "on" (GPU
/// timing, activity, counters); the notes, each once; what was lost or off; the totals.
std::string table_header(const Report& report);

}  // namespace cuscope::inline v0::views

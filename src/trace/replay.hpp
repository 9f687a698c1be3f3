// trace/replay.hpp — a trace file replayed into the model: the same range trees and the same
// aggregator as the live session, fed the same events in the same order, so the Report it builds
// is the one the session built (`cuscope json TRACE` against CUSCOPE_JSON of the same run).
//
// Not replayed: hardware counters (CUSCOPE_METRICS), which the trace does not record.
#pragma once

#include <cuscope/report.hpp>
#include <string>

#include "trace/reader.hpp"

namespace cuscope::trace {

/// Replays every record of `reader` into a fresh model; false with `error` (one line) on a bad file.
/// A file cut short, where the reader accepts one (Reader::accept_cut), gives the report of what it
/// held, with a note saying where it was cut, and what its summary would have said as unknown.
bool replay(Reader& reader, Report* out, std::string* error);
/// Same, from a file; `partial`: accept a file cut short, and say in `cut` (when given) where it
/// was cut ("" when whole).
bool replay_file(const std::string& path, Report* out, std::string* error, bool partial = false,
                 std::string* cut = nullptr);

}  // namespace cuscope::trace

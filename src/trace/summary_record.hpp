// trace/summary_record.hpp — the Summary record's payload (format.hpp's Summary), written and read
// here only, so that its layout and its optional tails change in one place.
// Never here: the record's header (Encoder::begin/finish, the reader's framing), or a file.
#pragma once

#include "trace/format.hpp"

namespace cuscope::trace {

/// Appends `s` as the Summary record's payload: each text cut to its bound, at most 64 notes and
/// kMaxSummarySpans spans (the rest counted in spans_cut), every tail.
void encode_summary(Encoder& e, const Summary& s);
/// Reads a Summary record's payload into `s`: each optional tail where the record holds it (older
/// files lack the later ones, read as 0). False where the payload is not a summary (a count out of
/// bounds, a field cut short, bytes past its last tail).
bool decode_summary(Decoder& d, Summary& s);

}  // namespace cuscope::trace

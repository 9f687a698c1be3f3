// producers/cupti/decode.hpp — CUPTI 13.0 activity buffers into the model's events.
//
// The one function that reads CUPTI records. It serves CUPTI's completed buffers and the tests
// and benchmarks (which build buffers of the same record layouts in memory), so both go through
// the same code. Records of kinds cuscope does not decode are skipped and counted; a record of a
// kind CUPTI itself does not know, or one cut off at the end of the buffer, ends it, counted.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/aggregator.hpp"

namespace cuscope::inline v0::detail {

struct DecodeCounts {
  std::uint64_t records = 0;  ///< records read (used or not)
  std::uint64_t unknown = 0;  ///< records of kinds not decoded, undecodable, or cut off
};

/// Feeds every record of `buffer[0, valid_bytes)` to `sink`. `buffer` must be 8-byte aligned.
DecodeCounts decode_buffer(std::uint8_t* buffer, std::size_t valid_bytes, model::Aggregator& sink);

/// What CUPTI's buffer-completed callback does with a buffer (the caller holds the sink's lock):
/// decodes it, adds the records CUPTI said it dropped, and retries records waiting for their
/// correlation (without aging them: their correlation can come in a later buffer).
DecodeCounts consume_buffer(std::uint8_t* buffer, std::size_t valid_bytes, std::uint64_t dropped,
                            model::Aggregator& sink);

}  // namespace cuscope::inline v0::detail

// producers/cupti/decode.hpp — CUPTI 13.0 activity buffers into the model's events.
//
// The one function that reads CUPTI records. It serves CUPTI's completed buffers and the tests
// and benchmarks (which build buffers of the same record layouts in memory), so both go through
// the same code. Records of kinds cuscope does not decode are skipped and counted; a record of a
// kind CUPTI itself does not know, or one cut off at the end of the buffer, ends it, counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/aggregator.hpp"

namespace cuscope::inline v0::detail {

/// How a buffer's records are stepped over. By size (fast) steps by the record layouts cuscope
/// was compiled against, and is right only when the loaded libcupti writes those layouts; by
/// CUPTI's iterator (cuptiActivityGetNextRecord) steps by the sizes the loaded libcupti knows.
enum class Walk { BySize, ByCupti };

/// What the loaded libcupti's API version means for decoding, against the version cuscope was
/// compiled with. The same: walk by size. Newer (a later 13.x writes Kernel11/Kernel12 under the
/// same soname): walk with CUPTI's iterator; each record is read by the leading fields of its
/// compiled layout, which later layouts extend. Older: its layouts may be shorter than the ones
/// cuscope reads, so tracing is refused with `refusal` saying why.
struct LayoutCheck {
  Walk walk = Walk::BySize;
  std::string refusal;  ///< empty: tracing may go on
  std::string note;     ///< empty, or one line for the report's notes
};
LayoutCheck check_layouts(std::uint32_t loaded_version, std::uint32_t compiled_version);

/// The walk consume_buffer uses (set once at tracing start, before any buffer arrives).
void set_walk(Walk walk) noexcept;

struct DecodeCounts {
  std::uint64_t records = 0;  ///< records read (used or not)
  std::uint64_t unknown = 0;  ///< records of kinds not decoded, undecodable, or cut off
};

/// Feeds every record of `buffer[0, valid_bytes)` to `sink`. `buffer` must be 8-byte aligned.
DecodeCounts decode_buffer(std::uint8_t* buffer, std::size_t valid_bytes, model::Aggregator& sink,
                           Walk walk = Walk::BySize);

/// What CUPTI's buffer-completed callback does with a buffer (the caller holds the sink's lock):
/// decodes it, adds the records CUPTI said it dropped, and retries records waiting for their
/// correlation (without aging them: their correlation can come in a later buffer).
DecodeCounts consume_buffer(std::uint8_t* buffer, std::size_t valid_bytes, std::uint64_t dropped,
                            model::Aggregator& sink);

}  // namespace cuscope::inline v0::detail

// What the CUPTI decoding tests share (test_cupti_decode_attribution.cpp,
// test_cupti_decode_records.cpp, test_cupti_decode_walk.cpp): a model with a CUPTI 13.0 buffer
// built in memory beside it, handed over through the same code as CUPTI's completed buffers.
// Never a test case here; never a session, a GPU or a CUPTI subscription.
#pragma once

#include <cstdint>

#include "cupti_buffer.hpp"
#include "model_fixture.hpp"
#include "producers/cupti/decode.hpp"

namespace cuscope_test::cupti_decode_kit {

struct Fixture : cuscope_test::ModelFixture {
  CuptiBuffer buffer;

  // The buffer as CUPTI would complete it, with `dropped` records lost; the buffer is then empty.
  cuscope::detail::DecodeCounts consume(std::uint64_t dropped = 0) {
    const auto counts = cuscope::detail::consume_buffer(buffer.data(), buffer.size(), dropped, agg);
    buffer.clear();
    return counts;
  }
};

}  // namespace cuscope_test::cupti_decode_kit

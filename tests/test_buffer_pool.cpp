// The activity buffers cuscope hands CUPTI (producers/cupti/buffer_pool.hpp): every buffer handed
// out is zero in every byte (CUPTI is told so and does not zero it), whether new, made ahead as a
// spare or given back with records in it; sizes and the byte budget; refusals counted; spares made
// without holding up a take(). Small limits here, so that the budget is reached in a few buffers.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "producers/cupti/buffer_pool.hpp"

using cuscope::detail::BufferPool;

namespace {

constexpr BufferPool::Limits kLimits{64, 16, 128, 160};  // 2 large, then 2 small, then none

bool all_zero(const std::uint8_t* b, std::size_t size) {
  return std::all_of(b, b + size, [](std::uint8_t c) { return c == 0; });
}

}  // namespace

TEST_CASE("buffer pool: large buffers, then small, then none, each refusal counted", "[cupti][buffers]") {
  BufferPool pool(kLimits);
  std::vector<std::uint8_t*> out;
  const std::size_t sizes[] = {64, 64, 16, 16};
  for (std::size_t want : sizes) {
    std::size_t size = 0;
    std::uint8_t* b = pool.take(&size);
    REQUIRE(b != nullptr);
    CHECK(size == want);
    CHECK(all_zero(b, size));
    out.push_back(b);
  }
  CHECK(pool.bytes_made() == 160);
  std::size_t size = 99;
  CHECK(pool.take(&size) == nullptr);
  CHECK(size == 0);
  CHECK(pool.take(&size) == nullptr);
  CHECK(pool.take_refused() == 2);
  CHECK(pool.take_refused() == 0);
  for (std::size_t i = 0; i < out.size(); ++i) pool.give_back(out[i], sizes[i], 0);
  CHECK(pool.free_count() == 4);
  CHECK(pool.bytes_made() == 160);  // given back, not made again
  std::vector<std::pair<std::uint8_t*, std::size_t>> again;
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::size_t size_again = 0;
    std::uint8_t* b = pool.take(&size_again);
    CHECK(b != nullptr);
    again.emplace_back(b, size_again);
  }
  CHECK(pool.bytes_made() == 160);
  CHECK(pool.take_refused() == 0);
  for (auto [b, s] : again) pool.give_back(b, s, 0);  // the pool frees what it holds
}

TEST_CASE("buffer pool: a buffer given back with records in it comes out zero again", "[cupti][buffers]") {
  BufferPool pool(kLimits);
  std::size_t size = 0;
  std::uint8_t* b = pool.take(&size);
  REQUIRE(b != nullptr);
  REQUIRE(size == 64);
  std::fill(b, b + 40, std::uint8_t{0xAB});  // CUPTI wrote 40 bytes of records
  pool.give_back(b, size, 40);
  std::size_t again = 0;
  std::uint8_t* same = pool.take(&again);
  CHECK(same == b);
  CHECK(again == 64);
  CHECK(all_zero(same, again));
  // A bogus valid size larger than the buffer: zeroed to its end, no further.
  std::fill(same, same + 64, std::uint8_t{0xCD});
  pool.give_back(same, 64, 1'000);
  std::uint8_t* third = pool.take(&again);
  CHECK(third == b);
  CHECK(all_zero(third, again));
  pool.give_back(nullptr, 64, 10);  // nothing to take back
  CHECK(pool.free_count() == 0);
  pool.give_back(third, again, 0);
}

TEST_CASE("buffer pool: spares are made ahead, zeroed, within the budget", "[cupti][buffers]") {
  BufferPool pool(kLimits);
  pool.keep_spares(2);
  CHECK(pool.free_count() == 2);
  CHECK(pool.bytes_made() == 128);
  pool.keep_spares(2);  // enough already
  CHECK(pool.bytes_made() == 128);
  pool.keep_spares(5);  // two small ones more, then the budget is spent
  CHECK(pool.free_count() == 4);
  CHECK(pool.bytes_made() == 160);
  std::size_t size = 0;
  std::vector<std::pair<std::uint8_t*, std::size_t>> out;
  for (int i = 0; i < 4; ++i) {
    std::uint8_t* b = pool.take(&size);
    REQUIRE(b != nullptr);
    CHECK(all_zero(b, size));
    out.emplace_back(b, size);
  }
  CHECK(pool.take(&size) == nullptr);
  CHECK(pool.take_refused() == 1);
  for (auto [b, s] : out) pool.give_back(b, s, 0);
}

TEST_CASE("buffer pool: threads taking and giving back while spares are made see only zeroed buffers",
          "[cupti][buffers][threads]") {
  BufferPool pool({4096, 1024, 16 * 4096, 16 * 4096 + 32 * 1024});
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  std::vector<int> dirty(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, &dirty, t] {
      for (int i = 0; i < kRounds; ++i) {
        std::size_t size = 0;
        std::uint8_t* b = pool.take(&size);
        if (b == nullptr) continue;
        if (!all_zero(b, size)) ++dirty[t];
        const std::size_t valid = static_cast<std::size_t>(i) % size;
        std::fill(b, b + valid, std::uint8_t(1 + t));
        pool.give_back(b, size, valid);
      }
    });
  }
  for (int i = 0; i < kRounds; ++i) pool.keep_spares(3);  // the collector's part
  for (std::thread& t : threads) t.join();
  CHECK(std::count(dirty.begin(), dirty.end(), 0) == kThreads);
  CHECK(pool.bytes_made() <= 16 * 4096 + 32 * 1024);
}

TEST_CASE("buffer pool: bytes written past the valid ones have the whole buffer zeroed, counted",
          "[cupti][buffers]") {
  BufferPool pool({8192, 1024, 8192, 8192});
  std::size_t size = 0;
  std::uint8_t* b = pool.take(&size);
  REQUIRE(b != nullptr);
  REQUIRE(size == 8192);
  std::fill(b, b + 40, std::uint8_t{0xAB});
  pool.give_back(b, size, 40);
  CHECK(pool.written_past_valid() == 0);  // as CUPTI promises
  b = pool.take(&size);
  std::fill(b, b + 40, std::uint8_t{0xAB});
  b[1000] = 1;  // past the valid bytes, in the page checked
  b[8000] = 2;  // past that page: zeroed with the whole buffer
  pool.give_back(b, size, 40);
  CHECK(pool.written_past_valid() == 1);
  b = pool.take(&size);
  CHECK(all_zero(b, size));
  pool.give_back(b, size, 0);
}

TEST_CASE("buffer pool: a buffer of another size is another client's, left as it is", "[cupti][buffers]") {
  BufferPool pool(kLimits);
  std::vector<std::uint8_t> foreign(100, std::uint8_t{7});
  pool.give_back(foreign.data(), foreign.size(), 50);
  CHECK(pool.free_count() == 0);
  CHECK(pool.bytes_made() == 0);
  CHECK(foreign[0] == 7);  // not zeroed: not this pool's to touch
}

// What the pool says is out (handed out and not given back) and, once CUPTI is finalized, takes back
// (reclaim_out()): spares and buffers given back are not out; a buffer taken back is zero in every
// byte, and a late hand-back of it is not kept twice.
TEST_CASE("buffer pool: the buffers out, taken back whole and zeroed where CUPTI can give them back no more",
          "[cupti][buffers]") {
  BufferPool pool(kLimits);
  pool.keep_spares(1);
  CHECK(pool.bytes_made() == 64);
  CHECK(pool.bytes_out() == 0);
  std::size_t first_size = 0, second_size = 0;
  std::uint8_t* first = pool.take(&first_size);
  std::uint8_t* second = pool.take(&second_size);
  REQUIRE(first != nullptr);
  REQUIRE(second != nullptr);
  CHECK(pool.bytes_out() == 128);
  pool.give_back(first, first_size, 0);
  CHECK(pool.bytes_out() == 64);
  second[63] = 7;  // written past anything said valid: reclaim_out() zeroes it all
  CHECK(pool.reclaim_out() == 64);
  CHECK(pool.bytes_out() == 0);
  CHECK(pool.free_count() == 2);
  CHECK(all_zero(second, second_size));
  pool.give_back(second, second_size, 64);  // not out any more: left be, not kept twice
  CHECK(pool.free_count() == 2);
  CHECK(pool.reclaim_out() == 0);
  CHECK(pool.bytes_made() == 128);
}

// Live GPU memory per range when the model cannot follow every allocation: a full table of live
// allocations, an address allocated again before its free was seen, and a free that comes without
// its size. The books stay balanced, what could not be followed is counted, and peaks never climb
// on memory that was freed.
#include <catch2/catch.hpp>
#include <cstdint>

#include "model_fixture.hpp"

using cuscope::Report;
using namespace cuscope::model;

namespace {

struct Fixture : cuscope_test::ModelFixture {
  std::uint64_t t = 1'000;
  void mem(std::uint64_t instance, bool alloc, std::uint64_t address, std::uint64_t bytes) {
    MemoryActivity m;
    m.correlation = launch(instance);
    m.timestamp_ns = ++t;
    m.address = address;
    m.bytes = bytes;
    m.is_alloc = alloc;
    agg.on(m);
  }
};

}  // namespace

TEST_CASE(
    "live memory: past a full table, allocations are counted as untracked and their frees keep the "
    "books balanced",
    "[live_memory]") {
  Fixture f;
  auto fill = f.begin("fill");
  for (std::uint64_t i = 0; i < LiveMemory::kMaxLiveAllocations; ++i)
    f.mem(fill.instance, true, 0x10000 + i, 1);
  f.end(fill);
  auto over = f.begin("over");
  f.mem(over.instance, true, 0x9000'0000, 1'000);   // no room: not on the books
  f.mem(over.instance, false, 0x9000'0000, 1'000);  // its free, not found
  f.end(over);
  auto release = f.begin("release");
  for (std::uint64_t i = 0; i < LiveMemory::kMaxLiveAllocations; ++i)
    f.mem(release.instance, false, 0x10000 + i, 1);
  f.end(release);
  auto again = f.begin("over");
  f.mem(again.instance, true, 0x9100'0000, 10);  // room again
  f.end(again);
  const Report r = f.report();
  CHECK(r.diagnostics.allocations_untracked == 1);
  CHECK(r.find("fill")->self.peak_bytes == LiveMemory::kMaxLiveAllocations);
  CHECK(r.find("over")->self.alloc_count == 2);
  CHECK(r.find("over")->self.alloc_bytes == 1'010);
  CHECK(r.find("over")->self.free_count == 1);
  CHECK(r.find("over")->self.peak_bytes == 10);  // the 1,000 untracked bytes never counted as live
}

TEST_CASE("live memory: an address allocated again before its free was seen closes the old allocation",
          "[live_memory]") {
  Fixture f;
  auto x = f.begin("x");
  f.mem(x.instance, true, 0x1000, 100);
  f.end(x);
  auto y = f.begin("y");
  f.mem(y.instance, true, 0x1000, 50);  // the free of x's 100 bytes was never seen
  f.mem(y.instance, false, 0x1000, 50);
  f.end(y);
  auto x2 = f.begin("x");
  f.mem(x2.instance, true, 0x2000, 30);  // x's live bytes are 30 now, not 130
  f.end(x2);
  const Report r = f.report();
  CHECK(r.diagnostics.allocations_untracked == 1);
  CHECK(r.find("x")->self.peak_bytes == 100);
  CHECK(r.find("x")->self.alloc_bytes == 130);
  CHECK(r.find("y")->self.peak_bytes == 50);
  CHECK(r.find("y")->self.free_bytes == 50);
}

// The driver callbacks that note frees without memory records (producers/cupti/call_callbacks.hpp)
// see only the address: the free carries 0 bytes and frees what its allocation was booked with.
TEST_CASE("live memory: a free without its size frees the booked size, and one never booked frees 0 bytes",
          "[live_memory]") {
  Fixture f;
  auto loop = f.begin("loop");
  f.mem(loop.instance, true, 0x1000, 4'096);
  f.mem(loop.instance, true, 0x2000, 1'024);
  f.mem(loop.instance, false, 0x1000, 0);    // the books say 4,096
  f.mem(loop.instance, false, 0x9000, 0);    // never booked (allocated before tracing)
  f.mem(loop.instance, true, 0x3000, 2'048);  // live: 1,024 + 2,048, under the peak of 5,120
  f.end(loop);
  auto later = f.begin("later");
  f.mem(later.instance, false, 0x2000, 0);  // freed elsewhere: its books are loop's
  f.end(later);
  const Report r = f.report();
  const auto& self = r.find("loop")->self;
  CHECK(self.alloc_count == 3);
  CHECK(self.alloc_bytes == 7'168);
  CHECK(self.free_count == 2);
  CHECK(self.free_bytes == 4'096);
  CHECK(self.peak_bytes == 5'120);
  CHECK(r.find("later")->self.free_count == 1);
  CHECK(r.find("later")->self.free_bytes == 1'024);
  CHECK(r.diagnostics.allocations_untracked == 0);
}

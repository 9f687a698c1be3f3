// The aggregator's copies, sets, synchronizations and allocations, on synthetic activity streams:
// summed per range and direction, bytes and the peak of live bytes, copies with a pageable host
// side, blocking copies; each inclusively, up the tree.
//
// Never: a session, a clock or a GPU; the model is fed by hand (tests/model_fixture.hpp).
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>

#include "model_fixture.hpp"

using cuscope::CopyKind;
using cuscope::Report;
using namespace cuscope::model;

namespace {

using Fixture = cuscope_test::ModelFixture;

}  // namespace

TEST_CASE("copies, sets and synchronizations are summed per range and direction", "[aggregator]") {
  Fixture f;
  auto outer = f.begin("outer");
  auto inner = f.begin("inner");
  auto copy = [&](std::uint64_t instance, CopyKind kind, std::uint64_t bytes, std::uint64_t ns) {
    MemcpyActivity m;
    m.correlation = f.launch(instance);
    m.start_ns = 1000;
    m.end_ns = 1000 + ns;
    m.bytes = bytes;
    m.kind = kind;
    f.agg.on(m);
  };
  copy(inner.instance, CopyKind::HtoD, 1 << 20, 100);
  copy(inner.instance, CopyKind::HtoD, 1 << 20, 300);
  copy(outer.instance, CopyKind::DtoH, 512, 7);
  MemsetActivity ms;
  ms.correlation = f.launch(inner.instance);
  ms.start_ns = 10;
  ms.end_ns = 15;
  ms.bytes = 64;
  f.agg.on(ms);
  SyncActivity sy;
  sy.correlation = f.launch(outer.instance);
  sy.start_ns = 10;
  sy.end_ns = 1010;
  f.agg.on(sy);
  f.end(inner);
  f.end(outer);
  const Report r = f.report();
  const auto& in = r.find("outer/inner")->self;
  const auto h2d = static_cast<std::size_t>(CopyKind::HtoD);
  const auto d2h = static_cast<std::size_t>(CopyKind::DtoH);
  CHECK(in.memcpy[h2d].count == 2);
  CHECK(in.memcpy[h2d].bytes == 2u << 20);
  CHECK(in.memcpy[h2d].total_ns == 400);
  CHECK(in.memcpy[h2d].bytes_per_s() == Approx(double(2u << 20) * 1e9 / 400.0));
  CHECK(in.memset_count == 1);
  CHECK(in.memset_bytes == 64);
  const auto& out = r.find("outer")->total;
  CHECK(out.memcpy[h2d].bytes == 2u << 20);
  CHECK(out.memcpy[d2h].bytes == 512);
  CHECK(out.memset_bytes == 64);
  CHECK(out.sync_count == 1);
  CHECK(out.sync_ns == 1000);
  CHECK(r.find("outer")->self.memcpy[h2d].count == 0);
}

TEST_CASE("allocations give bytes and the peak of live bytes, inclusively", "[aggregator]") {
  Fixture f;
  auto outer = f.begin("outer");
  auto a = f.begin("a");
  auto mem = [&](std::uint64_t instance, bool alloc, std::uint64_t address, std::uint64_t bytes) {
    MemoryActivity m;
    m.correlation = f.launch(instance);
    m.timestamp_ns = 5;
    m.address = address;
    m.bytes = bytes;
    m.is_alloc = alloc;
    f.agg.on(m);
  };
  mem(a.instance, true, 0x1000, 100);
  mem(a.instance, true, 0x2000, 50);
  mem(a.instance, false, 0x1000, 100);
  mem(a.instance, true, 0x3000, 30);
  f.end(a);
  mem(outer.instance, true, 0x4000, 500);
  f.end(outer);
  const Report r = f.report();
  const auto* ra = r.find("outer/a");
  CHECK(ra->self.alloc_count == 3);
  CHECK(ra->self.alloc_bytes == 180);
  CHECK(ra->self.free_count == 1);
  CHECK(ra->self.free_bytes == 100);
  CHECK(ra->self.peak_bytes == 150);
  const auto* ro = r.find("outer");
  CHECK(ro->self.peak_bytes == 500);
  CHECK(ro->total.peak_bytes == 580);  // 80 live in a, then 500 more
  CHECK(ro->total.alloc_bytes == 680);
}

TEST_CASE(
    "pageable and blocking copies are counted per range, with their bytes, apart from waits, and roll up",
    "[aggregator][pageable][blocking]") {
  Fixture f;
  auto outer = f.begin("outer");
  auto inner = f.begin("inner");
  auto copy = [&](std::uint64_t instance, CopyKind kind, MemoryKind src, MemoryKind dst, std::uint64_t bytes,
                  bool blocking) {
    MemcpyActivity m;
    m.correlation = f.launch(instance);
    m.start_ns = 1000;
    m.end_ns = 1100;
    m.bytes = bytes;
    m.kind = kind;
    m.src_kind = src;
    m.dst_kind = dst;
    m.blocking = blocking;
    f.agg.on(m);
  };
  copy(inner.instance, CopyKind::HtoD, MemoryKind::pageable, MemoryKind::device, 1000, false);
  copy(inner.instance, CopyKind::HtoD, MemoryKind::pinned, MemoryKind::device, 20, true);
  copy(inner.instance, CopyKind::DtoH, MemoryKind::device, MemoryKind::pageable, 300, true);
  copy(outer.instance, CopyKind::HtoH, MemoryKind::pageable, MemoryKind::pinned, 7, true);
  copy(outer.instance, CopyKind::DtoD, MemoryKind::device, MemoryKind::device, 5000, false);
  // Its correlation comes later: the waiting copy keeps its kinds and stays blocking.
  MemcpyActivity late;
  late.correlation = 999;
  late.start_ns = 10;
  late.end_ns = 20;
  late.bytes = 40;
  late.kind = CopyKind::HtoD;
  late.src_kind = MemoryKind::pageable;
  late.blocking = true;
  f.agg.on(late);
  f.agg.on(ExternalCorrelation{999, inner.instance});
  f.agg.settle();
  f.end(inner);
  f.end(outer);
  const Report r = f.report();
  const auto& in = r.find("outer/inner")->self;
  CHECK(in.pageable_copies == 3);
  CHECK(in.pageable_bytes == 1340);
  const auto& out = r.find("outer");
  CHECK(out->self.pageable_copies == 1);
  CHECK(out->self.pageable_bytes == 7);
  CHECK(out->total.pageable_copies == 4);
  CHECK(out->total.pageable_bytes == 1347);
  CHECK(r.root().total.pageable_copies == 4);
  CHECK(in.blocking_copies == 3);
  CHECK(in.blocking_bytes == 360);
  CHECK(in.sync_count == 0);  // a blocking copy is a copy, not a wait
  CHECK(out->self.blocking_copies == 1);
  CHECK(out->self.blocking_bytes == 7);
  CHECK(out->total.blocking_copies == 4);
  CHECK(out->total.blocking_bytes == 367);
  CHECK(r.root().total.blocking_copies == 4);
}

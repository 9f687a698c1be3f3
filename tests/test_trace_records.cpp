// The trace's records one by one, as the reader takes or refuses them: a Memcpy record of an older
// version (no memory kinds, no flags), with bad kinds or flags; a Recording record (the program's
// switch of recording, type 22), with a bad value or length; a Reattach record (CUPTI attached again
// between step windows, type 23), with a bad length.
//
// Never: a session or a GPU; never a trace file left behind.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cuscope/cuscope.hpp>
#include <string>
#include <utility>
#include <vector>

#include "trace/format.hpp"
#include "trace/reader.hpp"
#include "trace_kit.hpp"

namespace {

using cuscope_test::trace_kit::Copies;
using cuscope_test::trace_kit::temp_path;
using cuscope_test::trace_kit::write_file;
namespace trace = cuscope::trace;
namespace model = cuscope::model;

// A trace of one record of `type` with `payload`, then its end.
std::string trace_with_record(trace::RecordType type, const std::string& payload) {
  std::string out(trace::kMagic, sizeof(trace::kMagic));
  trace::Encoder e(out);
  e.put(trace::kVersion);
  e.put(trace::kHeaderBytes);
  std::size_t at = e.begin(type);
  out += payload;
  e.finish(at);
  at = e.begin(trace::RecordType::End);
  e.put(std::uint64_t{0});
  e.finish(at);
  return out;
}

std::string trace_with_memcpy(const std::string& payload) {
  return trace_with_record(trace::RecordType::Memcpy, payload);
}

// A Memcpy payload as version 1 wrote it before the memory kinds.
std::string memcpy_payload_without_kinds() {
  std::string p;
  trace::Encoder e(p);
  for (std::uint64_t v : {std::uint64_t{5}, std::uint64_t{100}, std::uint64_t{200}, std::uint64_t{4096}})
    e.put(v);
  e.put(static_cast<std::uint8_t>(cuscope::CopyKind::HtoD));
  e.put(std::uint32_t{0});
  e.put(std::uint32_t{7});
  return p;
}

}  // namespace

TEST_CASE("a Memcpy record without memory kinds (older traces) reads as unknown kinds, bad kinds are refused",
          "[trace][pageable]") {
  const std::string path = temp_path("old_memcpy.cuscope");
  trace::Reader reader;
  std::string error;
  Copies copies;
  SECTION("no kinds") {
    write_file(path, trace_with_memcpy(memcpy_payload_without_kinds()));
    REQUIRE(reader.open(path, &error));
    REQUIRE(reader.read(copies, &error));
    REQUIRE(copies.copies.size() == 1);
    CHECK(copies.copies[0].bytes == 4096);
    CHECK(copies.copies[0].stream == 7);
    CHECK(copies.copies[0].src_kind == model::MemoryKind::unknown);
    CHECK(copies.copies[0].dst_kind == model::MemoryKind::unknown);
  }
  SECTION("a kind past the last") {
    write_file(path, trace_with_memcpy(memcpy_payload_without_kinds() + std::string{1, 8}));
    REQUIRE(reader.open(path, &error));
    CHECK_FALSE(reader.read(copies, &error));
    CHECK(error == "malformed: a memcpy record at byte 24");
  }
  SECTION("one kind of two") {
    write_file(path, trace_with_memcpy(memcpy_payload_without_kinds() + std::string(1, '\1')));
    REQUIRE(reader.open(path, &error));
    CHECK_FALSE(reader.read(copies, &error));
    CHECK(error == "malformed: a memcpy record at byte 24");
  }
  std::remove(path.c_str());
}

TEST_CASE(
    "a Memcpy record's flags: absent (traces before them) not blocking, bit 0 blocking, other bits refused",
    "[trace][blocking]") {
  const std::string path = temp_path("memcpy_flags.cuscope");
  const std::string kinds{1, 3};  // pageable to device
  trace::Reader reader;
  std::string error;
  Copies copies;
  auto read_one = [&](const std::string& tail) {
    write_file(path, trace_with_memcpy(memcpy_payload_without_kinds() + tail));
    REQUIRE(reader.open(path, &error));
    return reader.read(copies, &error);
  };
  SECTION("kinds, no flags") {
    REQUIRE(read_one(kinds));
    REQUIRE(copies.copies.size() == 1);
    CHECK(copies.copies[0].src_kind == model::MemoryKind::pageable);
    CHECK_FALSE(copies.copies[0].blocking);
  }
  SECTION("flags 0") {
    REQUIRE(read_one(kinds + std::string(1, '\0')));
    REQUIRE(copies.copies.size() == 1);
    CHECK_FALSE(copies.copies[0].blocking);
  }
  SECTION("blocking") {
    REQUIRE(read_one(kinds + std::string(1, '\1')));
    REQUIRE(copies.copies.size() == 1);
    CHECK(copies.copies[0].blocking);
    CHECK(copies.copies[0].dst_kind == model::MemoryKind::device);
  }
  SECTION("a flag this cuscope does not know") {
    CHECK_FALSE(read_one(kinds + std::string(1, '\2')));
    CHECK(error == "malformed: a memcpy record at byte 24");
  }
  SECTION("a byte past the flags") {
    CHECK_FALSE(read_one(kinds + std::string{1, 0}));
    CHECK(error == "malformed: a memcpy record at byte 24");
  }
  std::remove(path.c_str());
}
TEST_CASE("a Recording record reads as the switch it says, and another value or length is refused",
          "[trace][window]") {
  struct Switches : trace::Visitor {
    std::vector<std::pair<std::uint64_t, bool>> seen;
    void recording(std::uint64_t now_ns, bool on) override { seen.emplace_back(now_ns, on); }
  };
  const auto payload = [](std::uint64_t now_ns, std::uint8_t on) {
    std::string p;
    trace::Encoder e(p);
    e.put(now_ns);
    e.put(on);
    return p;
  };
  const std::string path = temp_path("recording_switch.cuscope");
  trace::Reader reader;
  std::string error;
  Switches switches;
  SECTION("off") {
    write_file(path, trace_with_record(trace::RecordType::Recording, payload(1234, 0)));
    REQUIRE(reader.open(path, &error));
    REQUIRE(reader.read(switches, &error));
    CHECK(switches.seen == std::vector<std::pair<std::uint64_t, bool>>{{1234, false}});
  }
  SECTION("on") {
    write_file(path, trace_with_record(trace::RecordType::Recording, payload(5678, 1)));
    REQUIRE(reader.open(path, &error));
    REQUIRE(reader.read(switches, &error));
    CHECK(switches.seen == std::vector<std::pair<std::uint64_t, bool>>{{5678, true}});
  }
  SECTION("a value past 1") {
    write_file(path, trace_with_record(trace::RecordType::Recording, payload(1234, 2)));
    REQUIRE(reader.open(path, &error));
    CHECK_FALSE(reader.read(switches, &error));
    CHECK(error == "malformed: a recording switch record at byte 24");
  }
  SECTION("a byte short") {
    write_file(path, trace_with_record(trace::RecordType::Recording, payload(1234, 1).substr(0, 8)));
    REQUIRE(reader.open(path, &error));
    CHECK_FALSE(reader.read(switches, &error));
    CHECK(error == "malformed: a recording switch record at byte 24");
  }
  CHECK(switches.seen.size() <= 1);
  std::remove(path.c_str());
}

TEST_CASE("a Reattach record reads as the time it says, and another length is refused", "[trace][detach]") {
  struct Reattaches : trace::Visitor {
    std::vector<std::uint64_t> seen;
    void reattached(std::uint64_t now_ns) override { seen.push_back(now_ns); }
  };
  std::string payload;
  trace::Encoder(payload).put(std::uint64_t{4321});
  const std::string path = temp_path("reattach.cuscope");
  trace::Reader reader;
  std::string error;
  Reattaches reattaches;
  SECTION("whole") {
    write_file(path, trace_with_record(trace::RecordType::Reattach, payload));
    REQUIRE(reader.open(path, &error));
    REQUIRE(reader.read(reattaches, &error));
    CHECK(reattaches.seen == std::vector<std::uint64_t>{4321});
  }
  SECTION("a byte short") {
    write_file(path, trace_with_record(trace::RecordType::Reattach, payload.substr(0, 7)));
    REQUIRE(reader.open(path, &error));
    CHECK_FALSE(reader.read(reattaches, &error));
    CHECK(error == "malformed: a re-attach record at byte 24");
  }
  SECTION("a byte long") {
    write_file(path, trace_with_record(trace::RecordType::Reattach, payload + '\0'));
    REQUIRE(reader.open(path, &error));
    CHECK_FALSE(reader.read(reattaches, &error));
    CHECK(error == "malformed: a re-attach record at byte 24");
  }
  std::remove(path.c_str());
}

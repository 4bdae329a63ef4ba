// The SSD cache's on-disk formats read back after a crash: region records (ssd_record.h) and
// index values (ssd_index.h). Anything not written by the code whole is corrupt.
#include "cache/ssd_record.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cache/ssd_index.h"
#include "common/crc32c.h"

using namespace warmfs;

namespace {

std::vector<std::byte> record_of(std::string_view data, uint64_t gen, std::string_view key) {
  std::vector<std::byte> out(data.size());
  std::memcpy(out.data(), data.data(), data.size());
  const ssd_record::Trailer t = ssd_record::encode(
      {static_cast<uint32_t>(data.size()), crc32c(data), ssd_record::key_crc(key), gen});
  out.insert(out.end(), t.begin(), t.end());
  return out;
}

}  // namespace

TEST_CASE("a record written by the code is intact; any change makes it corrupt", "[ssd]") {
  const ssd_record::Fields f{5, crc32c(std::string_view("hello")), ssd_record::key_crc("k"), 9};
  std::vector<std::byte> rec = record_of("hello", 9, "k");
  CHECK(ssd_record::intact(rec, f));
  std::vector<std::byte> longer = rec;
  longer.resize(longer.size() + 100);  // an O_DIRECT read brings the padding too
  CHECK(ssd_record::intact(longer, f));
  CHECK_FALSE(ssd_record::intact(std::span(rec).first(rec.size() - 1), f));  // short read
  CHECK_FALSE(ssd_record::intact({}, f));
  for (size_t i = 0; i + 4 < rec.size(); ++i) {  // the trailer's last four bytes are padding
    std::vector<std::byte> flipped = rec;
    flipped[i] ^= std::byte{0x01};
    CHECK_FALSE(ssd_record::intact(flipped, f));
  }
  ssd_record::Fields other_gen = f;
  other_gen.gen = 10;
  CHECK_FALSE(ssd_record::intact(rec, other_gen));
}

TEST_CASE("a record must lie within its region file and its region", "[ssd]") {
  CHECK(ssd_record::fits(0, 100, 132, 4096));
  CHECK_FALSE(ssd_record::fits(0, 100, 131, 4096));  // file cut short
  CHECK_FALSE(ssd_record::fits(4000, 100, 1 << 20, 4096));
  CHECK(ssd_record::fits(3964, 100, 4096, 4096));
  // Found by tests/fuzz/ssd_record_fuzz: an offset near 2^64 wrapped offset + length + 32
  // to a small end, and recovery kept the entry.
  CHECK_FALSE(ssd_record::fits(UINT64_MAX - 40, 8, 4096, 4096));
  CHECK_FALSE(ssd_record::fits(UINT64_MAX - 131, 100, UINT64_MAX, UINT64_MAX));
  CHECK_FALSE(ssd_record::fits(0, UINT32_MAX, 4096, 4096));
}

TEST_CASE("index values decode only when written whole by the code", "[ssd]") {
  SsdIndexEntry e{.region = 3,
                  .gen = 1ull << 40,
                  .offset = 4096,
                  .length = 1 << 20,
                  .crc32c = 0xdeadbeef,
                  .last_read_sec = -5};
  const std::string v = encode_index_entry(e);
  auto back = decode_index_entry(v);
  REQUIRE(back);
  CHECK(back->same_place(e));
  CHECK(back->length == e.length);
  CHECK(back->crc32c == e.crc32c);
  CHECK(back->last_read_sec == e.last_read_sec);
  CHECK_FALSE(decode_index_entry(""));
  CHECK_FALSE(decode_index_entry(v.substr(0, v.size() - 1)));
  CHECK_FALSE(decode_index_entry(v + "x"));
  std::string other_version = v;
  other_version[0] = 2;
  CHECK_FALSE(decode_index_entry(other_version));
}

// SsdCache::read_range: a range of a chunk read by reading and checking only the checksum
// blocks that hold it (block_cache.h), with O_DIRECT and through the page cache; a damaged
// block is a corrupt record (dropped, counted, a miss), never wrong bytes; a short last block;
// after a restart; records without block CRCs (format 1) read whole. Also the chunk CRCs
// themselves (ChunkCrcs, combine_block_crcs) and the index entry's two encodings.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "cache/memory_cache.h"
#include "cache/ssd_cache.h"
#include "cache/ssd_index.h"
#include "cache/tiered_cache.h"
#include "common/buffer.h"
#include "common/crc32c.h"
#include "support/fake_clock.h"
#include "unit/cache/ssd_test_util.h"

using namespace warmfs;
using namespace warmfs::testing;

namespace {

constexpr uint64_t kRegion = 4 << 20;
constexpr uint64_t kBlock = kCrcBlockBytes;

SsdCacheOptions range_options(const TempDir& tmp, std::shared_ptr<io::FileIo> io, bool direct) {
  SsdCacheOptions o;
  o.dir = tmp.cache();
  o.capacity_bytes = 8 * kRegion;
  o.region_bytes = kRegion;
  o.direct_writes = direct;
  o.io = std::move(io);
  return o;
}

// read_range of [offset, offset + n) of key, checked against want's bytes; false on a miss.
bool range_matches(BlockCache& cache, const ChunkKey& key, const ChunkPtr& want, uint64_t offset,
                   size_t n) {
  std::vector<std::byte> out(n);
  if (!cache.read_range(key, offset, out)) return false;
  REQUIRE(std::memcmp(out.data(), want->bytes.data() + offset, n) == 0);
  return true;
}

// Flips one byte of a region file.
void flip_byte(const std::string& path, uint64_t at) {
  io::UniqueFd fd(::open(path.c_str(), O_RDWR));
  REQUIRE(fd.valid());
  char b = 0;
  REQUIRE(::pread(fd.get(), &b, 1, static_cast<off_t>(at)) == 1);
  b = static_cast<char>(~b);
  REQUIRE(::pwrite(fd.get(), &b, 1, static_cast<off_t>(at)) == 1);
}

}  // namespace

TEST_CASE("chunks carry a CRC per block that combines to the chunk's CRC", "[cache][range]") {
  for (size_t size : {size_t{0}, size_t{1}, size_t{kBlock - 1}, size_t{kBlock}, size_t{kBlock + 1},
                      size_t{1 << 20}, size_t{100'000}}) {
    INFO("size " << size);
    const std::vector<std::byte> data = random_bytes(size, size + 3);
    ChunkPtr c = make_chunk(data);
    CHECK(c->crc32c == crc32c(std::span<const std::byte>(data)));
    REQUIRE(c->block_crcs.size() == crc_block_count(size));
    for (size_t b = 0; b < c->block_crcs.size(); ++b) {
      const size_t len = std::min<size_t>(kBlock, size - b * kBlock);
      CHECK(c->block_crcs[b] == crc32c(std::span<const std::byte>(data.data() + b * kBlock, len)));
    }
    CHECK(combine_block_crcs(c->block_crcs, size) == c->crc32c);
    // Given in pieces that do not line up with the blocks, the same.
    ChunkCrcs crcs;
    for (size_t at = 0; at < size; at += 777) {
      crcs.update(std::span<const std::byte>(data).subspan(at, std::min<size_t>(777, size - at)));
    }
    std::vector<uint32_t> blocks;
    CHECK(crcs.finish(&blocks) == c->crc32c);
    CHECK(blocks == c->block_crcs);
  }
  // A chunk sliced from a download's memory file reads it piecewise for them.
  const std::vector<std::byte> src = random_bytes(3 * kBlock + 5, 9);
  std::shared_ptr<std::byte[]> buf = allocate_fill_buffer(src.size());
  fill_buffer(buf.get(), src.data(), src.size());
  ChunkPtr slice = make_chunk_slice(buf, kBlock, 2 * kBlock + 5);
  ChunkPtr copy = make_chunk(std::vector<std::byte>(src.begin() + kBlock, src.end()));
  CHECK(slice->crc32c == copy->crc32c);
  CHECK(slice->block_crcs == copy->block_crcs);
}

TEST_CASE("index entries with block CRCs encode as version 2; version 1 still decodes",
          "[ssd][range]") {
  SsdIndexEntry e{.region = 3,
                  .gen = 1ull << 40,
                  .offset = 4096,
                  .length = 100'000,
                  .crc32c = 0xdeadbeef,
                  .last_read_sec = 17};
  const std::string v1 = encode_index_entry(e);
  CHECK(v1.size() == 37);
  CHECK(v1[0] == 1);
  auto back1 = decode_index_entry(v1);
  REQUIRE(back1);
  CHECK(back1->block_bytes == 0);
  CHECK(back1->block_crcs.empty());
  CHECK(back1->crc32c == e.crc32c);

  e.block_bytes = kBlock;
  for (uint64_t i = 0; i < crc_block_count(e.length); ++i) {
    e.block_crcs.push_back(0x01020304u * uint32_t(i + 1));
  }
  const std::string v2 = encode_index_entry(e);
  CHECK(v2[0] == 2);
  CHECK(v2.size() == 37 + 4 + 4 * e.block_crcs.size());
  auto back2 = decode_index_entry(v2);
  REQUIRE(back2);
  CHECK(back2->same_place(e));
  CHECK(back2->length == e.length);
  CHECK(back2->crc32c == e.crc32c);
  CHECK(back2->last_read_sec == e.last_read_sec);
  CHECK(back2->block_bytes == kBlock);
  CHECK(back2->block_crcs == e.block_crcs);
  // Anything but exactly the CRCs the length needs is malformed.
  CHECK_FALSE(decode_index_entry(v2.substr(0, v2.size() - 4)));
  CHECK_FALSE(decode_index_entry(v2.substr(0, v2.size() - 1)));
  CHECK_FALSE(decode_index_entry(v2 + "abcd"));
  CHECK_FALSE(decode_index_entry(v2.substr(0, 41)));
  std::string zero_block = v2;
  for (int i = 37; i < 41; ++i) zero_block[i] = 0;
  CHECK_FALSE(decode_index_entry(zero_block));
  std::string other_version = v2;
  other_version[0] = 3;
  CHECK_FALSE(decode_index_entry(other_version));
  std::string v1_marked_2 = v1;
  v1_marked_2[0] = 2;
  CHECK_FALSE(decode_index_entry(v1_marked_2));
}

TEST_CASE("ssd read_range reads and checks only the blocks that hold the range", "[ssd][range]") {
  const bool direct = GENERATE(true, false);
  INFO("direct writes " << direct);
  TempDir tmp;
  FakeClock clock;
  auto io = std::make_shared<FaultyIo>();
  auto cache = open_ok(range_options(tmp, io, direct), clock);
  ChunkPtr c = chunk_of(1 << 20, 21);
  cache->put(key_of(0), c);
  cache->flush();
  io->clear_reads();

  // 4 KiB inside block 5: one read of that block only.
  CHECK(range_matches(*cache, key_of(0), c, 5 * kBlock + 4096, 4096));
  CHECK(io->read_sizes() == std::vector<size_t>{kBlock});
  // Across blocks 9 and 10: one read of both.
  io->clear_reads();
  CHECK(range_matches(*cache, key_of(0), c, 10 * kBlock - 100, 300));
  CHECK(io->read_sizes() == std::vector<size_t>{2 * kBlock});
  // The first byte, the last byte, all of it.
  CHECK(range_matches(*cache, key_of(0), c, 0, 1));
  CHECK(range_matches(*cache, key_of(0), c, (1 << 20) - 1, 1));
  CHECK(range_matches(*cache, key_of(0), c, 0, 1 << 20));
  const BlockCacheCounters k = cache->counters();
  CHECK(k.range_hits == 5);
  CHECK(k.hits == 5);
  CHECK(k.hit_bytes == 4096 + 300 + 1 + 1 + (1 << 20));
  CHECK(k.corrupt_chunks == 0);

  // Outside the chunk, another key: misses, no disk read.
  io->clear_reads();
  std::vector<std::byte> out(10);
  CHECK_FALSE(cache->read_range(key_of(0), (1 << 20) - 5, out));
  CHECK_FALSE(cache->read_range(key_of(1), 0, out));
  CHECK(io->read_sizes().empty());
  // The whole chunk still reads and checks as before, and brings its block CRCs.
  ChunkPtr whole = cache->get(key_of(0));
  REQUIRE(whole);
  CHECK(whole->bytes == c->bytes);
  CHECK(whole->block_crcs == c->block_crcs);
}

TEST_CASE("ssd read_range of a chunk whose last block is short", "[ssd][range]") {
  const bool direct = GENERATE(true, false);
  INFO("direct writes " << direct);
  TempDir tmp;
  FakeClock clock;
  auto io = std::make_shared<FaultyIo>();
  auto cache = open_ok(range_options(tmp, io, direct), clock);
  const size_t size = 6 * kBlock + 1234;  // block 6 has 1,234 bytes
  ChunkPtr c = chunk_of(size, 22);
  ChunkPtr after = chunk_of(5 * kBlock, 23);  // a record right after it in the region
  cache->put(key_of(0), c);
  cache->put(key_of(1), after);
  cache->flush();
  io->clear_reads();
  CHECK(range_matches(*cache, key_of(0), c, 6 * kBlock + 1000, 234));  // in the short block
  CHECK(range_matches(*cache, key_of(0), c, 6 * kBlock - 10, 1244));   // across its start
  CHECK(range_matches(*cache, key_of(0), c, size - 1, 1));
  // Read rounded up to whole 4 KiB with O_DIRECT (into the trailer and padding), not more.
  const std::vector<size_t> reads = io->read_sizes();
  REQUIRE(reads.size() == 3);
  CHECK(reads[0] == (direct ? 4096 : 1234));
  CHECK(reads[1] == (direct ? kBlock + 4096 : kBlock + 1234));
  CHECK(range_matches(*cache, key_of(1), after, 0, 4096));
  CHECK(cache->counters().range_hits == 4);
}

TEST_CASE("ssd read_range: a damaged block is a corrupt record, never wrong bytes",
          "[ssd][range]") {
  const bool direct = GENERATE(true, false);
  INFO("direct writes " << direct);
  TempDir tmp;
  FakeClock clock;
  auto io = std::make_shared<FaultyIo>();
  auto cache = open_ok(range_options(tmp, io, direct), clock);
  ChunkPtr c = chunk_of(1 << 20, 31);
  cache->put(key_of(0), c);  // the first record of an empty cache: region 0, offset 0
  cache->put(key_of(1), chunk_of(1 << 20, 32));
  cache->flush();
  flip_byte(cache->region_path(0), 7 * kBlock + 123);

  // Blocks the damage does not touch are checked and served as they are.
  CHECK(range_matches(*cache, key_of(0), c, 6 * kBlock, kBlock));
  CHECK(range_matches(*cache, key_of(0), c, 8 * kBlock, 100));
  CHECK(cache->counters().corrupt_chunks == 0);
  // A range in the damaged block: a miss, counted, and the record dropped.
  CHECK_FALSE(range_matches(*cache, key_of(0), c, 7 * kBlock + 100, 50));
  CHECK(cache->counters().corrupt_chunks == 1);
  CHECK_FALSE(range_matches(*cache, key_of(0), c, 0, 50));  // gone: a plain miss
  CHECK(cache->get(key_of(0)) == nullptr);
  CHECK(cache->counters().corrupt_chunks == 1);
  // Its neighbour is intact; the chunk can be stored again.
  CHECK(cache->get(key_of(1)) != nullptr);
  cache->put(key_of(0), c);
  cache->flush();
  CHECK(range_matches(*cache, key_of(0), c, 7 * kBlock + 100, 50));
}

TEST_CASE("ssd read_range: a record cut short is a corrupt record", "[ssd][range]") {
  TempDir tmp;
  FakeClock clock;
  auto io = std::make_shared<FaultyIo>();
  auto cache = open_ok(range_options(tmp, io, true), clock);
  ChunkPtr c = chunk_of(1 << 20, 33);
  cache->put(key_of(0), c);
  cache->flush();
  REQUIRE(::truncate(cache->region_path(0).c_str(), 512 << 10) == 0);
  CHECK(range_matches(*cache, key_of(0), c, 0, 4096));  // before the cut
  CHECK_FALSE(range_matches(*cache, key_of(0), c, 600 << 10, 4096));
  CHECK(cache->counters().corrupt_chunks == 1);
}

TEST_CASE("ssd read_range works after a restart, and on records without block CRCs",
          "[ssd][range]") {
  TempDir tmp;
  FakeClock clock;
  auto io = std::make_shared<FaultyIo>();
  ChunkPtr c = chunk_of(1 << 20, 41);
  // Format 1's chunks: the CRC alone (as a build before block CRCs wrote them).
  auto old = std::make_shared<Chunk>();
  old->bytes = c->bytes;
  old->crc32c = c->crc32c;
  {
    auto cache = open_ok(range_options(tmp, io, true), clock);
    cache->put(key_of(0), c);
    cache->put(key_of(1), old);
    cache->flush();
  }
  auto cache = open_ok(range_options(tmp, io, true), clock);
  io->clear_reads();
  CHECK(range_matches(*cache, key_of(0), c, 3 * kBlock + 5, 4096));
  CHECK(io->read_sizes() == std::vector<size_t>{kBlock});
  CHECK(cache->counters().range_hits == 1);
  // Without block CRCs, the record is read and checked whole, then the range served.
  io->clear_reads();
  CHECK(range_matches(*cache, key_of(1), c, 3 * kBlock + 5, 4096));
  REQUIRE(io->read_sizes().size() == 1);
  CHECK(io->read_sizes()[0] >= (1 << 20));
  CHECK(cache->counters().range_hits == 1);
  CHECK(cache->counters().hits == 2);
}

TEST_CASE("tiered read_range reads the lower tier's range and asks for promotion on a second hit",
          "[cache][range]") {
  TempDir tmp;
  FakeClock clock;
  auto io = std::make_shared<FaultyIo>();
  auto ssd = open_ok(range_options(tmp, io, true), clock);
  MemoryCache memory({.capacity_bytes = 64 << 20});
  // With a window, and with every whole hit promoted (range hits still wait for a second).
  const size_t window = GENERATE(size_t{16}, size_t{0});
  INFO("promote_after_second_hit " << window);
  TieredCache tiers(memory, *ssd, TieredCache::Options{.promote_after_second_hit = window});
  ChunkPtr c = chunk_of(1 << 20, 51);
  ssd->put(key_of(0), c);
  ssd->flush();
  std::vector<std::byte> out(4096);
  bool promote = false;
  REQUIRE(tiers.read_range(key_of(0), 8192, out, &promote));
  CHECK_FALSE(promote);
  REQUIRE(tiers.read_range(key_of(0), 3 * kBlock, out, &promote));
  CHECK(promote);                           // the second hit: due
  CHECK(memory.get(key_of(0)) == nullptr);  // read_range itself puts nothing up
  // The whole chunk's get() that the caller makes promotes it.
  REQUIRE(tiers.get(key_of(0)) != nullptr);
  CHECK(memory.get(key_of(0)) != nullptr);
  // Now the upper tier serves the range.
  io->clear_reads();
  promote = false;
  REQUIRE(tiers.read_range(key_of(0), 3 * kBlock, out, &promote));
  CHECK(std::memcmp(out.data(), c->bytes.data() + 3 * kBlock, out.size()) == 0);
  CHECK_FALSE(promote);
  CHECK(io->read_sizes().empty());
}

TEST_CASE("range hits promote only within their own window", "[cache][range]") {
  TempDir tmp;
  FakeClock clock;
  auto io = std::make_shared<FaultyIo>();
  auto ssd = open_ok(range_options(tmp, io, true), clock);
  MemoryCache memory({.capacity_bytes = 64 << 20});
  // Whole hits remember 1,024 chunks; range hits only the last 2 to 4.
  TieredCache tiers(
      memory, *ssd,
      TieredCache::Options{.promote_after_second_hit = 1024, .promote_range_after_second_hit = 4});
  for (uint64_t i = 0; i < 8; ++i) ssd->put(key_of(i), chunk_of(64 << 10, 60 + i));
  ssd->flush();
  std::vector<std::byte> out(100);
  auto range_promotes = [&](uint64_t i) {
    bool promote = false;
    REQUIRE(tiers.read_range(key_of(i), 0, out, &promote));
    return promote;
  };
  CHECK_FALSE(range_promotes(0));
  CHECK(range_promotes(0));  // again at once: due
  for (uint64_t i = 1; i <= 6; ++i) CHECK_FALSE(range_promotes(i));
  CHECK_FALSE(range_promotes(1));  // six range hits ago: forgotten
  CHECK(range_promotes(6));        // the last one: due
  // A whole hit of a chunk read by a range lately is its second hit: it goes up.
  CHECK(memory.get(key_of(5)) == nullptr);
  REQUIRE(tiers.get(key_of(5)) != nullptr);
  CHECK(memory.get(key_of(5)) != nullptr);
  // A chunk hit whole once is not promoted by it.
  REQUIRE(tiers.get(key_of(7)) != nullptr);
  CHECK(memory.get(key_of(7)) == nullptr);
}

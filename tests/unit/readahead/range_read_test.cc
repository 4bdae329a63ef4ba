// The read path's small-read fast path: a small read that is not part of a stream and misses
// memory is served by a range read of the SSD tier on the reader's thread (only the blocks
// that hold it, no bucket request, no whole-chunk read); sequential reads keep the whole-chunk
// path; a chunk read twice is promoted into memory whole; a damaged block falls back to the
// bucket. Against the in-memory bucket and a real SsdCache in a temp dir.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <vector>

#include "cache/memory_cache.h"
#include "cache/ssd_cache.h"
#include "cache/tiered_cache.h"
#include "readahead/read_path.h"
#include "support/fake_clock.h"
#include "support/fault_injecting_store.h"
#include "support/memory_object_store.h"
#include "support/wait.h"
#include "unit/cache/ssd_test_util.h"

using namespace warmfs;
using namespace warmfs::testing;
using namespace std::chrono_literals;
using Op = FaultInjectingStore::Op;

namespace {

constexpr uint64_t kChunk = 256 << 10;  // 16 checksum blocks
constexpr uint64_t kBlock = kCrcBlockBytes;

ReadaheadOptions options() {
  ReadaheadOptions o;
  o.chunk_size = kChunk;
  o.initial_window_chunks = 2;
  o.max_window_chunks = 4;
  o.max_inflight_bytes = 16 * kChunk;
  o.fetch_threads = 4;
  o.max_request_bytes = 4 * kChunk;
  return o;
}

std::unique_ptr<SsdCache> open_ssd(const TempDir& tmp, Clock& clock,
                                   std::shared_ptr<io::FileIo> io) {
  SsdCacheOptions so;
  so.dir = tmp.cache();
  so.capacity_bytes = 16 << 20;
  so.region_bytes = 4 << 20;
  so.io = std::move(io);
  return open_ok(so, clock);
}

// An object in the bucket, and an SSD tier that holds all of it, its chunks in order (chunk 0
// the first record of region 0), under an empty memory tier.
struct Setup {
  Setup() {
    for (uint64_t i = 0; i * kChunk < data.size(); ++i) {
      const auto from = data.begin() + static_cast<ptrdiff_t>(i * kChunk);
      const auto to =
          data.begin() + static_cast<ptrdiff_t>(std::min(data.size(), (i + 1) * kChunk));
      ssd->put(key(i), make_chunk(std::vector<std::byte>(from, to)));
    }
    ssd->flush();
    REQUIRE(ssd->counters().inserted_bytes == data.size());
    io->clear_reads();
  }

  ObjectVersion version() const { return {"obj", etag, data.size()}; }
  ChunkKey key(uint64_t index) const { return ChunkKey{"b", "obj", etag, index}; }
  void read_check(Reader& r, uint64_t offset, size_t len) {
    std::vector<std::byte> buf(len);
    Result<size_t> n = r.read(offset, buf);
    REQUIRE(n.is_ok());
    REQUIRE(*n == len);
    REQUIRE(std::memcmp(buf.data(), data.data() + offset, len) == 0);
  }

  TempDir tmp;
  FakeClock clock;
  std::shared_ptr<FaultyIo> io = std::make_shared<FaultyIo>();
  std::unique_ptr<SsdCache> ssd = open_ssd(tmp, clock, io);
  MemoryObjectStore bucket;
  FaultInjectingStore store{bucket};
  std::vector<std::byte> data = random_bytes(6 * kChunk + 5000, 77);
  std::string etag = bucket.put_object("obj", data);
  MemoryCache memory{{.capacity_bytes = 64 << 20}};
  TieredCache tiers{memory, *ssd, TieredCache::Options{.promote_after_second_hit = 64}};
  std::unique_ptr<ReadPath> path =
      std::make_unique<ReadPath>(store, tiers, "b", options(), &memory);
};

}  // namespace

TEST_CASE("a small read that misses memory reads only its blocks from the SSD tier",
          "[readahead][range]") {
  Setup s;
  auto r = s.path->open(s.version());
  // 4 KiB inside block 3 of chunk 2.
  s.read_check(*r, 2 * kChunk + 3 * kBlock + 1000, 4096);
  CHECK(s.store.call_count(Op::kGetRange) == 0);
  CHECK(s.io->read_sizes() == std::vector<size_t>{kBlock});
  CHECK(s.ssd->counters().range_hits == 1);
  CHECK(s.path->counters().range_reads == 1);
  CHECK(s.memory.counters().used_bytes == 0);  // read once: nothing goes up

  // Random reads elsewhere: each one block, none a request, none a whole chunk.
  s.read_check(*r, 5 * kChunk + 100, 2000);
  s.read_check(*r, 0 + 15 * kBlock + 10, 6000);  // the chunk's last block
  s.read_check(*r, 6 * kChunk + 4000, 1000);     // the object's short last chunk
  CHECK(s.store.call_count(Op::kGetRange) == 0);
  const std::vector<size_t> reads = s.io->read_sizes();
  REQUIRE(reads.size() == 4);
  CHECK(reads[1] == kBlock);
  CHECK(reads[2] == kBlock);
  CHECK(reads[3] <= 8192);  // the 5,000-byte chunk's one block, to whole 4 KiB with O_DIRECT
  CHECK(s.path->counters().range_reads == 4);
}

TEST_CASE("sequential reads keep the whole-chunk path", "[readahead][range]") {
  Setup s;
  auto r = s.path->open(s.version());
  s.read_check(*r, kChunk, 4096);  // not (yet) a stream: a range read
  CHECK(s.path->counters().range_reads == 1);
  // The next reads continue it: a stream, read a chunk at a time with read-ahead.
  for (uint64_t off = kChunk + 4096; off < 3 * kChunk; off += 4096) s.read_check(*r, off, 4096);
  CHECK(s.path->counters().range_reads == 1);
  CHECK(s.ssd->counters().range_hits == 1);
  CHECK(s.store.call_count(Op::kGetRange) == 0);
  // Whole chunks (and read-ahead) came from the SSD tier.
  const std::vector<size_t> reads = s.io->read_sizes();
  REQUIRE(reads.size() >= 3);
  // (Read-ahead may reach the object's 5,000-byte last chunk: its record is 5,032 bytes.)
  for (size_t i = 1; i < reads.size(); ++i) CHECK((reads[i] >= kChunk || reads[i] == 5032));
}

TEST_CASE("a chunk read twice by small reads is promoted into memory whole", "[readahead][range]") {
  Setup s;
  auto r = s.path->open(s.version());
  s.read_check(*r, 4 * kChunk + 100, 4096);
  s.read_check(*r, 1 * kChunk + 100, 4096);
  CHECK(s.path->counters().range_promotions == 0);
  s.read_check(*r, 4 * kChunk + 9 * kBlock, 4096);  // chunk 4 again
  CHECK(s.path->counters().range_reads == 3);
  CHECK(s.path->counters().range_promotions == 1);
  // A fetch thread brings it up whole, from the SSD tier.
  REQUIRE(eventually([&] { return s.memory.get(s.key(4)) != nullptr; }));
  CHECK(s.store.call_count(Op::kGetRange) == 0);
  // Then a small read of it (after one elsewhere, so it is not a stream's) is served from
  // memory, without the disk.
  s.read_check(*r, 0 + 100, 4096);
  s.io->clear_reads();
  s.read_check(*r, 4 * kChunk + 12 * kBlock, 4096);
  CHECK(s.io->read_sizes().empty());
  CHECK(s.path->counters().range_reads == 4);
}

TEST_CASE("a small read of a damaged block falls back to the bucket", "[readahead][range]") {
  Setup s;
  // Chunk 0 is the first record of the SSD tier: region 0, offset 0.
  {
    io::UniqueFd fd(::open(s.ssd->region_path(0).c_str(), O_RDWR));
    REQUIRE(fd.valid());
    char b = 0;
    REQUIRE(::pread(fd.get(), &b, 1, 2 * kBlock + 5) == 1);
    b = static_cast<char>(~b);
    REQUIRE(::pwrite(fd.get(), &b, 1, 2 * kBlock + 5) == 1);
  }
  auto r = s.path->open(s.version());
  s.read_check(*r, 2 * kBlock, 4096);  // right bytes, from the bucket
  CHECK(s.ssd->counters().corrupt_chunks == 1);
  CHECK(s.store.call_count(Op::kGetRange) == 1);
  CHECK(s.path->counters().range_reads == 0);
}

TEST_CASE("without a slower tier, small reads go the usual way", "[readahead][range]") {
  MemoryObjectStore bucket;
  FaultInjectingStore store{bucket};
  const std::vector<std::byte> data = random_bytes(4 * kChunk, 3);
  const ObjectVersion v{"obj", bucket.put_object("obj", data), data.size()};
  MemoryCache memory({.capacity_bytes = 64 << 20});
  ReadPath path(store, memory, "b", options());
  auto r = path.open(v);
  std::vector<std::byte> buf(4096);
  REQUIRE(r->read(2 * kChunk + 10, buf).is_ok());
  CHECK(std::memcmp(buf.data(), data.data() + 2 * kChunk + 10, buf.size()) == 0);
  CHECK(store.call_count(Op::kGetRange) == 1);  // the chunk, whole
  CHECK(path.counters().range_reads == 0);
  REQUIRE(r->read(0 + 10, buf).is_ok());
  REQUIRE(r->read(2 * kChunk + 5000, buf).is_ok());  // in memory now
  CHECK(store.call_count(Op::kGetRange) == 2);
}

#include "cache/ssd_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <random>

#include "support/fake_clock.h"
#include "support/wait.h"
#include "unit/cache/ssd_test_util.h"

using namespace warmfs;
using namespace warmfs::testing;
using std::chrono::seconds;

namespace {

constexpr uint64_t kRegion = 64 << 10;
constexpr uint64_t kChunk = 4096;

SsdCacheOptions small_options(const TempDir& tmp, uint64_t regions = 16) {
  SsdCacheOptions o;
  o.dir = tmp.cache();
  o.capacity_bytes = regions * kRegion;
  o.region_bytes = kRegion;
  o.expected_chunk_bytes = kChunk;
  // These tests count records of kChunk + 32 bytes; padded O_DIRECT records have their own
  // tests (ssd_direct_test.cc).
  o.direct_writes = false;
  return o;
}

}  // namespace

TEST_CASE("ssd cache stores chunks and serves them for their exact key", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  auto cache = open_ok(small_options(tmp), clock);
  WARN("ssd cache io_uring: " << (cache->uses_io_uring() ? "yes" : "no"));
  CHECK(cache->get(key_of(0)) == nullptr);
  auto c = chunk_of(kChunk, 1);
  cache->put(key_of(0), c);
  cache->flush();
  ChunkPtr got = cache->get(key_of(0));
  REQUIRE(got != nullptr);
  CHECK(got->bytes == c->bytes);
  CHECK(got->crc32c == c->crc32c);
  CHECK(cache->get(key_of(0, "etag-2")) == nullptr);  // another version
  CHECK(cache->get(key_of(1)) == nullptr);
  const BlockCacheCounters k = cache->counters();
  CHECK(k.hits == 1);
  CHECK(k.hit_bytes == kChunk);
  CHECK(k.misses == 3);
  CHECK(k.inserted_bytes == kChunk);
  CHECK(k.used_bytes == kChunk);
  CHECK(k.capacity_bytes == 16 * kRegion);
  CHECK(k.errors == 0);
  // The dir is private.
  struct stat st {};
  REQUIRE(::stat(tmp.cache().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(::stat(cache->region_path(0).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat((tmp.cache() + "/lock").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("ssd cache refuses a second owner of its dir", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  auto first = open_ok(small_options(tmp), clock);
  auto second = SsdCache::open(small_options(tmp), clock);
  REQUIRE_FALSE(second.is_ok());
  const std::string msg = second.status().message();
  INFO(msg);
  CHECK(msg.find("cache dir " + tmp.cache() + " is in use by warmfs pid " +
                 std::to_string(::getpid())) != std::string::npos);
  CHECK(msg.find("give this mount its own --cache-dir") != std::string::npos);
  first.reset();
  CHECK(SsdCache::open(small_options(tmp), clock).is_ok());
}

TEST_CASE("ssd cache open fails cleanly on a dir it cannot create or write", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  std::ofstream(tmp.path + "/file") << "x";
  SsdCacheOptions o = small_options(tmp);
  o.dir = tmp.path + "/file/cache";
  auto r = SsdCache::open(o, clock);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find(tmp.path + "/file") != std::string::npos);
  o.dir = tmp.path + "/file";
  CHECK_FALSE(SsdCache::open(o, clock).is_ok());
  o.capacity_bytes = 1000;  // smaller than a region
  o.dir = tmp.cache();
  CHECK(SsdCache::open(o, clock).code() == Errc::kInvalidArgument);
  if (::geteuid() != 0) {
    const std::string ro = tmp.path + "/ro";
    REQUIRE(::mkdir(ro.c_str(), 0500) == 0);
    o = small_options(tmp);
    o.dir = ro + "/cache";
    CHECK_FALSE(SsdCache::open(o, clock).is_ok());
  } else {
    WARN(
        "running as root: a read-only dir cannot be simulated by permissions; "
        "covered by injected EROFS/ENOSPC instead");
  }
}

TEST_CASE("ssd cache degrades on I/O errors and recovers after the backoff", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  auto io = std::make_shared<FaultyIo>();
  SsdCacheOptions o = small_options(tmp);
  o.io = io;
  auto cache = open_ok(o, clock);
  cache->put(key_of(0), chunk_of(kChunk, 0));
  cache->flush();
  REQUIRE(cache->get(key_of(0)) != nullptr);

  int err = GENERATE(ENOSPC, EROFS, EIO);
  io->write_errno = err;
  cache->put(key_of(1), chunk_of(kChunk, 1));
  cache->flush();
  CHECK(cache->counters().errors == 1);
  CHECK(cache->degraded());
  CHECK(cache->get(key_of(0)) == nullptr);  // off: reads miss
  cache->put(key_of(2), chunk_of(kChunk, 2));
  CHECK(cache->counters().dropped_writes >= 1);

  io->write_errno = 0;
  clock.advance(o.error_backoff + seconds(1));
  CHECK_FALSE(cache->degraded());
  CHECK(cache->get(key_of(0)) != nullptr);
  cache->put(key_of(1), chunk_of(kChunk, 1));
  cache->flush();
  CHECK(cache->get(key_of(1)) != nullptr);

  io->read_errno = EIO;
  CHECK(cache->get(key_of(1)) == nullptr);
  CHECK(cache->counters().errors == 2);
  io->read_errno = 0;
}

TEST_CASE("ssd cache drops a chunk whose bytes changed on disk, then takes it again", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  auto cache = open_ok(small_options(tmp), clock);
  auto c = chunk_of(kChunk, 9);
  cache->put(key_of(0), c);
  cache->put(key_of(1), chunk_of(kChunk, 10));
  cache->flush();
  {
    io::UniqueFd fd(::open(cache->region_path(0).c_str(), O_RDWR));
    REQUIRE(fd.valid());
    char b = 0;
    REQUIRE(::pread(fd.get(), &b, 1, 100) == 1);
    b = static_cast<char>(~b);
    REQUIRE(::pwrite(fd.get(), &b, 1, 100) == 1);
  }
  CHECK(cache->get(key_of(0)) == nullptr);
  CHECK(cache->counters().corrupt_chunks == 1);
  CHECK(cache->get(key_of(0)) == nullptr);  // dropped: a plain miss now
  CHECK(cache->counters().corrupt_chunks == 1);
  CHECK(cache->get(key_of(1)) != nullptr);  // its neighbour is intact
  cache->put(key_of(0), c);
  cache->flush();
  ChunkPtr again = cache->get(key_of(0));
  REQUIRE(again != nullptr);
  CHECK(again->bytes == c->bytes);
  CHECK(cache->counters().used_bytes == 2 * kChunk);
}

TEST_CASE("ssd cache fills regions and reuses evicted ones", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  auto cache = open_ok(small_options(tmp, 4), clock);
  const uint64_t per_region = kRegion / (kChunk + 32);  // 15
  for (uint64_t i = 0; i < 4 * per_region; ++i) cache->put(key_of(i), chunk_of(kChunk, i));
  cache->flush();
  CHECK(cache->counters().used_bytes == 4 * per_region * kChunk);
  // Full: a chunk asked for once is refused...
  cache->get(key_of(1000));
  cache->put(key_of(1000), chunk_of(kChunk, 1000));
  cache->flush();
  CHECK(cache->counters().rejected_writes == 1);
  CHECK(cache->get(key_of(1000)) == nullptr);
  // ...one asked for often enough evicts the oldest region, whose slot is refilled.
  for (int i = 0; i < 3; ++i) cache->get(key_of(2000));
  cache->put(key_of(2000), chunk_of(kChunk, 2000));
  cache->flush();
  CHECK(cache->get(key_of(2000)) != nullptr);
  const BlockCacheCounters k = cache->counters();
  CHECK(k.evicted_bytes == per_region * kChunk);
  CHECK(k.used_bytes == (3 * per_region + 1) * kChunk);
  CHECK(cache->get(key_of(0)) == nullptr);           // was in region 0
  CHECK(cache->get(key_of(per_region)) != nullptr);  // region 1 stays
  CHECK(std::filesystem::file_size(cache->region_path(0)) == kChunk + 32);
  CHECK(region_file_bytes(tmp.cache()) <= 4 * kRegion);
}

TEST_CASE("ssd cache never holds more than its capacity", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  auto cache = open_ok(small_options(tmp, 8), clock);
  std::mt19937_64 rng(42);
  const uint64_t cap = 8 * kRegion;
  for (uint64_t i = 0; i < 3000; ++i) {
    const uint64_t k = rng() % 600;
    for (uint64_t g = rng() % 4; g > 0; --g) cache->get(key_of(k));
    cache->put(key_of(k), chunk_of(1 + rng() % (4 * kChunk), k));
    if (i % 100 == 99) {
      cache->flush();
      const BlockCacheCounters c = cache->counters();
      REQUIRE(c.used_bytes <= cap);
      REQUIRE(region_file_bytes(tmp.cache()) <= cap);
    }
  }
  cache->flush();
  const BlockCacheCounters c = cache->counters();
  CHECK(c.evicted_bytes > 0);
  CHECK(c.errors == 0);
  CHECK(c.corrupt_chunks == 0);
  std::printf("[ssd] churn: used %llu of %llu, inserted %llu, evicted %llu, rejected %llu\n",
              (unsigned long long)c.used_bytes, (unsigned long long)cap,
              (unsigned long long)c.inserted_bytes, (unsigned long long)c.evicted_bytes,
              (unsigned long long)c.rejected_writes);
}

TEST_CASE("ssd cache keeps hitting when each epoch scans twice its size", "[ssd][eviction]") {
  TempDir tmp;
  FakeClock clock;
  auto cache = open_ok(small_options(tmp, 16), clock);
  const uint64_t dataset = 2 * 16 * kRegion / kChunk;  // 512 chunks, 2x the capacity
  for (int epoch = 1; epoch <= 6; ++epoch) {
    uint64_t hits = 0;
    for (uint64_t i = 0; i < dataset; ++i) {
      clock.advance(std::chrono::milliseconds(1));
      if (cache->get(key_of(i)) != nullptr) {
        ++hits;
        continue;
      }
      cache->put(key_of(i), chunk_of(kChunk, i));
      cache->flush();
    }
    const double ratio = double(hits) / double(dataset);
    const BlockCacheCounters k = cache->counters();
    std::printf(
        "[ssd] scan epoch %d: hit ratio %.3f (a FIFO or LRU cache: 0.000); used %llu, "
        "evicted %llu, rejected %llu\n",
        epoch, ratio, (unsigned long long)k.used_bytes, (unsigned long long)k.evicted_bytes,
        (unsigned long long)k.rejected_writes);
    if (epoch >= 2) CHECK(ratio >= 0.35);
  }
  const BlockCacheCounters c = cache->counters();
  CHECK(c.used_bytes <= 16 * kRegion);
  CHECK(c.corrupt_chunks == 0);
}

TEST_CASE("ssd cache expires chunks not read for the ttl", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  SsdCacheOptions o = small_options(tmp);
  o.ttl = seconds(10);
  auto cache = open_ok(o, clock);
  cache->put(key_of(0), chunk_of(kChunk, 0));
  cache->put(key_of(1), chunk_of(kChunk, 1));
  cache->flush();
  clock.advance(seconds(6));
  CHECK(cache->get(key_of(0)) != nullptr);  // read: refreshed
  clock.advance(seconds(6));
  CHECK(cache->get(key_of(1)) == nullptr);  // 12 s unread: expired
  CHECK(cache->get(key_of(0)) != nullptr);
  CHECK(cache->counters().used_bytes == kChunk);
  clock.advance(seconds(11));
  cache->flush();  // runs the expiry: the idle region is reclaimed
  CHECK(cache->counters().used_bytes == 0);
  CHECK(cache->get(key_of(0)) == nullptr);
  CHECK(cache->counters().evicted_bytes == 2 * kChunk);
}

TEST_CASE("ssd cache puts wait for room in a full write queue, and none is dropped", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  SsdCacheOptions o = small_options(tmp);
  o.write_queue_bytes = 2 * kChunk;
  o.put_wait = std::chrono::seconds(30);
  auto cache = open_ok(o, clock);
  for (uint64_t i = 0; i < 200; ++i) cache->put(key_of(i), chunk_of(kChunk, i));
  cache->flush();
  const BlockCacheCounters c = cache->counters();
  CHECK(c.dropped_writes == 0);
  CHECK(c.inserted_bytes + c.rejected_writes * kChunk == 200 * kChunk);
}

namespace {
// Writes wait while the gate is shut: the test decides when the disk is slower than the puts.
// The gate opens by itself 10 s after it was made (gave_up()), so a cache that waits for the
// disk where it must not fails the test instead of hanging it.
class GatedIo final : public io::FileIo {
 public:
  void shut() { shut_ = true; }
  Gate& gate() { return gate_; }
  Result<size_t> read_at(int fd, std::span<std::byte> out, uint64_t offset) override {
    return inner_->read_at(fd, out, offset);
  }
  Status write_at(int fd, std::span<const std::byte> data, uint64_t offset) override {
    if (shut_) gate_.wait();
    return inner_->write_at(fd, data, offset);
  }
  bool uses_io_uring() const override { return false; }

 private:
  std::atomic<bool> shut_{false};
  Gate gate_;
  std::unique_ptr<io::FileIo> inner_ = io::make_posix_file_io();
};
}  // namespace

TEST_CASE("ssd cache drops puts when its write queue is full and put_wait is zero", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  SsdCacheOptions o = small_options(tmp);
  o.write_queue_bytes = 2 * kChunk;
  o.put_wait = std::chrono::milliseconds(0);
  auto io = std::make_shared<GatedIo>();
  o.io = io;
  auto cache = open_ok(o, clock);
  OpenOnExit release(io->gate());  // before the cache's writer is joined
  // The disk takes nothing while 200 chunks are put: at most one is being written and two
  // wait in the queue (a few more if the writer takes a batch), so most are dropped,
  // whatever the threads' timing.
  io->shut();
  for (uint64_t i = 0; i < 200; ++i) cache->put(key_of(i), chunk_of(kChunk, i));
  CHECK(cache->counters().dropped_writes >= 190);
  REQUIRE_FALSE(io->gate().is_open());  // the puts did not wait for the disk
  io->gate().open();
  cache->flush();
  const BlockCacheCounters c = cache->counters();
  CHECK(c.dropped_writes > 0);
  CHECK(c.inserted_bytes + c.dropped_writes * kChunk == 200 * kChunk);
  // Too large for a region: dropped at once.
  cache->put(key_of(999), chunk_of(kRegion, 1));
  CHECK(cache->counters().dropped_writes == c.dropped_writes + 1);
}

TEST_CASE("ssd cache serves only right bytes under concurrent reads, writes and eviction",
          "[ssd]") {
  TempDir tmp;
  SsdCacheOptions o = small_options(tmp, 4);
  auto cache = open_ok(o, SystemClock::instance());
  constexpr uint64_t kKeys = 400;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> wrong{0}, served{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      while (!stop.load()) {
        const uint64_t k = rng() % kKeys;
        ChunkPtr c = cache->get(key_of(k));
        if (c == nullptr) {
          cache->put(key_of(k), chunk_of(kChunk, k));
          continue;
        }
        served.fetch_add(1);
        if (c->bytes != random_bytes(kChunk, k)) wrong.fetch_add(1);
      }
    });
  }
  // Until the readers have been served kHits chunks and regions have been evicted and reused
  // under them (at most 60 s): the run ends on what it has to cover, not on a time.
  constexpr uint64_t kHits = 5000;
  eventually(
      [&] { return served.load() >= kHits && cache->counters().evicted_bytes >= 4 * kRegion; },
      seconds(60));
  stop = true;
  for (auto& r : readers) r.join();
  cache->flush();
  const BlockCacheCounters c = cache->counters();
  std::printf("[ssd] concurrent: %llu hits served, %llu evicted bytes, %llu errors\n",
              (unsigned long long)served.load(), (unsigned long long)c.evicted_bytes,
              (unsigned long long)c.errors);
  CHECK(wrong.load() == 0);
  CHECK(c.errors == 0);
  CHECK(c.corrupt_chunks == 0);
  CHECK(served.load() >= kHits);
  CHECK(c.evicted_bytes >= 4 * kRegion);  // every region turned over at least once
  CHECK(c.used_bytes <= 4 * kRegion);
}

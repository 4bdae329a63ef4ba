// Persistence of the SSD cache: reopening, and what a crash or damage leaves behind.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>

#include "cache/ssd_cache.h"
#include "cache/ssd_index.h"
#include "support/fake_clock.h"
#include "support/wait.h"
#include "unit/cache/ssd_test_util.h"

using namespace warmfs;
using namespace warmfs::testing;

namespace {

constexpr uint64_t kRegion = 64 << 10;
constexpr uint64_t kChunk = 4096;
constexpr uint64_t kPerRegion = kRegion / (kChunk + 32);  // 15 records a region

SsdCacheOptions options_for(const TempDir& tmp, uint64_t region_bytes = kRegion) {
  SsdCacheOptions o;
  o.dir = tmp.cache();
  o.capacity_bytes = 8 * region_bytes;
  o.region_bytes = region_bytes;
  o.expected_chunk_bytes = kChunk;
  // These tests count records of kChunk + 32 bytes; padded O_DIRECT records have their own
  // tests (ssd_direct_test.cc).
  o.direct_writes = false;
  return o;
}

// Fills n chunks and closes the cache.
void fill(const TempDir& tmp, Clock& clock, uint64_t n) {
  auto cache = open_ok(options_for(tmp), clock);
  for (uint64_t i = 0; i < n; ++i) cache->put(key_of(i), chunk_of(kChunk, i));
}  // the destructor flushes

uint64_t hits(SsdCache& cache, uint64_t first, uint64_t n) {
  uint64_t h = 0;
  for (uint64_t i = first; i < first + n; ++i) {
    ChunkPtr c = cache.get(key_of(i));
    if (c != nullptr && c->bytes == random_bytes(kChunk, i)) ++h;
  }
  return h;
}

}  // namespace

TEST_CASE("ssd cache keeps its chunks across close and reopen", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  fill(tmp, clock, 40);
  auto cache = open_ok(options_for(tmp), clock);
  CHECK(cache->counters().used_bytes == 40 * kChunk);
  CHECK(hits(*cache, 0, 40) == 40);
  // The last, partly filled region takes further appends.
  cache->put(key_of(40), chunk_of(kChunk, 40));
  cache->flush();
  CHECK(hits(*cache, 40, 1) == 1);
  CHECK(region_file_bytes(tmp.cache()) == 41 * (kChunk + 32));
  cache.reset();
  auto again = open_ok(options_for(tmp), clock);
  CHECK(hits(*again, 0, 41) == 41);
}

TEST_CASE("ssd cache reopened after a cut-off region file drops what is missing", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  fill(tmp, clock, 2 * kPerRegion);
  // As if the machine died before the page cache reached the disk: region 0 lost its tail.
  REQUIRE(::truncate((tmp.cache() + "/regions/000000").c_str(), 5 * (kChunk + 32) + 100) == 0);
  auto cache = open_ok(options_for(tmp), clock);
  CHECK(cache->counters().used_bytes == (5 + kPerRegion) * kChunk);
  CHECK(hits(*cache, 0, 5) == 5);
  CHECK(hits(*cache, 5, kPerRegion - 5) == 0);
  CHECK(hits(*cache, kPerRegion, kPerRegion) == kPerRegion);
  CHECK(cache->counters().corrupt_chunks == 0);  // dropped at open, never read
  // Refilling works.
  cache->put(key_of(7), chunk_of(kChunk, 7));
  cache->flush();
  CHECK(hits(*cache, 7, 1) == 1);
}

TEST_CASE("ssd cache ignores data written without an index entry", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  fill(tmp, clock, 3);
  // A crash between the data write and the index write leaves unindexed bytes at the end.
  {
    io::UniqueFd fd(::open((tmp.cache() + "/regions/000000").c_str(), O_WRONLY | O_APPEND));
    REQUIRE(fd.valid());
    const auto junk = random_bytes(3000, 99);
    REQUIRE(::write(fd.get(), junk.data(), junk.size()) == 3000);
  }
  auto cache = open_ok(options_for(tmp), clock);
  CHECK(hits(*cache, 0, 3) == 3);
  cache->put(key_of(3), chunk_of(kChunk, 3));  // overwrites the junk
  cache->flush();
  CHECK(hits(*cache, 0, 4) == 4);
}

TEST_CASE("ssd cache drops entries of a stale region generation and damaged chunks", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  fill(tmp, clock, kPerRegion + 2);  // region 0 full, region 1 holds 2
  {
    // Region 0's fill is recorded as superseded (as after a reuse whose entries survived).
    auto idx = SsdIndex::open(tmp.cache() + "/index");
    REQUIRE(idx.is_ok());
    auto gens = (*idx)->region_gens();
    REQUIRE(gens.is_ok());
    REQUIRE((*idx)->put_region_gen(0, gens->at(0) + 100).is_ok());
  }
  // And a byte of region 1's first chunk flipped.
  {
    io::UniqueFd fd(::open((tmp.cache() + "/regions/000001").c_str(), O_RDWR));
    char b = 'x';
    REQUIRE(::pwrite(fd.get(), &b, 1, 10) == 1);
  }
  auto cache = open_ok(options_for(tmp), clock);
  CHECK(cache->counters().used_bytes == 2 * kChunk);
  CHECK(hits(*cache, 0, kPerRegion) == 0);
  CHECK(hits(*cache, kPerRegion, 1) == 0);  // corrupt: found when read
  CHECK(cache->counters().corrupt_chunks == 1);
  CHECK(hits(*cache, kPerRegion + 1, 1) == 1);
  CHECK(cache->counters().used_bytes == kChunk);
}

TEST_CASE("ssd cache drops an index entry whose offset wraps past 2^64", "[ssd]") {
  // Found by tests/fuzz/ssd_record_fuzz: offset + length + trailer wrapped to a small end,
  // recovery kept the entry, and its read at an offset past any file failed as an I/O error.
  TempDir tmp;
  FakeClock clock;
  fill(tmp, clock, 2);
  {
    auto idx = SsdIndex::open(tmp.cache() + "/index");
    REQUIRE(idx.is_ok());
    auto e = (*idx)->get(key_of(0).encode());
    REQUIRE(e.is_ok());
    REQUIRE(e->has_value());
    SsdIndexEntry bad = **e;
    bad.offset = UINT64_MAX - kChunk - 16;
    REQUIRE((*idx)->put(key_of(0).encode(), bad).is_ok());
  }
  auto cache = open_ok(options_for(tmp), clock);
  CHECK(cache->counters().used_bytes == kChunk);
  CHECK(hits(*cache, 0, 1) == 0);
  CHECK(hits(*cache, 1, 1) == 1);
  CHECK(cache->counters().errors == 0);
}

TEST_CASE("ssd cache starts empty when the region size changes", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  fill(tmp, clock, 10);
  auto cache = open_ok(options_for(tmp, 2 * kRegion), clock);
  CHECK(cache->counters().used_bytes == 0);
  CHECK(hits(*cache, 0, 10) == 0);
  cache->put(key_of(0), chunk_of(kChunk, 0));
  cache->flush();
  CHECK(hits(*cache, 0, 1) == 1);
}

// Not a test of its own: the entry point of the child process that the SIGKILL test below
// spawns (this binary, with this test's name) and kills. Hidden ([.]) so a plain run skips it.
// Fills the cache dir named by WARMFS_SSD_CRASH_DIR forever, recording in dir/../progress the
// last chunk known to be flushed.
TEST_CASE("child process of the ssd SIGKILL test", "[.][child-process]") {
  const char* dir = std::getenv("WARMFS_SSD_CRASH_DIR");
  REQUIRE(dir != nullptr);
  SystemClock& clock = SystemClock::instance();
  SsdCacheOptions o;
  o.dir = dir;
  o.capacity_bytes = 64 * kRegion;
  o.region_bytes = kRegion;
  o.expected_chunk_bytes = kChunk;
  auto cache = open_ok(o, clock);
  const std::string progress = std::string(dir) + "/../progress";
  for (uint64_t i = 0;; ++i) {
    cache->put(key_of(i), chunk_of(kChunk, i));
    if (i % 8 == 7) {
      cache->flush();
      std::ofstream(progress + ".tmp") << i << "\n";
      std::rename((progress + ".tmp").c_str(), progress.c_str());
    }
  }
}

TEST_CASE("ssd cache killed with SIGKILL mid-fill reopens with what it flushed", "[ssd]") {
  TempDir tmp;
  const std::string progress = tmp.path + "/progress";
  const std::string env = "WARMFS_SSD_CRASH_DIR=" + tmp.cache();
  char arg1[] = "child process of the ssd SIGKILL test";
  char* argv[] = {const_cast<char*>("/proc/self/exe"), arg1, nullptr};
  char* envp[] = {const_cast<char*>(env.c_str()), nullptr};
  pid_t pid = 0;
  REQUIRE(::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp) == 0);
  uint64_t flushed = 0;
  eventually(  // region 0..19 full, more on the way
      [&] {
        std::ifstream in(progress);
        return in >> flushed && flushed >= 300;
      },
      std::chrono::seconds(30));
  ::kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(flushed >= 300);

  FakeClock clock;
  SsdCacheOptions o;
  o.dir = tmp.cache();
  o.capacity_bytes = 64 * kRegion;
  o.region_bytes = kRegion;
  o.expected_chunk_bytes = kChunk;
  auto cache = open_ok(o, clock);  // the dead owner's lock is gone with it
  CHECK(hits(*cache, 0, flushed + 1) == flushed + 1);
  // Whatever the child wrote after its last flush is there intact, or not at all.
  uint64_t later = 0;
  for (uint64_t i = flushed + 1; i < flushed + 200; ++i) {
    ChunkPtr c = cache->get(key_of(i));
    if (c == nullptr) continue;
    ++later;
    CHECK(c->bytes == random_bytes(kChunk, i));
  }
  CHECK(cache->counters().corrupt_chunks == 0);
  std::printf("[ssd] killed after %llu flushed chunks; %llu later ones survived\n",
              (unsigned long long)flushed + 1, (unsigned long long)later);
}

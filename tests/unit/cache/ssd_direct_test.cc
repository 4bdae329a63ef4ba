// The SSD tier's O_DIRECT I/O: records padded to 4 KiB, written and (when large) read around
// the page cache, read back intact, recovered after a restart (also over records written without padding),
// and a file system that refuses O_DIRECT gets buffered writes instead of errors.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "cache/ssd_cache.h"
#include "support/fake_clock.h"
#include "unit/cache/ssd_test_util.h"

using namespace warmfs;
using namespace warmfs::testing;

namespace {

constexpr uint64_t kRegion = 4 << 20;
constexpr uint64_t kAlign = SsdCache::kDirectAlign;

SsdCacheOptions direct_options(const TempDir& tmp) {
  SsdCacheOptions o;
  o.dir = tmp.cache();
  o.capacity_bytes = 8 * kRegion;
  o.region_bytes = kRegion;
  o.direct_writes = true;
  return o;
}

// Pages of the file in the page cache (mincore over a mapping of it), of the first `limit`
// bytes (0: all).
size_t resident_pages(const std::string& path, size_t limit = 0) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (limit != 0 && size > off_t(limit)) size = off_t(limit);
  size_t resident = 0;
  if (size > 0) {
    void* map = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
    REQUIRE(map != MAP_FAILED);
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> vec((static_cast<size_t>(size) + page - 1) / page);
    REQUIRE(::mincore(map, static_cast<size_t>(size), vec.data()) == 0);
    for (unsigned char v : vec) resident += v & 1;
    ::munmap(map, static_cast<size_t>(size));
  }
  ::close(fd);
  return resident;
}

// Odd sizes: whole chunks, a short last chunk, a small object.
const std::vector<size_t> kSizes = {1 << 20, 100'000, 4096, 1 << 20, 65'536 + 7, 1};

}  // namespace

TEST_CASE("direct writes: records padded to 4 KiB, around the page cache, read back intact",
          "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  auto cache = open_ok(direct_options(tmp), clock);
  std::vector<ChunkPtr> chunks;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    chunks.push_back(chunk_of(kSizes[i], 100 + i));
    cache->put(key_of(i), chunks.back());
  }
  cache->flush();
  const BlockCacheCounters c = cache->counters();
  CHECK(c.errors == 0);
  CHECK(c.dropped_writes == 0);
  uint64_t sum = 0, padded = 0;
  for (size_t n : kSizes) {
    sum += n;
    padded += (n + 32 + kAlign - 1) / kAlign * kAlign;
  }
  CHECK(c.inserted_bytes == sum);
  // Every record starts aligned, so the region file ends at the padded total.
  CHECK(region_file_bytes(tmp.cache()) == padded);
  // Written with O_DIRECT: nothing of it sits in the page cache (a buffered write leaves
  // every page there, dirty).
  CHECK(resident_pages(cache->region_path(0)) == 0);
  for (size_t i = 0; i < kSizes.size(); ++i) {
    ChunkPtr got = cache->get(key_of(i));
    REQUIRE(got);
    REQUIRE(got->bytes.size() == kSizes[i]);
    CHECK(std::memcmp(got->bytes.data(), chunks[i]->bytes.data(), kSizes[i]) == 0);
    // Large records are read with O_DIRECT too: the first (1 MiB), read before any small
    // one (whose buffered read may pull neighbours in by read-ahead), left nothing in the
    // page cache.
    if (i == 0) CHECK(resident_pages(cache->region_path(0)) == 0);
  }
  CHECK(cache->counters().corrupt_chunks == 0);
}

TEST_CASE("direct writes resume aligned after a restart over records written unpadded",
          "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  SsdCacheOptions buffered = direct_options(tmp);
  buffered.direct_writes = false;
  std::vector<ChunkPtr> chunks;
  {
    auto cache = open_ok(buffered, clock);
    for (size_t i = 0; i < 3; ++i) {
      chunks.push_back(chunk_of(kSizes[i], 200 + i));
      cache->put(key_of(i), chunks.back());
    }
    cache->flush();
  }
  const uint64_t unpadded = region_file_bytes(tmp.cache());
  CHECK(unpadded == kSizes[0] + kSizes[1] + kSizes[2] + 3 * 32);
  {
    auto cache = open_ok(direct_options(tmp), clock);
    for (size_t i = 3; i < kSizes.size(); ++i) {
      chunks.push_back(chunk_of(kSizes[i], 200 + i));
      cache->put(key_of(i), chunks.back());
    }
    cache->flush();
    CHECK(cache->counters().errors == 0);
    CHECK(cache->counters().inserted_bytes == kSizes[3] + kSizes[4] + kSizes[5]);
  }
  // The new records follow the old ones from the next aligned offset.
  uint64_t expect = (unpadded + kAlign - 1) / kAlign * kAlign;
  for (size_t i = 3; i < kSizes.size(); ++i) expect += (kSizes[i] + 32 + kAlign - 1) / kAlign * kAlign;
  CHECK(region_file_bytes(tmp.cache()) == expect);
  auto cache = open_ok(direct_options(tmp), clock);
  for (size_t i = 0; i < kSizes.size(); ++i) {
    ChunkPtr got = cache->get(key_of(i));
    INFO("chunk " << i);
    REQUIRE(got);
    CHECK(std::memcmp(got->bytes.data(), chunks[i]->bytes.data(), kSizes[i]) == 0);
  }
}

namespace {
// A file system that opens O_DIRECT but refuses its writes with EINVAL.
class RefusesDirectIo final : public io::FileIo {
 public:
  std::atomic<int> refused{0}, buffered{0};
  Result<size_t> read_at(int fd, std::span<std::byte> out, uint64_t offset) override {
    return inner_->read_at(fd, out, offset);
  }
  Status write_at(int fd, std::span<const std::byte> data, uint64_t offset) override {
    if ((::fcntl(fd, F_GETFL) & O_DIRECT) != 0) {
      refused.fetch_add(1);
      return io::errno_status(EINVAL, "pwrite");
    }
    buffered.fetch_add(1);
    return inner_->write_at(fd, data, offset);
  }
  bool uses_io_uring() const override { return false; }

 private:
  std::unique_ptr<io::FileIo> inner_ = io::make_posix_file_io();
};
}  // namespace

TEST_CASE("a file system that refuses O_DIRECT writes gets buffered ones, not errors", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  auto io = std::make_shared<RefusesDirectIo>();
  SsdCacheOptions o = direct_options(tmp);
  o.io = io;
  auto cache = open_ok(o, clock);
  std::vector<ChunkPtr> chunks;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    chunks.push_back(chunk_of(kSizes[i], 300 + i));
    cache->put(key_of(i), chunks.back());
  }
  cache->flush();
  CHECK(io->refused == 1);  // tried once, then buffered for good
  CHECK(io->buffered == int(kSizes.size()));
  CHECK(cache->counters().errors == 0);
  CHECK_FALSE(cache->degraded());
  for (size_t i = 0; i < kSizes.size(); ++i) {
    ChunkPtr got = cache->get(key_of(i));
    REQUIRE(got);
    CHECK(std::memcmp(got->bytes.data(), chunks[i]->bytes.data(), kSizes[i]) == 0);
  }
}

// The SSD tier's O_DIRECT I/O: records padded to 4 KiB, written and (when large) read around
// the page cache, read back intact, recovered after a restart (also over records written without
// padding), a download's whole chunks written straight from the memory file, and a file system that
// refuses O_DIRECT gets buffered writes instead of errors.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <mutex>
#include <vector>

#include "cache/ssd_cache.h"
#include "common/buffer.h"
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

TEST_CASE("direct writes resume aligned after a restart over records written unpadded", "[ssd]") {
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
  for (size_t i = 3; i < kSizes.size(); ++i)
    expect += (kSizes[i] + 32 + kAlign - 1) / kAlign * kAlign;
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

namespace {

// Chunks as a download makes them: slices of one fill buffer in the memory file, with the
// bytes they should hold.
struct Download {
  std::vector<std::byte> bytes;
  std::vector<ChunkPtr> chunks;
};

Download download_of(const std::vector<size_t>& sizes, uint64_t seed) {
  size_t total = 0;
  for (size_t n : sizes) total += n;
  Download d;
  d.bytes = random_bytes(total, seed);
  std::shared_ptr<std::byte[]> buf = allocate_fill_buffer(total);
  fill_buffer(buf.get(), d.bytes.data(), total);
  size_t at = 0;
  for (size_t n : sizes) {
    d.chunks.push_back(make_chunk_slice(buf, at, n));
    at += n;
  }
  return d;
}

// Forwards to pread/pwrite, and remembers where each write's bytes came from; refuses the
// first `refuse` O_DIRECT writes with EINVAL, like a file system without O_DIRECT writes.
class RecordingIo final : public io::FileIo {
 public:
  explicit RecordingIo(int refuse = 0) : refuse_(refuse) {}
  Result<size_t> read_at(int fd, std::span<std::byte> out, uint64_t offset) override {
    return inner_->read_at(fd, out, offset);
  }
  Status write_at(int fd, std::span<const std::byte> data, uint64_t offset) override {
    {
      std::lock_guard lock(mu_);
      if ((::fcntl(fd, F_GETFL) & O_DIRECT) != 0 && refuse_ > 0) {
        --refuse_;
        return io::errno_status(EINVAL, "pwrite");
      }
      sources_.push_back(data.data());
    }
    return inner_->write_at(fd, data, offset);
  }
  bool uses_io_uring() const override { return false; }
  bool wrote_from(const std::byte* p) const {
    std::lock_guard lock(mu_);
    return std::find(sources_.begin(), sources_.end(), p) != sources_.end();
  }

 private:
  mutable std::mutex mu_;
  int refuse_;
  std::vector<const std::byte*> sources_;
  std::unique_ptr<io::FileIo> inner_ = io::make_posix_file_io();
};

}  // namespace

TEST_CASE("direct writes take a download's whole pages straight from the memory file", "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  // Two whole chunks, an object's short last chunk (not a whole number of blocks), and a
  // small object's whole chunk (below kMemoryFileWriteMinBytes: copied).
  const std::vector<size_t> sizes = {1 << 20, 1 << 20, 100'000, 64 << 10};
  const Download d = download_of(sizes, 400);
  auto io = std::make_shared<RecordingIo>();
  SsdCacheOptions o = direct_options(tmp);
  o.io = io;
  uint64_t padded = 0;
  {
    auto cache = open_ok(o, clock);
    for (size_t i = 0; i < sizes.size(); ++i) {
      cache->put(key_of(i), d.chunks[i]);
      padded += (sizes[i] + 32 + kAlign - 1) / kAlign * kAlign;
    }
    cache->flush();
    CHECK(cache->counters().errors == 0);
    CHECK(cache->counters().inserted_bytes == sizes[0] + sizes[1] + sizes[2] + sizes[3]);
  }
  // The whole large chunks went to the disk from their own pages; the others by a copy.
  CHECK(io->wrote_from(d.chunks[0]->bytes.data()));
  CHECK(io->wrote_from(d.chunks[1]->bytes.data()));
  CHECK_FALSE(io->wrote_from(d.chunks[2]->bytes.data()));
  CHECK_FALSE(io->wrote_from(d.chunks[3]->bytes.data()));
  CHECK(region_file_bytes(tmp.cache()) == padded);
  // Read back (after a restart, from the index and the trailers on disk): the same bytes.
  auto cache = open_ok(direct_options(tmp), clock);
  size_t at = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    INFO("chunk " << i);
    ChunkPtr got = cache->get(key_of(i));
    REQUIRE(got);
    REQUIRE(got->bytes.size() == sizes[i]);
    CHECK(std::memcmp(got->bytes.data(), d.bytes.data() + at, sizes[i]) == 0);
    at += sizes[i];
  }
  CHECK(cache->counters().corrupt_chunks == 0);
}

TEST_CASE("a refused direct write of a download's pages is written whole through the page cache",
          "[ssd]") {
  TempDir tmp;
  FakeClock clock;
  const std::vector<size_t> sizes = {1 << 20, 1 << 20};
  const Download d = download_of(sizes, 500);
  auto io = std::make_shared<RecordingIo>(/*refuse=*/1);
  SsdCacheOptions o = direct_options(tmp);
  o.io = io;
  auto cache = open_ok(o, clock);
  for (size_t i = 0; i < sizes.size(); ++i) cache->put(key_of(i), d.chunks[i]);
  cache->flush();
  CHECK(cache->counters().errors == 0);
  CHECK_FALSE(cache->degraded());
  for (size_t i = 0; i < sizes.size(); ++i) {
    INFO("chunk " << i);
    ChunkPtr got = cache->get(key_of(i));
    REQUIRE(got);
    CHECK(std::memcmp(got->bytes.data(), d.bytes.data() + i * sizes[0], sizes[i]) == 0);
  }
  CHECK(cache->counters().corrupt_chunks == 0);
}

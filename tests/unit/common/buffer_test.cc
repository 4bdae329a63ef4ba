#include "common/buffer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/process_stats.h"

namespace warmfs {

TEST_CASE("buffers of a size class let go are reused, not mapped again", "[buffer]") {
  const size_t n = 8u << 20;
  std::byte* first = nullptr;
  {
    auto a = allocate_buffer(n);
    first = a.get();
    std::memset(a.get(), 0xab, n);  // the whole buffer is usable
    CHECK(reinterpret_cast<uintptr_t>(a.get()) % kHugePageBytes == 0);
  }
  const BufferPoolStats before = buffer_pool_stats();
  CHECK(before.pooled_bytes >= n);
  auto b = allocate_buffer(n - 100);  // same class
  CHECK(b.get() == first);
  const BufferPoolStats after = buffer_pool_stats();
  CHECK(after.reused == before.reused + 1);
  CHECK(after.mapped == before.mapped);
  CHECK(after.pooled_bytes == before.pooled_bytes - n);
}

TEST_CASE("the buffer pool keeps at most its bound and small buffers come from the heap",
          "[buffer]") {
  std::vector<std::shared_ptr<std::byte[]>> many;
  for (size_t i = 0; i < 2 * kPoolMaxBytes / (4u << 20); ++i)
    many.push_back(allocate_buffer(4u << 20));
  many.clear();
  CHECK(buffer_pool_stats().pooled_bytes <= kPoolMaxBytes);
  const BufferPoolStats before = buffer_pool_stats();
  auto small = allocate_buffer(1000);
  small[999] = std::byte{1};
  const BufferPoolStats after = buffer_pool_stats();
  CHECK(after.mapped == before.mapped);
  CHECK(after.reused == before.reused);
}

TEST_CASE("a pool full of one size makes room for the size in use now", "[buffer]") {
  // Fill the pool with large buffers (a burst of read-ahead), then cycle 1 MiB buffers (cache
  // reads) through it: after the first few, each is reused, none mapped afresh.
  {
    std::vector<std::shared_ptr<std::byte[]>> big;
    for (size_t i = 0; i < kPoolMaxBytes / (8u << 20); ++i)
      big.push_back(allocate_buffer(8u << 20));
  }
  CHECK(buffer_pool_stats().pooled_bytes == kPoolMaxBytes);
  const size_t n = (1u << 20) + 4096;
  for (int i = 0; i < 4; ++i) allocate_buffer(n);  // warms the 1 MiB class, pushing large ones out
  const BufferPoolStats before = buffer_pool_stats();
  std::byte* seen = nullptr;
  for (int i = 0; i < 50; ++i) {
    auto b = allocate_buffer(n);
    if (seen != nullptr) CHECK(b.get() == seen);  // the same (still mapped) memory every time
    seen = b.get();
  }
  const BufferPoolStats after = buffer_pool_stats();
  CHECK(after.mapped == before.mapped);
  CHECK(after.reused == before.reused + 50);
  CHECK(after.pooled_bytes <= kPoolMaxBytes);
}

}  // namespace warmfs

namespace warmfs {

TEST_CASE("a fill buffer holds what fill_buffer put in, read in place or from its file",
          "[buffer]") {
  const size_t n = (3u << 20) + 12345;
  std::vector<std::byte> src(n);
  for (size_t i = 0; i < n; ++i) src[i] = std::byte(static_cast<uint8_t>(i * 7 + (i >> 12)));
  auto buf = allocate_fill_buffer(n);
  // In pieces of the size a download hands over, as curl does.
  for (size_t at = 0; at < n; at += 256u << 10) {
    fill_buffer(buf.get() + at, src.data() + at, std::min<size_t>(256u << 10, n - at));
  }
  CHECK(std::memcmp(buf.get(), src.data(), n) == 0);  // through the mapping

  std::vector<std::byte> out(n);
  copy_from_buffer(out.data(), buf.get(), n);  // through the file
  CHECK(out == src);

  auto where = buffer_file(buf.get() + 5000);
  REQUIRE(where.has_value());
  std::vector<std::byte> direct(100);
  REQUIRE(::pread(where->fd, direct.data(), direct.size(), static_cast<off_t>(where->offset)) ==
          100);
  CHECK(std::memcmp(direct.data(), src.data() + 5000, 100) == 0);
  CHECK(buffer_pool_stats().file_bytes >= n);
  CHECK(buffer_file_resident_bytes() >= n);

  // A buffer from allocate_buffer is not in the file, and plain memory copies as memcpy does.
  auto plain = allocate_buffer(n);
  CHECK_FALSE(buffer_file(plain.get()).has_value());
  fill_buffer(plain.get(), src.data(), n);
  copy_from_buffer(out.data(), plain.get(), n);
  CHECK(out == src);
}

TEST_CASE("a small object's fill buffer lands in the memory file too; a tiny one on the heap",
          "[buffer]") {
  // A 64 KiB object is one chunk: its download is a fill buffer of 64 KiB, which goes in by
  // pwrite like a large one (fresh heap pages would be faulted in one by one).
  const uint64_t base = buffer_pool_stats().file_bytes;
  std::vector<std::byte> src(64u << 10);
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::byte(static_cast<uint8_t>(i * 13));
  auto small = allocate_fill_buffer(src.size());
  REQUIRE(buffer_file(small.get()).has_value());
  fill_buffer(small.get(), src.data(), src.size());
  CHECK(std::memcmp(small.get(), src.data(), src.size()) == 0);
  // Its size class is a whole number of pages, not a 64 KiB step: 20 KiB takes 20 KiB.
  auto odd = allocate_fill_buffer(20u << 10);
  REQUIRE(buffer_file(odd.get()).has_value());
  CHECK(buffer_pool_stats().file_bytes - base <= (64u << 10) + (20u << 10));
  auto tiny = allocate_fill_buffer(kFillMinBytes - 1);
  CHECK_FALSE(buffer_file(tiny.get()).has_value());
}

TEST_CASE("pages released from a fill buffer leave its memory file", "[buffer]") {
  const size_t n = 8u << 20;
  std::vector<std::byte> src(n, std::byte{0x5a});
  auto buf = allocate_fill_buffer(n);
  fill_buffer(buf.get(), src.data(), n);
  const uint64_t before = buffer_file_resident_bytes();
  REQUIRE(before >= n);
  release_pages(buf.get() + (1u << 20), 4u << 20);  // a slice whose chunk was evicted
  CHECK(buffer_file_resident_bytes() == before - (4u << 20));
  CHECK(buf[(1u << 20) - 1] == std::byte{0x5a});  // its neighbours keep their bytes
  CHECK(buf[5u << 20] == std::byte{0x5a});
}

TEST_CASE("fill buffers let go are reused, and their ranges are merged for larger ones",
          "[buffer]") {
  const uint64_t base = buffer_pool_stats().file_bytes;
  std::byte* first = nullptr;
  {
    auto a = allocate_fill_buffer(2u << 20);
    first = a.get();
  }
  auto again = allocate_fill_buffer(2u << 20);
  CHECK(again.get() == first);  // from the pool, pages still in the file
  again.reset();

  // Many ranges let go beyond what the pool keeps go back to the file as free ranges; a
  // later, larger buffer is carved from them instead of from new addresses.
  const std::byte* lowest = nullptr;
  const std::byte* highest = nullptr;
  {
    std::vector<std::shared_ptr<std::byte[]>> many;
    for (int i = 0; i < 40; ++i) {
      many.push_back(allocate_fill_buffer(4u << 20));
      const std::byte* p = many.back().get();
      lowest = lowest == nullptr ? p : std::min(lowest, p);
      highest = std::max(highest, p + (4u << 20));
    }
  }
  const uint64_t after_free = buffer_pool_stats().file_bytes;
  CHECK(after_free <= base + kPoolMaxBytes + (2u << 20));
  std::vector<std::byte> src(64u << 20, std::byte{1});
  auto big = allocate_fill_buffer(64u << 20);
  CHECK(big.get() >= lowest);  // in the merged ranges of the 4 MiB buffers let go
  CHECK(big.get() + (64u << 20) <= highest);
  fill_buffer(big.get(), src.data(), src.size());
  CHECK(std::memcmp(big.get(), src.data(), src.size()) == 0);
}

TEST_CASE("a forked child gets a memory file of its own", "[buffer]") {
  auto parent = allocate_fill_buffer(1u << 20);
  std::vector<std::byte> ones(1u << 20, std::byte{1});
  fill_buffer(parent.get(), ones.data(), ones.size());
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The parent's mapping is not inherited; the child's buffers work and are its own.
    std::vector<std::byte> twos(1u << 20, std::byte{2});
    auto child = allocate_fill_buffer(twos.size());
    fill_buffer(child.get(), twos.data(), twos.size());
    const bool ok = std::memcmp(child.get(), twos.data(), twos.size()) == 0 &&
                    buffer_file(child.get()).has_value();
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(std::memcmp(parent.get(), ones.data(), ones.size()) == 0);  // untouched by the child
}

}  // namespace warmfs

namespace warmfs {

TEST_CASE("the memory the process holds counts the memory file, mapped or not", "[buffer]") {
  const size_t n = 16u << 20;
  std::vector<std::byte> src(n, std::byte{3});
  auto buf = allocate_fill_buffer(n);
  fill_buffer(buf.get(), src.data(), n);  // in the file, not mapped: not in the resident set
  const ProcessMemory m = process_memory();
  CHECK(m.memory_file_bytes >= n);
  CHECK(m.memory_file_bytes == buffer_file_resident_bytes());
  CHECK(m.held_bytes >= m.memory_file_bytes);
  CHECK(m.rss_bytes > 0);
}

}  // namespace warmfs

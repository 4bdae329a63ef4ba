#include "common/buffer.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

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

TEST_CASE("the buffer pool keeps at most its bound and small buffers come from the heap", "[buffer]") {
  std::vector<std::shared_ptr<std::byte[]>> many;
  for (size_t i = 0; i < 2 * kPoolMaxBytes / (4u << 20); ++i) many.push_back(allocate_buffer(4u << 20));
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
    for (size_t i = 0; i < kPoolMaxBytes / (8u << 20); ++i) big.push_back(allocate_buffer(8u << 20));
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

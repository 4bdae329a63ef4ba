// make_chunk_slice: the chunks of one range GET share its buffer; a chunk let go while its
// siblings live on gives its pages back, and only when no copy of its bytes is left.
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "cache/block_cache.h"
#include "common/buffer.h"
#include "common/crc32c.h"

using namespace warmfs;

namespace {

constexpr size_t kSlice = 1 << 20;

// Pages of [p, p + n) resident in this process.
size_t resident_pages(const std::byte* p, size_t n) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec(n / page);
  REQUIRE(::mincore(const_cast<std::byte*>(p), n, vec.data()) == 0);
  size_t resident = 0;
  for (unsigned char v : vec) resident += v & 1;
  return resident;
}

}  // namespace

TEST_CASE("a chunk slice let go gives its pages back while its siblings stay intact", "[buffer]") {
  std::shared_ptr<std::byte[]> buf = allocate_buffer(4 * kSlice);
  for (size_t i = 0; i < 4 * kSlice; ++i) buf[i] = std::byte(i * 7 + i / kSlice);
  std::vector<std::byte> expect(buf.get(), buf.get() + 4 * kSlice);
  std::vector<ChunkPtr> chunks;
  for (size_t i = 0; i < 4; ++i) chunks.push_back(make_chunk_slice(buf, i * kSlice, kSlice));
  const std::byte* raw = buf.get();
  buf.reset();  // the chunks own the buffer now
  const size_t pages = kSlice / static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  REQUIRE(resident_pages(raw + kSlice, kSlice) == pages);

  // A copy of chunk 1's bytes keeps them: nothing is released yet.
  ChunkBytes copy = chunks[1]->bytes;
  chunks[1].reset();
  CHECK(resident_pages(raw + kSlice, kSlice) == pages);
  CHECK(std::memcmp(copy.data(), expect.data() + kSlice, kSlice) == 0);
  // The last copy gone: its pages are given back; the other chunks are untouched.
  copy = ChunkBytes();
  CHECK(resident_pages(raw + kSlice, kSlice) == 0);
  for (size_t i : {0, 2, 3}) {
    CHECK(std::memcmp(chunks[i]->bytes.data(), expect.data() + i * kSlice, kSlice) == 0);
    CHECK(chunk_intact(*chunks[i]));
  }
  chunks.clear();  // the buffer goes back to the pool whole, and is usable again
  auto again = allocate_buffer(4 * kSlice);
  std::memset(again.get(), 0x5a, 4 * kSlice);
  CHECK(again[kSlice + 10] == std::byte(0x5a));
}

TEST_CASE("chunks of a fill buffer carry the CRC of their bytes and give their pages back",
          "[chunk_slice]") {
  std::vector<std::byte> src(4 * kSlice);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = std::byte(static_cast<uint8_t>(i * 13 + (i >> 9)));
  auto buf = allocate_fill_buffer(src.size());
  fill_buffer(buf.get(), src.data(), src.size());
  std::vector<ChunkPtr> chunks;
  for (size_t i = 0; i < 4; ++i) chunks.push_back(make_chunk_slice(buf, i * kSlice, kSlice));
  buf.reset();
  for (size_t i = 0; i < 4; ++i) {
    // The CRC, computed from the memory file, is the one of the bytes.
    CHECK(chunks[i]->crc32c == crc32c(std::span<const std::byte>(src.data() + i * kSlice, kSlice)));
    CHECK(chunk_intact(*chunks[i]));
  }
  const uint64_t before = buffer_file_resident_bytes();
  chunks[2].reset();  // its siblings live on: its pages leave the file
  CHECK(buffer_file_resident_bytes() == before - kSlice);
  CHECK(std::memcmp(chunks[3]->bytes.data(), src.data() + 3 * kSlice, kSlice) == 0);
  // A chunk whose bytes changed (here, through the mapping) is no longer intact.
  auto* p = const_cast<std::byte*>(chunks[0]->bytes.data());
  p[100] = ~p[100];
  CHECK_FALSE(chunk_intact(*chunks[0]));
}

#include "cache/block_cache.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string_view>

#include "common/buffer.h"
#include "common/crc32c.h"
#include "common/hash.h"

namespace warmfs {

std::string ChunkKey::encode() const {
  std::string out;
  const std::string idx = std::to_string(index);
  out.reserve(bucket.size() + key.size() + etag.size() + idx.size() + 3);
  out.append(bucket).push_back('\0');
  out.append(key).push_back('\0');
  out.append(etag).push_back('\0');
  out.append(idx);
  return out;
}

namespace {
inline uint64_t combine(uint64_t seed, uint64_t v) {
  return mix64(seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}
}  // namespace

size_t ChunkKeyHash::operator()(const ChunkKey& k) const {
  // Hashes the fields in place: no encode(), so lookups do not allocate.
  const std::hash<std::string_view> h;
  uint64_t seed = h(k.bucket);
  seed = combine(seed, h(k.key));
  seed = combine(seed, h(k.etag));
  seed = combine(seed, k.index);
  return static_cast<size_t>(seed);
}

ChunkBytes::ChunkBytes(std::vector<std::byte> bytes) {
  auto owned = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
  data_ = owned->data();
  size_ = owned->size();
  owner_ = std::move(owned);
}

ChunkPtr make_chunk(std::vector<std::byte> bytes) {
  auto chunk = std::make_shared<Chunk>();
  chunk->crc32c = crc32c(bytes);
  chunk->bytes = ChunkBytes(std::move(bytes));
  return chunk;
}

ChunkPtr make_chunk(std::shared_ptr<const std::byte[]> buffer, size_t offset, size_t size) {
  auto chunk = std::make_shared<Chunk>();
  chunk->bytes = ChunkBytes(std::move(buffer), offset, size);
  chunk->crc32c = crc32c(std::span<const std::byte>(chunk->bytes));
  return chunk;
}

namespace {
struct SliceOwner {
  std::shared_ptr<const std::byte[]> buffer;
  const std::byte* data = nullptr;
  size_t size = 0;
  SliceOwner(std::shared_ptr<const std::byte[]> b, const std::byte* d, size_t n)
      : buffer(std::move(b)), data(d), size(n) {}
  SliceOwner(const SliceOwner&) = delete;
  SliceOwner& operator=(const SliceOwner&) = delete;
  ~SliceOwner() {
    // The last owner of the buffer hands it all back (to the pool) anyway.
    if (buffer.use_count() > 1) release_pages(data, size);
  }
};

// The CRC32C of bytes in a buffer from allocate_buffer or allocate_fill_buffer. A fill
// buffer's bytes are copied out a piece at a time into one small buffer this thread keeps:
// reading them in place would map each page into the process, which costs more than the copy
// on virtual machines (common/buffer.h).
uint32_t buffer_crc32c(const std::byte* data, size_t size) {
  if (!buffer_file(data)) return crc32c(std::span<const std::byte>(data, size));
  constexpr size_t kPiece = 256u << 10;  // stays in the core's cache between copy and CRC
  thread_local std::unique_ptr<std::byte[]> piece(new std::byte[kPiece]);
  uint32_t crc = 0;
  for (size_t at = 0; at < size; at += kPiece) {
    const size_t n = std::min(kPiece, size - at);
    copy_from_buffer(piece.get(), data + at, n);
    crc = crc32c(std::span<const std::byte>(piece.get(), n), crc);
  }
  return crc;
}

}  // namespace

ChunkPtr make_chunk_slice(std::shared_ptr<const std::byte[]> buffer, size_t offset, size_t size,
                          uint32_t crc32c) {
  const std::byte* data = buffer.get() + offset;
  auto owner = std::make_shared<const SliceOwner>(std::move(buffer), data, size);
  auto chunk = std::make_shared<Chunk>();
  chunk->bytes = ChunkBytes::owned_by(std::move(owner), data, size);
  chunk->crc32c = crc32c;
  return chunk;
}

ChunkPtr make_chunk_slice(std::shared_ptr<const std::byte[]> buffer, size_t offset, size_t size) {
  const uint32_t crc = buffer_crc32c(buffer.get() + offset, size);
  return make_chunk_slice(std::move(buffer), offset, size, crc);
}

bool chunk_intact(const Chunk& chunk) {
  return buffer_crc32c(chunk.bytes.data(), chunk.bytes.size()) == chunk.crc32c;
}

}  // namespace warmfs

#include "cache/block_cache.h"

#include <functional>
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
}  // namespace

ChunkPtr make_chunk_slice(std::shared_ptr<const std::byte[]> buffer, size_t offset, size_t size) {
  const std::byte* data = buffer.get() + offset;
  auto owner = std::make_shared<const SliceOwner>(std::move(buffer), data, size);
  auto chunk = std::make_shared<Chunk>();
  chunk->bytes = ChunkBytes::owned_by(std::move(owner), data, size);
  chunk->crc32c = crc32c(std::span<const std::byte>(chunk->bytes));
  return chunk;
}

bool chunk_intact(const Chunk& chunk) {
  return crc32c(std::span<const std::byte>(chunk.bytes)) == chunk.crc32c;
}

}  // namespace warmfs

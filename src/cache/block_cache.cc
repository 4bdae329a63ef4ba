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

void ChunkCrcs::update(std::span<const std::byte> bytes) {
  size_ += bytes.size();
  while (!bytes.empty()) {
    const size_t n = std::min<size_t>(bytes.size(), kCrcBlockBytes - current_bytes_);
    current_ = crc32c(bytes.first(n), current_);
    current_bytes_ += static_cast<uint32_t>(n);
    bytes = bytes.subspan(n);
    if (current_bytes_ == kCrcBlockBytes) {
      blocks_.push_back(current_);
      current_ = 0;
      current_bytes_ = 0;
    }
  }
}

uint32_t ChunkCrcs::finish(std::vector<uint32_t>* blocks) {
  if (current_bytes_ > 0) blocks_.push_back(current_);
  current_ = 0;
  current_bytes_ = 0;
  const uint32_t crc = combine_block_crcs(blocks_, size_);
  *blocks = std::move(blocks_);
  blocks_.clear();
  return crc;
}

uint32_t combine_block_crcs(std::span<const uint32_t> blocks, uint64_t length) {
  if (blocks.empty()) return crc32c(std::span<const std::byte>());
  static const Crc32cCombiner full_block(kCrcBlockBytes);
  uint32_t crc = blocks[0];
  for (size_t i = 1; i + 1 < blocks.size(); ++i) crc = full_block(crc, blocks[i]);
  if (blocks.size() > 1) {
    const uint64_t last = length - (blocks.size() - 1) * uint64_t{kCrcBlockBytes};
    crc = crc32c_combine(crc, blocks.back(), last);
  }
  return crc;
}

namespace {
ChunkPtr chunk_with_crcs(ChunkBytes bytes, ChunkCrcs& crcs) {
  auto chunk = std::make_shared<Chunk>();
  chunk->bytes = std::move(bytes);
  chunk->crc32c = crcs.finish(&chunk->block_crcs);
  return chunk;
}
}  // namespace

ChunkPtr make_chunk(std::vector<std::byte> bytes) {
  ChunkCrcs crcs;
  crcs.update(bytes);
  return chunk_with_crcs(ChunkBytes(std::move(bytes)), crcs);
}

ChunkPtr make_chunk(std::shared_ptr<const std::byte[]> buffer, size_t offset, size_t size) {
  ChunkCrcs crcs;
  crcs.update(std::span<const std::byte>(buffer.get() + offset, size));
  return chunk_with_crcs(ChunkBytes(std::move(buffer), offset, size), crcs);
}

bool BlockCache::read_range(const ChunkKey& key, uint64_t offset, std::span<std::byte> out,
                            bool* /*promote*/) {
  ChunkPtr c = get(key);
  if (!c || offset > c->bytes.size() || out.size() > c->bytes.size() - offset) return false;
  std::memcpy(out.data(), c->bytes.data() + offset, out.size());
  return true;
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

// The CRC32Cs of bytes in a buffer from allocate_buffer or allocate_fill_buffer. A fill
// buffer's bytes are copied out a piece at a time into one small buffer this thread keeps:
// reading them in place would map each page into the process, which costs more than the copy
// on virtual machines (common/buffer.h).
void buffer_crcs(const std::byte* data, size_t size, ChunkCrcs& crcs) {
  if (!buffer_file(data)) return crcs.update(std::span<const std::byte>(data, size));
  constexpr size_t kPiece = 256u << 10;  // stays in the core's cache between copy and CRC
  thread_local std::unique_ptr<std::byte[]> piece(new std::byte[kPiece]);
  for (size_t at = 0; at < size; at += kPiece) {
    const size_t n = std::min(kPiece, size - at);
    copy_from_buffer(piece.get(), data + at, n);
    crcs.update(std::span<const std::byte>(piece.get(), n));
  }
}

uint32_t buffer_crc32c(const std::byte* data, size_t size) {
  if (!buffer_file(data)) return crc32c(std::span<const std::byte>(data, size));
  constexpr size_t kPiece = 256u << 10;
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
                          ChunkCrcs crcs) {
  const std::byte* data = buffer.get() + offset;
  auto owner = std::make_shared<const SliceOwner>(std::move(buffer), data, size);
  return chunk_with_crcs(ChunkBytes::owned_by(std::move(owner), data, size), crcs);
}

ChunkPtr make_chunk_slice(std::shared_ptr<const std::byte[]> buffer, size_t offset, size_t size) {
  ChunkCrcs crcs;
  buffer_crcs(buffer.get() + offset, size, crcs);
  return make_chunk_slice(std::move(buffer), offset, size, std::move(crcs));
}

bool chunk_intact(const Chunk& chunk) {
  return buffer_crc32c(chunk.bytes.data(), chunk.bytes.size()) == chunk.crc32c;
}

}  // namespace warmfs

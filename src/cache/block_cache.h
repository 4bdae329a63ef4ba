// BlockCache: where chunks of objects are kept (memory, SSD, remote), behind two calls.
//
// A chunk is a fixed-size, aligned piece of one object version: chunk i of an object covers
// bytes [i * chunk_size, (i + 1) * chunk_size), the last one shorter. Keys name the object
// version by its ETag, so a chunk is only ever served for the version it came from. Every
// chunk carries a CRC32C of its bytes, computed once when it enters the caches, and checked
// by tiers that store bytes outside process memory.
//
// Every chunk also carries the CRC32C of each kCrcBlockBytes block of its bytes (computed in
// the same pass as the chunk's own, which is derived from them), so a tier that keeps bytes
// outside process memory can serve a few kilobytes of a chunk by reading and checking only
// the blocks that hold them (read_range).
//
// get() returns nullptr on a miss; a failing tier logs a warning and reports a miss rather
// than failing the read. put() may drop the chunk (full, failing). Implementations are
// thread safe.
//
// Tiers compose as decorators over this interface (a TieredCache holding an upper and a lower
// BlockCache, promoting lower hits into the upper tier); MemoryCache (cache/memory_cache.h) is
// the in-process tier.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace warmfs {

// 1 MiB: the FUSE request size (max_read), so one kernel read maps to one chunk; large enough
// that per-request cost is small next to transfer time, and small enough that a random 4 KiB
// read fetches little more than it needs.
inline constexpr uint64_t kDefaultChunkSize = 1 << 20;

// The checksum blocks of a chunk: bytes [i * kCrcBlockBytes, (i + 1) * kCrcBlockBytes) of the
// chunk, the last one shorter. 16 KiB: a random read of a few kilobytes reads one block, which
// costs the disk about what 4 KiB does (docs/ssd-cache.md), while a 1 MiB chunk has 64 of them
// (256 bytes of CRCs beside its index entry).
inline constexpr uint32_t kCrcBlockBytes = 16 << 10;

struct ChunkKey {
  std::string bucket;
  std::string key;
  std::string etag;
  uint64_t index = 0;

  bool operator==(const ChunkKey&) const = default;
  // A single string "bucket\0key\0etag\0index", for hashing and on-disk indexes.
  std::string encode() const;
};

struct ChunkKeyHash {
  size_t operator()(const ChunkKey& k) const;
};

// The bytes of a chunk, read-only once made: owned alone (taken from a vector), or a slice of
// a larger buffer shared with the other chunks one range GET brought in, so a coalesced
// request is split into chunks without copying. The buffer lives while any slice does.
class ChunkBytes {
 public:
  ChunkBytes() = default;
  ChunkBytes(std::vector<std::byte> bytes);  // NOLINT: implicit, takes ownership
  ChunkBytes(std::shared_ptr<const std::byte[]> buffer, size_t offset, size_t size)
      : data_(buffer.get() + offset), size_(size), owner_(std::move(buffer)) {}
  // size bytes at data, kept alive by owner.
  static ChunkBytes owned_by(std::shared_ptr<const void> owner, const std::byte* data,
                             size_t size) {
    ChunkBytes b;
    b.data_ = data;
    b.size_ = size;
    b.owner_ = std::move(owner);
    return b;
  }

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::byte* begin() const { return data_; }
  const std::byte* end() const { return data_ + size_; }
  const std::byte& operator[](size_t i) const { return data_[i]; }
  operator std::span<const std::byte>() const { return {data_, size_}; }  // NOLINT
  // Equal contents.
  friend bool operator==(const ChunkBytes& a, const ChunkBytes& b) {
    return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data_, b.data_, a.size_) == 0);
  }

 private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<const void> owner_;
};

struct Chunk {
  ChunkBytes bytes;
  uint32_t crc32c = 0;
  // CRC32C of each kCrcBlockBytes block of bytes, in order; empty when not known (a chunk
  // made with only its CRC). When present, they combine to crc32c (combine_block_crcs).
  std::vector<uint32_t> block_crcs;
};
using ChunkPtr = std::shared_ptr<const Chunk>;

// The CRC32C of a chunk's bytes and of each of its kCrcBlockBytes blocks, from the bytes given
// in order in pieces of any size: one pass, the chunk's CRC combined from the blocks'.
class ChunkCrcs {
 public:
  void update(std::span<const std::byte> bytes);
  // Bytes seen so far.
  uint64_t size() const { return size_; }
  // The chunk's CRC32C (of every byte given), and its blocks' into *blocks.
  uint32_t finish(std::vector<uint32_t>* blocks);

 private:
  std::vector<uint32_t> blocks_;  // the full blocks so far
  uint32_t current_ = 0;          // CRC of the block being filled
  uint32_t current_bytes_ = 0;
  uint64_t size_ = 0;
};

// Number of checksum blocks of a chunk of `length` bytes.
inline uint64_t crc_block_count(uint64_t length) {
  return (length + kCrcBlockBytes - 1) / kCrcBlockBytes;
}
// The CRC32C of a chunk of `length` bytes from its blocks' CRCs (crc_block_count(length) of
// them), without its bytes.
uint32_t combine_block_crcs(std::span<const uint32_t> blocks, uint64_t length);

// Makes a chunk from bytes, computing its CRC32C.
ChunkPtr make_chunk(std::vector<std::byte> bytes);
// Makes a chunk of bytes [offset, offset + size) of a shared buffer, computing its CRC32C.
ChunkPtr make_chunk(std::shared_ptr<const std::byte[]> buffer, size_t offset, size_t size);
// The same for one of several disjoint slices of a buffer from allocate_buffer (the chunks of
// one range GET): when the last copy of this chunk's bytes goes while the buffer lives on
// (its other chunks still cached), the slice's pages go back to the system, so a buffer
// partly evicted holds memory only for the chunks still in use. Nothing may read the slice
// through the buffer afterwards.
ChunkPtr make_chunk_slice(std::shared_ptr<const std::byte[]> buffer, size_t offset, size_t size);
// The same with the CRC32Cs of the bytes already known (computed as they arrived); crcs has
// seen exactly the slice's bytes.
ChunkPtr make_chunk_slice(std::shared_ptr<const std::byte[]> buffer, size_t offset, size_t size,
                          ChunkCrcs crcs);
// True when the chunk's bytes still match its CRC32C (for tiers that keep bytes outside
// process memory; costs a pass over the bytes).
bool chunk_intact(const Chunk& chunk);

struct BlockCacheCounters {
  uint64_t hits = 0;
  uint64_t hit_bytes = 0;
  uint64_t misses = 0;
  uint64_t inserted_bytes = 0;
  uint64_t evicted_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t capacity_bytes = 0;
  uint64_t corrupt_chunks = 0;
  uint64_t errors = 0;
  // Puts dropped without being stored: write queue full, tier degraded (SSD tier).
  uint64_t dropped_writes = 0;
  // Puts refused by admission: the chunk was asked for less often than what it would evict.
  uint64_t rejected_writes = 0;
  // Hits of read_range() served by reading only the blocks that hold the range.
  uint64_t range_hits = 0;
};

class BlockCache {
 public:
  virtual ~BlockCache() = default;
  virtual ChunkPtr get(const ChunkKey& key) = 0;
  virtual void put(const ChunkKey& key, ChunkPtr chunk) = 0;
  // Bytes [offset, offset + out.size()) of the chunk into out, checked as get() checks a
  // chunk; false on a miss (also when the range is not within the chunk). A tier beneath a
  // faster one (TieredCache) sets *promote when the whole chunk should now go up into the
  // faster tier: the caller then gets it whole, off the reader's path. The default reads the
  // whole chunk with get() and copies the range.
  virtual bool read_range(const ChunkKey& key, uint64_t offset, std::span<std::byte> out,
                          bool* promote = nullptr);
  virtual BlockCacheCounters counters() const = 0;
  // Waits until the puts made so far are stored or dropped, for tiers that queue them (a
  // writer of many chunks calls it now and then, so the queue does not overflow).
  virtual void drain() {}
};

}  // namespace warmfs

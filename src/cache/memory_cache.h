// MemoryCache: the in-process BlockCache tier, bounded by bytes of chunk data.
//
// Sharded by key hash: each shard has its own mutex, hash index and LRU list, so readers of
// different chunks rarely meet on a lock, and a hit costs one shard lock, a list splice and a
// shared_ptr copy (no allocation, no byte copy). The capacity is global and exact: put()
// reserves a chunk's bytes on one atomic counter before inserting, evicting first if needed,
// so used_bytes never exceeds capacity_bytes, even under concurrent puts. Eviction takes the
// least recently used chunk across all shards (each entry remembers when it was last used;
// the oldest LRU tail of the shards goes first), so shards never strand capacity.
//
// Chunks are immutable and keyed by object version, so a put of a key already cached only
// refreshes its recency. An evicted chunk stays alive while readers hold its ChunkPtr; the
// bound counts bytes the cache holds, not bytes readers hold. Bytes are in process memory, so
// get() does not re-verify the CRC.
//
// Thread safe. Lock order: never two shard locks at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "cache/block_cache.h"

namespace warmfs {

struct MemoryCacheOptions {
  // Bytes of chunk data kept; bookkeeping (keys, index) comes on top, ~200 bytes a chunk.
  uint64_t capacity_bytes = 1ull << 30;
  // Independent locks: 16 keeps two dozen reader threads off each other's locks, and costs
  // only a 16-way scan when evicting.
  uint32_t shards = 16;
};

class MemoryCache final : public BlockCache {
 public:
  explicit MemoryCache(MemoryCacheOptions options);
  ~MemoryCache() override;
  MemoryCache(const MemoryCache&) = delete;
  MemoryCache& operator=(const MemoryCache&) = delete;

  // The chunk, or nullptr; a hit makes it the most recently used.
  ChunkPtr get(const ChunkKey& key) override;
  // Caches chunk, evicting least recently used chunks to make room. A null chunk, or one
  // larger than the whole capacity, is dropped.
  void put(const ChunkKey& key, ChunkPtr chunk) override;
  BlockCacheCounters counters() const override;

  // Drops one key; true if it was cached.
  bool erase(const ChunkKey& key);
  // Drops everything (counted as evicted).
  void clear();
  uint64_t used_bytes() const { return used_.load(std::memory_order_relaxed); }
  uint64_t capacity_bytes() const { return capacity_; }

 private:
  struct Shard;
  Shard& shard_for(const ChunkKey& key) const;
  // Adds n to used_ if that stays within capacity_.
  bool try_reserve(uint64_t n);
  // Evicts the least recently used chunk of all shards; false when every shard is empty.
  bool evict_one();

  const uint64_t capacity_;
  const uint32_t shard_count_;
  std::unique_ptr<Shard[]> shards_;
  // Bytes cached plus bytes reserved by puts about to insert; <= capacity_ always.
  std::atomic<uint64_t> used_{0};
};

}  // namespace warmfs

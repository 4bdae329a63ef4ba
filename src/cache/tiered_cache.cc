#include "cache/tiered_cache.h"

namespace warmfs {

ChunkPtr TieredCache::get(const ChunkKey& key) {
  if (ChunkPtr c = upper_.get(key)) return c;
  ChunkPtr c = lower_.get(key);
  if (c) upper_.put(key, c);
  return c;
}

void TieredCache::put(const ChunkKey& key, ChunkPtr chunk) {
  if (!chunk) return;
  upper_.put(key, chunk);
  lower_.put(key, std::move(chunk));
}

BlockCacheCounters TieredCache::counters() const {
  const BlockCacheCounters u = upper_.counters();
  const BlockCacheCounters l = lower_.counters();
  BlockCacheCounters c;
  c.hits = u.hits + l.hits;
  c.hit_bytes = u.hit_bytes + l.hit_bytes;
  c.misses = l.misses;
  c.inserted_bytes = u.inserted_bytes + l.inserted_bytes;
  c.evicted_bytes = u.evicted_bytes + l.evicted_bytes;
  c.used_bytes = u.used_bytes + l.used_bytes;
  c.capacity_bytes = u.capacity_bytes + l.capacity_bytes;
  c.corrupt_chunks = u.corrupt_chunks + l.corrupt_chunks;
  c.errors = u.errors + l.errors;
  c.dropped_writes = u.dropped_writes + l.dropped_writes;
  c.rejected_writes = u.rejected_writes + l.rejected_writes;
  return c;
}

}  // namespace warmfs

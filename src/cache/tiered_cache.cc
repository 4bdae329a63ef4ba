#include "cache/tiered_cache.h"

#include <algorithm>
#include <cstring>

namespace warmfs {

ChunkPtr TieredCache::get(const ChunkKey& key) {
  if (ChunkPtr c = upper_.get(key)) return c;
  ChunkPtr c = lower_.get(key);
  if (c && promote(key)) upper_.put(key, c);
  return c;
}

bool TieredCache::read_range(const ChunkKey& key, uint64_t offset, std::span<std::byte> out,
                             bool* promote_out) {
  if (upper_.read_range(key, offset, out, nullptr)) return true;
  if (!lower_.read_range(key, offset, out, nullptr)) return false;
  if (promote_out != nullptr && promote_range(key)) *promote_out = true;
  return true;
}

void TieredCache::Seen::insert(uint64_t h, size_t window) {
  if (newer.size() >= std::max<size_t>(window / 2, 1)) {
    older.swap(newer);  // the older generation is forgotten; its buckets are reused
    newer.clear();
  }
  newer.insert(h);
}

bool TieredCache::promote(const ChunkKey& key) {
  const uint64_t h = ChunkKeyHash{}(key);
  std::lock_guard lock(seen_mu_);
  if (seen_range_.erase(h)) return true;  // read by a range lately: this is its second hit
  if (options_.promote_after_second_hit == 0) return true;
  if (seen_.erase(h)) return true;
  seen_.insert(h, options_.promote_after_second_hit);
  return false;
}

bool TieredCache::promote_range(const ChunkKey& key) {
  const size_t window = options_.promote_range_after_second_hit != 0
                            ? options_.promote_range_after_second_hit
                        : options_.promote_after_second_hit != 0 ? options_.promote_after_second_hit
                                                                 : kRangePromoteWindow;
  const uint64_t h = ChunkKeyHash{}(key);
  std::lock_guard lock(seen_mu_);
  if (seen_range_.contains(h)) return true;  // left marked for the get() this leads to
  seen_range_.insert(h, window);
  return false;
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
  c.range_hits = u.range_hits + l.range_hits;
  return c;
}

}  // namespace warmfs

// TieredCache: two BlockCaches as one, a fast upper tier (memory) over a larger lower tier
// (SSD).
//
// get() asks the upper tier, then the lower one; a lower hit is put into the upper tier so
// the next read is fast. put() goes to both (the SSD tier only queues it, so this does not
// wait on the disk). Each tier keeps counting its own hits and misses, available from the
// tiers themselves; counters() here describes the stack as one cache to its callers (a hit
// in either tier is a hit; sizes and failures are summed).
//
// Holds references: both tiers must outlive it. Thread safe when both tiers are.
#pragma once

#include "cache/block_cache.h"

namespace warmfs {

class TieredCache final : public BlockCache {
 public:
  TieredCache(BlockCache& upper, BlockCache& lower) : upper_(upper), lower_(lower) {}

  // The upper tier's chunk, else the lower tier's (then also put into the upper tier).
  ChunkPtr get(const ChunkKey& key) override;
  // Puts into both tiers.
  void put(const ChunkKey& key, ChunkPtr chunk) override;
  // hits = upper hits + lower hits, misses = lower misses (asked of both, found in neither);
  // bytes, errors and drops are the tiers' sums.
  BlockCacheCounters counters() const override;
  void drain() override {
    upper_.drain();
    lower_.drain();
  }

  BlockCache& upper() { return upper_; }
  BlockCache& lower() { return lower_; }

 private:
  BlockCache& upper_;
  BlockCache& lower_;
};

}  // namespace warmfs

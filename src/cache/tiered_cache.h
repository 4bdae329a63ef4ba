// TieredCache: two BlockCaches as one, a fast upper tier (memory) over a larger lower tier
// (SSD).
//
// get() asks the upper tier, then the lower one; a lower hit is put into the upper tier so
// the next read is fast, either at once or, with promote_after_second_hit set, only when the
// same chunk was also hit in the lower tier not long before (among the last that many lower
// hits). The second is for memory over an SSD tier: a pass over more data than memory holds
// (say, four 1 GiB objects through a 2 GiB memory tier) would otherwise put every chunk it reads
// into memory, evicting the one read before it, so memory turns over at the read rate and
// every SSD read lands in freshly mapped pages; read once, a chunk is served and let go, and
// its buffer is reused for the next read. A chunk read again soon (random reads, a second
// pass that fits) is promoted on its second hit. put() goes to both (the SSD tier only
// queues it, so this does not wait on the disk). Each tier keeps counting its own hits and
// misses, available from the tiers themselves; counters() here describes the stack as one
// cache to its callers (a hit in either tier is a hit; sizes and failures are summed).
//
// Holds references: both tiers must outlive it. Thread safe when both tiers are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_set>

#include "cache/block_cache.h"

namespace warmfs {

class TieredCache final : public BlockCache {
 public:
  struct Options {
    // 0: every lower hit is promoted. Else: promoted on a second lower hit among about this
    // many recent ones (twice the chunks the upper tier holds is a good size).
    size_t promote_after_second_hit = 0;
    // Range hits (read_range): promoted on a second range hit among about this many recent
    // range hits; 0: the window above, or 1,024 when that is 0 too. Promoting costs a whole
    // chunk read where the range read cost a block, so it is worth it only if the chunk is
    // read again while memory holds it: twice the chunks the upper tier holds, and no more,
    // is a good size (random reads over more than memory holds then promote little).
    size_t promote_range_after_second_hit = 0;
  };
  TieredCache(BlockCache& upper, BlockCache& lower) : TieredCache(upper, lower, Options{}) {}
  TieredCache(BlockCache& upper, BlockCache& lower, Options options)
      : upper_(upper), lower_(lower), options_(options) {}

  // The upper tier's chunk, else the lower tier's (then also put into the upper tier, as
  // Options say).
  ChunkPtr get(const ChunkKey& key) override;
  // Puts into both tiers.
  void put(const ChunkKey& key, ChunkPtr chunk) override;
  // The range from the upper tier, else from the lower tier's range read (so a small read
  // never brings a whole chunk by itself). A lower hit is promoted on a second range hit
  // (Options): then *promote is set and the key stays marked, so the caller's get() of the
  // whole chunk (off the reader's path) promotes it. Without promote, nothing goes up. A
  // get() of a chunk hit by a range read lately is a second hit too.
  bool read_range(const ChunkKey& key, uint64_t offset, std::span<std::byte> out,
                  bool* promote = nullptr) override;
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
  // Hashes of chunks hit once in the lower tier lately, in two generations: when the newer
  // holds half the window, it becomes the older and the older is dropped.
  struct Seen {
    std::unordered_set<uint64_t> newer, older;
    bool contains(uint64_t h) const { return newer.count(h) + older.count(h) > 0; }
    bool erase(uint64_t h) { return newer.erase(h) + older.erase(h) > 0; }
    void insert(uint64_t h, size_t window);
  };
  static constexpr size_t kRangePromoteWindow = 1024;
  // True when key should go up now (a whole hit): always without a window; else on its
  // second lower hit, or after a range hit.
  bool promote(const ChunkKey& key);
  // True when a range hit of key makes it due for promotion; it stays marked for promote().
  bool promote_range(const ChunkKey& key);

  BlockCache& upper_;
  BlockCache& lower_;
  const Options options_;
  std::mutex seen_mu_;  // protects the two sets below
  Seen seen_;           // whole hits
  Seen seen_range_;     // range hits
};

}  // namespace warmfs

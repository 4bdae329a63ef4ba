// The cache tiers of a mount and of a cache server: how --memory-cache-size splits, the SSD
// tier, and the mount's stack of memory over SSD over cache servers (docs/architecture.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cache/block_cache.h"
#include "cache/memory_cache.h"
#include "cache/remote_cache.h"
#include "cache/ssd_cache.h"
#include "cache/tiered_cache.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "warmfs/result.h"

namespace warmfs::cli {

// How --memory-cache-size splits, for mounts and cache servers alike: it bounds all chunk
// memory, so the daemon's resident set stays near the size given: the chunks being read
// ahead (a quarter, 8 to 256 MiB), with an SSD tier the chunks queued for its writer (an
// eighth, at most 64 MiB), the pool of buffers let go (common/buffer.h), and the memory
// tier, the rest (at least half).
struct MemoryBudget {
  uint64_t cache_bytes = 0;
  uint64_t readahead_bytes = 0;
  uint64_t ssd_queue_bytes = 0;  // 0 without an SSD tier
};
MemoryBudget split_memory_budget(uint64_t total_bytes, bool ssd_tier);

// Opens (or creates) an SSD cache tier in dir, of size_bytes (0: 80% of the free space there),
// keeping chunks ttl_sec after their last read (0: until space is needed). For mounts and
// cache servers alike.
// queue_bytes bounds the chunks waiting for the SSD writer (see MemoryBudget).
Result<std::unique_ptr<SsdCache>> open_ssd_tier(const std::string& dir, uint64_t size_bytes,
                                                double ttl_sec, uint64_t queue_bytes, Clock& clock);

// A mount's caches: memory, over the SSD tier with --cache-dir, over cache servers with
// --cache-server. `top` is what the read path reads through.
struct CacheTiers {
  std::unique_ptr<MemoryCache> memory;
  std::unique_ptr<SsdCache> disk;       // with --cache-dir
  std::unique_ptr<TieredCache> tiers;   // memory over what is below it
  std::unique_ptr<RemoteCache> remote;  // with --cache-server: below memory (and disk)
  std::unique_ptr<TieredCache> disk_over_remote;
  BlockCache* top = nullptr;
  uint64_t readahead_bytes = 0;  // the read-ahead's share of --memory-cache-size
};
// chunk_size: the read path's (for the memory tier's promotion policy).
Result<CacheTiers> build_tiers(const MountArgs& a, uint64_t chunk_size, Clock& clock);

}  // namespace warmfs::cli

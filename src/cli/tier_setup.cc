// The cache tiers of mounts and cache servers (cli/tier_setup.h).
#include "cli/tier_setup.h"

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "cli/remote_tier.h"
#include "common/buffer.h"
#include "common/log.h"
#include "common/sizes.h"

namespace warmfs::cli {

MemoryBudget split_memory_budget(uint64_t total_bytes, bool ssd_tier) {
  MemoryBudget b;
  b.readahead_bytes = std::clamp<uint64_t>(total_bytes / 4, 8 * kMiB, 256 * kMiB);
  if (ssd_tier) b.ssd_queue_bytes = std::clamp<uint64_t>(total_bytes / 8, 4 * kMiB, 64 * kMiB);
  const uint64_t pool = std::min<uint64_t>(total_bytes / 8, kPoolMaxBytes);
  const uint64_t others = b.readahead_bytes + b.ssd_queue_bytes + pool;
  b.cache_bytes = std::max(total_bytes / 2, total_bytes - std::min(total_bytes, others));
  return b;
}

// The SSD tier. Without a size it may take 80% of the space free on the cache dir's
// filesystem when it opens: most of a dedicated NVMe, while leaving room for the staging of
// writes, logs and other tenants of the disk.
Result<std::unique_ptr<SsdCache>> open_ssd_tier(const std::string& dir, uint64_t size_bytes,
                                                double ttl_sec, uint64_t queue_bytes,
                                                Clock& clock) {
  SsdCacheOptions o;
  o.dir = dir;
  if (queue_bytes != 0) o.write_queue_bytes = queue_bytes;
  o.capacity_bytes = size_bytes;
  o.ttl = std::chrono::seconds(static_cast<int64_t>(ttl_sec));
  if (o.capacity_bytes == 0) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    struct statvfs vfs {};
    if (::statvfs(dir.c_str(), &vfs) != 0) {
      return Status(Errc::kInvalidArgument, "--cache-dir " + dir + ": " + std::strerror(errno));
    }
    o.capacity_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize / 10 * 8;
  }
  if (o.capacity_bytes < o.region_bytes) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("--cache-size must be at least {} (one region); {} has {}",
                              format_size(o.region_bytes), dir, format_size(o.capacity_bytes)));
  }
  auto disk = SsdCache::open(o, clock);
  if (disk.is_ok()) {
    log::info("SSD cache tier: {} of {} ({})", dir, format_size(o.capacity_bytes),
              (*disk)->uses_io_uring() ? "io_uring" : "pread/pwrite");
  }
  return disk;
}

Result<CacheTiers> build_tiers(const MountArgs& a, uint64_t chunk_size, Clock& clock) {
  CacheTiers t;
  const MemoryBudget budget = split_memory_budget(a.memory_cache_bytes, !a.cache_dir.empty());
  MemoryCacheOptions mco;
  mco.capacity_bytes = budget.cache_bytes;
  t.memory = std::make_unique<MemoryCache>(mco);
  t.readahead_bytes = budget.readahead_bytes;
  BlockCache* cache = t.memory.get();
  // SSD hits go up into memory on their second hit (tiered_cache.h): a pass over more than
  // memory holds is served from the disk without turning memory over
  // (docs/benchmark-misses.md).
  TieredCache::Options disk_promotion;
  disk_promotion.promote_after_second_hit =
      std::max<size_t>(2 * mco.capacity_bytes / chunk_size, 1024);
  // A chunk read by small random reads (range reads of the SSD tier) goes up on a second one
  // only within twice what memory holds: from further apart, memory would not keep it until
  // it is read again, and promoting it costs a whole chunk read (tiered_cache.h).
  disk_promotion.promote_range_after_second_hit =
      std::max<size_t>(2 * mco.capacity_bytes / chunk_size, 1);
  if (!a.cache_dir.empty()) {
    WARMFS_ASSIGN_OR_RETURN(t.disk, open_ssd_tier(a.cache_dir, a.cache_size_bytes, a.cache_ttl_sec,
                                                  budget.ssd_queue_bytes, clock));
    t.tiers = std::make_unique<TieredCache>(*t.memory, *t.disk, disk_promotion);
    cache = t.tiers.get();
  }
  if (!a.cache_servers.empty()) {
    // Cache servers under memory, or under memory and the local SSD tier (docs/cache-server.md).
    WARMFS_ASSIGN_OR_RETURN(t.remote, open_remote_tier(a, clock));
    BlockCache* below = t.remote.get();
    if (t.disk) {
      t.disk_over_remote = std::make_unique<TieredCache>(*t.disk, *t.remote);
      below = t.disk_over_remote.get();
    }
    // With a local SSD tier, memory sits over the disk as without servers, and keeps its
    // promotion policy; over servers alone every hit goes up (a server hit costs a round trip),
    // except small reads' ranges, which go up as over a disk.
    TieredCache::Options remote_promotion;
    remote_promotion.promote_range_after_second_hit = disk_promotion.promote_range_after_second_hit;
    t.tiers = std::make_unique<TieredCache>(*t.memory, *below,
                                            t.disk ? disk_promotion : remote_promotion);
    cache = t.tiers.get();
  }
  t.top = cache;
  return t;
}

}  // namespace warmfs::cli

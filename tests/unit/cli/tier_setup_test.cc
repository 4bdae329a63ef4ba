#include "cli/tier_setup.h"

#include <catch2/catch.hpp>

#include "common/buffer.h"
#include "common/sizes.h"

using warmfs::kMiB;
using warmfs::cli::MemoryBudget;
using warmfs::cli::split_memory_budget;

namespace {
constexpr uint64_t kGiB = 1024 * kMiB;
}

TEST_CASE("memory budget: a quarter for read-ahead, the memory tier the rest after the pool",
          "[cli][budget]") {
  const MemoryBudget b = split_memory_budget(1 * kGiB, false);
  CHECK(b.readahead_bytes == 256 * kMiB);
  CHECK(b.ssd_queue_bytes == 0);
  // 1 GiB - 256 MiB read-ahead - 32 MiB buffer pool.
  CHECK(b.cache_bytes == 1 * kGiB - 256 * kMiB - warmfs::kPoolMaxBytes);
}

TEST_CASE("memory budget: an SSD tier takes an eighth, at most 64 MiB, for its write queue",
          "[cli][budget]") {
  const MemoryBudget b = split_memory_budget(1 * kGiB, true);
  CHECK(b.ssd_queue_bytes == 64 * kMiB);
  CHECK(b.readahead_bytes == 256 * kMiB);
  CHECK(b.cache_bytes == 1 * kGiB - 256 * kMiB - 64 * kMiB - warmfs::kPoolMaxBytes);

  const MemoryBudget small = split_memory_budget(64 * kMiB, true);
  CHECK(small.ssd_queue_bytes == 8 * kMiB);
  CHECK(small.readahead_bytes == 16 * kMiB);
}

TEST_CASE("memory budget: read-ahead is held to 8..256 MiB; memory keeps at least half",
          "[cli][budget]") {
  const MemoryBudget big = split_memory_budget(64 * kGiB, true);
  CHECK(big.readahead_bytes == 256 * kMiB);
  CHECK(big.ssd_queue_bytes == 64 * kMiB);
  CHECK(big.cache_bytes == 64 * kGiB - 256 * kMiB - 64 * kMiB - warmfs::kPoolMaxBytes);

  // The smallest size a mount takes: the floors would exceed it, so memory keeps half.
  const MemoryBudget tiny = split_memory_budget(16 * kMiB, true);
  CHECK(tiny.readahead_bytes == 8 * kMiB);
  CHECK(tiny.ssd_queue_bytes == 4 * kMiB);
  CHECK(tiny.cache_bytes == 8 * kMiB);

  for (uint64_t total : {16 * kMiB, 100 * kMiB, 1 * kGiB, 3 * kGiB, 200 * kGiB}) {
    for (bool ssd : {false, true}) {
      const MemoryBudget b = split_memory_budget(total, ssd);
      INFO("total " << total << " ssd " << ssd);
      CHECK(b.cache_bytes >= total / 2);
      if (total >= 1 * kGiB) {
        CHECK(b.cache_bytes + b.readahead_bytes + b.ssd_queue_bytes <= total);
      }
    }
  }
}

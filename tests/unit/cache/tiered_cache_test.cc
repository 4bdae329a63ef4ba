#include "cache/tiered_cache.h"

#include <catch2/catch.hpp>

#include "cache/memory_cache.h"
#include "cache/ssd_cache.h"
#include "support/fake_clock.h"
#include "unit/cache/ssd_test_util.h"

using namespace warmfs;
using namespace warmfs::testing;

TEST_CASE("tiered cache reads upper then lower, promoting lower hits", "[tiered]") {
  MemoryCache upper({.capacity_bytes = 8192, .shards = 1});
  MemoryCache lower({.capacity_bytes = 1 << 20, .shards = 1});
  TieredCache tiers(upper, lower);
  auto a = chunk_of(4096, 1);
  tiers.put(key_of(0), a);
  CHECK(upper.get(key_of(0)) == a);
  CHECK(lower.get(key_of(0)) == a);
  // Only in the lower tier: served from there and copied up.
  auto b = chunk_of(4096, 2);
  lower.put(key_of(1), b);
  upper.erase(key_of(0));
  CHECK(tiers.get(key_of(1)) == b);
  CHECK(upper.get(key_of(1)) == b);
  CHECK(tiers.get(key_of(0)) == a);
  CHECK(tiers.get(key_of(5)) == nullptr);
  tiers.put(key_of(6), nullptr);  // ignored
  const BlockCacheCounters t = tiers.counters();
  const BlockCacheCounters u = upper.counters();
  const BlockCacheCounters l = lower.counters();
  CHECK(t.hits == u.hits + l.hits);
  CHECK(t.misses == l.misses);
  CHECK(t.used_bytes == u.used_bytes + l.used_bytes);
}

TEST_CASE("tiered cache over memory and ssd survives losing the memory tier", "[tiered][ssd]") {
  TempDir tmp;
  FakeClock clock;
  SsdCacheOptions o;
  o.dir = tmp.cache();
  o.capacity_bytes = 4 << 20;
  o.region_bytes = 1 << 20;
  auto ssd = SsdCache::open(o, clock);
  REQUIRE(ssd.is_ok());
  auto c = chunk_of(100000, 3);
  {
    MemoryCache memory({.capacity_bytes = 1 << 20});
    TieredCache tiers(memory, **ssd);
    tiers.put(key_of(0), c);
    (*ssd)->flush();
    CHECK(tiers.get(key_of(0)) == c);  // from memory
    CHECK((*ssd)->counters().hits == 0);
  }
  MemoryCache fresh({.capacity_bytes = 1 << 20});
  TieredCache tiers(fresh, **ssd);
  ChunkPtr got = tiers.get(key_of(0));
  REQUIRE(got != nullptr);
  CHECK(got->bytes == c->bytes);
  CHECK((*ssd)->counters().hits == 1);
  CHECK(fresh.get(key_of(0)) == got);  // promoted
}

TEST_CASE("with promote_after_second_hit, a lower hit goes up only when read again soon",
          "[tiered]") {
  MemoryCache upper({.capacity_bytes = 1 << 20, .shards = 1});
  MemoryCache lower({.capacity_bytes = 1 << 20, .shards = 1});
  TieredCache tiers(upper, lower, {.promote_after_second_hit = 4});
  for (uint64_t i = 0; i < 8; ++i) lower.put(key_of(i), chunk_of(4096, static_cast<int>(i)));

  // Read once: served from the lower tier, not copied up.
  ChunkPtr first = tiers.get(key_of(0));
  REQUIRE(first != nullptr);
  CHECK(first->bytes == lower.get(key_of(0))->bytes);
  CHECK(upper.get(key_of(0)) == nullptr);
  // Read again while it is remembered: copied up, and the next read is the upper tier's.
  CHECK(tiers.get(key_of(0)) != nullptr);
  CHECK(upper.get(key_of(0)) != nullptr);
  const uint64_t lower_hits = lower.counters().hits;
  CHECK(tiers.get(key_of(0)) != nullptr);
  CHECK(lower.counters().hits == lower_hits);

  // A scan longer than the window: nothing of it is remembered by its next pass, so a
  // second pass is served from the lower tier again and memory holds none of it.
  for (int pass = 0; pass < 2; ++pass) {
    for (uint64_t i = 1; i < 8; ++i) CHECK(tiers.get(key_of(i)) != nullptr);
  }
  for (uint64_t i = 1; i < 8; ++i) CHECK(upper.get(key_of(i)) == nullptr);
  // Within the window, a re-read promotes.
  CHECK(tiers.get(key_of(7)) != nullptr);
  CHECK(upper.get(key_of(7)) != nullptr);
}

#include "cache/eviction.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "cache/block_cache.h"

using namespace warmfs;
using std::chrono::seconds;

namespace {

uint64_t hash_of(uint64_t i) { return ChunkKeyHash{}(ChunkKey{"b", "data", "e", i}); }

// The SSD cache's use of RegionAllocator without the disk: key -> (region, gen).
struct SimCache {
  RegionAllocator alloc;
  std::unordered_map<uint64_t, std::pair<uint32_t, uint64_t>> where;
  std::chrono::steady_clock::time_point now{std::chrono::hours(1)};

  explicit SimCache(EvictionOptions o) : alloc(o) {}

  bool get(uint64_t k) {
    alloc.record_access(hash_of(k));
    auto it = where.find(k);
    if (it == where.end()) return false;
    const RegionInfo& r = alloc.region(it->second.first);
    if (r.gen != it->second.second || r.state == RegionInfo::State::kFree) {
      where.erase(it);
      return false;
    }
    alloc.on_hit(it->second.first, it->second.second, now);
    return true;
  }
  void put(uint64_t k, uint64_t bytes) {
    Placement p = alloc.place(hash_of(k), bytes, now);
    if (!p.admitted) return;
    alloc.on_written(p, bytes);
    where[k] = {p.region, p.gen};
  }
  // Reads keys [first, first + n) in order, filling misses; returns the hit ratio.
  double epoch(uint64_t first, uint64_t n, uint64_t bytes) {
    uint64_t hits = 0;
    for (uint64_t k = first; k < first + n; ++k) {
      if (get(k)) {
        ++hits;
      } else {
        put(k, bytes);
      }
    }
    return double(hits) / double(n);
  }
};

// A FIFO cache of the same number of chunks, the baseline that scans defeat.
double fifo_epoch(std::deque<uint64_t>& fifo, std::unordered_set<uint64_t>& in, size_t cap,
                  uint64_t n) {
  uint64_t hits = 0;
  for (uint64_t k = 0; k < n; ++k) {
    if (in.count(k)) {
      ++hits;
      continue;
    }
    if (fifo.size() == cap) {
      in.erase(fifo.front());
      fifo.pop_front();
    }
    fifo.push_back(k);
    in.insert(k);
  }
  return double(hits) / double(n);
}

}  // namespace

TEST_CASE("frequency sketch counts, saturates and ages", "[eviction]") {
  FrequencySketch s(1024, 10);
  CHECK(s.estimate(hash_of(1)) == 0);
  for (int i = 0; i < 3; ++i) s.record(hash_of(1));
  CHECK(s.estimate(hash_of(1)) == 3);
  for (int i = 0; i < 40; ++i) s.record(hash_of(2));
  CHECK(s.estimate(hash_of(2)) == 15);
  // Keys never seen mostly read as zero.
  int nonzero = 0;
  for (uint64_t k = 100; k < 1100; ++k) nonzero += s.estimate(hash_of(k)) > 0;
  CHECK(nonzero < 10);
  // 10 * 1024 samples in all trigger one aging: counters halve.
  bool aged = false;
  for (uint64_t i = 0; i < 10 * 1024 - 43 && !aged; ++i) aged = s.record(hash_of(5000 + i));
  CHECK(aged);
  CHECK(s.agings() == 1);
  CHECK(s.estimate(hash_of(1)) == 1);
  CHECK(s.estimate(hash_of(2)) == 7);
}

TEST_CASE("regions fill in order, seal, and are reused after eviction", "[eviction]") {
  SimCache c({.region_count = 4, .region_bytes = 1000, .expected_items = 40});
  // 4 regions of 10 chunks of 100 bytes.
  for (uint64_t k = 0; k < 40; ++k) c.put(k, 100);
  CHECK(c.alloc.used_bytes() == 4000);
  for (uint32_t r = 0; r < 4; ++r) CHECK(c.alloc.region(r).live_chunks == 10);
  const uint64_t gen0 = c.alloc.region(0).gen;
  // A chunk nobody asked for is refused when full.
  c.put(100, 100);
  CHECK_FALSE(c.where.count(100));
  // One asked for repeatedly beats the coldest region, which is emptied and refilled.
  for (int i = 0; i < 3; ++i) c.get(200);
  c.put(200, 100);
  REQUIRE(c.where.count(200));
  const uint32_t reused = c.where[200].first;
  CHECK(c.alloc.region(reused).gen > gen0);
  CHECK(c.alloc.region(reused).live_chunks == 1);
  CHECK(c.alloc.used_bytes() == 3100);
  CHECK(c.alloc.used_bytes() <= 4 * 1000);
}

TEST_CASE("a region emptied by removals is free again", "[eviction]") {
  RegionAllocator a({.region_count = 2, .region_bytes = 300, .expected_items = 6});
  const auto now = std::chrono::steady_clock::time_point(std::chrono::hours(1));
  std::vector<Placement> ps;
  for (uint64_t k = 0; k < 4; ++k) {
    ps.push_back(a.place(hash_of(k), 150, now));
    REQUIRE(ps.back().admitted);
    a.on_written(ps.back(), 150);
  }
  CHECK(a.region(0).state == RegionInfo::State::kSealed);
  a.on_removed(ps[0].region, ps[0].gen, 150);
  a.on_removed(ps[1].region, ps[1].gen, 150);
  CHECK(a.region(0).state == RegionInfo::State::kFree);
  CHECK(a.used_bytes() == 300);
  // A removal of an older generation is ignored.
  a.on_removed(ps[0].region, ps[0].gen, 150);
  CHECK(a.used_bytes() == 300);
}

TEST_CASE("admission resists repeated scans larger than the cache", "[eviction]") {
  // 64 regions of 16 chunks = 1024 chunks; the dataset is twice that, read in order.
  constexpr uint64_t kChunks = 1024;
  SimCache c({.region_count = 64, .region_bytes = 16 * 100, .expected_items = kChunks});
  std::deque<uint64_t> fifo;
  std::unordered_set<uint64_t> in;
  for (int epoch = 1; epoch <= 12; ++epoch) {
    const double tiny = c.epoch(0, 2 * kChunks, 100);
    const double base = fifo_epoch(fifo, in, kChunks, 2 * kChunks);
    std::printf("[eviction] scan epoch %2d: tinylfu hit ratio %.3f, fifo %.3f (agings %llu)\n",
                epoch, tiny, base, static_cast<unsigned long long>(c.alloc.sketch_agings()));
    if (epoch >= 2) {
      CHECK(tiny >= 0.35);
      CHECK(base == 0.0);
    }
    CHECK(c.alloc.used_bytes() <= 64 * 16 * 100);
  }
  CHECK(c.alloc.sketch_agings() >= 1);  // the run crossed at least one aging
}

TEST_CASE("a new working set replaces one nobody reads any more", "[eviction]") {
  constexpr uint64_t kChunks = 256;
  SimCache c({.region_count = 16, .region_bytes = 16 * 100, .expected_items = kChunks});
  for (int e = 0; e < 4; ++e) c.epoch(0, kChunks, 100);  // dataset A fills the cache
  CHECK(c.epoch(0, kChunks, 100) == 1.0);
  // Dataset B, half the cache, read over and over.
  double ratio = 0;
  int epochs = 0;
  while (ratio < 0.9 && epochs < 60) {
    ratio = c.epoch(100000, kChunks / 2, 100);
    ++epochs;
  }
  std::printf("[eviction] new working set reached hit ratio %.2f after %d epochs\n", ratio, epochs);
  CHECK(ratio >= 0.9);
}

TEST_CASE("regions idle for the ttl expire", "[eviction]") {
  RegionAllocator a(
      {.region_count = 2, .region_bytes = 300, .expected_items = 6, .ttl = seconds(10)});
  auto now = std::chrono::steady_clock::time_point(std::chrono::hours(1));
  Placement p = a.place(hash_of(1), 100, now);
  a.on_written(p, 100);
  CHECK(a.expire(now + seconds(5)).empty());
  a.on_hit(p.region, p.gen, now + seconds(8));
  CHECK(a.expire(now + seconds(15)).empty());
  auto gone = a.expire(now + seconds(19));
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].live_bytes == 100);
  CHECK(a.used_bytes() == 0);
  CHECK(a.region(p.region).state == RegionInfo::State::kFree);
}

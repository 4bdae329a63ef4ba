#include "cache/memory_cache.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <random>
#include <thread>
#include <vector>

#include "common/crc32c.h"

using namespace warmfs;

namespace {

ChunkKey key_of(uint64_t index, std::string etag = "e1") {
  return ChunkKey{"bucket", "dir/object", std::move(etag), index};
}

ChunkPtr chunk_of(size_t size, uint8_t fill) {
  return make_chunk(std::vector<std::byte>(size, std::byte{fill}));
}

}  // namespace

TEST_CASE("chunk keys encode, compare and hash by every field", "[cache]") {
  const ChunkKey a{"b", "k", "e", 7};
  CHECK(a.encode() == std::string("b\0k\0e\0"
                                  "7",
                                  7));
  CHECK(ChunkKey{"b", "k", "e", 7} == a);
  CHECK_FALSE(ChunkKey{"b", "k", "f", 7} == a);
  const ChunkKeyHash h;
  CHECK(h(a) == h(ChunkKey{"b", "k", "e", 7}));
  CHECK(h(a) != h(ChunkKey{"b", "k", "e", 8}));
  CHECK(h(a) != h(ChunkKey{"b", "k", "e2", 7}));
  // Field boundaries matter: ("ab", "c") is not ("a", "bc").
  CHECK(h(ChunkKey{"b", "ab", "c", 0}) != h(ChunkKey{"b", "a", "bc", 0}));
}

TEST_CASE("make_chunk carries the CRC32C of its bytes", "[cache]") {
  const std::string s = "123456789";
  ChunkPtr c = make_chunk(std::vector<std::byte>(reinterpret_cast<const std::byte*>(s.data()),
                                                 reinterpret_cast<const std::byte*>(s.data()) + 9));
  CHECK(c->crc32c == 0xE3069283u);
  CHECK(chunk_intact(*c));
  std::vector<std::byte> flipped(c->bytes.begin(), c->bytes.end());
  flipped[3] = std::byte{'x'};
  Chunk damaged{ChunkBytes(std::move(flipped)), c->crc32c};
  CHECK_FALSE(chunk_intact(damaged));
}

TEST_CASE("memory cache hits, misses and counts", "[cache]") {
  MemoryCache cache({.capacity_bytes = 1000, .shards = 4});
  CHECK(cache.get(key_of(0)) == nullptr);
  auto c = chunk_of(100, 1);
  cache.put(key_of(0), c);
  CHECK(cache.get(key_of(0)) == c);
  CHECK(cache.get(key_of(0, "other-etag")) == nullptr);
  const BlockCacheCounters k = cache.counters();
  CHECK(k.hits == 1);
  CHECK(k.hit_bytes == 100);
  CHECK(k.misses == 2);
  CHECK(k.inserted_bytes == 100);
  CHECK(k.used_bytes == 100);
  CHECK(k.capacity_bytes == 1000);
  // Same key again: kept once.
  cache.put(key_of(0), chunk_of(100, 1));
  CHECK(cache.used_bytes() == 100);
  CHECK(cache.erase(key_of(0)));
  CHECK_FALSE(cache.erase(key_of(0)));
  CHECK(cache.used_bytes() == 0);
}

TEST_CASE("memory cache evicts least recently used first, across shards", "[cache]") {
  const uint32_t shards = GENERATE(1u, 16u);
  MemoryCache cache({.capacity_bytes = 400, .shards = shards});
  for (uint64_t i = 0; i < 4; ++i) cache.put(key_of(i), chunk_of(100, uint8_t(i)));
  REQUIRE(cache.used_bytes() == 400);
  // Touch 0 and 2: the order from oldest becomes 1, 3, 0, 2.
  REQUIRE(cache.get(key_of(0)));
  REQUIRE(cache.get(key_of(2)));
  cache.put(key_of(4), chunk_of(100, 4));
  CHECK(cache.get(key_of(1)) == nullptr);
  CHECK(cache.get(key_of(3)) != nullptr);  // now the newest
  cache.put(key_of(5), chunk_of(200, 5));  // needs two: 0 and 2 go
  CHECK(cache.get(key_of(0)) == nullptr);
  CHECK(cache.get(key_of(2)) == nullptr);
  CHECK(cache.get(key_of(3)) != nullptr);
  CHECK(cache.get(key_of(4)) != nullptr);
  CHECK(cache.get(key_of(5)) != nullptr);
  CHECK(cache.used_bytes() == 400);
  CHECK(cache.counters().evicted_bytes == 300);
}

TEST_CASE("memory cache drops what cannot fit and holds nothing at capacity 0", "[cache]") {
  MemoryCache cache({.capacity_bytes = 100, .shards = 2});
  cache.put(key_of(0), chunk_of(101, 0));
  CHECK(cache.get(key_of(0)) == nullptr);
  cache.put(key_of(1), nullptr);
  CHECK(cache.used_bytes() == 0);
  MemoryCache none({.capacity_bytes = 0});
  none.put(key_of(0), chunk_of(1, 0));
  CHECK(none.get(key_of(0)) == nullptr);
}

TEST_CASE("an evicted chunk stays valid for a reader holding it", "[cache]") {
  MemoryCache cache({.capacity_bytes = 100, .shards = 1});
  cache.put(key_of(0), chunk_of(100, 7));
  ChunkPtr held = cache.get(key_of(0));
  cache.put(key_of(1), chunk_of(100, 8));
  CHECK(cache.get(key_of(0)) == nullptr);
  CHECK(held->bytes[99] == std::byte{7});
  CHECK(chunk_intact(*held));
}

TEST_CASE("memory cache never exceeds its capacity under concurrent puts and gets", "[cache]") {
  constexpr uint64_t kCapacity = 64 * 1024;
  MemoryCache cache({.capacity_bytes = kCapacity, .shards = 16});
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> peak{0};
  std::atomic<uint64_t> bad{0};
  std::thread watcher([&] {
    while (!stop.load()) {
      const uint64_t u = cache.used_bytes();
      if (u > peak.load()) peak.store(u);
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 20000; ++i) {
        const uint64_t index = rng() % 256;
        // Sizes vary per key (fixed for a key, like chunks of one version).
        const size_t size = 512 + (index * 37) % 3584;
        if (rng() % 2) {
          cache.put(key_of(index), chunk_of(size, uint8_t(index)));
        } else if (ChunkPtr c = cache.get(key_of(index))) {
          if (c->bytes.size() != size || c->bytes[0] != std::byte(uint8_t(index))) bad++;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  stop = true;
  watcher.join();
  CHECK(bad.load() == 0);
  CHECK(peak.load() <= kCapacity);
  const BlockCacheCounters c = cache.counters();
  CHECK(c.used_bytes <= kCapacity);
  CHECK(c.used_bytes > kCapacity / 2);  // eviction frees only what is needed
  CHECK(c.inserted_bytes - c.evicted_bytes == c.used_bytes);
  cache.clear();
  CHECK(cache.used_bytes() == 0);
}

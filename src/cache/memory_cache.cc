#include "cache/memory_cache.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace warmfs {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Puts that keep losing the race for space (others filling it as we evict) give up: a
// dropped put is allowed, a livelock is not.
constexpr int kMaxEvictAttempts = 64;

}  // namespace

struct alignas(64) MemoryCache::Shard {
  struct Entry {
    ChunkPtr chunk;
    int64_t last_use_ns = 0;
    std::list<const ChunkKey*>::iterator lru_pos;
  };

  std::mutex mu;  // protects everything below
  // Keys live once, in the index nodes (stable addresses); the LRU list points at them.
  std::unordered_map<ChunkKey, Entry, ChunkKeyHash> index;
  std::list<const ChunkKey*> lru;  // front: most recently used
  uint64_t hits = 0;
  uint64_t hit_bytes = 0;
  uint64_t misses = 0;
  uint64_t inserted_bytes = 0;
  uint64_t evicted_bytes = 0;

  // Removes the LRU tail; returns its chunk so the caller frees it outside the lock.
  ChunkPtr pop_tail() {
    const ChunkKey* k = lru.back();
    lru.pop_back();
    auto it = index.find(*k);
    ChunkPtr chunk = std::move(it->second.chunk);
    index.erase(it);
    evicted_bytes += chunk->bytes.size();
    return chunk;
  }
};

MemoryCache::MemoryCache(MemoryCacheOptions options)
    : capacity_(options.capacity_bytes),
      shard_count_(std::max<uint32_t>(1, options.shards)),
      shards_(std::make_unique<Shard[]>(shard_count_)) {}

MemoryCache::~MemoryCache() = default;

MemoryCache::Shard& MemoryCache::shard_for(const ChunkKey& key) const {
  // High bits: the index's hash table uses the low ones.
  const uint64_t h = ChunkKeyHash{}(key);
  return shards_[(h >> 40) % shard_count_];
}

ChunkPtr MemoryCache::get(const ChunkKey& key) {
  Shard& s = shard_for(key);
  const int64_t now = now_ns();
  std::lock_guard lock(s.mu);
  auto it = s.index.find(key);
  if (it == s.index.end()) {
    ++s.misses;
    return nullptr;
  }
  Shard::Entry& e = it->second;
  s.lru.splice(s.lru.begin(), s.lru, e.lru_pos);
  e.last_use_ns = now;
  ++s.hits;
  s.hit_bytes += e.chunk->bytes.size();
  return e.chunk;
}

bool MemoryCache::try_reserve(uint64_t n) {
  uint64_t cur = used_.load(std::memory_order_relaxed);
  do {
    if (cur + n > capacity_) return false;
  } while (!used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  return true;
}

bool MemoryCache::evict_one() {
  // Find the shard whose LRU tail is oldest, one lock at a time; then evict its tail, which
  // may have changed meanwhile (then we evict a slightly younger chunk, which is harmless).
  uint32_t victim = shard_count_;
  int64_t oldest = std::numeric_limits<int64_t>::max();
  for (uint32_t i = 0; i < shard_count_; ++i) {
    Shard& s = shards_[i];
    std::lock_guard lock(s.mu);
    if (s.lru.empty()) continue;
    const int64_t t = s.index.find(*s.lru.back())->second.last_use_ns;
    if (t < oldest) {
      oldest = t;
      victim = i;
    }
  }
  if (victim == shard_count_) return false;
  ChunkPtr freed;
  {
    Shard& s = shards_[victim];
    std::lock_guard lock(s.mu);
    if (s.lru.empty()) return true;  // emptied meanwhile: the caller retries
    freed = s.pop_tail();
  }
  used_.fetch_sub(freed->bytes.size(), std::memory_order_relaxed);
  return true;
}

void MemoryCache::put(const ChunkKey& key, ChunkPtr chunk) {
  if (!chunk) return;
  const uint64_t n = chunk->bytes.size();
  if (n > capacity_) return;
  Shard& s = shard_for(key);
  const int64_t now = now_ns();
  auto refresh_if_cached = [&]() {
    auto it = s.index.find(key);
    if (it == s.index.end()) return false;
    s.lru.splice(s.lru.begin(), s.lru, it->second.lru_pos);
    it->second.last_use_ns = now;
    return true;
  };
  {
    std::lock_guard lock(s.mu);
    if (refresh_if_cached()) return;
  }
  int attempts = 0;
  while (!try_reserve(n)) {
    if (++attempts > kMaxEvictAttempts || !evict_one()) return;
  }
  std::lock_guard lock(s.mu);
  if (refresh_if_cached()) {  // another put of this key won the race
    used_.fetch_sub(n, std::memory_order_relaxed);
    return;
  }
  auto [it, inserted] = s.index.try_emplace(key);
  s.lru.push_front(&it->first);
  it->second.chunk = std::move(chunk);
  it->second.last_use_ns = now;
  it->second.lru_pos = s.lru.begin();
  s.inserted_bytes += n;
}

bool MemoryCache::erase(const ChunkKey& key) {
  Shard& s = shard_for(key);
  ChunkPtr freed;
  {
    std::lock_guard lock(s.mu);
    auto it = s.index.find(key);
    if (it == s.index.end()) return false;
    freed = std::move(it->second.chunk);
    s.lru.erase(it->second.lru_pos);
    s.index.erase(it);
  }
  used_.fetch_sub(freed->bytes.size(), std::memory_order_relaxed);
  return true;
}

void MemoryCache::clear() {
  for (uint32_t i = 0; i < shard_count_; ++i) {
    Shard& s = shards_[i];
    std::vector<ChunkPtr> freed;
    {
      std::lock_guard lock(s.mu);
      freed.reserve(s.lru.size());
      while (!s.lru.empty()) freed.push_back(s.pop_tail());
    }
    uint64_t bytes = 0;
    for (const auto& c : freed) bytes += c->bytes.size();
    used_.fetch_sub(bytes, std::memory_order_relaxed);
  }
}

BlockCacheCounters MemoryCache::counters() const {
  BlockCacheCounters c;
  for (uint32_t i = 0; i < shard_count_; ++i) {
    Shard& s = shards_[i];
    std::lock_guard lock(s.mu);
    c.hits += s.hits;
    c.hit_bytes += s.hit_bytes;
    c.misses += s.misses;
    c.inserted_bytes += s.inserted_bytes;
    c.evicted_bytes += s.evicted_bytes;
  }
  c.used_bytes = used_bytes();
  c.capacity_bytes = capacity_;
  return c;
}

}  // namespace warmfs

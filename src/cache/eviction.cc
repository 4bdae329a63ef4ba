#include "cache/eviction.h"

#include <algorithm>
#include <limits>

#include "common/hash.h"

namespace warmfs {
namespace {

// Counters per item and row: at a load of 1/8 a key collides in all four rows rarely enough
// that few one-time keys look popular.
constexpr uint64_t kCountersPerItem = 8;
constexpr uint64_t kMaxWidth = 1ull << 22;

uint64_t next_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

FrequencySketch::FrequencySketch(uint64_t expected_items, uint32_t sample_factor) {
  const uint64_t items = std::max<uint64_t>(expected_items, 64);
  const uint64_t width = std::min(next_pow2(items * kCountersPerItem), kMaxWidth);
  mask_ = width - 1;
  table_.assign(width * kRows, 0);
  sample_limit_ = items * std::max<uint32_t>(sample_factor, 1);
}

size_t FrequencySketch::slot(int row, uint64_t hash) const {
  static constexpr uint64_t kSeeds[kRows] = {0x9e3779b97f4a7c15ULL, 0xc2b2ae3d27d4eb4fULL,
                                             0x165667b19e3779f9ULL, 0x27d4eb2f165667c5ULL};
  return static_cast<size_t>(row) * (mask_ + 1) + (mix64(hash ^ kSeeds[row]) & mask_);
}

uint32_t FrequencySketch::estimate(uint64_t hash) const {
  uint8_t m = kMaxCount;
  for (int r = 0; r < kRows; ++r) m = std::min(m, table_[slot(r, hash)]);
  return m;
}

bool FrequencySketch::record(uint64_t hash) {
  // Conservative update: only the counters at the minimum grow, which keeps collisions from
  // inflating estimates of keys that share some of the counters.
  const uint8_t m = static_cast<uint8_t>(estimate(hash));
  if (m < kMaxCount) {
    for (int r = 0; r < kRows; ++r) {
      uint8_t& c = table_[slot(r, hash)];
      if (c == m) ++c;
    }
  }
  if (++samples_ < sample_limit_) return false;
  age();
  return true;
}

void FrequencySketch::age() {
  for (uint8_t& c : table_) c >>= 1;
  samples_ = 0;
  ++agings_;
}

RegionAllocator::RegionAllocator(EvictionOptions options)
    : options_(options),
      sketch_(options.expected_items, options.sample_factor),
      regions_(options.region_count) {}

void RegionAllocator::record_access(uint64_t key_hash) {
  if (!sketch_.record(key_hash)) return;
  for (RegionInfo& r : regions_) r.score /= 2;
}

void RegionAllocator::on_hit(uint32_t region, uint64_t gen, TimePoint now) {
  if (region >= regions_.size()) return;
  RegionInfo& r = regions_[region];
  if (r.gen != gen || r.state == RegionInfo::State::kFree) return;
  ++r.score;
  r.last_access = std::max(r.last_access, now);
}

int RegionAllocator::free_slot() const {
  for (size_t i = 0; i < regions_.size(); ++i) {
    if (regions_[i].state == RegionInfo::State::kFree) return static_cast<int>(i);
  }
  return -1;
}

int RegionAllocator::victim() const {
  int best = -1;
  for (size_t i = 0; i < regions_.size(); ++i) {
    const RegionInfo& r = regions_[i];
    if (r.state != RegionInfo::State::kSealed) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const RegionInfo& b = regions_[best];
    // Compare score/live_chunks without division: a/x < b/y <=> a*y < b*x.
    const unsigned __int128 lhs =
        static_cast<unsigned __int128>(r.score) * std::max<uint64_t>(b.live_chunks, 1);
    const unsigned __int128 rhs =
        static_cast<unsigned __int128>(b.score) * std::max<uint64_t>(r.live_chunks, 1);
    if (lhs < rhs || (lhs == rhs && r.gen < b.gen)) best = static_cast<int>(i);
  }
  return best;
}

bool RegionAllocator::beats(uint32_t frequency, uint64_t score, uint64_t chunks) {
  // frequency > mean + 1, i.e. frequency * n > score + n: see kAdmissionMargin in the header.
  const uint64_t n = std::max<uint64_t>(chunks, 1);
  return static_cast<unsigned __int128>(frequency) * n > static_cast<unsigned __int128>(score) + n;
}

void RegionAllocator::open(uint32_t r, TimePoint now, bool by_eviction) {
  RegionInfo& info = regions_[r];
  info = RegionInfo{};
  info.state = RegionInfo::State::kOpen;
  info.gen = next_gen_++;
  info.last_access = now;
  open_ = static_cast<int>(r);
  open_by_eviction_ = by_eviction;
}

EvictedRegion RegionAllocator::empty(uint32_t r) {
  RegionInfo& info = regions_[r];
  EvictedRegion e{r, info.gen, info.live_bytes};
  used_bytes_ -= info.live_bytes;
  if (open_ == static_cast<int>(r)) open_ = -1;
  info.state = RegionInfo::State::kFree;
  info.live_bytes = 0;
  info.live_chunks = 0;
  info.score = 0;
  info.write_end = 0;
  return e;
}

Placement RegionAllocator::place(uint64_t key_hash, uint64_t record_bytes, TimePoint now) {
  Placement p;
  p.frequency = std::max<uint32_t>(sketch_.estimate(key_hash), 1);
  if (record_bytes > options_.region_bytes || regions_.empty()) return p;
  const bool fits_open =
      open_ >= 0 && regions_[open_].write_end + record_bytes <= options_.region_bytes;
  if (!fits_open && open_ >= 0) {
    if (regions_[open_].live_chunks == 0) {
      empty(static_cast<uint32_t>(open_));  // nothing of it is indexed: reuse the slot
    } else {
      regions_[open_].state = RegionInfo::State::kSealed;
      open_ = -1;
    }
  }
  const int free = open_ < 0 ? free_slot() : -1;
  if (open_ < 0 && free >= 0) {
    open(static_cast<uint32_t>(free), now, /*by_eviction=*/false);
    p.opened = true;
  } else if (open_ < 0) {
    // Full: the chunk must beat the region that would go next.
    const int v = victim();
    if (v < 0) return p;
    const RegionInfo& vr = regions_[static_cast<uint32_t>(v)];
    if (!beats(p.frequency, vr.score, vr.live_chunks)) return p;
    const uint64_t displaced_score = vr.score;
    const uint64_t displaced_chunks = vr.live_chunks;
    p.evicted.push_back(empty(static_cast<uint32_t>(v)));
    open(static_cast<uint32_t>(v), now, /*by_eviction=*/true);
    displaced_score_ = displaced_score;
    displaced_chunks_ = displaced_chunks;
    p.opened = true;
  } else if (open_by_eviction_) {
    // Chunks appended to a region that took an evicted one's place must beat what it
    // displaced, so no scan rides along on one admitted chunk, while a new working set that
    // beat the old one keeps filling the slot it won.
    if (!beats(p.frequency, displaced_score_, displaced_chunks_)) return p;
  }
  RegionInfo& r = regions_[open_];
  p.admitted = true;
  p.region = static_cast<uint32_t>(open_);
  p.gen = r.gen;
  p.offset = r.write_end;
  r.write_end += record_bytes;
  return p;
}

void RegionAllocator::on_written(const Placement& p, uint64_t data_bytes) {
  RegionInfo& r = regions_[p.region];
  if (r.gen != p.gen || r.state == RegionInfo::State::kFree) return;
  r.live_bytes += data_bytes;
  ++r.live_chunks;
  r.score += p.frequency;
  used_bytes_ += data_bytes;
}

void RegionAllocator::on_removed(uint32_t region, uint64_t gen, uint64_t data_bytes) {
  if (region >= regions_.size()) return;
  RegionInfo& r = regions_[region];
  if (r.gen != gen || r.state == RegionInfo::State::kFree || r.live_chunks == 0) return;
  const uint64_t mean = r.score / r.live_chunks;
  r.score -= std::min(r.score, mean);
  r.live_bytes -= std::min(r.live_bytes, data_bytes);
  used_bytes_ -= std::min(used_bytes_, data_bytes);
  --r.live_chunks;
  if (r.live_chunks == 0 && r.state == RegionInfo::State::kSealed) empty(region);
}

std::vector<EvictedRegion> RegionAllocator::expire(TimePoint now) {
  std::vector<EvictedRegion> out;
  if (options_.ttl.count() <= 0) return out;
  for (uint32_t i = 0; i < regions_.size(); ++i) {
    const RegionInfo& r = regions_[i];
    if (r.state == RegionInfo::State::kFree) continue;
    if (now - r.last_access >= options_.ttl) out.push_back(empty(i));
  }
  return out;
}

void RegionAllocator::restore(uint32_t region, const RegionInfo& info) {
  if (region >= regions_.size()) return;
  RegionInfo& r = regions_[region];
  if (r.state != RegionInfo::State::kFree) used_bytes_ -= r.live_bytes;
  r = info;
  used_bytes_ += r.live_bytes;
  next_gen_ = std::max(next_gen_, r.gen + 1);
  if (r.state == RegionInfo::State::kOpen) {
    if (open_ >= 0 && open_ != static_cast<int>(region)) {
      regions_[open_].state = RegionInfo::State::kSealed;
    }
    open_ = static_cast<int>(region);
    open_by_eviction_ = false;
  } else if (open_ == static_cast<int>(region)) {
    open_ = -1;
  }
}

}  // namespace warmfs

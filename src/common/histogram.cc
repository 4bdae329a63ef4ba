#include "common/histogram.h"

#include <algorithm>
#include <cmath>

namespace warmfs {

size_t Histogram::bucket_of(uint64_t v) {
  if (v < kSubBuckets) return static_cast<size_t>(v);
  const int e = 63 - __builtin_clzll(v);  // >= kSubBucketBits
  const int shift = e - kSubBucketBits;
  const size_t sub = static_cast<size_t>(v >> shift) & (kSubBuckets - 1);
  return kSubBuckets + static_cast<size_t>(shift) * kSubBuckets + sub;
}

uint64_t Histogram::bucket_lower(size_t index) {
  if (index < kSubBuckets) return index;
  const size_t shift = (index - kSubBuckets) / kSubBuckets;
  const uint64_t sub = (index - kSubBuckets) % kSubBuckets;
  return (kSubBuckets + sub) << shift;
}

uint64_t Histogram::bucket_upper(size_t index) {
  if (index < kSubBuckets) return index;
  const size_t shift = (index - kSubBuckets) / kSubBuckets;
  return bucket_lower(index) + ((uint64_t{1} << shift) - 1);
}

void Histogram::record(uint64_t us) {
  buckets_[bucket_of(us)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(us, std::memory_order_relaxed);
  uint64_t cur = max_.load(std::memory_order_relaxed);
  while (us > cur && !max_.compare_exchange_weak(cur, us, std::memory_order_relaxed)) {
  }
  cur = min_.load(std::memory_order_relaxed);
  while (us < cur && !min_.compare_exchange_weak(cur, us, std::memory_order_relaxed)) {
  }
}

uint64_t Histogram::percentile(double p) const {
  std::array<uint64_t, kBuckets> snap;
  uint64_t total = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    snap[i] = buckets_[i].load(std::memory_order_relaxed);
    total += snap[i];
  }
  if (total == 0) return 0;
  const uint64_t lo = min_.load(std::memory_order_relaxed);
  const uint64_t hi = max_.load(std::memory_order_relaxed);
  p = std::clamp(p, 0.0, 100.0);
  if (p >= 100.0) return hi;
  const auto rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p / 100.0 * double(total))));
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += snap[i];
    if (seen >= rank) {
      const uint64_t l = bucket_lower(i);
      const uint64_t mid = l + (bucket_upper(i) - l) / 2;
      return std::clamp(mid, std::min(lo, hi), hi);
    }
  }
  return hi;
}

double Histogram::mean() const {
  const uint64_t n = count();
  return n == 0 ? 0.0 : double(sum()) / double(n);
}

void Histogram::clear() {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  min_.store(UINT64_MAX, std::memory_order_relaxed);
  max_.store(0, std::memory_order_relaxed);
}

}  // namespace warmfs

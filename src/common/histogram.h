// Histogram: a latency distribution in microseconds, for p50/p99 in `warmfs stats`.
//
// Log-linear buckets: values below 16 are exact; above, every power of two is split into 16
// equal buckets, so a reported percentile is within about 3% of the true one (the bucket
// midpoint is reported). 976 buckets cover the whole uint64_t range with no configuration.
//
// Thread safe without locks: record() is a few relaxed atomic adds on a fixed array and
// never allocates, so it can sit on the read path. Readers (percentile, count) see a
// snapshot that may be mid-update by a few samples, which is fine for statistics.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace warmfs {

class Histogram {
 public:
  static constexpr int kSubBucketBits = 4;
  static constexpr size_t kSubBuckets = size_t{1} << kSubBucketBits;
  static constexpr size_t kBuckets = kSubBuckets + (64 - kSubBucketBits) * kSubBuckets;

  Histogram() = default;
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void record(uint64_t us);
  // The value at percentile p (0..100, clamped) of what was recorded; 0 when empty.
  // percentile(100) is the largest value recorded; otherwise the bucket's midpoint, clamped
  // to the range of recorded values.
  uint64_t percentile(double p) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t sum() const { return sum_.load(std::memory_order_relaxed); }
  uint64_t max() const { return max_.load(std::memory_order_relaxed); }
  double mean() const;
  // Samples in bucket `index` (< kBuckets) so far, for exporters that want the distribution.
  uint64_t bucket_count(size_t index) const {
    return buckets_[index].load(std::memory_order_relaxed);
  }
  // Forgets everything. Samples recorded concurrently may be half kept.
  void clear();

  // Bucket arithmetic, exposed for tests.
  static size_t bucket_of(uint64_t v);
  static uint64_t bucket_lower(size_t index);
  static uint64_t bucket_upper(size_t index);  // inclusive

 private:
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> min_{UINT64_MAX};
  std::atomic<uint64_t> max_{0};
};

}  // namespace warmfs

#include "metrics/histogram_export.h"

#include <array>
#include <cstddef>

namespace warmfs::metrics {
namespace {

constexpr int kFirstExp = 3;  // 8 µs
constexpr int kLastExp = 26;  // 67 s
constexpr size_t kBounds = kLastExp - kFirstExp + 1;

const std::array<double, kBounds>& bounds() {
  static const std::array<double, kBounds> b = [] {
    std::array<double, kBounds> out{};
    for (size_t i = 0; i < kBounds; ++i)
      out[i] = static_cast<double>(uint64_t{1} << (kFirstExp + static_cast<int>(i))) / 1e6;
    return out;
  }();
  return b;
}

}  // namespace

std::span<const double> exported_bounds_seconds() { return bounds(); }

HistogramData export_microseconds(const Histogram& h, std::optional<double> sum_seconds) {
  HistogramData d;
  d.buckets.reserve(kBounds);
  uint64_t seen = 0;
  size_t index = 0;  // next log-linear bucket to add
  for (size_t i = 0; i < kBounds; ++i) {
    // Every sample below 2^k µs sits in a bucket below bucket_of(2^k), whose lower edge is 2^k.
    const size_t edge = Histogram::bucket_of(uint64_t{1} << (kFirstExp + static_cast<int>(i)));
    for (; index < edge; ++index) seen += h.bucket_count(index);
    d.buckets.emplace_back(bounds()[i], seen);
  }
  for (; index < Histogram::kBuckets; ++index) seen += h.bucket_count(index);
  d.count = seen;
  d.sum = sum_seconds ? *sum_seconds : static_cast<double>(h.sum()) / 1e6;
  return d;
}

void accumulate(HistogramData& a, const HistogramData& b) {
  if (a.buckets.empty()) {
    a.buckets = b.buckets;
  } else {
    for (size_t i = 0; i < a.buckets.size() && i < b.buckets.size(); ++i)
      a.buckets[i].second += b.buckets[i].second;
  }
  a.count += b.count;
  a.sum += b.sum;
}

}  // namespace warmfs::metrics

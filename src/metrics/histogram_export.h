// Prometheus histograms from warmfs's latency histograms (common/histogram.h), at no cost
// to whoever records: the export reads the log-linear buckets' relaxed counters at scrape
// time and sums them into cumulative buckets.
//
// The exported upper bounds are 2^k microseconds, k = 3..26 (8 µs to 67 s, doubling), in
// seconds. They fall on bucket edges of the log-linear histogram, so each cumulative count
// is exact: le=2^k µs counts the samples below 2^k whole microseconds (samples are recorded
// truncated to whole microseconds). _count is the sum of the buckets read, so +Inf always
// equals _count even while samples land during the read. Pure; thread safe.
#pragma once

#include <optional>
#include <span>

#include "common/histogram.h"
#include "metrics/exposition.h"

namespace warmfs::metrics {

// The exported upper bounds, in seconds, ascending.
std::span<const double> exported_bounds_seconds();

// h as a Prometheus histogram in seconds. _sum is sum_seconds when given (a finer total the
// caller keeps), else h's sum of whole microseconds.
HistogramData export_microseconds(const Histogram& h,
                                  std::optional<double> sum_seconds = std::nullopt);

// Adds b's buckets, count and sum into a (same bounds), for one series over several sources.
void accumulate(HistogramData& a, const HistogramData& b);

}  // namespace warmfs::metrics

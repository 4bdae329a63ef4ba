#include "common/histogram.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

using warmfs::Histogram;

TEST_CASE("histogram buckets are exact below 16 and within 1/16 above", "[common]") {
  for (uint64_t v = 0; v < 16; ++v) CHECK(Histogram::bucket_lower(Histogram::bucket_of(v)) == v);
  for (uint64_t v : {16ull, 17ull, 100ull, 1000ull, 123456ull, 1ull << 40, ~0ull}) {
    const size_t b = Histogram::bucket_of(v);
    INFO("v " << v);
    CHECK(b < Histogram::kBuckets);
    CHECK(Histogram::bucket_lower(b) <= v);
    CHECK(Histogram::bucket_upper(b) >= v);
    CHECK(double(Histogram::bucket_upper(b) - Histogram::bucket_lower(b)) <= double(v) / 16.0);
  }
  // Buckets tile the line: each starts right after the previous one ends.
  for (size_t b = 1; b < Histogram::kBuckets; ++b) {
    REQUIRE(Histogram::bucket_lower(b) == Histogram::bucket_upper(b - 1) + 1);
  }
  CHECK(Histogram::bucket_upper(Histogram::kBuckets - 1) == ~0ull);
}

TEST_CASE("histogram percentiles of a uniform distribution", "[common]") {
  Histogram h;
  CHECK(h.percentile(50) == 0);
  for (uint64_t v = 1; v <= 10000; ++v) h.record(v);
  CHECK(h.count() == 10000);
  CHECK(h.max() == 10000);
  CHECK(h.mean() == Approx(5000.5));
  CHECK(double(h.percentile(50)) == Approx(5000).epsilon(0.04));
  CHECK(double(h.percentile(99)) == Approx(9900).epsilon(0.04));
  CHECK(double(h.percentile(1)) == Approx(100).epsilon(0.04));
  CHECK(h.percentile(100) == 10000);
  CHECK(h.percentile(0) == 1);
}

TEST_CASE("histogram of a skewed latency: p99 sees the tail", "[common]") {
  Histogram h;
  for (int i = 0; i < 980; ++i) h.record(200);
  for (int i = 0; i < 20; ++i) h.record(50000);
  CHECK(double(h.percentile(50)) == Approx(200).epsilon(0.04));
  CHECK(double(h.percentile(99)) == Approx(50000).epsilon(0.04));
  h.clear();
  CHECK(h.count() == 0);
  CHECK(h.percentile(99) == 0);
}

TEST_CASE("histogram records from many threads without losing samples", "[common]") {
  Histogram h;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < 10000; ++i) h.record(uint64_t(t * 1000 + i % 1000));
    });
  }
  for (auto& t : threads) t.join();
  CHECK(h.count() == 80000);
  CHECK(h.max() == 7999);
}

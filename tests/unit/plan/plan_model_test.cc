#include "plan/plan_model.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "common/sizes.h"

using namespace warmfs::plan;
using warmfs::kMiB;

namespace {

Dataset files(uint64_t count, uint64_t size) {
  Dataset d;
  for (uint64_t i = 0; i < count; ++i) add_object(d, size);
  return d;
}

// 1 MiB chunks in a 64 MiB region: records of 1 MiB + 32 B padded to 4 KiB, 63 per region.
constexpr uint64_t kRecordsPerRegion = 63;

const Scenario& scenario(const Plan& p, const std::string& name) {
  for (const Scenario& s : p.scenarios) {
    if (s.name == name) return s;
  }
  FAIL("no scenario " << name);
  return p.scenarios.front();
}

}  // namespace

TEST_CASE("plan: a dataset's chunks and GETs", "[plan]") {
  Dataset d;
  add_object(d, 0);             // no chunk, no GET
  add_object(d, 64 * 1024);     // 1 chunk, 1 GET
  add_object(d, 1 * kMiB + 1);  // 2 chunks, 1 GET
  add_object(d, 20 * kMiB);     // 20 chunks, 3 GETs of 8 MiB runs
  CHECK(d.objects == 4);
  CHECK(d.bytes == 64 * 1024 + kMiB + 1 + 20 * kMiB);
  CHECK(d.chunks == 23);
  CHECK(d.requests == 5);
}

TEST_CASE("plan: bucket time is bound by the request rate or the byte rate", "[plan]") {
  Rates r;
  r.bucket_requests_per_sec = 50;
  r.bucket_bytes_per_sec = 100.0 * kMiB;
  CHECK(bucket_seconds(r, 100, 100.0 * kMiB) == Approx(2.0));  // requests: 100 / 50
  CHECK(bucket_seconds(r, 10, 300.0 * kMiB) == Approx(3.0));   // bytes: 300 / 100
  CHECK(bucket_seconds(r, 0, 0) == 0);
}

TEST_CASE("plan: the SSD tier holds whole regions of padded records", "[plan]") {
  CHECK(ssd_record_bytes(kMiB) == kMiB + 4096);
  CHECK(ssd_record_bytes(64 * 1024) == 68 * 1024);
  CHECK(ssd_record_bytes(4096 - 32) == 4096);
  CHECK(ssd_usable_bytes(64 * kMiB, kMiB) == kRecordsPerRegion * kMiB);
  CHECK(ssd_usable_bytes(100 * kMiB, kMiB) == kRecordsPerRegion * kMiB);  // one region only
  CHECK(ssd_usable_bytes(63 * kMiB, kMiB) == 0);
  // 64 KiB chunks: records of 68 KiB, 963 to a region.
  CHECK(ssd_usable_bytes(128 * kMiB, 64 * 1024) == 2 * 963 * 64 * 1024ull);
}

TEST_CASE("plan: LRU over shuffled epochs, closed form", "[plan]") {
  CHECK(lru_shuffled_hit_ratio(0) == 0);
  CHECK(lru_shuffled_hit_ratio(1) == 1);
  CHECK(lru_shuffled_hit_ratio(2) == 1);
  CHECK(lru_shuffled_hit_ratio(0.5) == Approx(0.5 + 0.5 * std::log(0.5)));  // 0.153
}

TEST_CASE("plan: the memory tier's simulation agrees with the closed form", "[plan]") {
  // 4,096 chunks, a memory tier of half of them, no SSD: LRU over shuffled epochs.
  const auto hits =
      simulate_cache(CacheSim{.dataset_chunks = 4096, .memory_bytes = 2048 * kMiB, .epochs = 4});
  REQUIRE(hits.size() == 4);
  CHECK(hits[0].local() == 0);  // every chunk is read once in the first epoch
  for (size_t e = 1; e < 4; ++e) {
    CHECK(hits[e].ssd == 0);
    CHECK(hits[e].memory == Approx(lru_shuffled_hit_ratio(0.5)).margin(0.02));
  }
}

TEST_CASE("plan: a dataset twice the SSD tier keeps the part first cached", "[plan]") {
  // 128 chunks of 1 MiB, one region (63 chunks), no memory: TinyLFU keeps what the first
  // epoch cached, so later epochs hit 63/128 (LRU would hit far less), until the sketch first
  // ages (every 10 x 64 lookups: in epoch 5).
  const auto hits = simulate_cache(
      CacheSim{.dataset_chunks = 128, .memory_bytes = 0, .ssd_bytes = 64 * kMiB, .epochs = 4});
  REQUIRE(hits.size() == 4);
  CHECK(hits[0].local() == 0);
  for (size_t e = 1; e < hits.size(); ++e) {
    CHECK(hits[e].ssd == Approx(63.0 / 128).margin(0.01));
  }
}

TEST_CASE("plan: one unlucky replay empties a one-region tier; the median is kept", "[plan]") {
  // The replay with seed 1 has a chunk whose sketch estimate collides high enough to beat the
  // only region in epoch 2: that region is evicted whole, and epoch 3 hits almost nothing.
  const CacheSim sim{
      .dataset_chunks = 128, .memory_bytes = 0, .ssd_bytes = 64 * kMiB, .epochs = 3, .seed = 1};
  const auto unlucky = simulate_cache_once(sim);
  CHECK(unlucky[2].local() < 0.1);
  const auto hits = simulate_cache(sim);
  CHECK(hits[2].local() == Approx(63.0 / 128).margin(0.01));
  CHECK(hits[2].worst_local == Approx(unlucky[2].local()));
}

TEST_CASE("plan: a dataset smaller than the caches is all local from epoch 2", "[plan]") {
  for (uint64_t memory : {uint64_t{0}, 256 * kMiB}) {
    const auto hits = simulate_cache(CacheSim{
        .dataset_chunks = 100, .memory_bytes = memory, .ssd_bytes = 256 * kMiB, .epochs = 3});
    CHECK(hits[0].local() == 0);
    CHECK(hits[1].local() == Approx(1.0));
    CHECK(hits[2].local() == Approx(1.0));
  }
}

TEST_CASE("plan: no cache, no hits; node caches then pull what streaming pulls", "[plan]") {
  const auto hits = simulate_cache(CacheSim{.dataset_chunks = 500, .epochs = 3});
  for (const EpochHits& h : hits) CHECK(h.local() == 0);

  const Dataset d = files(500, kMiB);
  Rates r{.bucket_requests_per_sec = 100,
          .bucket_bytes_per_sec = 100.0 * kMiB,
          .disk_read_bytes_per_sec = 1000.0 * kMiB,
          .disk_write_bytes_per_sec = 500.0 * kMiB};
  const Plan p = make_plan(d, Cluster{.epochs = 3}, r);
  const Scenario& node = scenario(p, "node-cache");
  const Scenario& stream = scenario(p, "streaming");
  CHECK(node.total_bucket_bytes() == Approx(stream.total_bucket_bytes()));
  CHECK(stream.epochs[0].seconds == Approx(5.0));  // 500 GETs at 100/s
  CHECK(p.recommended == "streaming");
  CHECK_FALSE(scenario(p, "cache-server").feasible);
  CHECK_FALSE(scenario(p, "staged-copy").feasible);  // no disk
}

TEST_CASE("plan: nodes each read their share; a node's cache fills over epochs", "[plan]") {
  // 256 chunks over 4 nodes, a node's SSD holds them all: a node reads a random quarter each
  // epoch, so after k epochs it holds 1 - (3/4)^k of the dataset and epoch k + 1 hits that.
  const auto hits = simulate_cache(
      CacheSim{.dataset_chunks = 256, .ssd_bytes = 1024 * kMiB, .fraction = 0.25, .epochs = 4});
  CHECK(hits[0].local() == 0);
  CHECK(hits[1].local() == Approx(0.25).margin(0.08));
  CHECK(hits[2].local() == Approx(1 - 0.75 * 0.75).margin(0.08));
  CHECK(hits[3].local() == Approx(1 - 0.75 * 0.75 * 0.75).margin(0.08));
}

TEST_CASE("plan: hand-computed epochs of the four scenarios", "[plan]") {
  // 200 objects of 1 MiB; the bucket 50 GETs/s and 100 MiB/s; the disk 200 MiB/s both ways.
  const Dataset d = files(200, kMiB);
  const Rates r{.bucket_requests_per_sec = 50,
                .bucket_bytes_per_sec = 100.0 * kMiB,
                .disk_read_bytes_per_sec = 200.0 * kMiB,
                .disk_write_bytes_per_sec = 200.0 * kMiB};
  const Cluster c{.epochs = 5,
                  .jobs = 2,
                  .nodes = 1,
                  .memory_tier_bytes = 0,
                  .ssd_bytes = 256 * kMiB,  // 4 regions, 252 chunks: the whole dataset
                  .server_ssd_bytes = 256 * kMiB,
                  .server_memory_bytes = 0};
  const Plan p = make_plan(d, c, r);

  const Scenario& stream = scenario(p, "streaming");
  REQUIRE(stream.epochs.size() == 5);
  CHECK(stream.epochs[0].seconds == Approx(4.0));                    // 200 GETs at 50/s
  CHECK(stream.epochs[0].bucket_bytes == Approx(2 * 200.0 * kMiB));  // both jobs

  const Scenario& node = scenario(p, "node-cache");
  // Epoch 1: all from the bucket (4 s), written to disk meanwhile (1 s); then all local,
  // read at 200 MiB/s: 1 s.
  CHECK(node.epochs[0].seconds == Approx(4.0));
  CHECK(node.epochs[0].bucket_bytes == Approx(2 * 200.0 * kMiB));
  for (size_t e = 1; e < 5; ++e) {
    CHECK(node.epochs[e].ssd_hit == Approx(1.0));
    CHECK(node.epochs[e].bucket_bytes == 0);
    CHECK(node.epochs[e].seconds == Approx(1.0));
  }

  const Scenario& server = scenario(p, "cache-server");
  REQUIRE(server.feasible);
  // Two jobs' reads interleave: the server pulls each chunk once, then serves the rest.
  CHECK(server.epochs[0].bucket_bytes == Approx(200.0 * kMiB).margin(1));
  CHECK(server.epochs[0].server_hit == Approx(0.5));
  CHECK(server.epochs[1].bucket_bytes == 0);

  const Scenario& staged = scenario(p, "staged-copy");
  REQUIRE(staged.feasible);
  CHECK(staged.prep_seconds == Approx(4.0));
  CHECK(staged.prep_bucket_bytes == Approx(2 * 200.0 * kMiB));  // a copy per node
  CHECK(staged.epochs[0].seconds == Approx(1.0));
  CHECK(staged.total_seconds() == Approx(9.0));
  CHECK(node.total_seconds() == Approx(8.0));
  // The node cache is fastest: the staged copy pays the same download before epoch 1.
  CHECK(p.recommended == "node-cache");
  CHECK_THAT(p.reason, Catch::Contains("from epoch 2"));
}

TEST_CASE("plan: a staged copy must fit a node's disk", "[plan]") {
  const Dataset d = files(100, kMiB);
  const Rates r{.bucket_requests_per_sec = 100, .bucket_bytes_per_sec = 100.0 * kMiB};
  const Plan p = make_plan(d, Cluster{.epochs = 2, .ssd_bytes = 64 * kMiB}, r);
  const Scenario& staged = scenario(p, "staged-copy");
  CHECK_FALSE(staged.feasible);
  CHECK_THAT(staged.why_not, Catch::Contains("does not fit"));
}

TEST_CASE("plan: large datasets are simulated scaled down, same ratios", "[plan]") {
  // 10 M chunks (10 TiB) and 5 TiB of SSD: scaled to kMaxSimChunks, still about half.
  const auto hits = simulate_cache(
      CacheSim{.dataset_chunks = 10'000'000, .ssd_bytes = 5'000'000 * kMiB, .epochs = 3});
  CHECK(hits[0].local() == 0);
  CHECK(hits[2].local() == Approx(0.5 * 63.0 / 64).margin(0.03));
}

// The arithmetic of `warmfs plan`: given a dataset's shape, a cluster (epochs, jobs, nodes,
// cache sizes) and measured rates (bucket, local disk), the time and the bytes pulled from the
// bucket per epoch for four ways to feed the jobs, the hit ratios to expect, and which way to
// choose and why (docs/loaders.md, "warmfs plan").
//
// Hit ratios are not a closed formula: warmfs's SSD tier admits and evicts TinyLFU-style by
// whole regions (cache/eviction.h), and with chunks much smaller than the 1 MiB its frequency
// sketch is sized for, or with few regions, what it keeps depends on the sketch's collisions
// and the regions' scores. So simulate_cache() replays shuffled epochs through warmfs's own
// RegionAllocator, an LRU of the memory tier's size (MemoryCache) and TieredCache's promotion
// of second SSD hits: the policy code itself, not a model of it. Large datasets are simulated
// scaled down (same ratios of dataset, cache and memory; at most kMaxSimChunks chunks). The
// closed form lru_shuffled_hit_ratio() is the memory tier's alone, a check of the simulation.
//
// No I/O, no clock: deterministic for a given input (the shuffles use a fixed seed).
// Not thread safe per call's input; calls are independent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace warmfs::plan {

// What is read each epoch: the whole dataset, once, in a fresh uniform shuffle, split evenly
// over the nodes of a job (each node a random 1/nodes of it, as DistributedSampler does).
struct Dataset {
  uint64_t objects = 0;
  uint64_t bytes = 0;
  uint64_t chunks = 0;    // 1 MiB chunks (an object's last chunk may be short): cache entries
  uint64_t requests = 0;  // range GETs to read every object once (read-ahead runs)
};

// Counts an object of `size` bytes into d: its 1 MiB chunks, and its GETs when read whole, one
// per kRunBytes (read-ahead fetches runs of chunks with one GET; its window starts at 4 chunks
// and doubles, so a few MiB is typical of an object read once, cold).
inline constexpr uint64_t kRunBytes = 8ull << 20;
void add_object(Dataset& d, uint64_t size);

// Rates measured by the probe (plan_probe.h) or given.
struct Rates {
  // The bucket with `inflight` requests in flight, for requests of the dataset's size.
  double bucket_requests_per_sec = 0;
  double bucket_bytes_per_sec = 0;
  double first_byte_sec = 0;  // one small GET alone: shown, and a floor per request
  double disk_read_bytes_per_sec = 0;
  double disk_write_bytes_per_sec = 0;
  // What one cache server serves to all nodes together (its disk or its network, whichever
  // is slower); 0: the disk read rate.
  double server_bytes_per_sec = 0;
};

struct Cluster {
  uint32_t epochs = 1;
  uint32_t jobs = 1;                 // jobs reading the dataset at once, each on its own nodes
  uint32_t nodes = 1;                // nodes per job
  uint64_t memory_tier_bytes = 0;    // each node's memory tier (its share of --memory-cache-size)
  uint64_t ssd_bytes = 0;            // each node's SSD tier (and its room for a staged copy)
  uint64_t server_ssd_bytes = 0;     // one shared cache server's SSD tier; 0: none
  uint64_t server_memory_bytes = 0;  // its memory tier
};

// ---- hit ratios ----------------------------------------------------------------------

inline constexpr uint64_t kRegionBytes = 64ull << 20;  // SsdCacheOptions::region_bytes
inline constexpr uint64_t kChunkBytes = 1ull << 20;    // kDefaultChunkSize
inline constexpr uint64_t kRecordTrailer = 32;         // ssd_record::kTrailerBytes
inline constexpr uint64_t kRecordAlign = 4096;         // SsdCache::kDirectAlign
inline constexpr uint64_t kMaxSimChunks = 1ull << 17;  // above: simulated scaled down
inline constexpr uint32_t kMaxSimRegions = 256;        // above: fewer, larger regions
inline constexpr uint32_t kMaxSimEpochs = 8;           // later epochs: the mean of 2..8

struct CacheSim {
  uint64_t dataset_chunks = 0;
  uint64_t chunk_bytes = kChunkBytes;  // mean chunk size of the dataset
  uint64_t memory_bytes = 0;           // memory tier; 0: none
  uint64_t ssd_bytes = 0;              // SSD tier; 0: none
  // Readers of this cache: each epoch every reader reads `fraction` of the dataset (a random
  // part of a fresh shuffle); several readers' reads interleave at random.
  uint32_t readers = 1;
  double fraction = 1.0;
  uint32_t epochs = 1;
  uint64_t seed = 1;
};

struct EpochHits {
  double memory = 0;  // of all chunk reads, the share the memory tier served
  double ssd = 0;     // the share the SSD tier served
  double local() const { return memory + ssd; }
  // The lowest local share among the replays: what an unlucky set of chunk hashes gives.
  double worst_local = 0;
};

// Replays with different hashes and shuffles: what the SSD tier keeps depends on which keys
// collide in its frequency sketch, and with few regions one inflated estimate evicts a whole
// region, so single replays of the same setup differ.
inline constexpr uint32_t kSimReplays = 5;

// One entry per epoch (cache.epochs of them): the median replay's shares (by local share),
// from kSimReplays replays through warmfs's policies (seeds cache.seed and up).
std::vector<EpochHits> simulate_cache(const CacheSim& cache);

// One replay with cache.seed.
std::vector<EpochHits> simulate_cache_once(const CacheSim& cache);

// An LRU cache holding `ratio` (cache / dataset) of a dataset read in a fresh uniform shuffle
// every epoch: the share of reads it serves after the first epoch, c + (1 - c) ln(1 - c)
// (a read hits when fewer than the cache's size of other items were read since its last read;
// that count is a fraction 1 - (1 - x)(1 - y) of the dataset, x and y uniform). 1 for c >= 1.
double lru_shuffled_hit_ratio(double ratio);

// The bytes an SSD record of a chunk takes: the chunk and its trailer, padded to 4 KiB.
uint64_t ssd_record_bytes(uint64_t chunk_bytes);

// Bytes the SSD tier holds of chunks of chunk_bytes: whole regions only, records padded.
uint64_t ssd_usable_bytes(uint64_t ssd_bytes, uint64_t chunk_bytes);

// ---- time and bytes ------------------------------------------------------------------

// Seconds to fetch `requests` GETs of `bytes` in all: bound by the request rate or the byte
// rate, whichever is slower.
double bucket_seconds(const Rates& r, double requests, double bytes);

struct EpochPlan {
  uint32_t epoch = 0;
  double seconds = 0;       // one node's epoch, wall time
  double bucket_bytes = 0;  // pulled from the bucket by all nodes of all jobs
  double memory_hit = 0;    // shares of the chunk reads (per node; server: at the server)
  double ssd_hit = 0;
  double server_hit = 0;
  double local_hit() const { return memory_hit + ssd_hit; }
  double worst_hit = 0;  // the lowest local (or server) share among the replays
};

struct Scenario {
  std::string name;   // "streaming", "node-cache", "cache-server", "staged-copy"
  std::string title;  // for the table
  bool feasible = true;
  std::string why_not;      // when not feasible
  double prep_seconds = 0;  // before epoch 1 (staging the copy)
  double prep_bucket_bytes = 0;
  std::vector<EpochPlan> epochs;
  double total_seconds() const;
  double total_bucket_bytes() const;
};

struct Plan {
  std::vector<Scenario> scenarios;
  std::string recommended;  // a scenario's name
  std::string reason;
};

Plan make_plan(const Dataset& d, const Cluster& c, const Rates& r);

}  // namespace warmfs::plan

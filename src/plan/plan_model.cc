#include "plan/plan_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_set>

#include "cache/eviction.h"
#include "common/hash.h"
#include "common/sizes.h"

namespace warmfs::plan {
namespace {

// The memory tier: MemoryCache evicts the least recently used chunk (its shards share one
// exact capacity, so across shards it is one LRU). A list over chunk ids, in arrays.
class Lru {
 public:
  Lru(uint64_t items, uint64_t capacity)
      : prev_(items, kNone), next_(items, kNone), in_(items, false), capacity_(capacity) {}
  bool hit(uint64_t id) {
    if (!in_[id]) return false;
    unlink(id);
    push_front(id);
    return true;
  }
  void insert(uint64_t id) {
    if (capacity_ == 0 || in_[id]) return;
    if (size_ == capacity_) {
      const uint64_t victim = tail_;
      unlink(victim);
      in_[victim] = false;
      --size_;
    }
    push_front(id);
    in_[id] = true;
    ++size_;
  }

 private:
  static constexpr uint64_t kNone = UINT64_MAX;
  void unlink(uint64_t id) {
    if (prev_[id] != kNone) next_[prev_[id]] = next_[id];
    if (next_[id] != kNone) prev_[next_[id]] = prev_[id];
    if (head_ == id) head_ = next_[id];
    if (tail_ == id) tail_ = prev_[id];
    prev_[id] = next_[id] = kNone;
  }
  void push_front(uint64_t id) {
    prev_[id] = kNone;
    next_[id] = head_;
    if (head_ != kNone) prev_[head_] = id;
    head_ = id;
    if (tail_ == kNone) tail_ = id;
  }
  std::vector<uint64_t> prev_, next_;
  std::vector<bool> in_;
  uint64_t head_ = kNone, tail_ = kNone, size_ = 0;
  const uint64_t capacity_;
};

// TieredCache's promotion: a chunk goes up on a second SSD hit among about `window` recent
// ones (two generations of window / 2).
class Seen {
 public:
  explicit Seen(uint64_t window) : half_(std::max<uint64_t>(window / 2, 1)) {}
  bool second_hit(uint64_t h) {
    if (newer_.erase(h) || older_.erase(h)) return true;
    if (newer_.size() >= half_) {
      older_.swap(newer_);
      newer_.clear();
    }
    newer_.insert(h);
    return false;
  }

 private:
  uint64_t half_;
  std::unordered_set<uint64_t> newer_, older_;
};

}  // namespace

uint64_t ssd_record_bytes(uint64_t chunk_bytes) {
  return (chunk_bytes + kRecordTrailer + kRecordAlign - 1) / kRecordAlign * kRecordAlign;
}

void add_object(Dataset& d, uint64_t size) {
  ++d.objects;
  d.bytes += size;
  d.chunks += (size + kChunkBytes - 1) / kChunkBytes;
  d.requests += size == 0 ? 0 : (size + kRunBytes - 1) / kRunBytes;
}

uint64_t ssd_usable_bytes(uint64_t ssd_bytes, uint64_t chunk_bytes) {
  if (chunk_bytes == 0) return 0;
  const uint64_t record = ssd_record_bytes(chunk_bytes);
  const uint64_t per_region = kRegionBytes / record;
  return ssd_bytes / kRegionBytes * per_region * chunk_bytes;
}

double lru_shuffled_hit_ratio(double c) {
  if (c <= 0) return 0;
  if (c >= 1) return 1;
  return c + (1 - c) * std::log(1 - c);
}

std::vector<EpochHits> simulate_cache_once(const CacheSim& in) {
  std::vector<EpochHits> out;
  if (in.epochs == 0) return out;
  const uint64_t n_real = std::max<uint64_t>(in.dataset_chunks, 1);
  const uint64_t chunk = std::max<uint64_t>(in.chunk_bytes, 1);
  const double fraction = std::clamp(in.fraction, 1e-9, 1.0);
  const uint32_t readers = std::max<uint32_t>(in.readers, 1);
  // Scale down so an epoch is at most about 2 * kMaxSimChunks reads.
  const double per_chunk_reads = readers * fraction;
  const uint64_t cap = static_cast<uint64_t>(
      std::max(1024.0, 2.0 * static_cast<double>(kMaxSimChunks) / per_chunk_reads));
  const uint64_t n = std::min(n_real, cap);
  const double k = static_cast<double>(n_real) / static_cast<double>(n);
  auto scaled = [k](uint64_t v) { return static_cast<uint64_t>(static_cast<double>(v) / k); };

  Lru memory(n, scaled(in.memory_bytes) / chunk);
  // The promotion window tier_setup.cc gives: twice what memory holds in 1 MiB chunks, at
  // least 1,024.
  Seen seen(scaled(std::max<uint64_t>(2 * in.memory_bytes / kChunkBytes, 1024)));

  const uint64_t record = ssd_record_bytes(chunk);
  const uint64_t real_regions = in.ssd_bytes / kRegionBytes;
  std::unique_ptr<RegionAllocator> ssd;
  if (real_regions > 0 && record <= kRegionBytes) {
    // As many whole records per region as the real tier's, scaled; at most kMaxSimRegions
    // regions (then each holds more records).
    const double records = static_cast<double>(real_regions * (kRegionBytes / record)) / k;
    const uint64_t regions = std::clamp<uint64_t>(static_cast<uint64_t>(records), 1,
                                                  std::min<uint64_t>(real_regions, kMaxSimRegions));
    const uint64_t per_region =
        std::max<uint64_t>(1, static_cast<uint64_t>(records / static_cast<double>(regions)));
    const uint64_t region_bytes = per_region * record;
    EvictionOptions eo;
    eo.region_count = static_cast<uint32_t>(regions);
    eo.region_bytes = region_bytes;
    eo.expected_items = std::max<uint64_t>(scaled(in.ssd_bytes / kChunkBytes), 1);
    eo.sample_factor = 10;
    ssd = std::make_unique<RegionAllocator>(eo);
  }
  struct Where {
    uint32_t region = 0;
    uint64_t gen = 0;  // 0: not stored
  };
  std::vector<Where> where(n);
  const auto now = std::chrono::steady_clock::time_point{};
  auto hash = [&](uint64_t id) { return mix64(id * 0x9e3779b97f4a7c15ULL + in.seed); };

  std::mt19937_64 rng(in.seed);
  std::vector<uint64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::vector<uint64_t> reads;
  const uint64_t per_reader =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(fraction * static_cast<double>(n))));
  const uint32_t simulated = std::min(in.epochs, kMaxSimEpochs);
  for (uint32_t e = 0; e < simulated; ++e) {
    reads.clear();
    for (uint32_t r = 0; r < readers; ++r) {
      // A uniform random `per_reader` of the chunks, in random order: the first steps of a
      // Fisher-Yates shuffle (of whatever order perm is in).
      for (uint64_t i = 0; i < per_reader; ++i) {
        std::swap(perm[i], perm[i + rng() % (n - i)]);
      }
      reads.insert(reads.end(), perm.begin(), perm.begin() + static_cast<ptrdiff_t>(per_reader));
    }
    if (readers > 1) std::shuffle(reads.begin(), reads.end(), rng);
    uint64_t mem_hits = 0, ssd_hits = 0;
    for (uint64_t id : reads) {
      if (memory.hit(id)) {
        ++mem_hits;
        continue;
      }
      if (ssd) {
        const uint64_t h = hash(id);
        ssd->record_access(h);
        Where& w = where[id];
        const RegionInfo* reg = w.gen != 0 ? &ssd->region(w.region) : nullptr;
        if (reg != nullptr && reg->gen == w.gen && reg->state != RegionInfo::State::kFree) {
          ++ssd_hits;
          ssd->on_hit(w.region, w.gen, now);
          if (seen.second_hit(h)) memory.insert(id);
          continue;
        }
        memory.insert(id);
        const Placement p = ssd->place(h, record, now);
        if (p.admitted) {
          ssd->on_written(p, chunk);
          w = Where{p.region, p.gen};
        }
        continue;
      }
      memory.insert(id);
    }
    const double total = static_cast<double>(std::max<size_t>(reads.size(), 1));
    out.push_back(
        EpochHits{static_cast<double>(mem_hits) / total, static_cast<double>(ssd_hits) / total});
  }
  // Later epochs: the mean of the warm ones simulated (epoch 2 on).
  if (in.epochs > simulated) {
    EpochHits mean;
    const size_t from = simulated > 1 ? 1 : 0;
    for (size_t i = from; i < out.size(); ++i) {
      mean.memory += out[i].memory;
      mean.ssd += out[i].ssd;
    }
    const double count = static_cast<double>(out.size() - from);
    mean.memory /= count;
    mean.ssd /= count;
    out.resize(in.epochs, mean);
  }
  return out;
}

std::vector<EpochHits> simulate_cache(const CacheSim& in) {
  std::vector<std::vector<EpochHits>> runs;
  for (uint32_t i = 0; i < kSimReplays; ++i) {
    CacheSim one = in;
    one.seed = in.seed + i;
    runs.push_back(simulate_cache_once(one));
  }
  std::vector<EpochHits> out(in.epochs);
  for (size_t e = 0; e < out.size(); ++e) {
    std::vector<EpochHits> at;
    for (const auto& run : runs) at.push_back(run[e]);
    std::sort(at.begin(), at.end(),
              [](const EpochHits& a, const EpochHits& b) { return a.local() < b.local(); });
    out[e] = at[at.size() / 2];
    out[e].worst_local = at.front().local();
  }
  return out;
}

double bucket_seconds(const Rates& r, double requests, double bytes) {
  double t = 0;
  if (requests > 0 && r.bucket_requests_per_sec > 0) t = requests / r.bucket_requests_per_sec;
  if (bytes > 0 && r.bucket_bytes_per_sec > 0) t = std::max(t, bytes / r.bucket_bytes_per_sec);
  return t;
}

double Scenario::total_seconds() const {
  double t = prep_seconds;
  for (const EpochPlan& e : epochs) t += e.seconds;
  return t;
}

double Scenario::total_bucket_bytes() const {
  double b = prep_bucket_bytes;
  for (const EpochPlan& e : epochs) b += e.bucket_bytes;
  return b;
}

namespace {

double safe_div(double a, double b) { return b > 0 ? a / b : 0; }

uint64_t mean_chunk(const Dataset& d) {
  return d.chunks > 0 ? std::max<uint64_t>(d.bytes / d.chunks, 1) : kChunkBytes;
}

Scenario streaming(const Dataset& d, const Cluster& c, const Rates& r) {
  Scenario s{.name = "streaming", .title = "streaming, no cache"};
  const double node_bytes = static_cast<double>(d.bytes) / c.nodes;
  const double node_reqs = static_cast<double>(d.requests) / c.nodes;
  for (uint32_t e = 1; e <= c.epochs; ++e) {
    s.epochs.push_back(EpochPlan{.epoch = e,
                                 .seconds = bucket_seconds(r, node_reqs, node_bytes),
                                 .bucket_bytes = static_cast<double>(c.jobs) * d.bytes});
  }
  return s;
}

Scenario node_cache(const Dataset& d, const Cluster& c, const Rates& r) {
  Scenario s{.name = "node-cache", .title = "per-node caches"};
  const std::vector<EpochHits> hits = simulate_cache(CacheSim{.dataset_chunks = d.chunks,
                                                              .chunk_bytes = mean_chunk(d),
                                                              .memory_bytes = c.memory_tier_bytes,
                                                              .ssd_bytes = c.ssd_bytes,
                                                              .readers = 1,
                                                              .fraction = 1.0 / c.nodes,
                                                              .epochs = c.epochs});
  const double node_bytes = static_cast<double>(d.bytes) / c.nodes;
  const double node_reqs = static_cast<double>(d.requests) / c.nodes;
  const double room = static_cast<double>(ssd_usable_bytes(c.ssd_bytes, mean_chunk(d)));
  double filled = 0;
  for (uint32_t e = 1; e <= c.epochs; ++e) {
    const EpochHits& h = hits[e - 1];
    const double miss = std::max(0.0, 1.0 - h.local());
    const double written = std::min(node_bytes * miss, std::max(0.0, room - filled));
    filled += written;
    const double disk = safe_div(node_bytes * h.ssd, r.disk_read_bytes_per_sec) +
                        safe_div(written, r.disk_write_bytes_per_sec);
    s.epochs.push_back(
        EpochPlan{.epoch = e,
                  .seconds = std::max(bucket_seconds(r, node_reqs * miss, node_bytes * miss), disk),
                  .bucket_bytes = static_cast<double>(c.jobs) * d.bytes * miss,
                  .memory_hit = h.memory,
                  .ssd_hit = h.ssd,
                  .worst_hit = h.worst_local});
  }
  return s;
}

Scenario cache_server(const Dataset& d, const Cluster& c, const Rates& r) {
  Scenario s{.name = "cache-server", .title = "shared cache server"};
  if (c.server_ssd_bytes == 0) {
    s.feasible = false;
    s.why_not = "no --server-cache given";
    return s;
  }
  // The server sees every job's epoch, whichever node reads which part: `jobs` shuffles of
  // the dataset, interleaved.
  const std::vector<EpochHits> hits = simulate_cache(CacheSim{.dataset_chunks = d.chunks,
                                                              .chunk_bytes = mean_chunk(d),
                                                              .memory_bytes = c.server_memory_bytes,
                                                              .ssd_bytes = c.server_ssd_bytes,
                                                              .readers = c.jobs,
                                                              .fraction = 1.0,
                                                              .epochs = c.epochs});
  const double all_bytes = static_cast<double>(c.jobs) * d.bytes;
  const double all_reqs = static_cast<double>(c.jobs) * d.requests;
  const double server_rate =
      r.server_bytes_per_sec > 0 ? r.server_bytes_per_sec : r.disk_read_bytes_per_sec;
  for (uint32_t e = 1; e <= c.epochs; ++e) {
    const EpochHits& h = hits[e - 1];
    const double miss = std::max(0.0, 1.0 - h.local());
    // The server serves its hits to every node at server_rate (its disk or its network,
    // whichever is slower), and fetches its misses at the bucket's rate.
    const double t = std::max(safe_div(all_bytes * h.local(), server_rate),
                              bucket_seconds(r, all_reqs * miss, all_bytes * miss));
    s.epochs.push_back(EpochPlan{.epoch = e,
                                 .seconds = t,
                                 .bucket_bytes = all_bytes * miss,
                                 .server_hit = h.local(),
                                 .worst_hit = h.worst_local});
  }
  return s;
}

Scenario staged_copy(const Dataset& d, const Cluster& c, const Rates& r) {
  Scenario s{.name = "staged-copy", .title = "staging a full copy first"};
  if (c.ssd_bytes < d.bytes) {
    s.feasible = false;
    s.why_not = fmt::format("the copy ({}) does not fit a node's disk ({})", format_size(d.bytes),
                            format_size(c.ssd_bytes));
    return s;
  }
  const double bytes = static_cast<double>(d.bytes);
  s.prep_seconds = std::max(bucket_seconds(r, static_cast<double>(d.requests), bytes),
                            safe_div(bytes, r.disk_write_bytes_per_sec));
  s.prep_bucket_bytes = static_cast<double>(c.jobs) * c.nodes * bytes;
  for (uint32_t e = 1; e <= c.epochs; ++e) {
    s.epochs.push_back(EpochPlan{.epoch = e,
                                 .seconds = safe_div(bytes / c.nodes, r.disk_read_bytes_per_sec),
                                 .bucket_bytes = 0,
                                 .ssd_hit = 1,
                                 .worst_hit = 1});
  }
  return s;
}

std::string percent(double v) { return fmt::format("{:.0f}%", 100 * v); }

std::string seconds_text(double s) {
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

std::string reason_for(const Scenario& best, const Scenario& stream, const Dataset& d,
                       const Cluster& c) {
  const std::string vs =
      best.name == "streaming"
          ? ""
          : fmt::format(" against {} and {} streaming", seconds_text(stream.total_seconds()),
                        format_size(static_cast<uint64_t>(stream.total_bucket_bytes())));
  const std::string head = fmt::format(
      "{} epochs in {}, {} from the bucket{}", c.epochs, seconds_text(best.total_seconds()),
      format_size(static_cast<uint64_t>(best.total_bucket_bytes())), vs);
  const double ratio = safe_div(static_cast<double>(d.bytes), static_cast<double>(c.ssd_bytes));
  if (best.name == "staged-copy") {
    return head + "; the dataset fits each node's disk, so one copy up front (" +
           seconds_text(best.prep_seconds) + ") makes every epoch a local read";
  }
  if (best.name == "node-cache" && best.epochs.size() < 2) {
    return head + fmt::format("; the dataset is {:.1f}x a node's SSD tier", ratio);
  }
  if (best.name == "node-cache") {
    double lo = 1, hi = 0;
    for (size_t i = 1; i < best.epochs.size(); ++i) {
      lo = std::min(lo, best.epochs[i].local_hit());
      hi = std::max(hi, best.epochs[i].local_hit());
    }
    const std::string share =
        hi - lo < 0.01 ? "about " + percent(hi) : percent(lo) + " to " + percent(hi);
    return head + fmt::format(
                      "; the dataset is {:.1f}x a node's SSD tier, and from epoch 2 {} "
                      "of reads are local",
                      ratio, share);
  }
  if (best.name == "cache-server") {
    const EpochPlan& last = best.epochs.back();
    return head + fmt::format(
                      "; one server shared by {} nodes serves {} of reads, so the "
                      "dataset is pulled about once rather than once per job",
                      static_cast<uint64_t>(c.jobs) * c.nodes, percent(last.server_hit));
  }
  return head +
         "; the caches hold too little of the dataset (or it is read too few times) "
         "to pay for themselves";
}

}  // namespace

Plan make_plan(const Dataset& d, const Cluster& given, const Rates& r) {
  Cluster c = given;
  c.epochs = std::max<uint32_t>(c.epochs, 1);
  c.jobs = std::max<uint32_t>(c.jobs, 1);
  c.nodes = std::max<uint32_t>(c.nodes, 1);
  Plan p;
  p.scenarios = {streaming(d, c, r), node_cache(d, c, r), cache_server(d, c, r),
                 staged_copy(d, c, r)};
  // The fastest; one within 10% of it that pulls less from the bucket wins over it.
  const Scenario* best = nullptr;
  for (const Scenario& s : p.scenarios) {
    if (s.feasible && (best == nullptr || s.total_seconds() < best->total_seconds())) best = &s;
  }
  for (const Scenario& s : p.scenarios) {
    if (s.feasible && s.total_seconds() <= best->total_seconds() * 1.1 &&
        s.total_bucket_bytes() < best->total_bucket_bytes() * 0.9) {
      best = &s;
    }
  }
  p.recommended = best->name;
  p.reason = reason_for(*best, p.scenarios[0], d, c);
  return p;
}

}  // namespace warmfs::plan

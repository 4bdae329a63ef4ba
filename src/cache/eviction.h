// Region accounting and eviction for the SSD cache: which region a new chunk goes to, which
// region is emptied to make room, and whether a new chunk deserves the room at all.
//
// The SSD tier stores chunks in a fixed set of region slots (region_count of region_bytes
// each, region_count * region_bytes <= capacity). Chunks are appended to one open region; a
// full open region is sealed. Space is reclaimed a whole region at a time: the victim's chunks
// are all dropped and its slot is refilled from offset 0 under a new generation number, so
// index entries of an older generation are recognisably stale.
//
// Admission is TinyLFU: a count-min sketch (4 rows of saturating 8-bit counters, conservative
// update) estimates how often each chunk key was asked for, counting every lookup, hit or miss.
// Each region keeps a score, the sum of its chunks' frequencies (the estimate when written,
// plus one per hit). While free slots exist every chunk is admitted. Once the cache is full, a
// chunk is written only if its estimate exceeds the victim's mean frequency by more than one
// (the victim: the sealed region with the lowest mean, ties to the oldest); the first such
// chunk evicts the victim and takes its slot, and later chunks appended to that slot must beat
// the evicted region's mean in the same way, so no scan rides along while a new working set
// that beat the old one keeps filling the slot it won. A chunk read as often as what the cache
// holds never gets in, so a working set larger than the cache keeps the part it holds instead of
// cycling through it (LRU and FIFO hit 0% on a loop over more than their size). The margin of one
// is for such loops: a chunk missed during a pass already counts this pass's access while the
// victim, not yet reached by the reader, does not; without it each miss would evict the
// region the reader needs next. Every sample_factor * expected_items lookups the sketch and
// all region scores are halved, so data nobody reads any more loses to a new working set.
//
// Optional ttl: a region none of whose chunks was written or read for ttl is expired whole.
//
// Not thread safe: SsdCache calls it under its own mutex. No I/O: the caller removes index
// entries of the regions this reports as evicted.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace warmfs {

class FrequencySketch {
 public:
  // expected_items: distinct keys the cache holds; sizes the table (8 counters per item and
  // row, capped at 4 Mi counters a row = 16 MiB) and the aging period.
  FrequencySketch(uint64_t expected_items, uint32_t sample_factor);

  // Counts one access to hash. Returns true when this access triggered aging (every counter
  // halved), so the caller can age what it derives from the sketch.
  bool record(uint64_t hash);
  // Estimated accesses to hash since aging began to count them (0..15).
  uint32_t estimate(uint64_t hash) const;
  uint64_t agings() const { return agings_; }

 private:
  static constexpr int kRows = 4;
  static constexpr uint8_t kMaxCount = 15;
  size_t slot(int row, uint64_t hash) const;
  void age();

  uint64_t mask_ = 0;           // width - 1; width is a power of two
  std::vector<uint8_t> table_;  // kRows rows of width counters
  uint64_t samples_ = 0;
  uint64_t sample_limit_ = 0;
  uint64_t agings_ = 0;
};

struct EvictionOptions {
  uint32_t region_count = 0;
  uint64_t region_bytes = 0;
  // Distinct chunks the cache can hold (capacity / typical chunk size): sizes the sketch.
  uint64_t expected_items = 1024;
  // Aging period in multiples of expected_items lookups; 10 is TinyLFU's usual choice.
  uint32_t sample_factor = 10;
  // Regions idle this long are expired; zero keeps them until space is needed.
  std::chrono::nanoseconds ttl{0};
};

struct RegionInfo {
  enum class State : uint8_t { kFree, kOpen, kSealed };
  State state = State::kFree;
  uint64_t gen = 0;         // fill generation, unique across slots; 0 = never filled
  uint64_t write_end = 0;   // bytes appended (records, with headers)
  uint64_t live_bytes = 0;  // chunk data bytes still indexed
  uint64_t live_chunks = 0;
  uint64_t score = 0;  // sum of its chunks' frequencies, aged with the sketch
  std::chrono::steady_clock::time_point last_access{};
};

// A region emptied by eviction or expiry: the caller deletes its index entries of gen.
struct EvictedRegion {
  uint32_t region = 0;
  uint64_t gen = 0;
  uint64_t live_bytes = 0;
};

struct Placement {
  bool admitted = false;
  uint32_t region = 0;
  uint64_t gen = 0;
  uint64_t offset = 0;     // where the record goes in the region
  uint32_t frequency = 0;  // the chunk's estimate, pass back to on_written()
  bool opened = false;     // the region was (re)opened: new gen, file to be truncated
  std::vector<EvictedRegion> evicted;
};

class RegionAllocator {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  explicit RegionAllocator(EvictionOptions options);

  // Counts a lookup of key_hash (hit or miss); ages region scores with the sketch.
  void record_access(uint64_t key_hash);
  // A chunk of region/gen was read.
  void on_hit(uint32_t region, uint64_t gen, TimePoint now);
  // Decides where a record of record_bytes for key_hash goes, reserving the space; may
  // evict a region (listed in the result) or refuse (admitted == false).
  Placement place(uint64_t key_hash, uint64_t record_bytes, TimePoint now);
  // The record placed by p is on disk and indexed.
  void on_written(const Placement& p, uint64_t data_bytes);
  // A chunk of region/gen left the index (corrupt, expired, write failed). An emptied sealed
  // region becomes free. Ignored when the region has moved on to another generation.
  void on_removed(uint32_t region, uint64_t gen, uint64_t data_bytes);
  // Expires regions idle for ttl (none when ttl is zero).
  std::vector<EvictedRegion> expire(TimePoint now);

  // Recovery: region was found with these contents (open: it takes further appends).
  void restore(uint32_t region, const RegionInfo& info);
  // Generation numbers continue above every restored one.
  uint64_t next_gen() const { return next_gen_; }

  const RegionInfo& region(uint32_t r) const { return regions_[r]; }
  uint32_t region_count() const { return static_cast<uint32_t>(regions_.size()); }
  uint64_t used_bytes() const { return used_bytes_; }
  uint64_t sketch_agings() const { return sketch_.agings(); }

 private:
  // The sealed region to evict next (lowest mean frequency, then oldest); -1 if none.
  int victim() const;
  // True when frequency beats (by the margin) the mean frequency score / chunks.
  static bool beats(uint32_t frequency, uint64_t score, uint64_t chunks);
  int free_slot() const;
  void open(uint32_t r, TimePoint now, bool by_eviction);
  EvictedRegion empty(uint32_t r);

  const EvictionOptions options_;
  FrequencySketch sketch_;
  std::vector<RegionInfo> regions_;
  int open_ = -1;                  // the open region, if any
  bool open_by_eviction_ = false;  // open_ replaced an evicted region: appends need admission
  uint64_t displaced_score_ = 0;   // that evicted region's frequency score and chunk count,
  uint64_t displaced_chunks_ = 0;  // which appends to open_ must beat
  uint64_t next_gen_ = 1;
  uint64_t used_bytes_ = 0;  // sum of live_bytes
};

}  // namespace warmfs

// EpochLog: the four numbers that decide whether a cache pays, per epoch of a training job.
//
// An epoch is the span of one published order (from its publication to the next one, or to
// the last read of its last unread entry), or, while no order is running, a fixed interval.
// For each it keeps what the counters did over the span: samples read (order entries read,
// or files opened when there is no order), the seconds readers spent inside warmfs's reads
// (input stall), the lookups each cache tier answered and missed, and the bytes and GETs
// pulled from the bucket. The last kKeep epochs are kept.
//
// The caller samples the counters (EpochCounters, cumulative) and hands them in; the log
// does no I/O and reads no clock of its own, so tests drive it with made-up counters.
//
// Thread safe (one mutex; due() is a lock-free check for the read path).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace warmfs {

// Counters since the mount, at one moment.
struct EpochCounters {
  double at_sec = 0;         // seconds since the mount
  uint64_t order_reads = 0;  // order entries read (OrderCounters::read_entries)
  uint64_t opens = 0;        // files opened
  uint64_t stall_ns = 0;     // time spent in read calls, summed over readers
  uint64_t bytes_read = 0;   // bytes served to readers
  uint64_t memory_hits = 0;  // memory tier lookups that hit
  uint64_t memory_misses = 0;
  uint64_t disk_hits = 0;  // SSD tier lookups that hit (0 without one)
  uint64_t disk_misses = 0;
  uint64_t bucket_bytes = 0;  // bytes read from the bucket
  uint64_t bucket_gets = 0;   // range GETs sent
};

struct Epoch {
  uint64_t number = 0;   // 1, 2, ... since the mount
  uint64_t order = 0;    // the order's number, 0 for an interval epoch
  uint64_t entries = 0;  // the order's entries
  bool running = false;
  EpochCounters start, end;  // end: when it closed, or the last sample while running
  double seconds() const { return end.at_sec - start.at_sec; }
  uint64_t samples() const {
    return order != 0 ? end.order_reads - start.order_reads : end.opens - start.opens;
  }
};

class EpochLog {
 public:
  // The stats JSON (an extended attribute, at most 64 KiB) carries them all.
  static constexpr size_t kKeep = 32;
  explicit EpochLog(std::chrono::seconds interval) : interval_sec_(double(interval.count())) {}

  // An order was published: the running epoch ends, the order's begins.
  void order_published(uint64_t order, uint64_t entries, const EpochCounters& now);
  // A read or an open happened at at_sec (cheap: called for every one). An order epoch read
  // through ends at its last read (or open: reads the page cache answers never come).
  void note_read(double at_sec) {
    double seen = last_read_sec_.load(std::memory_order_relaxed);
    while (seen < at_sec &&
           !last_read_sec_.compare_exchange_weak(seen, at_sec, std::memory_order_relaxed)) {
    }
  }
  // True when update() has something to do: an interval epoch has run its time, or a check
  // of the order epoch is due.
  bool due(double at_sec) const {
    return at_sec >= next_check_sec_.load(std::memory_order_relaxed);
  }
  // Rolls epochs as needed. order_left: entries of the running order not read yet.
  void update(const EpochCounters& now, uint64_t order_left);
  // The epochs kept, oldest first, the running one ended at `now`.
  std::vector<Epoch> list(const EpochCounters& now) const;
  // The same as a JSON array of epoch_json() objects.
  nlohmann::json to_json(const EpochCounters& now) const;

 private:
  void close_locked(const EpochCounters& end);
  void open_locked(uint64_t order, uint64_t entries, const EpochCounters& start);

  const double interval_sec_;
  std::atomic<double> last_read_sec_{0};
  std::atomic<double> next_check_sec_{0};
  mutable std::mutex mu_;     // protects everything below
  std::deque<Epoch> epochs_;  // the last one is running (if any)
  uint64_t next_number_ = 1;
};

// The four numbers of an epoch and its details, as one JSON object.
nlohmann::json epoch_json(const Epoch& e);

}  // namespace warmfs

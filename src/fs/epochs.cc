#include "fs/epochs.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace warmfs {
namespace {

// How often the running order epoch is checked for having been read through.
constexpr double kOrderCheckSec = 0.5;

double ratio(uint64_t hits, uint64_t misses) {
  return hits + misses == 0 ? 0.0 : double(hits) / double(hits + misses);
}

}  // namespace

void EpochLog::open_locked(uint64_t order, uint64_t entries, const EpochCounters& start) {
  Epoch e;
  e.number = next_number_++;
  e.order = order;
  e.entries = entries;
  e.running = true;
  e.start = start;
  e.end = start;
  epochs_.push_back(e);
  while (epochs_.size() > kKeep) epochs_.pop_front();
  next_check_sec_.store(start.at_sec + (order != 0 ? kOrderCheckSec : interval_sec_),
                        std::memory_order_relaxed);
}

void EpochLog::close_locked(const EpochCounters& end) {
  if (epochs_.empty() || !epochs_.back().running) return;
  Epoch& e = epochs_.back();
  e.end = end;
  e.running = false;
}

void EpochLog::order_published(uint64_t order, uint64_t entries, const EpochCounters& now) {
  std::lock_guard lock(mu_);
  close_locked(now);
  open_locked(order, entries, now);
}

void EpochLog::update(const EpochCounters& now, uint64_t order_left) {
  std::lock_guard lock(mu_);
  if (epochs_.empty() || !epochs_.back().running) {
    open_locked(0, 0, now);  // the first interval, or the one after a finished order
    return;
  }
  const Epoch& e = epochs_.back();
  if (e.order != 0) {
    if (order_left > 0) {
      next_check_sec_.store(now.at_sec + kOrderCheckSec, std::memory_order_relaxed);
      return;
    }
    // Read through: it ended at its last read, and an interval epoch starts there.
    EpochCounters end = now;
    end.at_sec =
        std::clamp(last_read_sec_.load(std::memory_order_relaxed), e.start.at_sec, now.at_sec);
    close_locked(end);
    open_locked(0, 0, end);
    return;
  }
  if (now.at_sec - e.start.at_sec >= interval_sec_) {
    close_locked(now);
    open_locked(0, 0, now);
  }
}

nlohmann::json epoch_json(const Epoch& e) {
  const EpochCounters& a = e.start;
  const EpochCounters& b = e.end;
  const double secs = e.seconds();
  const uint64_t mem_hits = b.memory_hits - a.memory_hits;
  const uint64_t mem_misses = b.memory_misses - a.memory_misses;
  const uint64_t disk_hits = b.disk_hits - a.disk_hits;
  const uint64_t disk_misses = b.disk_misses - a.disk_misses;
  nlohmann::json j;
  j["epoch"] = e.number;
  j["kind"] = e.order != 0 ? "order" : "interval";
  j["order"] = e.order;
  j["order_entries"] = e.entries;
  j["running"] = e.running;
  j["start_seconds"] = a.at_sec;
  j["seconds"] = secs;
  j["samples"] = e.samples();
  j["samples_per_second"] = secs > 0 ? double(e.samples()) / secs : 0.0;
  j["stall_seconds"] = double(b.stall_ns - a.stall_ns) / 1e9;
  j["hit_ratio"] = {
      {"memory", ratio(mem_hits, mem_misses)},
      {"disk", ratio(disk_hits, disk_misses)},
      // lookups some local tier answered, of all lookups
      {"local", ratio(mem_hits + disk_hits, mem_misses - std::min(mem_misses, disk_hits))}};
  j["bucket_bytes"] = b.bucket_bytes - a.bucket_bytes;
  j["bucket_gets"] = b.bucket_gets - a.bucket_gets;
  j["bytes_read"] = b.bytes_read - a.bytes_read;
  return j;
}

std::vector<Epoch> EpochLog::list(const EpochCounters& now) const {
  std::lock_guard lock(mu_);
  std::vector<Epoch> out(epochs_.begin(), epochs_.end());
  for (Epoch& e : out) {
    if (e.running) e.end = now;
  }
  return out;
}

nlohmann::json EpochLog::to_json(const EpochCounters& now) const {
  nlohmann::json out = nlohmann::json::array();
  for (const Epoch& e : list(now)) out.push_back(epoch_json(e));
  return out;
}

}  // namespace warmfs

#include "readahead/order_prefetch.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/log.h"
#include "readahead/chunk_fetcher.h"

namespace warmfs {

OrderPrefetcher::OrderPrefetcher(std::shared_ptr<ChunkFetcher> fetcher, std::string key_prefix,
                                 OrderResolver resolver, OrderOptions options)
    : fetcher_(std::move(fetcher)),
      key_prefix_(std::move(key_prefix)),
      resolver_(std::move(resolver)),
      options_(options),
      lead_(std::max<uint32_t>(1, options.initial_lead)) {
  worker_ = std::thread([this] { run(); });
}

OrderPrefetcher::~OrderPrefetcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
  for (auto& [index, held] : held_) {
    for (const ChunkKey& k : held.pins) fetcher_->unpin(k);
  }
}

uint64_t OrderPrefetcher::publish(std::vector<OrderEntry> order) {
  // Built outside the lock: a large order takes a while. The keys live in one string on the
  // heap, which the index's views point into; it moves to keys_ by pointer.
  auto keys = std::make_shared<std::string>();
  std::vector<Entry> entries(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    entries[i].key_at = keys->size();
    entries[i].key_len = static_cast<uint32_t>(key_prefix_.size() + order[i].path.size());
    entries[i].offset = order[i].offset;
    entries[i].length = order[i].length;
    *keys += key_prefix_;
    *keys += order[i].path;
  }
  // The entries of each object, by offset: a read finds the few it touches by a binary search
  // (a shard may hold thousands of records).
  auto key_of = [&](uint32_t i) {
    return std::string_view(*keys).substr(entries[i].key_at, entries[i].key_len);
  };
  std::vector<uint32_t> by_key(entries.size());
  for (uint32_t i = 0; i < by_key.size(); ++i) by_key[i] = i;
  std::sort(by_key.begin(), by_key.end(), [&](uint32_t a, uint32_t b) {
    const int c = key_of(a).compare(key_of(b));
    return c != 0 ? c < 0 : entries[a].offset < entries[b].offset;
  });
  std::unordered_map<std::string_view, KeyEntries> index;
  for (uint32_t at = 0; at < by_key.size(); ++at) {
    const Entry& e = entries[by_key[at]];
    auto [it, inserted] = index.try_emplace(key_of(by_key[at]), KeyEntries{at, at, 0});
    it->second.end = at + 1;
    it->second.max_length = std::max(it->second.max_length, e.length);
  }
  std::vector<ChunkKey> drop;
  uint64_t generation;
  {
    std::lock_guard lock(mu_);
    for (auto& [index, held] : held_) {
      if (entries_[index].state != State::kRead) wasted_entries_.fetch_add(1);
      drop.insert(drop.end(), held.pins.begin(), held.pins.end());
    }
    held_.clear();
    keys_ = std::move(keys);
    entries_ = std::move(entries);
    by_key_ = std::move(by_key);
    key_entries_ = std::move(index);
    read_held_.clear();
    head_ = 0;
    reads_since_head_ = 0;
    recent_at_ = 0;
    front_ = 0;
    lead_grown_at_ = 0;
    order_read_ = 0;
    order_fetched_ = 0;
    budget_blocked_ = false;
    generation = ++generation_;
    active_.store(!entries_.empty(), std::memory_order_relaxed);
  }
  cv_.notify_all();
  for (const ChunkKey& k : drop) fetcher_->unpin(k);
  return generation;
}

template <typename F>
void OrderPrefetcher::for_touched_locked(std::string_view key, uint64_t offset, uint64_t length,
                                         F f, bool any_overlap) {
  auto it = key_entries_.find(key);
  if (it == key_entries_.end()) return;
  const KeyEntries& ke = it->second;
  const uint64_t end = length > kWholeFile - offset ? kWholeFile : offset + length;
  // No entry starting before offset - max_length reaches offset.
  const uint64_t from = offset > ke.max_length ? offset - ke.max_length : 0;
  auto first = std::partition_point(by_key_.begin() + ke.begin, by_key_.begin() + ke.end,
                                    [&](uint32_t i) { return entries_[i].offset < from; });
  for (auto p = first; p != by_key_.begin() + ke.end && entries_[*p].offset < end; ++p) {
    Entry& e = entries_[*p];
    const uint64_t e_end = e.length > kWholeFile - e.offset ? kWholeFile : e.offset + e.length;
    if (offset >= e_end) continue;  // ends before the read
    // The kernel reads whole pages, so a read of one entry also touches the edges of those
    // beside it in the file (anywhere in a shuffled order). An edge is not a read of them:
    // their bytes still have to come through here. An entry counts when the read serves at
    // least half of it, or half the read when the entry is longer (read in pieces).
    const uint64_t overlap = std::min(end, e_end) - std::max(offset, e.offset);
    if (!any_overlap && overlap < (std::min(e_end - e.offset, end - offset) + 1) / 2) continue;
    f(*p, e);
  }
}

void OrderPrefetcher::mark_read_locked(uint32_t i, Entry& e, bool* late) {
  if (e.state == State::kRead) return;
  // The readers reached what was not fetched yet (a read far beyond the front is another
  // entry's read-ahead, not the readers catching up).
  if (e.state == State::kWaiting && i >= front_ && i < front_ + kNear) *late = true;
  if (e.state == State::kFetched) {
    auto h = held_.find(i);
    if (h != held_.end()) {
      for (const ChunkKey& k : h->second.pins) *late |= fetcher_->pin_pending(k);
    }
  }
  e.state = State::kRead;
  recent_[recent_at_++ % recent_.size()] = i;
  ++reads_since_head_;
  ++order_read_;
  read_entries_.fetch_add(1, std::memory_order_relaxed);
}

void OrderPrefetcher::after_reads_locked(bool late, bool* wake) {
  // The head passes entries read (or let go of), and an unread one once half of the kNear
  // entries after it are read: the readers skipped it, or one of them is still on it. Reads
  // scattered further on (the kernel's read-ahead serving entries beside the one read, which
  // are anywhere in a shuffled order) do not move it.
  const uint64_t n = entries_.size();
  const uint64_t was = head_;
  if (reads_since_head_ >= kStale && recent_at_ >= recent_.size()) {
    auto last = recent_;
    std::nth_element(last.begin(), last.begin() + last.size() / 2, last.end());
    head_ = std::max<uint64_t>(head_, last[last.size() / 2]);
    front_ = std::max(front_, head_);  // what they passed by is not fetched now
  }
  while (head_ < n) {
    if (entries_[head_].state == State::kRead || entries_[head_].state == State::kGone) {
      ++head_;
      continue;
    }
    const uint64_t to = std::min<uint64_t>(n, head_ + 1 + kNear);
    uint64_t read = 0;
    for (uint64_t j = head_ + 1; j < to; ++j) read += entries_[j].state == State::kRead;
    if (to == head_ + 1 || read * 2 < to - head_ - 1) break;
    ++head_;
  }
  if (head_ != was) {
    reads_since_head_ = 0;
    *wake = true;
  }
  if (!late) return;
  late_reads_.fetch_add(1, std::memory_order_relaxed);
  // The readers caught up with the fetches: a longer lead, at most once per half lead of
  // reads, so one burst of late reads does not blow it up.
  if (order_read_ >= lead_grown_at_ + lead_ / 2) {
    lead_ = std::min<uint64_t>(lead_ * 2, options_.max_lead);
    lead_grown_at_ = order_read_;
  }
  *wake = true;
}

void OrderPrefetcher::read_started(std::string_view key, uint64_t offset, uint64_t length) {
  if (!active_.load(std::memory_order_relaxed)) return;
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    bool late = false;
    for_touched_locked(key, offset, length,
                       [&](uint32_t i, Entry& e) { mark_read_locked(i, e, &late); });
    after_reads_locked(late, &wake);
  }
  if (wake) cv_.notify_all();
}

void OrderPrefetcher::read_finished(std::string_view key, uint64_t offset, uint64_t length) {
  if (!active_.load(std::memory_order_relaxed)) return;
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    for_touched_locked(key, offset, length, [&](uint32_t i, Entry& e) {
      if (e.state == State::kRead && held_.count(i) != 0) {
        read_held_.push_back(i);
        wake = true;
      }
    });
  }
  if (wake) cv_.notify_all();
}

void OrderPrefetcher::file_opened(std::string_view key) {
  if (!active_.load(std::memory_order_relaxed)) return;
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    bool late = false;
    for_touched_locked(key, 0, kWholeFile, [&](uint32_t i, Entry& e) {
      if (e.offset == 0 && e.length == kWholeFile) mark_read_locked(i, e, &late);
    });
    after_reads_locked(late, &wake);
  }
  if (wake) cv_.notify_all();
}

void OrderPrefetcher::file_closed(std::string_view key) {
  if (!active_.load(std::memory_order_relaxed)) return;
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    for_touched_locked(key, 0, kWholeFile, [&](uint32_t i, Entry& e) {
      if (e.offset == 0 && e.length == kWholeFile && e.state == State::kRead &&
          held_.count(i) != 0) {
        read_held_.push_back(i);
        wake = true;
      }
    });
  }
  if (wake) cv_.notify_all();
}

void OrderPrefetcher::collect_locked(std::vector<ChunkKey>& drop, std::vector<Pick>& picks) {
  // Let go of entries read, and of those left unread too far behind the head.
  for (uint32_t i : read_held_) {
    auto it = held_.find(i);
    if (it == held_.end()) continue;
    drop.insert(drop.end(), it->second.pins.begin(), it->second.pins.end());
    held_.erase(it);
  }
  read_held_.clear();
  while (!held_.empty() && held_.begin()->first + options_.behind < head_) {
    auto it = held_.begin();
    if (entries_[it->first].state != State::kRead) {
      wasted_entries_.fetch_add(1, std::memory_order_relaxed);
      entries_[it->first].state = State::kGone;
    }
    drop.insert(drop.end(), it->second.pins.begin(), it->second.pins.end());
    held_.erase(it);
  }
  // Entries far behind the head are not worth fetching any more.
  if (head_ > options_.behind) front_ = std::max(front_, head_ - options_.behind);
  const int64_t inflight = sync_->requests_inflight.load(std::memory_order_relaxed);
  if (budget_blocked_ || inflight >= int64_t(options_.max_requests)) return;
  const size_t room = static_cast<size_t>(int64_t(options_.max_requests) - inflight);
  const uint64_t stop = std::min<uint64_t>(entries_.size(), head_ + lead_);
  uint64_t i = front_;
  for (; i < stop && picks.size() < room; ++i) {
    const Entry& e = entries_[i];
    if (e.state != State::kWaiting) continue;
    const std::string_view key = key_of_locked(e);
    picks.push_back(Pick{static_cast<uint32_t>(i), std::string(key.substr(key_prefix_.size())),
                         std::string(key), e.offset, e.length,
                         extra_for_locked(static_cast<uint32_t>(i), e, stop)});
  }
  if (picks.empty()) front_ = i;  // only entries already read were passed over
}

std::vector<uint32_t> OrderPrefetcher::extra_for_locked(uint32_t index, const Entry& e,
                                                        uint64_t stop) {
  std::vector<uint32_t> extra;
  if (e.length == kWholeFile || e.length > kWholeFile - e.offset) return extra;
  const uint64_t cs = fetcher_->options().chunk_size;
  const uint64_t first = e.offset / cs;
  const std::string_view key = key_of_locked(e);
  for (uint64_t c = (e.offset + e.length + cs - 1) / cs; c < first + options_.max_run_chunks; ++c) {
    uint64_t owner = stop;
    for_touched_locked(
        key, c * cs, cs,
        [&](uint32_t i, const Entry& other) {
          if (i != index && i >= front_ && i < owner && other.state == State::kWaiting) owner = i;
        },
        /*any_overlap=*/true);
    if (owner == stop) break;
    extra.push_back(static_cast<uint32_t>(owner));
  }
  return extra;
}

std::vector<ChunkKey> OrderPrefetcher::fetch_entry(
    const Pick& pick, std::vector<PendingFetch>& pending,
    std::vector<std::pair<uint32_t, ChunkKey>>& extra, bool* no_budget, bool* unresolved) {
  std::vector<ChunkKey> pins;
  Result<ObjectVersion> v = resolver_(pick.path);
  if (!v.is_ok()) {
    *unresolved = true;
    log::debug("order entry {:?} skipped: {}", pick.path, v.status().to_string());
    return pins;
  }
  const ReadaheadOptions& o = fetcher_->options();
  if (v->etag.empty() || pick.offset >= v->size) return pins;  // nothing the cache can hold
  const uint64_t entry_end = pick.length == kWholeFile || pick.length > v->size - pick.offset
                                 ? v->size
                                 : pick.offset + pick.length;
  // A large entry: its start ahead, the rest by the reader's own read-ahead.
  const uint64_t cap = std::max<uint64_t>(o.chunk_size, o.max_inflight_bytes / 4);
  const uint64_t end = std::min(entry_end, pick.offset + cap);
  uint64_t c = pick.offset / o.chunk_size;
  for (; c * o.chunk_size < end; ++c) {
    const uint64_t length = std::min<uint64_t>(o.chunk_size, v->size - c * o.chunk_size);
    ChunkKey key{fetcher_->bucket(), v->key, v->etag, c};
    if (!fetcher_->pin(key, length, &pending)) {
      *no_budget = true;
      return pins;
    }
    pins.push_back(std::move(key));
  }
  // The chunks after it that others of the lead need: pinned for them, fetched in the same
  // request (the fetcher joins consecutive chunks into one range GET).
  for (uint32_t owner : pick.extra_for) {
    // (Only when the request ends at the entry's end: extra_for names the chunks after it.)
    if (end < entry_end || c * o.chunk_size >= v->size) break;
    const uint64_t length = std::min<uint64_t>(o.chunk_size, v->size - c * o.chunk_size);
    ChunkKey key{fetcher_->bucket(), v->key, v->etag, c++};
    if (!fetcher_->pin(key, length, &pending)) {
      *no_budget = true;
      break;
    }
    extra.emplace_back(owner, std::move(key));
  }
  return pins;
}

void OrderPrefetcher::run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    std::vector<ChunkKey> drop;
    std::vector<Pick> picks;
    collect_locked(drop, picks);
    if (drop.empty() && picks.empty()) {
      if (budget_blocked_) {
        // Budget others hold comes back without telling us: look again shortly.
        cv_.wait_for(lock, std::chrono::milliseconds(10));
        budget_blocked_ = false;
      } else {
        cv_.wait(lock);
      }
      continue;
    }
    const uint64_t generation = generation_;
    lock.unlock();
    for (const ChunkKey& k : drop) fetcher_->unpin(k);
    struct Done {
      uint32_t index;
      std::vector<ChunkKey> pins;
      std::vector<std::pair<uint32_t, ChunkKey>> extra;
    };
    std::vector<Done> done;
    bool no_budget = false;
    uint64_t unresolved = 0;
    for (const Pick& p : picks) {
      bool skipped = false;
      std::vector<PendingFetch> pending;
      std::vector<std::pair<uint32_t, ChunkKey>> extra;
      std::vector<ChunkKey> pins = fetch_entry(p, pending, extra, &no_budget, &skipped);
      if (skipped) ++unresolved;
      if (!pins.empty() || !no_budget) {
        done.push_back(Done{p.index, std::move(pins), std::move(extra)});
      }
      // Each entry's requests start at once, not after the whole batch is resolved.
      if (!pending.empty()) {
        // Counted before they start, so a quick completion does not go below zero.
        const auto n = static_cast<int64_t>(pending.size());
        sync_->requests_inflight.fetch_add(n, std::memory_order_relaxed);
        const size_t runs = fetcher_->submit(std::move(pending), [sync = sync_] {
          sync->requests_inflight.fetch_sub(1, std::memory_order_relaxed);
          { std::lock_guard l(sync->mu); }  // the worker is waiting, or will see the count
          sync->cv.notify_all();
        });
        sync_->requests_inflight.fetch_sub(n - static_cast<int64_t>(runs),
                                           std::memory_order_relaxed);
      }
      if (no_budget) break;
    }
    unresolved_entries_.fetch_add(unresolved, std::memory_order_relaxed);
    std::vector<ChunkKey> late_drop;
    lock.lock();
    if (no_budget) budget_blocked_ = true;
    for (Done& d : done) {
      // Chunks taken for entries further on are held for them, unless already read.
      for (auto& [owner, key] : d.extra) {
        const State s = entries_[owner].state;
        if (generation != generation_ || s == State::kRead || s == State::kGone) {
          late_drop.push_back(std::move(key));
        } else {
          held_[owner].pins.push_back(std::move(key));
        }
      }
      if (generation != generation_) {
        late_drop.insert(late_drop.end(), d.pins.begin(), d.pins.end());
        continue;
      }
      front_ = std::max<uint64_t>(front_, d.index + 1);
      Entry& e = entries_[d.index];
      if (d.pins.empty()) {
        if (e.state == State::kWaiting) e.state = State::kGone;
        continue;
      }
      ++order_fetched_;
      fetched_entries_.fetch_add(1, std::memory_order_relaxed);
      if (e.state == State::kRead) {  // read while it was being fetched
        late_drop.insert(late_drop.end(), d.pins.begin(), d.pins.end());
        continue;
      }
      e.state = State::kFetched;
      std::vector<ChunkKey>& held = held_[d.index].pins;  // may hold chunks taken for it
      held.insert(held.end(), d.pins.begin(), d.pins.end());
    }
    if (!late_drop.empty()) {
      lock.unlock();
      for (const ChunkKey& k : late_drop) fetcher_->unpin(k);
      lock.lock();
    }
  }
}

OrderCounters OrderPrefetcher::counters() const {
  OrderCounters c;
  {
    std::lock_guard lock(mu_);
    c.orders = generation_;
    c.order_entries = entries_.size();
    c.order_read = order_read_;
    c.order_fetched = order_fetched_;
    c.head = head_;
    c.lead = lead_;
  }
  c.requests_inflight = static_cast<uint64_t>(
      std::max<int64_t>(0, sync_->requests_inflight.load(std::memory_order_relaxed)));
  c.read_entries = read_entries_.load(std::memory_order_relaxed);
  c.fetched_entries = fetched_entries_.load(std::memory_order_relaxed);
  c.wasted_entries = wasted_entries_.load(std::memory_order_relaxed);
  c.late_reads = late_reads_.load(std::memory_order_relaxed);
  c.unresolved_entries = unresolved_entries_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace warmfs

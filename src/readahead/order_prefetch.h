// OrderPrefetcher: fetches ahead of readers in an order they announced (a training loader's
// shuffled epoch), where sequential read-ahead has nothing to go on.
//
// A loader publishes an order: entries that are whole files, or (file, offset, length)
// ranges such as records inside shards. One worker thread walks the order ahead of the
// readers: for each entry it resolves the path to an object version (the resolver, given by
// the filesystem core: its metadata), then pins the entry's chunks in the ChunkFetcher
// (ChunkFetcher::pin): the fetches go through the one download path (single flight, the fetch
// threads, the cache tiers), are charged to the read-ahead budget, and are held until read, so
// the block cache cannot evict what is ahead of the readers. At most max_requests of its
// requests are in flight at once, so reads that miss (an entry read out of order) still find
// fetch threads free.
//
// Readers are followed through their opens and reads (the core calls file_opened() and
// file_closed(), read_started() and read_finished() around every read): the entries a read
// serves are marked read (not those whose edge it only touches: the kernel reads whole pages),
// and the readers' head is the first entry they have not read, passing an unread one once
// half of the kNear entries after it are read (skipped, or still being read): reads scattered
// further on, such as the kernel's read-ahead serving entries beside the one read, do not
// move it. Readers that read elsewhere for long (an epoch resumed part way) take the head
// with them: it moves to the median of their last reads.
// The worker keeps `lead` entries fetched ahead of the head; each time a read finds its entry
// not yet fetched (the readers caught up) the lead doubles, up to max_lead and whatever the
// budget allows: the lead follows the readers' pace. Entries read are let go of at once;
// entries left unread more than `behind` entries behind the head are let go of (counted as
// wasted). An entry already read is never fetched; an entry never read costs its one fetch.
// A new order replaces the old one: its pins are dropped and nothing more of it is fetched.
//
// An entry's prefetch is capped at a quarter of the read-ahead budget: the rest of a large
// entry comes from the reader's own sequential read-ahead. An entry's request also takes the
// chunks after it that later entries of the lead need (records or windows sharing a shard),
// each pinned for the first entry that needs it: fewer requests, the same holding rules.
//
// Thread safe. Lock order: mu_ before the ChunkFetcher's lock (the fetcher never calls back
// while holding its own). Fetch completions reach the worker through shared state (Sync), so
// the prefetcher may go while its fetches are still in flight.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "readahead/read_path.h"
#include "warmfs/result.h"

namespace warmfs {

class ChunkFetcher;
struct PendingFetch;

inline constexpr uint64_t kWholeFile = std::numeric_limits<uint64_t>::max();

// One entry of an order: a file relative to the mount's root, whole or a range of it.
struct OrderEntry {
  std::string path;
  uint64_t offset = 0;
  uint64_t length = kWholeFile;
};

// Maps an entry's path to the object version to fetch (kNotFound: not there, skipped).
using OrderResolver = std::function<Result<ObjectVersion>(const std::string& path)>;

struct OrderOptions {
  // Order fetches in flight at once: most of the 64 fetch threads (a bucket serves small
  // objects at a rate that grows with requests in flight), leaving 8 to reads that miss (a
  // loader's eight workers each waiting on one).
  uint32_t max_requests = 56;
  // Entries kept fetched ahead of the readers at first; enough to keep max_requests busy.
  uint32_t initial_lead = 128;
  // Largest lead, in entries (the budget usually bounds it first).
  uint32_t max_lead = 1u << 16;
  // Unread entries kept this far behind the head (parallel workers finish out of order).
  uint32_t behind = 1024;
  // An entry's request also takes the chunks after it that other entries of the lead need,
  // up to this many chunks in all: one request for records or windows that share chunks
  // (a bucket charges, and spends, per request as well as per byte).
  uint32_t max_run_chunks = 8;
};

struct OrderCounters {
  uint64_t orders = 0;              // orders published since start
  uint64_t order_entries = 0;       // entries of the current order
  uint64_t order_read = 0;          // entries of the current order read so far
  uint64_t order_fetched = 0;       // entries of the current order prefetched so far
  uint64_t head = 0;                // the readers' position in the current order
  uint64_t lead = 0;                // current lead, in entries
  uint64_t requests_inflight = 0;   // order fetches in flight now
  uint64_t read_entries = 0;        // entries read, all orders (each counted once)
  uint64_t fetched_entries = 0;     // entries prefetched, all orders
  uint64_t wasted_entries = 0;      // prefetched and let go of unread, all orders
  uint64_t late_reads = 0;          // reads that found their entry not fetched yet
  uint64_t unresolved_entries = 0;  // entries whose path could not be resolved
};

class OrderPrefetcher {
 public:
  // key_prefix + path is an entry's object key (the mount's prefix).
  OrderPrefetcher(std::shared_ptr<ChunkFetcher> fetcher, std::string key_prefix,
                  OrderResolver resolver, OrderOptions options = {});
  // Stops the worker and lets go of every pin.
  ~OrderPrefetcher();
  OrderPrefetcher(const OrderPrefetcher&) = delete;
  OrderPrefetcher& operator=(const OrderPrefetcher&) = delete;

  // Replaces the current order (an empty one just stops it). Returns the new order's number
  // (1, 2, ...).
  uint64_t publish(std::vector<OrderEntry> entries);
  // A read of [offset, offset + length) of the object key is about to be served: the
  // entries it touches are read. read_finished() after it was served (or failed) lets go of
  // their pins; not before, so the reader finds its chunks held.
  void read_started(std::string_view key, uint64_t offset, uint64_t length);
  void read_finished(std::string_view key, uint64_t offset, uint64_t length);
  // The object key was opened, and closed: whole-file entries count as read at their open
  // (reads the kernel's page cache answers never reach warmfs) and let go of at their close.
  void file_opened(std::string_view key);
  void file_closed(std::string_view key);
  OrderCounters counters() const;

 private:
  // How far past the head the readers' own reads are looked for: parallel loader workers
  // read within this many entries of each other.
  static constexpr uint64_t kNear = 64;
  // Entries read with the head standing still after which the readers are taken to be
  // elsewhere (an epoch resumed part way): the head moves to the middle of their last reads.
  static constexpr uint64_t kStale = 4 * kNear;
  enum class State : uint8_t { kWaiting, kFetched, kRead, kGone };
  struct Entry {
    uint64_t key_at = 0;  // the object key is keys_[key_at, key_at + key_len)
    uint32_t key_len = 0;
    uint64_t offset = 0;
    uint64_t length = kWholeFile;
    State state = State::kWaiting;
  };
  // An object's entries: by_key_[begin, end), sorted by offset; the longest one's length.
  struct KeyEntries {
    uint32_t begin = 0;
    uint32_t end = 0;
    uint64_t max_length = 0;
  };
  // What an entry holds while fetched and not yet let go of.
  struct Held {
    std::vector<ChunkKey> pins;
  };
  // An entry picked by the worker, copied out of the lock.
  struct Pick {
    uint32_t index = 0;
    std::string path;
    std::string key;
    uint64_t offset = 0;
    uint64_t length = 0;
    // The chunks after its own that its request also takes, each for the first entry of the
    // lead that needs it (held for that entry, as if fetched for it).
    std::vector<uint32_t> extra_for;
  };

  void run();
  // Under mu_: entries to let go of (read, or passed) into `drop`; the next entries to
  // fetch into `picks` (none while the budget is spent or max_requests are in flight).
  void collect_locked(std::vector<ChunkKey>& drop, std::vector<Pick>& picks);
  // Resolves and pins one entry; its chunk keys (empty when skipped), and in extra the
  // chunks after them pinned for the entries of pick.extra_for. *no_budget when the budget
  // was spent (nothing more pinned).
  std::vector<ChunkKey> fetch_entry(const Pick& pick, std::vector<PendingFetch>& pending,
                                    std::vector<std::pair<uint32_t, ChunkKey>>& extra,
                                    bool* no_budget, bool* unresolved);
  // Calls f(index, entry) for the entries of key that [offset, offset + length) serves: it
  // covers at least half of the entry, or of itself when the entry is longer. (A read that
  // only touches an entry's edge, as the kernel's whole pages do, does not read it.) With
  // any_overlap, for every entry it overlaps.
  template <typename F>
  void for_touched_locked(std::string_view key, uint64_t offset, uint64_t length, F f,
                          bool any_overlap = false);
  // The chunks after entry e's own that its request also takes: for each, the first waiting
  // entry of the lead (before `stop`) that needs it; up to max_run_chunks chunks in all.
  std::vector<uint32_t> extra_for_locked(uint32_t index, const Entry& e, uint64_t stop);
  // Marks entry i read; *late when the readers reached it before it was fetched.
  void mark_read_locked(uint32_t i, Entry& e, bool* late);
  // After marking: the head moves, and the lead grows if a read was late. *wake when the
  // worker has work.
  void after_reads_locked(bool late, bool* wake);
  std::string_view key_of_locked(const Entry& e) const {
    return std::string_view(*keys_).substr(e.key_at, e.key_len);
  }

  const std::shared_ptr<ChunkFetcher> fetcher_;
  const std::string key_prefix_;
  const OrderResolver resolver_;
  const OrderOptions options_;

  // The lock, the worker's wake-up and the requests in flight, shared with the completion
  // callbacks of fetches, which may run after the prefetcher is gone.
  struct Sync {
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<int64_t> requests_inflight{0};
  };
  const std::shared_ptr<Sync> sync_ = std::make_shared<Sync>();
  std::mutex& mu_ = sync_->mu;  // protects everything below
  std::condition_variable& cv_ = sync_->cv;
  bool stop_ = false;
  uint64_t generation_ = 0;  // orders published
  // The current order's keys, back to back (key_entries_ holds views into it).
  std::shared_ptr<const std::string> keys_ = std::make_shared<std::string>();
  std::vector<Entry> entries_;
  std::vector<uint32_t> by_key_;  // entry indices by key, then offset
  std::unordered_map<std::string_view, KeyEntries> key_entries_;  // views into keys_
  std::map<uint32_t, Held> held_;      // fetched, not let go of, by entry
  std::vector<uint32_t> read_held_;    // entries in held_ read since the worker last looked
  uint64_t head_ = 0;                  // the first entry the readers have not read (see above)
  uint64_t reads_since_head_ = 0;      // entries read since the head last moved
  std::array<uint32_t, 15> recent_{};  // the last entries read, for a head gone stale
  uint32_t recent_at_ = 0;
  uint64_t front_ = 0;  // entries before it have been considered for fetching
  uint64_t lead_ = 0;
  uint64_t lead_grown_at_ = 0;  // order_read_ when the lead last grew
  uint64_t order_read_ = 0;
  uint64_t order_fetched_ = 0;
  bool budget_blocked_ = false;      // the last attempt found the budget spent
  std::atomic<bool> active_{false};  // an order with entries is published
  std::atomic<uint64_t> read_entries_{0};
  std::atomic<uint64_t> fetched_entries_{0};
  std::atomic<uint64_t> wasted_entries_{0};
  std::atomic<uint64_t> late_reads_{0};
  std::atomic<uint64_t> unresolved_entries_{0};

  std::thread worker_;  // last: started once the members above exist
};

}  // namespace warmfs

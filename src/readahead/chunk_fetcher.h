// ChunkFetcher: gets chunks from the block cache or the bucket, one request per chunk however
// many readers want it (single flight). Private to the readahead layer.
//
// acquire() answers at once: a cached chunk, or the shared FetchState of a fetch in flight
// (joined if some reader already started it, started otherwise). Fetches run on a fixed pool
// of fetch_threads threads: a range GET with If-Match into a buffer of the chunk's length, a
// CRC32C, a put into the cache, then every waiter is woken. A failed fetch is not cached; its
// status goes to the waiters and the next acquire() starts afresh. Versions without an ETag
// bypass the cache (their chunks could be of any version) but still share fetches.
//
// It also keeps the global read-ahead budget: a prefetch is charged the chunk's bytes and is
// not issued when the budget is spent; demand fetches are never refused.
//
// Pins (for OrderPrefetcher): a pinned chunk is held here, charged to the budget, until
// unpinned, and acquire() answers with it even after the block cache has evicted it, so what
// is fetched ahead of readers known to come is never lost to make room.
//
// Thread safe. Readers share ownership (shared_ptr) so they may be destroyed after the
// ReadPath, but must not call acquire() after shutdown(). Lock order: inflight_mu_ before
// the cache's locks and the pool's lock; a FetchState's lock is taken alone.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/block_cache.h"
#include "common/thread_pool.h"
#include "objstore/object_store.h"
#include "readahead/read_path.h"
#include "warmfs/result.h"

namespace warmfs {

// One chunk fetch, shared by the readers that wait for it. chunk and status are written once,
// before done() turns true, and never change afterwards.
class FetchState {
 public:
  explicit FetchState(bool prefetch) : prefetch_(prefetch) {}
  // True when read-ahead started it: a failure is then retried once by a demand read.
  bool prefetch() const { return prefetch_; }
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Blocks until done().
  void wait();
  // Called once, by the fetching thread.
  void complete(ChunkPtr chunk, Status status);
  // Valid after done(): the chunk, or nullptr and a failed status.
  const ChunkPtr& chunk() const { return chunk_; }
  const Status& status() const { return status_; }

 private:
  const bool prefetch_;
  std::mutex mu_;  // with cv_, for waiting on done_
  std::condition_variable cv_;
  std::atomic<bool> done_{false};
  ChunkPtr chunk_;
  Status status_;
};

// What acquire() hands back: a chunk at hand, a fetch to wait for, or (for a prefetch over
// budget) nothing.
struct ChunkRef {
  ChunkPtr chunk;
  std::shared_ptr<FetchState> fetch;
  uint64_t charged_bytes = 0;  // budget taken by this prefetch; give back with release()
  bool empty() const { return !chunk && !fetch; }
};

// A fetch that acquire() created but has not started, so runs of them can share a request.
struct PendingFetch {
  std::shared_ptr<FetchState> fetch;
  ChunkKey key;
  uint64_t length = 0;
};

class ChunkFetcher {
 public:
  // kJoin takes a cached chunk or a fetch already under way, and starts nothing.
  enum class Mode { kDemand, kPrefetch, kJoin };

  // fast_cache: see ReadPath; null means `cache` itself is fast.
  ChunkFetcher(ObjectStore& store, BlockCache& cache, std::string bucket, ReadaheadOptions options,
               BlockCache* fast_cache = nullptr);
  ~ChunkFetcher();
  ChunkFetcher(const ChunkFetcher&) = delete;
  ChunkFetcher& operator=(const ChunkFetcher&) = delete;

  // Chunk key.index of the object version named by key (key.bucket must be bucket()), which
  // has `length` bytes. kDemand always yields a chunk or a fetch; kPrefetch yields nothing
  // when the budget cannot cover length (a cached chunk costs no budget); kJoin yields
  // nothing unless the chunk is cached or being fetched, and is never charged.
  // With defer, a fetch it has to start is appended there instead, for submit().
  ChunkRef acquire(const ChunkKey& key, uint64_t length, Mode mode,
                   std::vector<PendingFetch>* defer = nullptr);
  // Starts deferred fetches: consecutive chunks of one version share one range GET of up to
  // max_request_bytes. Returns how many runs (requests at most) it started; on_run_done, when
  // given, is called once per run once its chunks are complete, before the slower tiers take
  // them (on a fetch thread). max_run_bytes, when not 0, caps a request below
  // max_request_bytes (a stream's RequestSizer picks it). on_fetched, when given, is called
  // once per run that fetched from the bucket, with the bytes it fetched, as on_run_done is.
  size_t submit(std::vector<PendingFetch> pending, std::function<void()> on_run_done = {},
                uint64_t max_run_bytes = 0, std::function<void(uint64_t)> on_fetched = {});
  // Holds chunk key (of `length` bytes) for a reader to come: fetched as a prefetch (its
  // fetch appended to defer, for submit()) unless cached or in flight, and answered by
  // acquire() until unpin(). Pins of one key nest. False, and nothing pinned, when the
  // read-ahead budget cannot cover it.
  bool pin(const ChunkKey& key, uint64_t length, std::vector<PendingFetch>* defer);
  // Drops one pin of key; the last one gives its budget back.
  void unpin(const ChunkKey& key);
  // True when key is pinned and its fetch has not finished.
  bool pin_pending(const ChunkKey& key);
  // A small read that is not part of a stream, on the caller's thread: bytes [offset, offset
  // + n) of chunk key (of `length` bytes). The chunk whole if the fast tier has it (*whole is
  // then true); else, with slower tiers beneath it, the bytes read from them with
  // read_range(), as a chunk of their own (its byte 0 is byte `offset` of the chunk), without
  // reading the chunk whole; else nullptr (not cached, being fetched already, a version
  // without an ETag, or no slower tier): the caller then acquires the chunk as usual. When a
  // tier says the chunk is due for promotion, a fetch of it whole starts, not waited for.
  ChunkPtr read_small(const ChunkKey& key, uint64_t length, uint64_t offset, uint64_t n,
                      bool* whole);
  // Returns budget taken by a prefetch.
  void release(uint64_t charged_bytes);
  // Read-ahead budget not taken right now (a hint: others may take it meanwhile).
  uint64_t budget_free() const {
    const uint64_t used = budget_used_.load(std::memory_order_relaxed) + handoff_charge();
    return used >= options_.max_inflight_bytes ? 0 : options_.max_inflight_bytes - used;
  }
  // Sequential streams (readers with a read-ahead window open) come and go; each one's window
  // is held to its share of the budget, so one stream cannot take all of it and leave the
  // others to fetch a chunk at a time on demand.
  void stream_opened() { streams_.fetch_add(1, std::memory_order_relaxed); }
  void stream_closed() { streams_.fetch_sub(1, std::memory_order_relaxed); }
  // The largest window, in chunks, one stream may use now: max_window_chunks, held to an
  // equal share of the budget among the open streams (never below initial_window_chunks).
  uint32_t window_cap_chunks() const {
    const uint64_t streams = std::max<uint32_t>(1, streams_.load(std::memory_order_relaxed));
    const uint64_t share = options_.max_inflight_bytes / options_.chunk_size / streams;
    return static_cast<uint32_t>(std::max<uint64_t>(
        options_.initial_window_chunks, std::min<uint64_t>(options_.max_window_chunks, share)));
  }
  // A prefetched chunk dropped unread.
  void count_wasted() { prefetch_wasted_.fetch_add(1, std::memory_order_relaxed); }
  // Bytes a reader served from chunks it found in memory.
  void count_served_from_memory(uint64_t n) {
    if (n != 0) memory_served_bytes_.fetch_add(n, std::memory_order_relaxed);
  }

  // Fails queued fetches with kCancelled and joins the threads (running GETs finish first).
  void shutdown();

  const std::string& bucket() const { return bucket_; }
  const ReadaheadOptions& options() const { return options_; }
  ReadPathCounters counters() const;

 private:
  bool try_charge(uint64_t n);
  // The part of handoff_bytes_ beyond the allowance, which counts against the budget.
  uint64_t handoff_charge() const {
    const uint64_t h = handoff_bytes_.load(std::memory_order_relaxed);
    return h > options_.handoff_allowance_bytes ? h - options_.handoff_allowance_bytes : 0;
  }
  std::shared_ptr<FetchState> start_fetch(const ChunkKey& key, uint64_t length, bool prefetch);
  // Fetches a run of consecutive chunks of one version with one request and completes each,
  // then calls on_done (if any) before handing the chunks to the slower tiers. Chunks found in
  // the slower tiers cost no request; the rest come from the bucket. on_fetched (if any) is
  // then told the bytes that came from the bucket, if some did.
  void run_fetches(const std::vector<PendingFetch>& run, const std::function<void()>& on_done,
                   const std::function<void(uint64_t)>& on_fetched);
  // One range GET for run[from, to), filling chunks or status (run_fetches() caches them).
  // Chunks whose bytes have all landed while the request goes on are made at once and passed
  // to early(i) (which completes them), all but the last.
  void fetch_stretch(const std::vector<PendingFetch>& run, size_t from, size_t to,
                     std::vector<ChunkPtr>& chunks, std::vector<Status>& status,
                     const std::function<void(size_t)>& early);

  ObjectStore& store_;
  BlockCache& cache_;
  BlockCache& fast_cache_;  // asked inline by acquire(); cache_ is asked by the fetch threads
  const std::string bucket_;
  const ReadaheadOptions options_;

  mutable std::mutex inflight_mu_;  // protects inflight_
  std::unordered_map<ChunkKey, std::shared_ptr<FetchState>, ChunkKeyHash> inflight_;
  struct Pin {
    ChunkPtr chunk;                     // at hand, or
    std::shared_ptr<FetchState> fetch;  // its fetch (in flight, or done: chunk or status)
    uint64_t charged_bytes = 0;
    uint32_t holders = 0;
  };
  // The pinned chunk or fetch of key, if any and not failed. Under inflight_mu_.
  bool pinned_locked(const ChunkKey& key, ChunkRef& ref) const;
  std::unordered_map<ChunkKey, Pin, ChunkKeyHash> pinned_;  // under inflight_mu_

  std::atomic<bool> cancelled_{false};
  std::atomic<uint32_t> streams_{0};      // readers with a window open
  std::atomic<uint64_t> budget_used_{0};  // bytes charged by prefetches not yet read
  // Bytes fetched from the bucket and not yet taken by the slower tier's put (which may wait
  // for room in the SSD writer's queue). Beyond handoff_allowance_bytes they count against
  // the read-ahead budget: when the disk writes slower than the bucket delivers, read-ahead
  // slows to match instead of piling up chunks in memory.
  std::atomic<uint64_t> handoff_bytes_{0};
  std::atomic<uint64_t> cache_hit_bytes_{0};
  std::atomic<uint64_t> memory_served_bytes_{0};
  std::atomic<uint64_t> fetched_bytes_{0};
  std::atomic<uint64_t> fetch_requests_{0};
  std::atomic<uint64_t> prefetched_{0};
  std::atomic<uint64_t> prefetch_wasted_{0};
  std::atomic<uint64_t> fetch_errors_{0};
  std::atomic<uint64_t> range_reads_{0};
  std::atomic<uint64_t> promotions_{0};

  ThreadPool pool_;  // last: its threads use the members above, so it stops first
};

}  // namespace warmfs

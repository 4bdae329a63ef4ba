#include "readahead/chunk_fetcher.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/buffer.h"
#include "common/crc32c.h"
#include "common/log.h"

namespace warmfs {

void FetchState::wait() {
  if (done()) return;
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return done(); });
}

void FetchState::complete(ChunkPtr chunk, Status status) {
  {
    std::lock_guard lock(mu_);
    chunk_ = std::move(chunk);
    status_ = std::move(status);
    done_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

namespace {
ReadaheadOptions sanitize(ReadaheadOptions o) {
  if (o.chunk_size == 0) o.chunk_size = kDefaultChunkSize;
  if (o.fetch_threads == 0) o.fetch_threads = 1;
  o.initial_window_chunks = std::min(o.initial_window_chunks, o.max_window_chunks);
  return o;
}
}  // namespace

ChunkFetcher::ChunkFetcher(ObjectStore& store, BlockCache& cache, std::string bucket,
                           ReadaheadOptions options, BlockCache* fast_cache)
    : store_(store),
      cache_(cache),
      fast_cache_(fast_cache != nullptr ? *fast_cache : cache),
      bucket_(std::move(bucket)),
      options_(sanitize(options)),
      pool_(options_.fetch_threads, "warmfs-fetch") {}

ChunkFetcher::~ChunkFetcher() { shutdown(); }

void ChunkFetcher::shutdown() {
  cancelled_.store(true, std::memory_order_relaxed);
  pool_.shutdown();
}

bool ChunkFetcher::try_charge(uint64_t n) {
  uint64_t cur = budget_used_.load(std::memory_order_relaxed);
  do {
    if (cur + handoff_charge() + n > options_.max_inflight_bytes) return false;
  } while (!budget_used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  return true;
}

void ChunkFetcher::release(uint64_t charged_bytes) {
  if (charged_bytes != 0) budget_used_.fetch_sub(charged_bytes, std::memory_order_relaxed);
}

ChunkRef ChunkFetcher::acquire(const ChunkKey& key, uint64_t length, Mode mode,
                               std::vector<PendingFetch>* defer) {
  const bool cacheable = !key.etag.empty();
  auto cached = [&]() -> ChunkPtr {
    if (!cacheable) return nullptr;
    ChunkPtr c = fast_cache_.get(key);
    // A chunk of the wrong length would be a cache bug; treat it as a miss.
    if (c && c->bytes.size() != length) return nullptr;
    return c;
  };
  ChunkRef ref;
  if ((ref.chunk = cached())) {
    cache_hit_bytes_.fetch_add(length, std::memory_order_relaxed);
    return ref;
  }
  if (mode == Mode::kJoin) {
    std::lock_guard lock(inflight_mu_);
    if (auto it = inflight_.find(key); it != inflight_.end()) {
      ref.fetch = it->second;
    } else {
      pinned_locked(key, ref);
    }
    return ref;
  }
  const bool prefetch = mode == Mode::kPrefetch;
  if (prefetch) {
    if (!try_charge(length)) return ref;
    ref.charged_bytes = length;
  }
  {
    std::lock_guard lock(inflight_mu_);
    if (auto it = inflight_.find(key); it != inflight_.end()) {
      ref.fetch = it->second;
      if (prefetch) prefetched_.fetch_add(1, std::memory_order_relaxed);
      return ref;
    }
    // A fetch may have finished between the cache miss above and taking the lock.
    if (pinned_locked(key, ref)) {
      if (ref.fetch) {
        if (prefetch) prefetched_.fetch_add(1, std::memory_order_relaxed);
        return ref;
      }
      cache_hit_bytes_.fetch_add(length, std::memory_order_relaxed);
    } else if ((ref.chunk = cached())) {
      cache_hit_bytes_.fetch_add(length, std::memory_order_relaxed);
    } else {
      ref.fetch = std::make_shared<FetchState>(prefetch);
      inflight_.emplace(key, ref.fetch);
    }
  }
  if (ref.chunk) {
    release(ref.charged_bytes);
    ref.charged_bytes = 0;
    return ref;
  }
  if (prefetch) prefetched_.fetch_add(1, std::memory_order_relaxed);
  if (defer != nullptr) {
    defer->push_back(PendingFetch{ref.fetch, key, length});
  } else {
    submit({PendingFetch{ref.fetch, key, length}});
  }
  return ref;
}

ChunkPtr ChunkFetcher::read_small(const ChunkKey& key, uint64_t length, uint64_t offset, uint64_t n,
                                  bool* whole) {
  *whole = false;
  if (key.etag.empty() || &fast_cache_ == &cache_ || offset > length || n > length - offset) {
    return nullptr;
  }
  if (ChunkPtr c = fast_cache_.get(key); c && c->bytes.size() == length) {
    cache_hit_bytes_.fetch_add(length, std::memory_order_relaxed);
    *whole = true;
    return c;
  }
  {
    // A fetch under way brings the chunk whole: join it rather than read the disk beside it.
    // A chunk an order pinned is held for its reader: acquire() hands it over.
    std::lock_guard lock(inflight_mu_);
    if (inflight_.count(key) != 0 || pinned_.count(key) != 0) return nullptr;
  }
  std::vector<std::byte> bytes(n);
  bool promote = false;
  if (!cache_.read_range(key, offset, bytes, &promote)) return nullptr;
  range_reads_.fetch_add(1, std::memory_order_relaxed);
  cache_hit_bytes_.fetch_add(n, std::memory_order_relaxed);
  if (promote) {
    // Read again soon: the chunk whole, into memory (TieredCache::get promotes it), by a
    // fetch thread; a reader of it meanwhile joins that fetch.
    std::vector<PendingFetch> pending;
    acquire(key, length, Mode::kDemand, &pending);
    if (!pending.empty()) {
      promotions_.fetch_add(1, std::memory_order_relaxed);
      submit(std::move(pending));
    }
  }
  auto chunk = std::make_shared<Chunk>();
  chunk->crc32c = crc32c(bytes);
  chunk->bytes = ChunkBytes(std::move(bytes));
  return chunk;
}

bool ChunkFetcher::pinned_locked(const ChunkKey& key, ChunkRef& ref) const {
  auto it = pinned_.find(key);
  if (it == pinned_.end()) return false;
  const Pin& p = it->second;
  if (p.chunk) {
    ref.chunk = p.chunk;
  } else if (!p.fetch->done()) {
    ref.fetch = p.fetch;
  } else if (p.fetch->chunk()) {
    ref.chunk = p.fetch->chunk();
  } else {
    return false;  // failed: a reader fetches afresh
  }
  return true;
}

bool ChunkFetcher::pin(const ChunkKey& key, uint64_t length, std::vector<PendingFetch>* defer) {
  {
    std::lock_guard lock(inflight_mu_);
    if (auto it = pinned_.find(key); it != pinned_.end()) {
      ++it->second.holders;
      return true;
    }
  }
  ChunkRef ref = acquire(key, length, Mode::kPrefetch, defer);
  if (ref.empty()) return false;
  std::lock_guard lock(inflight_mu_);
  Pin& p = pinned_[key];
  if (p.holders++ == 0) {
    p.chunk = std::move(ref.chunk);
    p.fetch = std::move(ref.fetch);
    p.charged_bytes = ref.charged_bytes;
  } else {
    release(ref.charged_bytes);  // pinned meanwhile by another caller
  }
  return true;
}

void ChunkFetcher::unpin(const ChunkKey& key) {
  uint64_t charged = 0;
  {
    std::lock_guard lock(inflight_mu_);
    auto it = pinned_.find(key);
    if (it == pinned_.end() || --it->second.holders > 0) return;
    charged = it->second.charged_bytes;
    pinned_.erase(it);
  }
  release(charged);
}

bool ChunkFetcher::pin_pending(const ChunkKey& key) {
  std::lock_guard lock(inflight_mu_);
  auto it = pinned_.find(key);
  return it != pinned_.end() && !it->second.chunk && !it->second.fetch->done();
}

size_t ChunkFetcher::submit(std::vector<PendingFetch> pending, std::function<void()> on_run_done,
                            uint64_t max_run_bytes, std::function<void(uint64_t)> on_fetched) {
  const uint64_t cap = max_run_bytes == 0 ? options_.max_request_bytes
                                          : std::min(max_run_bytes, options_.max_request_bytes);
  size_t runs = 0;
  size_t i = 0;
  while (i < pending.size()) {
    // A run: consecutive indices of one version, within max_request_bytes.
    std::vector<PendingFetch> run{std::move(pending[i])};
    uint64_t bytes = run.back().length;
    for (++i; i < pending.size(); ++i) {
      const PendingFetch& next = pending[i];
      const PendingFetch& prev = run.back();
      if (next.key.index != prev.key.index + 1 || next.key.key != prev.key.key ||
          next.key.etag != prev.key.etag || prev.length != options_.chunk_size ||
          bytes + next.length > cap) {
        break;
      }
      bytes += next.length;
      run.push_back(std::move(pending[i]));
    }
    auto task = std::make_shared<std::vector<PendingFetch>>(std::move(run));
    auto work = [this, task, on_run_done, on_fetched] {
      run_fetches(*task, on_run_done, on_fetched);
    };
    ++runs;
    if (!pool_.submit(work)) work();  // shut down
  }
  return runs;
}

void ChunkFetcher::run_fetches(const std::vector<PendingFetch>& run,
                               const std::function<void()>& on_done,
                               const std::function<void(uint64_t)>& on_fetched) {
  std::vector<ChunkPtr> chunks(run.size());
  std::vector<Status> status(run.size());
  std::vector<bool> fetched(run.size(), false);  // came from the bucket: to be cached
  std::vector<bool> completed(run.size(), false);
  const bool cacheable = !run.front().key.etag.empty();
  // A chunk of the bucket's goes into the fast tier before its fetch completes (a reader
  // arriving later finds it there or in the finished fetch), then its waiters wake.
  auto complete_early = [&](size_t i) {
    fetched[i] = true;
    if (cacheable) fast_cache_.put(run[i].key, chunks[i]);
    run[i].fetch->complete(chunks[i], Status::ok());
    completed[i] = true;
  };
  if (cancelled_.load(std::memory_order_relaxed)) {
    for (auto& s : status) s = Status(Errc::kCancelled, "read path shutting down");
  } else {
    // The slower tiers (SSD) first: what they hold costs no request.
    const bool tiered = &fast_cache_ != &cache_;
    std::vector<bool> found(run.size(), false);
    if (tiered && cacheable) {
      for (size_t i = 0; i < run.size(); ++i) {
        ChunkPtr c = cache_.get(run[i].key);
        if (c && c->bytes.size() == run[i].length) {
          chunks[i] = std::move(c);
          found[i] = true;
          cache_hit_bytes_.fetch_add(run[i].length, std::memory_order_relaxed);
        }
      }
    }
    // The rest from the bucket, one request per contiguous stretch of misses.
    for (size_t i = 0; i < run.size();) {
      if (found[i]) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < run.size() && !found[j]) ++j;
      fetch_stretch(run, i, j, chunks, status, complete_early);
      for (size_t k = i; k < j; ++k) fetched[k] = chunks[k] != nullptr;
      i = j;
    }
  }
  if (cacheable) {
    for (size_t i = 0; i < run.size(); ++i) {
      if (fetched[i] && !completed[i]) fast_cache_.put(run[i].key, chunks[i]);
    }
  }
  {
    std::lock_guard lock(inflight_mu_);
    for (const auto& p : run) {
      auto it = inflight_.find(p.key);
      if (it != inflight_.end() && it->second == p.fetch) inflight_.erase(it);
    }
  }
  for (size_t i = 0; i < run.size(); ++i) {
    if (!completed[i]) run[i].fetch->complete(chunks[i], status[i]);
  }
  if (on_done) on_done();  // the request is over for its readers
  uint64_t from_bucket = 0;
  for (size_t i = 0; i < run.size(); ++i) {
    if (fetched[i]) from_bucket += run[i].length;
  }
  if (on_fetched && from_bucket != 0) on_fetched(from_bucket);
  // Only now the slower tiers, whose put may wait for room in a write queue.
  if (cacheable && &fast_cache_ != &cache_) {
    const uint64_t handoff = from_bucket;
    handoff_bytes_.fetch_add(handoff, std::memory_order_relaxed);
    for (size_t i = 0; i < run.size(); ++i) {
      if (!fetched[i]) continue;
      cache_.put(run[i].key, std::move(chunks[i]));
      handoff_bytes_.fetch_sub(run[i].length, std::memory_order_relaxed);
    }
  }
}

void ChunkFetcher::fetch_stretch(const std::vector<PendingFetch>& run, size_t from, size_t to,
                                 std::vector<ChunkPtr>& chunks, std::vector<Status>& status,
                                 const std::function<void(size_t)>& early) {
  const ChunkKey& first = run[from].key;
  uint64_t total = 0;
  for (size_t i = from; i < to; ++i) total += run[i].length;
  const uint64_t offset = first.index * options_.chunk_size;
  fetch_requests_.fetch_add(1, std::memory_order_relaxed);
  // One buffer for the stretch, not zero-filled, that the download fills by pwrite; its chunks
  // are slices of it (no copy).
  std::shared_ptr<std::byte[]> buf = allocate_fill_buffer(total);
  // Chunks are made as their bytes land, so a reader waits for its chunk, not for the whole
  // request; all but the last, which is made once the request has ended (see
  // ObjectStore::get_range_progress: the last byte may be asked for again).
  size_t next = from;    // first chunk not made yet
  uint64_t next_at = 0;  // its offset in buf
  // Each chunk's CRC32Cs (its blocks', and its own combined from them), computed as its bytes
  // arrive (while they are in the core's cache), when the store shows them; else
  // make_chunk_slice reads the buffer for them.
  std::vector<ChunkCrcs> crcs(to - from);
  uint64_t hashed = 0;   // bytes [0, hashed) of buf are in crc
  bool streamed = true;  // no byte was missed
  const RangeBytesSeen seen = [&](uint64_t at, std::span<const std::byte> bytes) {
    if (!streamed || at + bytes.size() <= hashed) return;  // already seen (a retry)
    if (at > hashed) {
      streamed = false;  // a gap: the bytes between were not shown
      return;
    }
    bytes = bytes.subspan(static_cast<size_t>(hashed - at));
    while (!bytes.empty()) {
      const uint64_t c = hashed / options_.chunk_size;  // run[from + c]; all but the last full
      const uint64_t chunk_end = std::min(total, (c + 1) * options_.chunk_size);
      const size_t n = static_cast<size_t>(std::min<uint64_t>(bytes.size(), chunk_end - hashed));
      crcs[c].update(bytes.first(n));
      hashed += n;
      bytes = bytes.subspan(n);
    }
  };
  auto make_up_to = [&](uint64_t bytes, size_t limit) {
    while (next < limit && next_at + run[next].length <= bytes) {
      chunks[next] =
          streamed && next_at + run[next].length <= hashed
              ? make_chunk_slice(buf, next_at, run[next].length, std::move(crcs[next - from]))
              : make_chunk_slice(buf, next_at, run[next].length);
      next_at += run[next].length;
      ++next;
    }
  };
  Result<size_t> got = store_.get_range_progress(
      first.key, offset, std::span(buf.get(), total), first.etag,
      [&](size_t landed) {
        const size_t before = next;
        make_up_to(landed, to - 1);
        for (size_t i = before; i < next; ++i) early(i);
      },
      seen);
  Status st;
  if (!got.is_ok()) {
    st = std::move(got).take_status();
  } else if (*got != total) {
    st = Status(Errc::kIo, "short read of " + first.key + " at " + std::to_string(offset) + ": " +
                               std::to_string(*got) + " of " + std::to_string(total) + " bytes");
  }
  if (!st.is_ok()) {
    fetch_errors_.fetch_add(1, std::memory_order_relaxed);
    log::debug("fetch of {} chunks {}..{} failed: {}", first.key, first.index,
               run[to - 1].key.index, st.to_string());
    for (size_t i = next; i < to; ++i) status[i] = st;  // the ones made early stand
    fetched_bytes_.fetch_add(next_at, std::memory_order_relaxed);
    return;
  }
  fetched_bytes_.fetch_add(total, std::memory_order_relaxed);
  make_up_to(total, to);
}

ReadPathCounters ChunkFetcher::counters() const {
  ReadPathCounters c;
  c.cache_hit_bytes = cache_hit_bytes_.load(std::memory_order_relaxed);
  c.memory_served_bytes = memory_served_bytes_.load(std::memory_order_relaxed);
  c.fetched_bytes = fetched_bytes_.load(std::memory_order_relaxed);
  c.fetch_requests = fetch_requests_.load(std::memory_order_relaxed);
  c.prefetched_chunks = prefetched_.load(std::memory_order_relaxed);
  c.prefetch_wasted_chunks = prefetch_wasted_.load(std::memory_order_relaxed);
  c.inflight_bytes = budget_used_.load(std::memory_order_relaxed) + handoff_charge();
  c.fetch_errors = fetch_errors_.load(std::memory_order_relaxed);
  c.range_reads = range_reads_.load(std::memory_order_relaxed);
  c.range_promotions = promotions_.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(inflight_mu_);
    c.chunks_in_flight = inflight_.size();
  }
  return c;
}

}  // namespace warmfs

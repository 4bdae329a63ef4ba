#include "readahead/chunk_fetcher.h"

#include <algorithm>
#include <utility>
#include <vector>

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
                           ReadaheadOptions options)
    : store_(store),
      cache_(cache),
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
    if (cur + n > options_.max_inflight_bytes) return false;
  } while (!budget_used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
  return true;
}

void ChunkFetcher::release(uint64_t charged_bytes) {
  if (charged_bytes != 0) budget_used_.fetch_sub(charged_bytes, std::memory_order_relaxed);
}

ChunkRef ChunkFetcher::acquire(const ChunkKey& key, uint64_t length, Mode mode) {
  const bool cacheable = !key.etag.empty();
  auto cached = [&]() -> ChunkPtr {
    if (!cacheable) return nullptr;
    ChunkPtr c = cache_.get(key);
    // A chunk of the wrong length would be a cache bug; treat it as a miss.
    if (c && c->bytes.size() != length) return nullptr;
    return c;
  };
  ChunkRef ref;
  if ((ref.chunk = cached())) {
    cache_hit_bytes_.fetch_add(length, std::memory_order_relaxed);
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
    if ((ref.chunk = cached())) {
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
  auto fetch = ref.fetch;
  const bool queued = pool_.submit([this, fetch, key, length] { run_fetch(fetch, key, length); });
  if (!queued) run_fetch(fetch, key, length);  // shut down: completes it as cancelled
  return ref;
}

void ChunkFetcher::run_fetch(const std::shared_ptr<FetchState>& fetch, const ChunkKey& key,
                             uint64_t length) {
  ChunkPtr chunk;
  Status status;
  if (cancelled_.load(std::memory_order_relaxed)) {
    status = Status(Errc::kCancelled, "read path shutting down");
  } else {
    // One buffer per fetch: it becomes the chunk, so the bytes are never copied again.
    std::vector<std::byte> buf(length);
    const uint64_t offset = key.index * options_.chunk_size;
    fetch_requests_.fetch_add(1, std::memory_order_relaxed);
    Result<size_t> got = store_.get_range(key.key, offset, buf, key.etag);
    if (!got.is_ok()) {
      status = std::move(got).take_status();
    } else if (*got != length) {
      status =
          Status(Errc::kIo, "short read of " + key.key + " at " + std::to_string(offset) + ": " +
                                std::to_string(*got) + " of " + std::to_string(length) + " bytes");
    } else {
      fetched_bytes_.fetch_add(length, std::memory_order_relaxed);
      chunk = make_chunk(std::move(buf));
      if (!key.etag.empty()) cache_.put(key, chunk);
    }
    if (!status.is_ok()) {
      fetch_errors_.fetch_add(1, std::memory_order_relaxed);
      log::debug("fetch of {} chunk {} failed: {}", key.key, key.index, status.to_string());
    }
  }
  {
    std::lock_guard lock(inflight_mu_);
    auto it = inflight_.find(key);
    if (it != inflight_.end() && it->second == fetch) inflight_.erase(it);
  }
  fetch->complete(std::move(chunk), std::move(status));
}

ReadPathCounters ChunkFetcher::counters() const {
  ReadPathCounters c;
  c.cache_hit_bytes = cache_hit_bytes_.load(std::memory_order_relaxed);
  c.fetched_bytes = fetched_bytes_.load(std::memory_order_relaxed);
  c.fetch_requests = fetch_requests_.load(std::memory_order_relaxed);
  c.prefetched_chunks = prefetched_.load(std::memory_order_relaxed);
  c.prefetch_wasted_chunks = prefetch_wasted_.load(std::memory_order_relaxed);
  c.inflight_bytes = budget_used_.load(std::memory_order_relaxed);
  c.fetch_errors = fetch_errors_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace warmfs

#include "readahead/read_path.h"

#include <algorithm>
#include <utility>

#include "readahead/chunk_fetcher.h"
#include "readahead/order_prefetch.h"
#include "readahead/windowed_reader.h"

namespace warmfs {

struct ReadPath::Impl {
  // Shared with every Reader, which may outlive the ReadPath (but not read after it).
  std::shared_ptr<ChunkFetcher> fetcher;
};

ReadPath::ReadPath(ObjectStore& store, BlockCache& cache, std::string bucket,
                   ReadaheadOptions options, BlockCache* fast_cache)
    : impl_(std::make_unique<Impl>()) {
  impl_->fetcher =
      std::make_shared<ChunkFetcher>(store, cache, std::move(bucket), options, fast_cache);
}

ReadPath::~ReadPath() { impl_->fetcher->shutdown(); }

std::unique_ptr<Reader> ReadPath::open(ObjectVersion version) {
  return std::make_unique<WindowedReader>(impl_->fetcher, std::move(version));
}

void ReadPath::warm(const ObjectVersion& version, uint64_t max_bytes) {
  ChunkFetcher& f = *impl_->fetcher;
  const uint64_t chunk = f.options().chunk_size;
  const uint64_t end = std::min(version.size, max_bytes);
  if (version.etag.empty() || end == 0) return;  // only versions the cache can hold
  std::vector<PendingFetch> pending;
  for (uint64_t i = 0; i * chunk < end; ++i) {
    const uint64_t length = std::min(chunk, version.size - i * chunk);
    f.acquire(ChunkKey{f.bucket(), version.key, version.etag, i}, length,
              ChunkFetcher::Mode::kDemand, &pending);
  }
  if (!pending.empty()) f.submit(std::move(pending));
}

ReadPathCounters ReadPath::counters() const { return impl_->fetcher->counters(); }

const ReadaheadOptions& ReadPath::options() const { return impl_->fetcher->options(); }

std::unique_ptr<OrderPrefetcher> ReadPath::make_order_prefetcher(
    std::string key_prefix, std::function<Result<ObjectVersion>(const std::string&)> resolve,
    const OrderOptions& options) {
  return std::make_unique<OrderPrefetcher>(impl_->fetcher, std::move(key_prefix),
                                           std::move(resolve), options);
}

}  // namespace warmfs

#include "readahead/read_path.h"

#include <utility>

#include "readahead/chunk_fetcher.h"
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

ReadPathCounters ReadPath::counters() const { return impl_->fetcher->counters(); }

const ReadaheadOptions& ReadPath::options() const { return impl_->fetcher->options(); }

}  // namespace warmfs

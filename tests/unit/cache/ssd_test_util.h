// Helpers for the SSD cache tests: a temp dir removed afterwards, a FileIo that fails on
// command, keys and chunks.
#pragma once

#include <stdlib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "cache/block_cache.h"
#include "cache/ssd_cache.h"
#include "io/file_io.h"
#include "support/temp_dir.h"
#include "support/test_data.h"

namespace warmfs::testing {

// Delegates to pread/pwrite unless told to fail reads or writes with an errno. Logs the size
// of every read.
class FaultyIo final : public io::FileIo {
 public:
  std::atomic<int> write_errno{0};
  std::atomic<int> read_errno{0};
  std::atomic<uint64_t> writes{0};

  Result<size_t> read_at(int fd, std::span<std::byte> out, uint64_t offset) override {
    {
      std::lock_guard lock(mu_);
      read_sizes_.push_back(out.size());
    }
    if (int e = read_errno.load()) return io::errno_status(e, "injected read");
    return inner_->read_at(fd, out, offset);
  }
  // The sizes of the reads asked for since the last clear_reads(), in order.
  std::vector<size_t> read_sizes() const {
    std::lock_guard lock(mu_);
    return read_sizes_;
  }
  void clear_reads() {
    std::lock_guard lock(mu_);
    read_sizes_.clear();
  }
  Status write_at(int fd, std::span<const std::byte> data, uint64_t offset) override {
    if (int e = write_errno.load()) return io::errno_status(e, "injected write");
    writes.fetch_add(1);
    return inner_->write_at(fd, data, offset);
  }
  bool uses_io_uring() const override { return false; }

 private:
  std::unique_ptr<io::FileIo> inner_ = io::make_posix_file_io();
  mutable std::mutex mu_;  // protects read_sizes_
  std::vector<size_t> read_sizes_;
};

// Opens the cache, failing the test with the reason when it cannot.
inline std::unique_ptr<SsdCache> open_ok(const SsdCacheOptions& o, Clock& clock) {
  auto c = SsdCache::open(o, clock);
  INFO((c.is_ok() ? std::string("ok") : c.status().to_string()));
  REQUIRE(c.is_ok());
  return std::move(c).value();
}

inline ChunkKey key_of(uint64_t index, std::string etag = "etag-1") {
  return ChunkKey{"bucket", "data/object.bin", std::move(etag), index};
}

inline ChunkPtr chunk_of(size_t size, uint64_t seed) {
  return make_chunk(random_bytes(size, seed));
}

// Sum of the sizes of the region files.
inline uint64_t region_file_bytes(const std::string& cache_dir) {
  uint64_t total = 0;
  for (const auto& f : std::filesystem::directory_iterator(cache_dir + "/regions")) {
    total += f.file_size();
  }
  return total;
}

}  // namespace warmfs::testing

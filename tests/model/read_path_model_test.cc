// Randomized model test of the read path: random configurations, objects, readers, reads,
// replacements and injected faults, checked against the plain bytes of each version.
//
// Invariants: a successful read returns exactly the bytes of the reader's version; a reader
// of a replaced version either reads its own version's bytes or fails with
// kPreconditionFailed; other errors appear only while faults are injected, and once they are
// cleared every reader of a current version reads successfully; the read-ahead budget and the
// cache capacity are never exceeded; closing every reader returns the whole budget.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cache/memory_cache.h"
#include "readahead/read_path.h"
#include "support/fault_injecting_store.h"
#include "support/memory_object_store.h"
#include "support/test_data.h"

using namespace warmfs;
using Op = FaultInjectingStore::Op;

namespace {

struct Version {
  std::string etag;
  std::shared_ptr<const std::vector<std::byte>> bytes;
};

struct OpenReader {
  size_t object = 0;
  Version version;
  std::unique_ptr<Reader> reader;
  uint64_t next = 0;  // where a sequential continuation would read
};

class Model {
 public:
  explicit Model(uint64_t seed) : rng_(seed) {
    const uint64_t chunk_sizes[] = {512, 1000, 4096};
    options_.chunk_size = chunk_sizes[rng_() % 3];
    options_.initial_window_chunks = 1 + rng_() % 4;
    options_.max_window_chunks = options_.initial_window_chunks * (1 + rng_() % 8);
    options_.max_inflight_bytes = options_.chunk_size * (rng_() % 12);
    options_.fetch_threads = 1 + rng_() % 4;
    const uint64_t cache_chunks[] = {0, 1, 3, 1000};
    cache_ = std::make_unique<MemoryCache>(
        MemoryCacheOptions{.capacity_bytes = options_.chunk_size * cache_chunks[rng_() % 4],
                           .shards = uint32_t(1 + rng_() % 16)});
    path_ = std::make_unique<ReadPath>(store_, *cache_, "model", options_);
    for (size_t i = 0; i < 4; ++i) {
      objects_.emplace_back();
      replace(i);
    }
  }

  ~Model() {
    readers_.clear();
    path_.reset();
  }

  void step() {
    const uint32_t dice = rng_() % 100;
    if (dice < 8 || readers_.empty()) return open_one();
    if (dice < 12) return close_one();
    if (dice < 15) return replace(rng_() % objects_.size());
    if (dice < 18) return inject();
    if (dice < 21) return heal();
    read_one();
  }

  void finish() {
    heal();
    for (auto& r : readers_) {
      if (r.version.etag == objects_[r.object].etag) read_all(r);
    }
    readers_.clear();
    CHECK(path_->counters().inflight_bytes == 0);
    CHECK(cache_->used_bytes() <= cache_->capacity_bytes());
  }

 private:
  void replace(size_t i) {
    const uint64_t size = rng_() % (options_.chunk_size * 20 + 1);
    auto bytes = std::make_shared<std::vector<std::byte>>(random_bytes(size, rng_()));
    objects_[i].etag = bucket_.put_object(key(i), *bytes);
    objects_[i].bytes = std::move(bytes);
  }

  static std::string key(size_t i) { return "data/obj" + std::to_string(i); }

  void open_one() {
    const size_t i = rng_() % objects_.size();
    OpenReader r;
    r.object = i;
    r.version = objects_[i];
    r.reader = path_->open({key(i), r.version.etag, r.version.bytes->size()});
    readers_.push_back(std::move(r));
  }

  void close_one() {
    if (readers_.empty()) return;
    readers_.erase(readers_.begin() + long(rng_() % readers_.size()));
  }

  void inject() {
    faults_ = true;
    store_.fail_next(Op::kGetRange, int(1 + rng_() % 3), Status(Errc::kIo, "injected"));
  }

  // Clears the faults and lets fetches that already met one finish, so that from here on
  // every read of a current version must succeed.
  void heal() {
    store_.clear_faults();
    for (int i = 0; i < 2000 && store_.in_flight() > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    faults_ = false;
  }

  // Reads r from start to end in one pass (used after heal: must all succeed).
  void read_all(OpenReader& r) {
    const auto& bytes = *r.version.bytes;
    for (uint64_t off = 0; off < bytes.size(); off += options_.chunk_size) {
      check_read(r, off, options_.chunk_size, /*must_succeed=*/true);
    }
  }

  void read_one() {
    OpenReader& r = readers_[rng_() % readers_.size()];
    const uint64_t size = r.version.bytes->size();
    const bool sequential = rng_() % 4 != 0;
    const uint64_t off = sequential ? r.next : rng_() % (size + options_.chunk_size);
    const size_t len = 1 + rng_() % (options_.chunk_size * 3);
    const bool stale = r.version.etag != objects_[r.object].etag;
    check_read(r, off, len, !faults_ && !stale);
  }

  void check_read(OpenReader& r, uint64_t off, size_t len, bool must_succeed) {
    const auto& bytes = *r.version.bytes;
    const bool stale = r.version.etag != objects_[r.object].etag;
    std::vector<std::byte> buf(len);
    Result<size_t> n = r.reader->read(off, buf);
    INFO("object " << r.object << " offset " << off << " len " << len << " size " << bytes.size()
                   << " stale " << stale << " faults " << faults_);
    if (!n.is_ok()) {
      INFO("error " << n.status().to_string());
      REQUIRE_FALSE(must_succeed);
      if (n.code() == Errc::kPreconditionFailed) {
        REQUIRE(stale);
      } else {
        REQUIRE(n.code() == Errc::kIo);
        REQUIRE(faults_);
      }
      return;
    }
    const uint64_t expect = off >= bytes.size() ? 0 : std::min<uint64_t>(len, bytes.size() - off);
    REQUIRE(*n == expect);
    if (expect > 0) REQUIRE(std::memcmp(buf.data(), bytes.data() + off, expect) == 0);
    r.next = off + expect;
    REQUIRE(path_->counters().inflight_bytes <= options_.max_inflight_bytes);
    REQUIRE(cache_->used_bytes() <= cache_->capacity_bytes());
  }

  std::mt19937_64 rng_;
  ReadaheadOptions options_;
  MemoryObjectStore bucket_;
  FaultInjectingStore store_{bucket_};
  std::unique_ptr<MemoryCache> cache_;
  std::unique_ptr<ReadPath> path_;
  std::vector<Version> objects_;
  std::vector<OpenReader> readers_;
  bool faults_ = false;
};

}  // namespace

TEST_CASE("read path agrees with a byte model under random reads, changes and faults",
          "[model][readahead]") {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    INFO("seed " << seed);
    Model m(seed);
    for (int i = 0; i < 500; ++i) m.step();
    m.finish();
  }
}

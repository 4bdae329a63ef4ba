// Figures for docs/snapshots.md: a benchmark of its own binary, not a test (tools/test does not
// run it):
//   WARMFS_SNAPSHOT_BENCH_KEYS=1000000 build/tests/warmfs_snapshot_bench
// A bucket of N keys in an ImageNet-like tree (1,000 directories) in the in-memory store:
// the time to list it into a manifest, to write and to load the file, the manifest's memory
// per entry, and the rate at which a mount from it lists directories (Metadata::list).
#include <fmt/format.h>
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "cache/kv_db.h"
#include "meta/dir_stream.h"
#include "meta/listing_index.h"
#include "meta/metadata.h"
#include "snapshot/manifest.h"
#include "snapshot/snapshot_lister.h"
#include "snapshot/snapshot_store.h"
#include "support/fake_clock.h"
#include "support/memory_object_store.h"
#include "support/temp_dir.h"

using namespace warmfs;

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// readdir of the root's "flat" as the mount does it (opendir, then entry after entry): the
// time to its first entry, to its last, and how many.
struct Readdir {
  double first_s = 0;
  double all_s = 0;
  size_t count = 0;
};
Readdir readdir_flat(Metadata& meta) {
  Readdir r;
  const auto t = std::chrono::steady_clock::now();
  auto dir = meta.lookup(kRootIno, "flat");
  REQUIRE(dir.is_ok());
  auto open = meta.open_dir(dir->ino);
  REQUIRE(open.is_ok());
  REQUIRE((*open)->at(0).is_ok());
  r.first_s = since(t);
  for (;; ++r.count) {
    auto e = (*open)->at(r.count);
    REQUIRE(e.is_ok());
    if (*e == nullptr) break;
  }
  r.all_s = since(t);
  return r;
}

}  // namespace

TEST_CASE("snapshot benchmark", "[snapshot-bench]") {
  const char* env = std::getenv("WARMFS_SNAPSHOT_BENCH_KEYS");
  const size_t n = env ? std::strtoull(env, nullptr, 10) : 1'000'000;
  const size_t dirs = 1000;
  FakeClock clock;
  MemoryObjectStore bucket{"b", clock};
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    const size_t d = i % dirs;
    // Distinct bodies: distinct ETags, which do not compress (as in a real bucket).
    bucket.put_object(fmt::format("train/n{:08}/n{:08}_{:07}.JPEG", d, d, i), std::to_string(i));
  }
  std::fprintf(stderr, "keys %zu: filled the in-memory bucket in %.1f s\n", n, since(t0));

  SnapshotListOptions lo;
  lo.concurrency = 32;
  t0 = std::chrono::steady_clock::now();
  auto m = take_snapshot(bucket, "b", "", 1, lo);
  REQUIRE(m.is_ok());
  REQUIRE(m->size() == n);
  const double list_s = since(t0);

  testing::TempDir dir;
  const std::string path = dir.path + "/bench.wfsnap";
  t0 = std::chrono::steady_clock::now();
  REQUIRE(write_manifest_file(*m, path).is_ok());
  const double write_s = since(t0);
  const auto file_bytes = std::filesystem::file_size(path);
  m = Manifest();  // free it before the load is measured

  t0 = std::chrono::steady_clock::now();
  auto loaded = read_manifest_file(path);
  INFO(loaded.status().message());
  REQUIRE(loaded.is_ok());
  const double load_s = since(t0);
  REQUIRE(loaded->size() == n);
  size_t key_bytes = 0;
  for (size_t i = 0; i < n; ++i) key_bytes += loaded->key(i).size();
  const double per_entry = static_cast<double>(loaded->memory_bytes()) / n;
  const double over_name = static_cast<double>(loaded->memory_bytes() - key_bytes) / n;

  auto shared = std::make_shared<const Manifest>(std::move(*loaded));
  SnapshotStore store(bucket, shared);
  MetaOptions mo;
  mo.object_attrs = false;  // as a snapshot mount has them: read-only (mount_command.cc)
  Metadata meta(store, clock, mo);
  t0 = std::chrono::steady_clock::now();
  auto train = meta.lookup(kRootIno, "train");
  REQUIRE(train.is_ok());
  auto top = meta.list(train->ino);
  REQUIRE(top.is_ok());
  size_t entries = 0;
  for (const DirEntry& e : (*top)->entries) {
    auto d = meta.lookup(train->ino, e.name);
    REQUIRE(d.is_ok());
    auto l = meta.list(d->ino);
    REQUIRE(l.is_ok());
    entries += (*l)->entries.size();
  }
  const double readdir_s = since(t0);
  CHECK(entries == n);

  std::fprintf(stderr,
               "keys %zu: list into a manifest %.2f s (%.0f keys/s), write %.2f s (%.1f MiB, "
               "%.1f bytes/key), load %.2f s (%.0f keys/s), memory %.1f bytes/entry (%.1f over "
               "the key), readdir of all %zu directories %.2f s (%.0f entries/s)\n",
               n, list_s, n / list_s, write_s, file_bytes / 1048576.0,
               static_cast<double>(file_bytes) / n, load_s, n / load_s, per_entry, over_name, dirs,
               readdir_s, entries / readdir_s);
}

TEST_CASE("snapshot benchmark: one huge directory", "[snapshot-bench]") {
  const char* env = std::getenv("WARMFS_SNAPSHOT_BENCH_KEYS");
  const size_t n = env ? std::strtoull(env, nullptr, 10) : 1'000'000;
  FakeClock clock;
  MemoryObjectStore bucket{"b", clock};  // empty: the listing comes from the manifest alone
  ManifestBuilder b("b", "", false, 1);
  for (size_t i = 0; i < n; ++i) {
    REQUIRE(b.add(fmt::format("flat/{:09}.bin", i), i, 1, fmt::format("{:032x}", i)).is_ok());
  }
  SnapshotStore store(bucket, std::make_shared<const Manifest>(std::move(b).finish()));
  MetaOptions mo;
  mo.object_attrs = false;  // as a snapshot mount has them: read-only (mount_command.cc)
  // readdir as the mount does it (opendir, then entry after entry): the first entries come
  // after one page, the rest as readdir reaches them.
  Readdir streamed;
  {
    Metadata m(store, clock, mo);
    streamed = readdir_flat(m);
    CHECK(streamed.count == n);
  }
  Metadata meta(store, clock, mo);
  auto t0 = std::chrono::steady_clock::now();
  auto dir = meta.lookup(kRootIno, "flat");
  REQUIRE(dir.is_ok());
  auto l = meta.list(dir->ino);
  REQUIRE(l.is_ok());
  const double list_s = since(t0);
  CHECK((*l)->entries.size() == n);
  t0 = std::chrono::steady_clock::now();
  // 100,000 lookups spread over the directory (the first ones also pay for malloc's
  // consolidation of what building the listing freed).
  const size_t lookups = std::min<size_t>(n, 100'000);
  for (size_t i = 0; i < lookups; ++i) {
    REQUIRE(meta.lookup(dir->ino, fmt::format("{:09}.bin", i * (n / lookups))).is_ok());
  }
  const double lookup_s = since(t0);
  CHECK(bucket.counters().list_requests == 0);
  CHECK(meta.counters().listing_cache_hits >= lookups);  // each from the cached listing
  std::fprintf(stderr,
               "one directory of %zu entries: listed through Metadata in %.2f s (%.0f entries/s); "
               "%zu lookups in it %.3f s (%.1f us each); readdir page by page: first entry "
               "after %.1f ms, every entry in %.2f s (%.0f entries/s)\n",
               n, list_s, n / list_s, lookups, lookup_s, lookup_s * 1e6 / lookups,
               streamed.first_s * 1e3, streamed.all_s, n / streamed.all_s);
}

// A directory of N entries from the listing index (--cache-dir, RocksDB), as a second mount
// reads it: the index keeps a directory as one value, which is read and decoded whole before
// its first entry is given.
//   WARMFS_SNAPSHOT_BENCH_KEYS=1000000 build/tests/warmfs_snapshot_bench "*listing index"
TEST_CASE("snapshot benchmark: one huge directory from the listing index", "[snapshot-bench]") {
  const char* env = std::getenv("WARMFS_SNAPSHOT_BENCH_KEYS");
  const size_t n = env ? std::strtoull(env, nullptr, 10) : 1'000'000;
  FakeClock clock;
  MemoryObjectStore bucket{"b", clock};
  for (size_t i = 0; i < n; ++i) bucket.put_object(fmt::format("flat/{:09}.bin", i), "x");
  testing::TempDir tmp;
  auto db = KvDb::open(tmp.path + "/listings");
  REQUIRE(db.is_ok());
  ListingIndex index(**db, "http://e", "b", "");
  MetaOptions mo;
  mo.object_attrs = false;
  {  // the first mount lists the bucket and keeps the listing in the index
    Metadata first(bucket, clock, mo);
    first.set_listing_index(&index);
    auto dir = first.lookup(kRootIno, "flat");
    REQUIRE(dir.is_ok());
    auto l = first.list(dir->ino);
    REQUIRE(l.is_ok());
    REQUIRE((*l)->entries.size() == n);
  }
  const uint64_t lists = bucket.counters().list_requests;
  Metadata second(bucket, clock, mo);
  second.set_listing_index(&index);
  const Readdir r = readdir_flat(second);
  CHECK(r.count == n);
  CHECK(second.counters().listing_index_hits >= 1);
  CHECK(bucket.counters().list_requests == lists);  // no LIST: the index answered
  std::fprintf(stderr,
               "one directory of %zu entries from the listing index: first entry after %.1f ms, "
               "every entry in %.2f s (%.0f entries/s)\n",
               n, r.first_s * 1e3, r.all_s, n / r.all_s);
}

namespace {

// Each LIST takes WARMFS_SNAPSHOT_BENCH_LIST_MS milliseconds (a real sleep; default 10, a
// LIST's time on S3 is tens of ms), so requests in flight show in the time.
class SlowLists : public MemoryObjectStore {
 public:
  SlowLists(Clock& clock, std::chrono::microseconds latency)
      : MemoryObjectStore("b", clock), latency_(latency) {}
  Result<ListPage> list(const ListRequest& request) override {
    std::this_thread::sleep_for(latency_);
    return MemoryObjectStore::list(request);
  }

 private:
  std::chrono::microseconds latency_;
};

}  // namespace

// WARMFS_SNAPSHOT_BENCH_KEYS=1000000 build/tests/warmfs_snapshot_bench "*flat directory"
TEST_CASE("snapshot benchmark: list one flat directory", "[snapshot-bench]") {
  const char* env = std::getenv("WARMFS_SNAPSHOT_BENCH_KEYS");
  const size_t n = env ? std::strtoull(env, nullptr, 10) : 1'000'000;
  const char* ms_env = std::getenv("WARMFS_SNAPSHOT_BENCH_LIST_MS");
  const double ms = ms_env ? std::strtod(ms_env, nullptr) : 10.0;
  FakeClock clock;
  SlowLists bucket(clock, std::chrono::microseconds(static_cast<int64_t>(ms * 1000)));
  for (size_t i = 0; i < n; ++i) {
    bucket.put_object(fmt::format("laion/{:09}.tar", i), std::to_string(i));
  }
  // The directory page after page, as one listing chained by continuation token does.
  auto t0 = std::chrono::steady_clock::now();
  ListRequest req;
  req.prefix = "laion/";
  size_t serial_keys = 0, serial_pages = 0;
  for (;;) {
    auto page = bucket.list(req);
    REQUIRE(page.is_ok());
    ++serial_pages;
    serial_keys += page->objects.size();
    if (!page->truncated) break;
    req.continuation_token = page->next_token;
  }
  const double serial_s = since(t0);
  REQUIRE(serial_keys == n);

  SnapshotListOptions lo;
  lo.concurrency = 32;
  SnapshotListStats stats;
  t0 = std::chrono::steady_clock::now();
  auto m = take_snapshot(bucket, "b", "", 1, lo, &stats);
  const double list_s = since(t0);
  REQUIRE(m.is_ok());
  REQUIRE(m->size() == n);
  std::fprintf(stderr,
               "one flat directory of %zu keys, LIST %.1f ms: page after page %.2f s (%zu "
               "requests); take_snapshot (concurrency 32) %.2f s (%llu requests, %.0f keys/s)\n",
               n, ms, serial_s, serial_pages, list_s,
               static_cast<unsigned long long>(stats.list_requests.load()), n / list_s);
}

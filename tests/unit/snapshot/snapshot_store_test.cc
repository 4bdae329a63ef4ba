#include "snapshot/snapshot_store.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "meta/metadata.h"
#include "snapshot/snapshot_lister.h"
#include "support/fake_clock.h"
#include "support/list_pages.h"
#include "support/memory_object_store.h"

using namespace warmfs;
using namespace std::chrono_literals;

namespace {

struct Fixture {
  FakeClock clock;
  MemoryObjectStore bucket{"b", clock};

  void fill(const std::string& prefix) {
    bucket.put_object(prefix + "top.txt", "top");
    bucket.put_object(prefix + "marker/", "");
    for (int d = 0; d < 12; ++d) {
      for (int f = 0; f < 30; ++f) {
        bucket.put_object(fmt::format("{}d{:02}/f{:03}", prefix, d, f), fmt::format("{}-{}", d, f));
      }
      bucket.put_object(fmt::format("{}d{:02}/deep/er/x", prefix, d), "x");
    }
    bucket.put_object(prefix + ".warmfs/snapshots/old", "a stored snapshot");
    bucket.put_object("outside/not-in", "no");
  }

  Manifest snapshot(const std::string& prefix, size_t concurrency = 4) {
    SnapshotListOptions o;
    o.concurrency = concurrency;
    SnapshotListStats stats;
    auto m = take_snapshot(bucket, "b", prefix, 42, o, &stats);
    REQUIRE(m.is_ok());
    CHECK(stats.keys.load() == m->size());
    return std::move(*m);
  }
};

using warmfs::testing::all_pages;

}  // namespace

TEST_CASE("a snapshot lists every key below the prefix but the reserved folder", "[snapshot]") {
  Fixture f;
  f.fill("data/");
  Manifest m = f.snapshot("data/");
  CHECK(m.size() == 2 + 12 * 31);
  CHECK(m.prefix() == "data/");
  CHECK(m.find("top.txt").has_value());
  CHECK(m.find("marker/").has_value());
  CHECK(m.find("d03/deep/er/x").has_value());
  CHECK_FALSE(m.find(".warmfs/snapshots/old").has_value());
  auto i = m.find("d11/f029");
  REQUIRE(i.has_value());
  CHECK(m.etag(*i) == MemoryObjectStore::md5_hex(to_bytes("11-29")));
  // The same with one listing at a time.
  CHECK(f.snapshot("data/", 1).size() == m.size());
}

TEST_CASE("a snapshot store lists exactly as the bucket did", "[snapshot]") {
  Fixture f;
  f.fill("");
  auto manifest = std::make_shared<const Manifest>(f.snapshot(""));
  SnapshotStore store(f.bucket, manifest);
  REQUIRE(f.bucket.remove(".warmfs/snapshots/old").is_ok());  // not in the snapshot, by design
  for (const std::string prefix : {"", "d00/", "d05/deep/", "d0", "marker/", "nothing/", "o"}) {
    for (const std::string delim : {"/", ""}) {
      for (int max_keys : {1, 3, 1000}) {
        INFO(prefix << " '" << delim << "' " << max_keys);
        CHECK(all_pages(store, prefix, delim, max_keys) ==
              all_pages(f.bucket, prefix, delim, max_keys));
      }
      // Starting after a key: before, inside and past the prefix, and inside a folder.
      for (const std::string after :
           {"a", "d00", "d00/f3", "d03/deep/", "d05/deep/x", "d1", "marker/", "top.txt", "zzz"}) {
        INFO(prefix << " '" << delim << "' after " << after);
        CHECK(all_pages(store, prefix, delim, 3, after) ==
              all_pages(f.bucket, prefix, delim, 3, after));
      }
    }
  }
}

TEST_CASE("a tree walk through a snapshot costs the bucket no request", "[snapshot]") {
  Fixture f;
  f.fill("data/");
  auto manifest = std::make_shared<const Manifest>(f.snapshot("data/"));
  SnapshotStore store(f.bucket, manifest);
  const auto before = f.bucket.counters();
  MetaOptions mo;
  mo.prefix = "data/";
  mo.ttl = 1s;
  Metadata meta(store, f.clock, mo);
  size_t files = 0;
  std::vector<uint64_t> dirs{kRootIno};
  while (!dirs.empty()) {
    const uint64_t dir = dirs.back();
    dirs.pop_back();
    auto l = meta.list(dir);
    REQUIRE(l.is_ok());
    for (const DirEntry& e : (*l)->entries) {
      auto a = meta.lookup(dir, e.name);
      REQUIRE(a.is_ok());
      if (a->is_dir)
        dirs.push_back(a->ino);
      else
        ++files;
    }
    f.clock.advance(2s);  // past the TTL: revalidations too come from the snapshot
  }
  CHECK(files == 1 + 12 * 31);
  auto x = meta.lookup(kRootIno, "top.txt");
  REQUIRE(x.is_ok());
  f.clock.advance(5s);
  CHECK(meta.revalidate_file(x->ino).is_ok());
  CHECK(meta.lookup(kRootIno, "absent").code() == Errc::kNotFound);
  const auto after = f.bucket.counters();
  CHECK(after.list_requests == before.list_requests);
  CHECK(after.head_requests == before.head_requests);
}

TEST_CASE("snapshot reads are pinned: a changed object is stale, never other bytes", "[snapshot]") {
  Fixture f;
  f.fill("");
  auto manifest = std::make_shared<const Manifest>(f.snapshot(""));
  SnapshotStore store(f.bucket, manifest);
  auto info = store.head("d01/f002");
  REQUIRE(info.is_ok());
  std::vector<std::byte> buf(16);
  auto n = store.get_range("d01/f002", 0, buf, info->etag);
  REQUIRE(n.is_ok());
  CHECK(std::string(reinterpret_cast<const char*>(buf.data()), *n) == "1-2");

  f.bucket.put_object("d01/f002", "changed!");
  auto stale = store.get_range("d01/f002", 0, buf, info->etag);
  CHECK(stale.code() == Errc::kPreconditionFailed);
  CHECK(stale.status().message().find("d01/f002 changed since the snapshot") != std::string::npos);
  // The snapshot still shows the old size; a deleted object is stale too.
  CHECK(store.head("d01/f002")->size == 3);
  REQUIRE(f.bucket.remove("d01/f003").is_ok());
  CHECK(store.get_range("d01/f003", 0, buf, "").code() == Errc::kPreconditionFailed);
  // A key created after the snapshot is not in it.
  f.bucket.put_object("new", "n");
  CHECK(store.head("new").code() == Errc::kNotFound);
}

TEST_CASE("a snapshot store refuses writes", "[snapshot]") {
  Fixture f;
  f.fill("");
  SnapshotStore store(f.bucket, std::make_shared<const Manifest>(f.snapshot("")));
  CHECK(store.put("k", to_bytes("x"), PutOptions{}).code() == Errc::kReadOnly);
  CHECK(store.remove("top.txt").code() == Errc::kReadOnly);
  CHECK(store.copy("top.txt", "t2", "").code() == Errc::kReadOnly);
  CHECK(store.create_multipart("k").code() == Errc::kReadOnly);
  CHECK(f.bucket.head("top.txt").is_ok());
}

// A bucket whose listings fail from the n-th on.
class FailingLists : public MemoryObjectStore {
 public:
  FailingLists(Clock& clock, int ok_lists) : MemoryObjectStore("b", clock), left_(ok_lists) {}
  Result<ListPage> list(const ListRequest& request) override {
    if (left_.fetch_sub(1) <= 0) return Status(Errc::kAccessDenied, "denied");
    return MemoryObjectStore::list(request);
  }

 private:
  std::atomic<int> left_;
};

TEST_CASE("a failing listing fails the snapshot, whichever listing it is", "[snapshot]") {
  FakeClock clock;
  for (int n : {0, 1, 5, 12}) {
    INFO("listings before the failure: " << n);
    FailingLists bucket(clock, n);
    for (int d = 0; d < 20; ++d) bucket.put_object(fmt::format("d{:02}/f", d), "x");
    SnapshotListOptions o;
    o.concurrency = 4;
    CHECK(take_snapshot(bucket, "b", "", 1, o).code() == Errc::kAccessDenied);
  }
  FailingLists fine(clock, 1000);
  fine.put_object("a", "x");
  CHECK(take_snapshot(fine, "b", "", 1, SnapshotListOptions{}).is_ok());
  CHECK(take_snapshot(fine, "b", "no-slash", 1, SnapshotListOptions{}).code() ==
        Errc::kInvalidArgument);
}

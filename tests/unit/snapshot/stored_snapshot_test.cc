#include "snapshot/stored_snapshot.h"

#include <catch2/catch.hpp>

#include "meta/metadata.h"
#include "snapshot/snapshot_lister.h"
#include "support/fake_clock.h"
#include "support/memory_object_store.h"

using namespace warmfs;

TEST_CASE("snapshot names are plain file names", "[snapshot]") {
  CHECK(is_snapshot_name("v7"));
  CHECK(is_snapshot_name("imagenet-2026.12_a"));
  CHECK_FALSE(is_snapshot_name(""));
  CHECK_FALSE(is_snapshot_name(".."));
  CHECK_FALSE(is_snapshot_name("a/b"));
  CHECK_FALSE(is_snapshot_name("a b"));
  CHECK_FALSE(is_snapshot_name(std::string(129, 'a')));
  CHECK(stored_snapshot_key("data/", "v7") == "data/.warmfs/snapshots/v7");
  CHECK(stored_snapshot_key("", "v7") == ".warmfs/snapshots/v7");
}

TEST_CASE("a snapshot stored in the bucket loads back, and is hidden from it", "[snapshot]") {
  FakeClock clock;
  MemoryObjectStore bucket{"b", clock};
  bucket.put_object("data/a", "a");
  bucket.put_object("data/sub/b", "bb");
  auto m = take_snapshot(bucket, "b", "data/", 7, SnapshotListOptions{});
  REQUIRE(m.is_ok());
  REQUIRE(store_snapshot(bucket, *m, "v1").is_ok());
  CHECK(bucket.head("data/.warmfs/snapshots/v1").is_ok());

  auto back = load_stored_snapshot(bucket, "data/", "v1");
  REQUIRE(back.is_ok());
  REQUIRE(back->size() == 2);
  CHECK(back->key(1) == "sub/b");
  // A second snapshot leaves the first one (and itself) out.
  auto again = take_snapshot(bucket, "b", "data/", 8, SnapshotListOptions{});
  REQUIRE(again.is_ok());
  CHECK(again->size() == 2);

  CHECK(load_stored_snapshot(bucket, "data/", "nope").code() == Errc::kNotFound);
  CHECK(load_stored_snapshot(bucket, "data/", "../x").code() == Errc::kInvalidArgument);
  CHECK(store_snapshot(bucket, *m, "a/b").code() == Errc::kInvalidArgument);
  // A stored object that is not a snapshot is refused.
  bucket.put_object("data/.warmfs/snapshots/junk", "junk");
  CHECK(load_stored_snapshot(bucket, "data/", "junk").code() == Errc::kCorrupt);

  // A plain mount of the prefix does not show the reserved folder.
  MetaOptions mo;
  mo.prefix = "data/";
  Metadata meta(bucket, clock, mo);
  auto l = meta.list(kRootIno);
  REQUIRE(l.is_ok());
  REQUIRE((*l)->entries.size() == 2);
  CHECK((*l)->entries[0].name == "a");
  CHECK((*l)->entries[1].name == "sub");
  CHECK(meta.lookup(kRootIno, ".warmfs").code() == Errc::kNotFound);
}

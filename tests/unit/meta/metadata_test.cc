#include "meta/metadata.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "support/fake_clock.h"
#include "support/fault_injecting_store.h"
#include "support/memory_object_store.h"

using namespace warmfs;
using namespace std::chrono_literals;

namespace {

struct Fixture {
  FakeClock clock;
  MemoryObjectStore bucket{"b", clock};
  FaultInjectingStore store{bucket};
  std::unique_ptr<Metadata> meta;

  // object_attrs off by default: these tests count the requests of listings and probes;
  // the HEADs for attributes are counted in their own tests (here and tests/unit/fs).
  explicit Fixture(std::string prefix = "", bool object_attrs = false) {
    MetaOptions o;
    o.prefix = std::move(prefix);
    o.ttl = 10s;
    o.object_attrs = object_attrs;
    meta = std::make_unique<Metadata>(store, clock, o);
  }
  std::vector<std::string> names(uint64_t dir) {
    auto l = meta->list(dir);
    REQUIRE(l.is_ok());
    std::vector<std::string> out;
    for (auto& e : (*l)->entries) out.push_back(e.name.str() + (e.is_dir ? "/" : ""));
    return out;
  }
};

}  // namespace

TEST_CASE("keys become a tree of implicit and marker directories", "[meta]") {
  Fixture f;
  f.bucket.put_object("a.txt", "hello");
  f.bucket.put_object("dir/x", "xx");
  f.bucket.put_object("dir/sub/y", "yyy");
  f.bucket.put_object("marker/", "");
  CHECK(f.names(kRootIno) == std::vector<std::string>{"a.txt", "dir/", "marker/"});

  auto dir = f.meta->lookup(kRootIno, "dir");
  REQUIRE(dir.is_ok());
  CHECK(dir->is_dir);
  CHECK(f.names(dir->ino) == std::vector<std::string>{"sub/", "x"});
  auto marker = f.meta->lookup(kRootIno, "marker");
  REQUIRE(marker.is_ok());
  CHECK(marker->is_dir);
  CHECK(f.names(marker->ino).empty());

  auto a = f.meta->lookup(kRootIno, "a.txt");
  REQUIRE(a.is_ok());
  CHECK_FALSE(a->is_dir);
  CHECK(a->size == 5);
  CHECK(!a->etag.empty());
  CHECK(f.meta->lookup(kRootIno, "missing").code() == Errc::kNotFound);
}

TEST_CASE("names that cannot be file names are skipped", "[meta]") {
  Fixture f;
  f.bucket.put_object("ok", "1");
  f.bucket.put_object("a//b", "2");
  f.bucket.put_object("./c", "3");
  f.bucket.put_object("../d", "4");
  f.bucket.put_object(std::string(256, 'n'), "5");
  f.bucket.put_object(std::string(255, 'm'), "6");
  auto names = f.names(kRootIno);
  CHECK(names == std::vector<std::string>{"a/", std::string(255, 'm'), "ok"});
  auto a = f.meta->lookup(kRootIno, "a");
  REQUIRE(a.is_ok());
  CHECK(f.names(a->ino).empty());  // "a//b" has an empty segment
  CHECK(f.meta->counters().skipped_keys >= 4);
  CHECK(f.meta->lookup(kRootIno, "..").code() == Errc::kNotFound);
  CHECK(f.meta->lookup(kRootIno, ".").code() == Errc::kNotFound);
}

TEST_CASE("a directory wins over a file of the same name in listings", "[meta]") {
  Fixture f;
  f.bucket.put_object("x", "file");
  f.bucket.put_object("x/inner", "in");
  CHECK(f.names(kRootIno) == std::vector<std::string>{"x/"});
  Fixture g;
  g.bucket.put_object("x", "file");
  g.bucket.put_object("x/inner", "in");
  auto x = g.meta->lookup(kRootIno, "x");  // no listing cached: one LIST of the root answers
  REQUIRE(x.is_ok());
  CHECK(x->is_dir);  // as the listing shows it
  CHECK(g.store.call_count(FaultInjectingStore::Op::kList) == 1);
  CHECK(g.store.call_count(FaultInjectingStore::Op::kHead) == 0);
}

TEST_CASE("a probe of a directory too large to list finds the file of a name that is both",
          "[meta]") {
  Fixture f;
  for (int i = 0; i < 1001; ++i) f.bucket.put_object(fmt::format("k{:04}", i), "v");
  f.bucket.put_object("x", "file");
  f.bucket.put_object("x/inner", "in");
  auto x = f.meta->lookup(kRootIno, "x");  // one page is not the whole root: a HEAD finds the file
  REQUIRE(x.is_ok());
  CHECK_FALSE(x->is_dir);
  CHECK(f.store.call_count(FaultInjectingStore::Op::kHead) == 1);
}

TEST_CASE("the first lookup in an unlisted directory lists it: a tree walk costs LISTs only",
          "[meta]") {
  Fixture f;
  for (int d = 0; d < 3; ++d) {
    for (int i = 0; i < 20; ++i) f.bucket.put_object(fmt::format("top/d{}/f{}", d, i), "x");
  }
  auto top = f.meta->lookup(kRootIno, "top");
  REQUIRE(top.is_ok());
  CHECK(top->is_dir);
  for (int d = 0; d < 3; ++d) {
    auto dir = f.meta->lookup(top->ino, fmt::format("d{}", d));
    REQUIRE(dir.is_ok());
    for (int i = 0; i < 20; ++i) REQUIRE(f.meta->lookup(dir->ino, fmt::format("f{}", i)).is_ok());
    CHECK(f.meta->lookup(dir->ino, "absent").code() == Errc::kNotFound);
  }
  CHECK(f.store.call_count(FaultInjectingStore::Op::kHead) == 0);
  CHECK(f.store.call_count(FaultInjectingStore::Op::kList) == 5);  // the root, top, d0..d2
}

TEST_CASE("with object attributes, a file's first lookup from a listing costs a HEAD, once",
          "[meta][attrs]") {
  Fixture f("", true);
  f.bucket.put_object("d/a", "1");
  f.bucket.set_metadata("d/a", {{"mode", "33152"}});
  f.bucket.put_object("d/b", "2");
  auto d = f.meta->lookup(kRootIno, "d");
  REQUIRE(d.is_ok());
  CHECK(f.store.call_count(FaultInjectingStore::Op::kHead) == 1);  // the "d/" marker: none
  auto a = f.meta->lookup(d->ino, "a");
  REQUIRE(a.is_ok());
  CHECK(a->attrs.mode == 33152u);
  auto b = f.meta->lookup(d->ino, "b");
  REQUIRE(b.is_ok());
  CHECK_FALSE(b->attrs.mode);
  CHECK(f.store.call_count(FaultInjectingStore::Op::kHead) == 3);
  // Forgotten, the TTL past, listed again: the versions are the same, so no HEAD.
  f.meta->forget(a->ino, 1);
  f.meta->forget(b->ino, 1);
  f.clock.advance(20s);
  REQUIRE(f.meta->lookup(d->ino, "a").is_ok());
  REQUIRE(f.meta->lookup(d->ino, "b").is_ok());
  CHECK(f.store.call_count(FaultInjectingStore::Op::kHead) == 3);
  // Changed by another client (a new Last-Modified): HEADed again.
  f.bucket.set_metadata("d/a", {{"mode", "33188"}});
  f.bucket.set_mtime("d/a", 1800000000);
  f.clock.advance(20s);
  auto again = f.meta->lookup(d->ino, "a");
  REQUIRE(again.is_ok());
  CHECK(again->attrs.mode == 33188u);
  CHECK(f.store.call_count(FaultInjectingStore::Op::kHead) == 4);
}

TEST_CASE("a directory that cannot be listed still answers lookups by HEAD", "[meta]") {
  Fixture f;
  f.bucket.put_object("d/a", "1");
  f.bucket.put_object("d/b", "2");
  auto d = f.meta->lookup(kRootIno, "d");
  REQUIRE(d.is_ok());
  f.store.clear_calls();
  f.store.fail_always(FaultInjectingStore::Op::kList,
                      Status(Errc::kAccessDenied, "403 AccessDenied"));
  auto a = f.meta->lookup(d->ino, "a");
  REQUIRE(a.is_ok());
  CHECK(a->size == 1);
  REQUIRE(f.meta->lookup(d->ino, "b").is_ok());
  CHECK(f.store.call_count(FaultInjectingStore::Op::kList) ==
        1);  // tried once, then not for the TTL
  CHECK(f.store.call_count(FaultInjectingStore::Op::kHead) == 2);
}

TEST_CASE("lookups in a listed directory cost no request", "[meta]") {
  Fixture f;
  for (int i = 0; i < 50; ++i) f.bucket.put_object("d/f" + std::to_string(i), "x");
  auto d = f.meta->lookup(kRootIno, "d");
  REQUIRE(d.is_ok());
  REQUIRE(f.meta->list(d->ino).is_ok());
  f.store.clear_calls();
  for (int i = 0; i < 50; ++i) REQUIRE(f.meta->lookup(d->ino, "f" + std::to_string(i)).is_ok());
  CHECK(f.meta->lookup(d->ino, "nope").code() == Errc::kNotFound);
  CHECK(f.store.calls().empty());
}

TEST_CASE("listings page through continuation tokens", "[meta]") {
  Fixture f;
  for (int i = 0; i < 2500; ++i) f.bucket.put_object(fmt::format("k{:05}", i), "v");
  CHECK(f.names(kRootIno).size() == 2500);
  CHECK(f.store.call_count(FaultInjectingStore::Op::kList) >= 3);
}

TEST_CASE("a prefix mount shows only what is below the prefix", "[meta]") {
  Fixture f("sub/dir/");
  f.bucket.put_object("sub/dir/a", "1");
  f.bucket.put_object("sub/dir/b/c", "2");
  f.bucket.put_object("sub/other", "3");
  f.bucket.put_object("top", "4");
  CHECK(f.names(kRootIno) == std::vector<std::string>{"a", "b/"});
  auto a = f.meta->lookup(kRootIno, "a");
  REQUIRE(a.is_ok());
  CHECK(*f.meta->key_of(a->ino) == "sub/dir/a");
  CHECK(f.meta->lookup(kRootIno, "other").code() == Errc::kNotFound);
}

TEST_CASE("a replaced object is seen after the TTL", "[meta]") {
  Fixture f;
  f.bucket.put_object("obj", "old");
  auto a = f.meta->lookup(kRootIno, "obj");
  REQUIRE(a.is_ok());
  const std::string old_etag = a->etag;
  f.bucket.put_object("obj", "newer bytes");
  auto fresh = f.meta->revalidate_file(a->ino);
  REQUIRE(fresh.is_ok());
  CHECK(fresh->etag == old_etag);  // within the TTL: trusted
  f.clock.advance(11s);
  fresh = f.meta->revalidate_file(a->ino);
  REQUIRE(fresh.is_ok());
  CHECK(fresh->etag != old_etag);
  CHECK(fresh->size == 11);
  f.bucket.delete_object("obj");
  f.clock.advance(11s);
  CHECK(f.meta->revalidate_file(a->ino).code() == Errc::kNotFound);
}

TEST_CASE("inodes are stable while referenced and dropped when forgotten", "[meta]") {
  Fixture f;
  f.bucket.put_object("a", "1");
  auto first = f.meta->lookup(kRootIno, "a");
  auto second = f.meta->lookup(kRootIno, "a");
  REQUIRE(first.is_ok());
  REQUIRE(second.is_ok());
  CHECK(first->ino == second->ino);
  f.meta->forget(first->ino, 1);
  CHECK(f.meta->getattr(first->ino).is_ok());
  f.meta->forget(first->ino, 1);
  CHECK(f.meta->getattr(first->ino).code() == Errc::kNotFound);
  auto third = f.meta->lookup(kRootIno, "a");
  REQUIRE(third.is_ok());
  CHECK(third->ino != first->ino);  // never reused
  f.meta->forget(kRootIno, 100);
  CHECK(f.meta->getattr(kRootIno).is_ok());
}

TEST_CASE("list errors propagate", "[meta]") {
  Fixture f;
  f.store.fail_next(FaultInjectingStore::Op::kList, 1,
                    Status(Errc::kAccessDenied, "403 AccessDenied"));
  CHECK(f.meta->list(kRootIno).code() == Errc::kAccessDenied);
  CHECK(f.meta->list(kRootIno).is_ok());
}

TEST_CASE("files opened by name make one LIST of their directory, not a HEAD each", "[meta]") {
  Fixture f;
  for (int i = 0; i < 3000; ++i) f.bucket.put_object(fmt::format("d/f{:04}", i), "x");
  auto d = f.meta->lookup(kRootIno, "d");
  REQUIRE(d.is_ok());
  f.store.clear_calls();
  for (int i = 0; i < 100; ++i) REQUIRE(f.meta->lookup(d->ino, fmt::format("f{:04}", i)).is_ok());
  CHECK(f.meta->lookup(d->ino, "absent").code() == Errc::kNotFound);
  // The first lookup's one-page listing is not the whole directory; four HEADs, then one
  // listing of its 3 pages answers the rest.
  CHECK(f.store.call_count(FaultInjectingStore::Op::kHead) == 4);
  CHECK(f.store.call_count(FaultInjectingStore::Op::kList) == 1 + 3);
}

TEST_CASE("a directory too large to list on the side keeps its HEADs", "[meta]") {
  Fixture f;
  for (int i = 0; i < 10050; ++i) f.bucket.put_object(fmt::format("big/k{:05}", i), "v");
  auto d = f.meta->lookup(kRootIno, "big");
  REQUIRE(d.is_ok());
  f.store.clear_calls();
  for (int i = 0; i < 20; ++i) REQUIRE(f.meta->lookup(d->ino, fmt::format("k{:05}", i)).is_ok());
  // A one-page attempt, one that gives up after 10 pages, then HEADs only.
  CHECK(f.store.call_count(FaultInjectingStore::Op::kList) == 1 + 10);
  CHECK(f.store.call_count(FaultInjectingStore::Op::kHead) == 20);
}

TEST_CASE("a directory's times set after changes in it are what it shows, until the next change",
          "[meta]") {
  Fixture f;
  f.bucket.put_object("d/", "");
  auto d = f.meta->lookup(kRootIno, "d");
  REQUIRE(d.is_ok());
  const int64_t t0 = std::chrono::system_clock::to_time_t(f.clock.wall_now());
  // A file created in it a minute later: the directory's mtime is then.
  f.clock.set_wall(f.clock.wall_now() + 60s);
  REQUIRE(f.meta->add_local_file(d->ino, "f", t0 + 60).is_ok());
  CHECK(f.meta->getattr(d->ino)->mtime_sec == t0 + 60);
  // rsync -a then sets the directory's mtime to its source's, older than the change.
  ObjectAttrs set;
  set.mtime = Timespec{t0 - 3600, 250};
  ObjectHeaders headers;
  attrs_to_metadata(set, headers.metadata);
  ObjectInfo info;
  info.key = "d/";
  f.meta->attrs_stored(d->ino, info, headers);
  auto after = f.meta->getattr(d->ino);
  REQUIRE(after.is_ok());
  REQUIRE(after->attrs.mtime.has_value());
  CHECK(after->attrs.mtime->sec == t0 - 3600);
  CHECK(after->attrs.mtime->nsec == 250);
  // A change in it after that is its mtime again.
  f.clock.set_wall(f.clock.wall_now() + 60s);
  REQUIRE(f.meta->add_local_file(d->ino, "g", t0 + 120).is_ok());
  auto changed = f.meta->getattr(d->ino);
  REQUIRE(changed.is_ok());
  CHECK(changed->mtime_sec == t0 + 120);
  CHECK_FALSE(changed->attrs.mtime.has_value());
}

TEST_CASE("a prefix mount's root shows the attributes on the prefix's marker, after a remount too",
          "[meta][attrs]") {
  Fixture f("p/", true);
  f.bucket.put_object("p/f", "1");
  ObjectAttrs set;
  set.mode = 040750;
  set.mtime = Timespec{1500000000, 0};
  ObjectHeaders headers;
  attrs_to_metadata(set, headers.metadata);
  f.bucket.put_object("p/", "");
  f.bucket.set_metadata("p/", headers.metadata);
  for (int i = 0; i < 2; ++i) {
    auto root = f.meta->getattr(kRootIno);
    REQUIRE(root.is_ok());
    REQUIRE(root->attrs.mtime.has_value());
    CHECK(root->attrs.mtime->sec == 1500000000);
    CHECK(root->attrs.mode == 040750u);
  }
  CHECK(f.store.call_count(FaultInjectingStore::Op::kHead) == 1);  // once per mount
  // Without a marker, or for a whole bucket, the root shows the mount's defaults.
  Fixture bare("q/", true);
  bare.bucket.put_object("q/f", "1");
  auto root = bare.meta->getattr(kRootIno);
  REQUIRE(root.is_ok());
  CHECK_FALSE(root->attrs.mtime.has_value());
  Fixture whole("", true);
  REQUIRE(whole.meta->getattr(kRootIno).is_ok());
  CHECK(whole.store.call_count(FaultInjectingStore::Op::kHead) == 0);
}

// A live upgrade gives each node the number the kernel knows it by (adopt_ino), one node at a
// time, parents first. A renumbered directory's children still name it, with no pass over
// every node per adoption; the numbers taken are never given to a new node.
TEST_CASE("adopted numbers: a renumbered directory keeps its children", "[meta]") {
  Fixture f;
  f.bucket.put_object("d/sub/x", "xx");
  f.bucket.put_object("d/y", "y");
  auto d = f.meta->lookup(kRootIno, "d");
  REQUIRE(d.is_ok());
  auto sub = f.meta->lookup(d->ino, "sub");
  REQUIRE(sub.is_ok());
  auto x = f.meta->lookup(sub->ino, "x");
  REQUIRE(x.is_ok());
  auto y = f.meta->lookup(d->ino, "y");
  REQUIRE(y.is_ok());

  // Numbers from a previous daemon: 1,000 and up, as a monotonic counter gave them.
  REQUIRE(f.meta->adopt_ino(d->ino, 1000, 1).is_ok());
  REQUIRE(f.meta->adopt_ino(sub->ino, 1001, 1).is_ok());
  REQUIRE(f.meta->adopt_ino(x->ino, 1002, 1).is_ok());
  CHECK(f.meta->adopt_ino(y->ino, 1002, 1).code() == Errc::kExists);
  REQUIRE(f.meta->adopt_ino(y->ino, 1003, 1).is_ok());
  CHECK_FALSE(f.meta->getattr(d->ino).is_ok());
  CHECK(f.meta->parent_of(1000) == kRootIno);
  CHECK(f.meta->parent_of(1001) == 1000);
  CHECK(f.meta->parent_of(1002) == 1001);
  CHECK(f.meta->parent_of(1003) == 1000);

  // Lookups under the new numbers find the same nodes, and paths are unchanged.
  auto x2 = f.meta->lookup(1001, "x");
  REQUIRE(x2.is_ok());
  CHECK(x2->ino == 1002);
  CHECK(f.meta->key_of(1002).value() == "d/sub/x");
  // A rename into the renumbered directory gives the new parent.
  f.meta->renamed(1000, "y", 1001, "z");
  CHECK(f.meta->parent_of(1003) == 1001);
  CHECK(f.meta->key_of(1003).value() == "d/sub/z");

  // New nodes take numbers none of the adopted ones has.
  f.bucket.put_object("d/w", "w");
  f.clock.advance(11s);  // d's listing is older than the TTL: w is found
  auto w = f.meta->lookup(1000, "w");
  REQUIRE(w.is_ok());
  CHECK(w->ino != 1000);
  CHECK(w->ino != 1001);
  CHECK(w->ino != 1002);
  CHECK(w->ino != 1003);
  CHECK(f.meta->parent_of(w->ino) == 1000);
}

// A walk that holds more nodes than the attribute cache's bound, through more fresh
// directories than the listing cache's: each cache is passed over when it has doubled since
// the last pass, not at every entry past the bound (which made an `ls -lR` of a million files
// with attributes quadratic). What is no longer needed still goes.
TEST_CASE("the caches' bounds cost a pass per doubling when what they hold is needed",
          "[meta][attrs]") {
  FakeClock clock;
  MemoryObjectStore bucket{"b", clock};
  FaultInjectingStore store{bucket};
  constexpr int kDirs = 50;
  constexpr int kFiles = 40;
  constexpr int kLate = 5000;
  for (int d = 0; d < kDirs; ++d) {
    for (int i = 0; i < kFiles; ++i) bucket.put_object(fmt::format("d{:02}/f{:02}", d, i), "x");
  }
  for (int i = 0; i < kLate; ++i) bucket.put_object(fmt::format("late/{:04}", i), "x");
  MetaOptions o;
  o.ttl = 1h;
  o.object_attrs = true;
  o.max_known = 64;
  o.max_listings = 8;
  Metadata meta(store, clock, o);
  std::vector<uint64_t> files;
  for (int d = 0; d < kDirs; ++d) {
    auto dir = meta.lookup(kRootIno, fmt::format("d{:02}", d));
    REQUIRE(dir.is_ok());
    for (int i = 0; i < kFiles; ++i) {
      auto f = meta.lookup(dir->ino, fmt::format("f{:02}", i));
      REQUIRE(f.is_ok());
      files.push_back(f->ino);
    }
  }
  // 2,050 attribute entries from a bound of 64 and 51 listings from 8: about five doublings
  // and three. A pass at every entry past the bound made about 2,000.
  CHECK(meta.counters().cache_sweeps <= 12);
  CHECK(meta.counters().cache_sweeps >= 2);

  // Forgotten by the kernel, the files' attributes go at the next pass: looked up again after
  // it, a file costs a HEAD again (its listing is still fresh).
  for (uint64_t ino : files) meta.forget(ino, 1);
  auto late = meta.lookup(kRootIno, "late");
  REQUIRE(late.is_ok());
  const uint64_t sweeps = meta.counters().cache_sweeps;
  for (int i = 0; meta.counters().cache_sweeps == sweeps; ++i) {
    REQUIRE(i < kLate);
    REQUIRE(meta.lookup(late->ino, fmt::format("{:04}", i)).is_ok());
  }
  auto d00 = meta.lookup(kRootIno, "d00");
  REQUIRE(d00.is_ok());
  const uint64_t heads = store.call_count(FaultInjectingStore::Op::kHead);
  REQUIRE(meta.lookup(d00->ino, "f00").is_ok());
  CHECK(store.call_count(FaultInjectingStore::Op::kHead) == heads + 1);
}

// Directories read page by page for readdir (meta/dir_stream.h, meta/listing_pages.h).
#include "meta/dir_stream.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <set>

#include "support/fake_clock.h"
#include "support/fault_injecting_store.h"
#include "support/memory_object_store.h"

using namespace warmfs;
using namespace std::chrono_literals;
using Op = FaultInjectingStore::Op;

namespace {

struct Fixture {
  FakeClock clock;
  MemoryObjectStore bucket{"b", clock};
  FaultInjectingStore store{bucket};
  std::unique_ptr<Metadata> meta;

  explicit Fixture(bool object_attrs = false) {
    MetaOptions o;
    o.ttl = 10s;
    o.object_attrs = object_attrs;
    meta = std::make_unique<Metadata>(store, clock, o);
  }
  uint64_t dir(const std::string& name) {
    auto d = meta->lookup(kRootIno, name);
    REQUIRE(d.is_ok());
    REQUIRE(d->is_dir);
    return d->ino;
  }
  int lists() const { return store.call_count(Op::kList); }
  int heads() const { return store.call_count(Op::kHead); }
};

}  // namespace

TEST_CASE("a large directory is read a page at a time, as readdir reaches its entries",
          "[meta][dir_stream]") {
  Fixture f;
  for (int i = 0; i < 2500; ++i) f.bucket.put_object(fmt::format("d/f{:05}", i), "x");
  f.bucket.put_object("d/sub/inner", "y");
  const uint64_t d = f.dir("d");
  const int before = f.lists();

  auto open = f.meta->open_dir(d);
  REQUIRE(open.is_ok());
  const OpenDir& dir = **open;
  CHECK(f.lists() == before + 1);  // the first page only
  CHECK(dir.streaming());
  // f00999, the page's last key, could still be a directory ("f00999/" sorts after it): the
  // page gives out the 999 entries before it.
  auto e = dir.at(998);
  REQUIRE(e.is_ok());
  REQUIRE(*e != nullptr);
  CHECK((*e)->name == "f00998");
  CHECK(f.lists() == before + 1);
  e = dir.at(999);
  REQUIRE(e.is_ok());
  CHECK((*e)->name == "f00999");
  CHECK(f.lists() == before + 2);

  auto all = dir.read_all();
  REQUIRE(all.is_ok());
  CHECK(f.lists() == before + 3);
  REQUIRE(all->size() == 2501);
  std::set<std::string> seen;
  for (const DirEntry& x : *all) CHECK(seen.insert(x.name.str()).second);  // each once
  CHECK(seen.count("sub") == 1);
  CHECK(!dir.streaming());
  // The first entries kept their offsets while the rest came.
  CHECK((*dir.at(998))->name == "f00998");

  // Complete: cached whole, as a listing read at once. No LIST for either.
  auto again = f.meta->open_dir(d);
  REQUIRE(again.is_ok());
  CHECK(!(*again)->streaming());
  auto listed = f.meta->list(d);
  REQUIRE(listed.is_ok());
  CHECK((*listed)->entries.size() == 2501);
  CHECK(std::is_sorted((*listed)->entries.begin(), (*listed)->entries.end(),
                       [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; }));
  CHECK(f.lists() == before + 3);
}

TEST_CASE("a directory of one page is listed and cached whole at opendir", "[meta][dir_stream]") {
  Fixture f;
  for (int i = 0; i < 10; ++i) f.bucket.put_object(fmt::format("d/f{}", i), "x");
  const uint64_t d = f.dir("d");
  const int before = f.lists();
  auto open = f.meta->open_dir(d);
  REQUIRE(open.is_ok());
  CHECK(!(*open)->streaming());
  CHECK((*open)->read_all()->size() == 10);
  REQUIRE(f.meta->lookup(d, "f3").is_ok());
  CHECK(f.lists() == before + 1);
  CHECK(f.heads() == 0);
}

TEST_CASE("a file listed on one page and a directory of its name on the next are one entry",
          "[meta][dir_stream]") {
  Fixture f;
  // Page 1: "x" and x-000 .. x-998; "x/" sorts after all of them and comes on page 2.
  f.bucket.put_object("d/x", "file");
  for (int i = 0; i < 999; ++i) f.bucket.put_object(fmt::format("d/x-{:03}", i), "x");
  f.bucket.put_object("d/x/inner", "in");
  const uint64_t d = f.dir("d");

  auto open = f.meta->open_dir(d);
  REQUIRE(open.is_ok());
  const OpenDir& dir = **open;
  const int after_first = f.lists();
  // A later name on page 1 is settled (the page reaches past "x-500/"): a lookup of it is
  // answered from the page, with no request.
  auto later = f.meta->lookup(d, "x-500");
  REQUIRE(later.is_ok());
  CHECK(!later->is_dir);
  CHECK(f.lists() == after_first);
  CHECK(f.heads() == 0);
  // A name between two listed ones, with the pages past it: absent, with no request.
  CHECK(f.meta->lookup(d, "x-500a").code() == Errc::kNotFound);
  CHECK(f.heads() == 0);

  // Entry 0 waits for page 2, which turns it into the directory.
  auto first = dir.at(0);
  REQUIRE(first.is_ok());
  CHECK((*first)->name == "x");
  CHECK((*first)->is_dir);
  auto all = dir.read_all();
  REQUIRE(all.is_ok());
  CHECK(all->size() == 1000);
  CHECK(std::count_if(all->begin(), all->end(), [](auto& e) { return e.name == "x"; }) == 1);
}

TEST_CASE("lookups in a directory being read are answered from the pages read",
          "[meta][dir_stream]") {
  Fixture f;
  for (int i = 0; i < 3000; ++i) f.bucket.put_object(fmt::format("d/f{:05}", i), "x");
  const uint64_t d = f.dir("d");
  auto open = f.meta->open_dir(d);
  REQUIRE(open.is_ok());
  const int lists = f.lists();
  auto a = f.meta->lookup(d, "f00500");
  REQUIRE(a.is_ok());
  CHECK(a->size == 1);
  CHECK(f.meta->lookup(d, "f00500.tmp").code() == Errc::kNotFound);
  CHECK(f.heads() == 0);
  CHECK(f.lists() == lists);
  // Past the pages read: asked of the bucket, as in a directory not listed.
  REQUIRE(f.meta->lookup(d, "f02500").is_ok());
  CHECK(f.heads() + f.lists() > lists);
  // Once the stream ends, the cached listing answers.
  REQUIRE((*open)->read_all().is_ok());
  const int heads = f.heads();
  REQUIRE(f.meta->lookup(d, "f02900").is_ok());
  CHECK(f.heads() == heads);
}

TEST_CASE("a page that fails is an error for readdir, and asked for again by the next call",
          "[meta][dir_stream]") {
  Fixture f;
  for (int i = 0; i < 1500; ++i) f.bucket.put_object(fmt::format("d/f{:05}", i), "x");
  const uint64_t d = f.dir("d");
  auto open = f.meta->open_dir(d);
  REQUIRE(open.is_ok());
  f.store.fail_next(Op::kList, 1, Status(Errc::kUnavailable, "503"));
  auto e = (*open)->at(1200);
  CHECK(e.code() == Errc::kUnavailable);
  e = (*open)->at(1200);
  REQUIRE(e.is_ok());
  CHECK((*e)->name == "f01200");
  auto all = (*open)->read_all();
  REQUIRE(all.is_ok());
  CHECK(all->size() == 1500);
}

TEST_CASE("a second opendir of a directory being read joins its stream", "[meta][dir_stream]") {
  Fixture f;
  for (int i = 0; i < 2200; ++i) f.bucket.put_object(fmt::format("d/f{:05}", i), "x");
  const uint64_t d = f.dir("d");
  const int before = f.lists();
  auto one = f.meta->open_dir(d);
  auto two = f.meta->open_dir(d);
  REQUIRE(one.is_ok());
  REQUIRE(two.is_ok());
  REQUIRE((*one)->read_all()->size() == 2200);
  REQUIRE((*two)->read_all()->size() == 2200);
  CHECK(f.lists() == before + 3);
}

TEST_CASE("with object attributes, each page's entries are HEADed as it comes",
          "[meta][dir_stream]") {
  Fixture f(/*object_attrs=*/true);
  for (int i = 0; i < 1200; ++i) f.bucket.put_object(fmt::format("d/f{:05}", i), "x");
  const uint64_t d = f.dir("d");
  const int heads = f.heads();
  auto open = f.meta->open_dir(d);
  REQUIRE(open.is_ok());
  CHECK(f.heads() == heads + 1000);
  REQUIRE((*open)->read_all().is_ok());
  CHECK(f.heads() == heads + 1200);
  // Their attributes are known: lookups cost nothing more.
  REQUIRE(f.meta->lookup(d, "f01100").is_ok());
  CHECK(f.heads() == heads + 1200);
}

TEST_CASE("a change this mount makes in a directory being read ends the stream's answers",
          "[meta][dir_stream]") {
  Fixture f;
  for (int i = 0; i < 1500; ++i) f.bucket.put_object(fmt::format("d/f{:05}", i), "x");
  const uint64_t d = f.dir("d");
  auto open = f.meta->open_dir(d);
  REQUIRE(open.is_ok());
  REQUIRE(f.meta->lookup(d, "f00010").is_ok());  // from the pages read

  // rm: the bucket loses the key, and the mount says so.
  REQUIRE(f.bucket.remove("d/f00010").is_ok());
  f.meta->removed(d, "f00010");
  CHECK(f.meta->lookup(d, "f00010").code() == Errc::kNotFound);
  // A file created and uploaded here: a name the pages say is absent.
  auto created = f.meta->add_local_file(d, "f00010.new", 0);
  REQUIRE(created.is_ok());
  f.bucket.put_object("d/f00010.new", "new");
  auto info = f.bucket.head("d/f00010.new");
  REQUIRE(info.is_ok());
  f.meta->file_changed(created->ino, info->size, info->etag, info->mtime_sec);
  auto found = f.meta->lookup(d, "f00010.new");
  REQUIRE(found.is_ok());
  CHECK(found->size == 3);

  // readdir of the open directory goes on, as of its opendir; what it read is not cached.
  auto all = (*open)->read_all();
  REQUIRE(all.is_ok());
  CHECK(all->size() == 1500);
  const int lists = f.lists();
  auto listed = f.meta->list(d);
  REQUIRE(listed.is_ok());
  CHECK(f.lists() > lists);  // listed again
  CHECK((*listed)->find("f00010") == nullptr);
  CHECK((*listed)->find("f00010.new") != nullptr);
}

// The listing index: its encoding, and Metadata answering from it across mounts.
#include "meta/listing_index.h"

#include <catch2/catch.hpp>

#include "meta/metadata.h"
#include "support/fake_clock.h"
#include "support/memory_kv_store.h"
#include "support/memory_object_store.h"
#include "support/wait.h"

using namespace warmfs;
using namespace warmfs::testing;
using namespace std::chrono_literals;

namespace {

DirEntry file(std::string name, uint64_t size, int64_t mtime, std::string etag) {
  return DirEntry{std::move(name), false, size, mtime, std::move(etag)};
}
DirEntry dir(std::string name) { return DirEntry{std::move(name), true, 0, 0, ""}; }

bool same(const std::vector<DirEntry>& a, const std::vector<DirEntry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].is_dir != b[i].is_dir || a[i].size != b[i].size ||
        a[i].mtime_sec != b[i].mtime_sec || a[i].etag != b[i].etag) {
      return false;
    }
  }
  return true;
}

const std::vector<DirEntry> kEntries = {
    file("a", 0, 0, ""),
    file("alpha.bin", 1ull << 40, 1704067200, "\"0123456789abcdef0123456789abcdef\""),
    file("alphabet", 7, -5, "\"0123456789abcdef0123456789abcdef-12\""),  // multipart
    dir("b"),
    file("b.txt", 3, 1, "\"0123456789ABCDEF0123456789ABCDEF\""),  // upper case: kept as is
    dir(std::string(255, 'z')),
};

}  // namespace

TEST_CASE("a listing encodes compactly and decodes to the same entries", "[listing_index]") {
  const std::string v = encode_listing(kEntries, 1704067200123);
  auto back = decode_listing(v);
  REQUIRE(back);
  CHECK(back->listed_at_ms == 1704067200123);
  CHECK(same(back->entries, kEntries));

  auto empty = decode_listing(encode_listing({}, 0));
  REQUIRE(empty);
  CHECK(empty->entries.empty());

  // 1,000 files "file-000123.bin" with MD5 ETags: names share their prefix, ETags are 16 bytes.
  std::vector<DirEntry> many;
  for (int i = 0; i < 1000; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "file-%06d.bin", i);
    many.push_back(file(name, 1 << 20, 1704067200 + i, "\"00112233445566778899aabbccddeeff\""));
  }
  const std::string big = encode_listing(many, 1);
  CHECK(big.size() < 1000 * 34);  // about 32 bytes a file
  auto many_back = decode_listing(big);
  REQUIRE(many_back);
  CHECK(same(many_back->entries, many));

  // The same without quotes, as the object store gives ETags: 16 bytes too, and back exactly.
  std::vector<DirEntry> bare;
  for (int i = 0; i < 1000; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "file-%06d.bin", i);
    bare.push_back(file(name, 1 << 20, 1704067200 + i, "00112233445566778899aabbccddee0f"));
  }
  bare.push_back(file("mixed-1", 1, 1, "00112233445566778899AABBCCDDEEFF"));  // not lowercase
  bare.push_back(file("mixed-2", 1, 1, "00112233445566778899aabbccddeeff-3"));
  bare.push_back(file("mixed-3", 1, 1, "\"00112233445566778899aabbccddeeff\""));
  const std::string bare_bytes = encode_listing(bare, 1);
  CHECK(bare_bytes.size() < 1000 * 34);
  auto bare_back = decode_listing(bare_bytes);
  REQUIRE(bare_back);
  CHECK(same(bare_back->entries, bare));
}

TEST_CASE("a listing value that is not exactly one listing does not decode", "[listing_index]") {
  const std::string v = encode_listing(kEntries, 42);
  for (size_t n = 0; n < v.size(); ++n) CHECK_FALSE(decode_listing(v.substr(0, n)));
  CHECK_FALSE(decode_listing(v + std::string(1, '\0')));
  std::string other_version = v;
  other_version[0] = 2;
  CHECK_FALSE(decode_listing(other_version));
  // Out of order, duplicate and invalid names are refused.
  CHECK_FALSE(decode_listing(encode_listing({dir("b"), dir("a")}, 0)));
  CHECK_FALSE(decode_listing(encode_listing({dir("a"), dir("a")}, 0)));
  CHECK_FALSE(decode_listing(encode_listing({dir("..")}, 0)));
  CHECK_FALSE(decode_listing(encode_listing({dir("x/y")}, 0)));
  // An unknown flag.
  std::string flagged = encode_listing({dir("a")}, 0);
  flagged.back() = static_cast<char>(0x80);
  CHECK_FALSE(decode_listing(flagged));
}

TEST_CASE("index keys keep mounts of other endpoints, buckets and prefixes apart",
          "[listing_index]") {
  MemoryKvStore kv;
  ListingIndex a(kv, "http://s3", "b", "");
  ListingIndex b(kv, "http://s3", "b", "p/");
  ListingIndex c(kv, "http://s3", "b2", "");
  ListingIndex d(kv, "http://other", "b", "");
  a.put("x", {dir("one")}, 1);
  CHECK(a.get("x"));
  CHECK_FALSE(b.get("x"));
  CHECK_FALSE(c.get("x"));
  CHECK_FALSE(d.get("x"));
  a.put("x/y", {dir("two")}, 1);
  a.put("xy", {dir("three")}, 1);
  a.erase_tree("x");
  CHECK_FALSE(a.get("x"));
  CHECK_FALSE(a.get("x/y"));
  CHECK(a.get("xy"));  // not below "x"
  // A malformed value is a miss, and goes.
  kv.set(a.key_prefix() + "bad", "\x01garbage");
  CHECK_FALSE(a.get("bad"));
  CHECK(kv.contents().count(a.key_prefix() + "bad") == 0);
}

namespace {

// A bucket that runs a hook once a LIST has its answer, before the caller has it.
class HookedBucket : public MemoryObjectStore {
 public:
  using MemoryObjectStore::MemoryObjectStore;
  Result<ListPage> list(const ListRequest& r) override {
    auto page = MemoryObjectStore::list(r);
    if (on_list) {
      auto hook = std::move(on_list);
      on_list = nullptr;
      hook(r.prefix);
    }
    return page;
  }
  std::function<void(const std::string& prefix)> on_list;
};

// A bucket, and mounts of it that share one index (as mounts with one --cache-dir do).
struct IndexFixture {
  FakeClock clock;
  HookedBucket bucket{"b", clock};
  MemoryKvStore kv;
  ListingIndex index{kv, "http://s3", "b", ""};

  std::unique_ptr<Metadata> mount(bool with_index = true) {
    MetaOptions o;
    o.ttl = 10s;
    o.object_attrs = false;
    auto m = std::make_unique<Metadata>(bucket, clock, o);
    if (with_index) m->set_listing_index(&index);
    return m;
  }
  uint64_t lists() const { return bucket.counters().list_requests; }
  uint64_t heads() const { return bucket.counters().head_requests; }
};

// `ls -lR`: every directory listed, every entry looked up; "path size" lines.
void walk(Metadata& m, uint64_t ino, const std::string& path, std::vector<std::string>& out) {
  auto l = m.list(ino);
  REQUIRE(l.is_ok());
  for (const DirEntry& e : (*l)->entries) {
    auto a = m.lookup(ino, e.name);
    REQUIRE(a.is_ok());
    const std::string p = path + "/" + e.name.str();
    out.push_back(p + (a->is_dir ? "/" : " " + std::to_string(a->size)));
    if (a->is_dir) walk(m, a->ino, p, out);
  }
}
std::vector<std::string> walk(Metadata& m) {
  std::vector<std::string> out;
  walk(m, kRootIno, "", out);
  return out;
}

}  // namespace

TEST_CASE("a second mount walks an indexed tree with no LIST or HEAD", "[listing_index]") {
  IndexFixture f;
  for (int d = 0; d < 5; ++d) {
    for (int i = 0; i < 20; ++i) {
      f.bucket.put_object("d" + std::to_string(d) + "/sub/f" + std::to_string(i), "x");
      f.bucket.put_object("d" + std::to_string(d) + "/g" + std::to_string(i), "yy");
    }
  }
  f.bucket.put_object("top", "zzz");
  std::vector<std::string> first;
  {
    auto m = f.mount();
    first = walk(*m);
  }
  CHECK(first.size() == 5 * 42 + 1);
  const uint64_t lists = f.lists();
  const uint64_t heads = f.heads();
  CHECK(lists == 11);  // root, 5 dirs, 5 subdirs

  auto m = f.mount();
  CHECK(walk(*m) == first);
  CHECK(f.lists() == lists);
  CHECK(f.heads() == heads);
  CHECK(m->counters().listing_index_hits == 11);
  CHECK(m->counters().listing_index_refreshes == 0);  // younger than the TTL

  // Without the index the same walk lists again.
  auto plain = f.mount(false);
  CHECK(walk(*plain) == first);
  CHECK(f.lists() == lists + 11);
}

TEST_CASE("an indexed listing older than the TTL is served and listed again in the background",
          "[listing_index]") {
  IndexFixture f;
  f.bucket.put_object("dir/a", "1");
  f.bucket.put_object("dir/b", "22");
  {
    auto m = f.mount();
    walk(*m);
  }
  f.clock.advance(1h);
  f.bucket.put_object("dir/c", "333");  // another client
  f.bucket.put_object("dir/a", "1111");
  auto m = f.mount();
  auto dir = m->lookup(kRootIno, "dir");
  REQUIRE(dir.is_ok());
  // Served at once; the bucket's state shows once the background listings are in.
  auto served = m->list(dir->ino);
  REQUIRE(served.is_ok());
  CHECK((*served)->entries.size() >= 2);
  CHECK(eventually([&] {
    auto l = m->list(dir->ino);
    return l.is_ok() && (*l)->entries.size() == 3;
  }));
  CHECK(m->counters().listing_index_refreshes == 2);  // root and dir
  auto a = m->lookup(dir->ino, "a");
  REQUIRE(a.is_ok());
  CHECK(a->size == 4);
  // The index has the new listing for the next mount.
  f.clock.advance(1s);
  auto next = f.mount();
  const uint64_t lists = f.lists();
  auto dir2 = next->lookup(kRootIno, "dir");
  REQUIRE(dir2.is_ok());
  auto l = next->list(dir2->ino);
  REQUIRE(l.is_ok());
  CHECK((*l)->entries.size() == 3);
  CHECK(f.lists() == lists);
}

TEST_CASE("a file from a stale indexed listing is revalidated on open", "[listing_index]") {
  IndexFixture f;
  f.bucket.put_object("a", "1");
  { walk(*f.mount()); }
  f.clock.advance(1h);
  auto m = f.mount();
  auto a = m->lookup(kRootIno, "a");
  REQUIRE(a.is_ok());
  const uint64_t heads = f.heads();
  f.bucket.put_object("a", "changed");
  auto opened = m->revalidate_file(a->ino);
  REQUIRE(opened.is_ok());
  CHECK(f.heads() == heads + 1);
  CHECK(opened->size == 7);
}

TEST_CASE("files after one in a stale indexed listing are not offered for warming",
          "[listing_index]") {
  IndexFixture f;
  f.bucket.put_object("a", "1");
  f.bucket.put_object("b", "2");
  { walk(*f.mount()); }
  uint64_t parent = 0;
  size_t index = 0;
  std::vector<DirEntry> next;
  {
    auto young = f.mount();  // within the TTL: as good as a fresh listing
    auto a = young->lookup(kRootIno, "a");
    REQUIRE(a.is_ok());
    CHECK(young->following_entries(a->ino, 8, &parent, &index, &next));
    CHECK(next.size() == 1);
  }
  f.clock.advance(1h);
  Gate relisted;  // holds the background listing until the check is done
  f.bucket.on_list = [&](const std::string&) { relisted.wait(); };
  auto m = f.mount();
  OpenOnExit open_on_exit(relisted);  // after m: its destructor waits for the listing
  auto a = m->lookup(kRootIno, "a");
  REQUIRE(a.is_ok());
  CHECK_FALSE(m->following_entries(a->ino, 8, &parent, &index, &next));
  relisted.open();
  // Listed again (in the background): offered again.
  CHECK(eventually([&] { return m->following_entries(a->ino, 8, &parent, &index, &next); }));
  CHECK_FALSE(relisted.gave_up());
}

TEST_CASE("this mount's changes drop the index entries of the directories they change",
          "[listing_index]") {
  IndexFixture f;
  f.bucket.put_object("dir/a", "1");
  f.bucket.put_object("dir/sub/x", "1");
  f.bucket.put_object("other/b", "1");
  std::vector<std::string> before;
  {
    auto m = f.mount();
    before = walk(*m);
    auto dir = m->lookup(kRootIno, "dir");
    REQUIRE(dir.is_ok());
    // A file written here: in the bucket, and in this mount's listing.
    auto created = m->add_local_file(dir->ino, "new", 1);
    REQUIRE(created.is_ok());
    f.bucket.put_object("dir/new", "abcd");
    ObjectInfo info;
    REQUIRE(f.bucket.head("dir/new").is_ok());
    info = *f.bucket.head("dir/new");
    m->file_changed(created->ino, info.size, info.etag, info.mtime_sec);
  }
  CHECK(f.index.get(""));
  CHECK_FALSE(f.index.get("dir"));  // changed here
  CHECK(f.index.get("dir/sub"));
  CHECK(f.index.get("other"));

  auto m = f.mount();
  const uint64_t lists = f.lists();
  auto after = walk(*m);
  CHECK(f.lists() == lists + 1);  // dir only
  CHECK(std::find(after.begin(), after.end(), "/dir/new 4") != after.end());
  CHECK(after.size() == before.size() + 1);

  // A removed directory's entries go, with those below it; a rename drops both sides.
  auto dir = m->lookup(kRootIno, "dir");
  REQUIRE(dir.is_ok());
  m->removed(dir->ino, "sub");
  CHECK_FALSE(f.index.get("dir/sub"));
  CHECK_FALSE(f.index.get("dir"));
  CHECK(f.index.get("other"));
  m->renamed(kRootIno, "other", kRootIno, "moved");
  CHECK_FALSE(f.index.get("other"));
  CHECK_FALSE(f.index.get(""));
}

TEST_CASE("a listing that began before a change here is not written to the index",
          "[listing_index]") {
  FakeClock clock;
  HookedBucket bucket{"b", clock};
  MemoryKvStore kv;
  ListingIndex index{kv, "http://s3", "b", ""};
  bucket.put_object("dir/a", "1");
  bucket.put_object("dir/b", "1");
  MetaOptions o;
  o.ttl = 10s;
  o.object_attrs = false;
  Metadata m(bucket, clock, o);
  m.set_listing_index(&index);
  auto dir = m.lookup(kRootIno, "dir");
  REQUIRE(dir.is_ok());
  CHECK(index.get(""));
  // Once the bucket has answered a LIST of dir (with dir/a), this mount removes dir/a.
  bucket.on_list = [&](const std::string& prefix) {
    CHECK(prefix == "dir/");
    REQUIRE(bucket.remove("dir/a").is_ok());
    m.removed(dir->ino, "a");
  };
  REQUIRE(m.list(dir->ino).is_ok());
  CHECK_FALSE(bucket.on_list);
  CHECK_FALSE(index.get("dir"));
  // The next listing of it, with no change meanwhile, is kept.
  m.forget_listing(dir->ino);
  REQUIRE(m.list(dir->ino).is_ok());
  auto kept = index.get("dir");
  REQUIRE(kept);
  CHECK(kept->entries.size() == 1);
}

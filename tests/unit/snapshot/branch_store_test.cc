#include "snapshot/branch_store.h"

#include <fmt/format.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "snapshot/snapshot_lister.h"
#include "support/fake_clock.h"
#include "support/list_pages.h"
#include "support/memory_object_store.h"

using namespace warmfs;

namespace {

constexpr char kPrefix[] = "data/";

// A bucket whose record writes fail while fail_records is set, are made but answered with an
// error while lose_record_answers is, and whose record cannot be read while fail_record_reads is.
class Bucket : public MemoryObjectStore {
 public:
  explicit Bucket(Clock& clock) : MemoryObjectStore("b", clock) {}
  std::atomic<bool> fail_records{false};
  std::atomic<bool> lose_record_answers{false};
  std::atomic<bool> fail_record_reads{false};
  Result<ObjectInfo> put(std::string_view key, std::span<const std::byte> body,
                         const PutOptions& options) override {
    if (fail_records && key.ends_with("/record")) return Status(Errc::kIo, "injected failure");
    auto r = MemoryObjectStore::put(key, body, options);
    if (lose_record_answers && key.ends_with("/record") && r.is_ok())
      return Status(Errc::kIo, "injected reset after the write");
    return r;
  }
  Result<ObjectInfo> head(std::string_view key) override {
    if (fail_record_reads && key.ends_with("/record")) return Status(Errc::kIo, "injected failure");
    return MemoryObjectStore::head(key);
  }
};

void fill(MemoryObjectStore& s) {
  s.put_object("data/top.txt", "top");
  s.put_object("data/marker/", "");
  for (int d = 0; d < 6; ++d) {
    for (int f = 0; f < 8; ++f)
      s.put_object(fmt::format("data/d{}/f{}", d, f), fmt::format("{}-{}", d, f));
    s.put_object(fmt::format("data/d{}/deep/x", d), "x");
  }
}

std::string text(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

using warmfs::testing::all_pages;

// Bytes of key through s (pinned to what head says), or "<absent>".
std::string read(ObjectStore& s, const std::string& key) {
  auto h = s.head(key);
  if (!h.is_ok()) {
    CHECK(h.code() == Errc::kNotFound);
    return "<absent>";
  }
  std::vector<std::byte> buf(h->size);
  auto n = s.get_range(key, 0, buf, h->etag);
  REQUIRE(n.is_ok());
  CHECK(*n == h->size);
  return text(buf);
}

struct Fixture {
  FakeClock clock;
  Bucket bucket{clock};
  MemoryObjectStore shadow{"b", clock};  // what the branch should show, as a bucket of its own
  std::shared_ptr<const Manifest> manifest;
  std::unique_ptr<SnapshotStore> snap;

  Fixture() {
    fill(bucket);
    fill(shadow);
    SnapshotListOptions o;
    o.concurrency = 2;
    auto m = take_snapshot(bucket, "b", kPrefix, 42, o);
    REQUIRE(m.is_ok());
    manifest = std::make_shared<const Manifest>(std::move(*m));
    snap = std::make_unique<SnapshotStore>(bucket, manifest);
  }

  std::unique_ptr<BranchStore> open(const std::string& name, bool writer = true) {
    auto b = BranchStore::open(bucket, *snap, BranchOptions{name, "snap", writer, 1000});
    REQUIRE(b.is_ok());
    return std::move(*b);
  }

  // The branch shows what the shadow bucket holds: listings (every way) and bytes.
  void check_same(ObjectStore& branch) {
    for (const std::string p : {"data/", "data/d0/", "data/d1/", "data/d2/deep/", "data/d",
                                "data/new/", "data/marker/", "data/zz"}) {
      for (const std::string delim : {"/", ""}) {
        for (int max_keys : {1, 3, 1000}) {
          INFO(p << " '" << delim << "' " << max_keys);
          REQUIRE(all_pages(branch, p, delim, max_keys) == all_pages(shadow, p, delim, max_keys));
        }
        for (const std::string after : {"a", "data/d0", "data/d1/f3", "data/d2/deep/", "data/new/",
                                        "data/top.txt", "data/zz", "zzz"}) {
          INFO(p << " '" << delim << "' after " << after);
          REQUIRE(all_pages(branch, p, delim, 3, after) == all_pages(shadow, p, delim, 3, after));
        }
      }
    }
    for (const std::string& line : all_pages(shadow, kPrefix, "", 1000)) {
      const std::string key = line.substr(0, line.find(' '));
      INFO(key);
      CHECK(read(branch, key) == read(shadow, key));
    }
  }

  // The bucket's bytes at key, or "<absent>".
  std::string object(const std::string& key) {
    auto b = bucket.object_bytes(key);
    return b ? text(*b) : "<absent>";
  }

  // Data objects of branch `name` in the bucket.
  std::vector<std::string> data_objects(const std::string& name) {
    std::vector<std::string> out;
    for (auto& line : all_pages(bucket, branch_data_root(kPrefix, name), "", 1000))
      out.push_back(line.substr(0, line.find(' ')));
    return out;
  }

  // The base snapshot's keys in the bucket are as they were.
  void check_base_untouched() {
    for (size_t i = 0; i < manifest->size(); ++i) {
      const std::string key = kPrefix + std::string(manifest->key(i));
      auto h = bucket.head(key);
      REQUIRE(h.is_ok());
      CHECK(h->etag == manifest->etag(i));
    }
  }
};

Status put(ObjectStore& s, const std::string& key, std::string_view body) {
  return s.put(key, to_bytes(body), PutOptions{}).status();
}

// rename as the filesystem core does it: a copy pinned to the source's ETag, then a delete.
Status rename(ObjectStore& s, const std::string& from, const std::string& to) {
  auto h = s.head(from);
  if (!h.is_ok()) return h.status();
  auto c = s.copy(from, to, h->etag);
  if (!c.is_ok()) return c.status();
  return s.remove(from);
}

}  // namespace

TEST_CASE("a new branch shows the snapshot and copies nothing", "[branch]") {
  Fixture f;
  const size_t objects = f.bucket.object_count();
  const auto before = f.bucket.counters();
  auto b = f.open("exp1");
  CHECK(b->created());
  const auto after = f.bucket.counters();
  CHECK(after.put_requests - before.put_requests == 1);  // the record
  CHECK(after.copy_requests == before.copy_requests);
  CHECK(f.bucket.object_count() == objects + 1);
  CHECK(f.bucket.head("data/.warmfs/branches/exp1/record").is_ok());
  f.check_same(*b);
  // Listings and lookups of unchanged names ask the bucket nothing.
  const auto lists = f.bucket.counters().list_requests;
  CHECK(all_pages(*b, kPrefix, "/", 1000).size() == 8);
  CHECK(b->head("data/d3/f4").is_ok());
  CHECK(f.bucket.counters().list_requests == lists);
}

TEST_CASE("a branch adds, modifies, deletes and renames like a bucket of its own", "[branch]") {
  Fixture f;
  auto b = f.open("exp1");
  auto both = [&](auto op) {
    REQUIRE(op(static_cast<ObjectStore&>(*b)).is_ok());
    REQUIRE(op(static_cast<ObjectStore&>(f.shadow)).is_ok());
  };
  // Add, modify, delete.
  both([](ObjectStore& s) { return put(s, "data/new/a.txt", "added"); });
  both([](ObjectStore& s) { return put(s, "data/d0/f1", "modified"); });
  both([](ObjectStore& s) { return s.remove("data/d0/f2"); });
  both([](ObjectStore& s) { return s.remove("data/marker/"); });
  // A whole directory of the snapshot deleted: it is gone from the listing.
  for (int i = 0; i < 8; ++i) {
    both([&](ObjectStore& s) { return s.remove(fmt::format("data/d5/f{}", i)); });
  }
  both([](ObjectStore& s) { return s.remove("data/d5/deep/x"); });
  f.check_same(*b);
  // Renames: of an unchanged snapshot file, of a modified one, of a new one, and onto an
  // existing name.
  both([](ObjectStore& s) { return rename(s, "data/d1/f1", "data/new/moved"); });
  both([](ObjectStore& s) { return rename(s, "data/d0/f1", "data/d0/f1-renamed"); });
  both([](ObjectStore& s) { return rename(s, "data/new/a.txt", "data/a2.txt"); });
  both([](ObjectStore& s) { return rename(s, "data/d2/f0", "data/d2/f1"); });
  // A name deleted, then written again; a renamed name renamed again.
  both([](ObjectStore& s) { return put(s, "data/d0/f2", "back"); });
  both([](ObjectStore& s) { return rename(s, "data/new/moved", "data/d1/f1"); });
  both([](ObjectStore& s) { return put(s, "data/d3/", ""); });  // a directory marker
  f.check_same(*b);
  f.check_base_untouched();

  // What the branch recorded is in the bucket: a new mount of it shows the same.
  b.reset();
  auto again = f.open("exp1");
  CHECK_FALSE(again->created());
  f.check_same(*again);
  // And a read-only one.
  auto ro = f.open("exp1", false);
  f.check_same(*ro);
  CHECK(put(*ro, "data/x", "x").code() == Errc::kReadOnly);
  // The snapshot itself is unchanged.
  CHECK(read(*f.snap, "data/d0/f1") == "0-1");
  CHECK(read(*f.snap, "data/d1/f1") == "1-1");
  CHECK(f.snap->head("data/new/a.txt").code() == Errc::kNotFound);
}

TEST_CASE("renaming an unchanged snapshot file copies no byte", "[branch]") {
  Fixture f;
  auto b = f.open("exp1");
  const size_t objects = f.bucket.object_count();
  const auto before = f.bucket.counters();
  REQUIRE(rename(*b, "data/d4/f4", "data/renamed").is_ok());
  const auto after = f.bucket.counters();
  CHECK(after.copy_requests == before.copy_requests);
  CHECK(after.bytes_written - before.bytes_written < 4096);  // the record only
  CHECK(f.bucket.object_count() == objects);                 // the record was replaced
  CHECK(f.data_objects("exp1").empty());
  const BranchRecord r = b->record();
  REQUIRE(r.entries.count("renamed") == 1);
  CHECK(r.entries.at("renamed").kind == BranchEntry::Kind::kSnapshot);
  CHECK(r.entries.at("renamed").target == "d4/f4");
  CHECK(r.entries.at("d4/f4").kind == BranchEntry::Kind::kDeleted);
  CHECK(read(*b, "data/renamed") == "4-4");
  CHECK(read(*b, "data/d4/f4") == "<absent>");
  CHECK(f.object("data/d4/f4") == "4-4");
}

TEST_CASE("a branch's data objects: shared by a rename, deleted when no name refers to them",
          "[branch]") {
  Fixture f;
  auto b = f.open("exp1");
  REQUIRE(put(*b, "data/ckpt", "v1").is_ok());
  REQUIRE(f.data_objects("exp1").size() == 1);
  REQUIRE(put(*b, "data/ckpt", "v2").is_ok());  // the first version's object goes
  auto objs = f.data_objects("exp1");
  REQUIRE(objs.size() == 1);
  CHECK(f.object(objs[0]) == "v2");
  const auto copies = f.bucket.counters().copy_requests;
  REQUIRE(rename(*b, "data/ckpt", "data/final").is_ok());  // no copy: the name moves
  CHECK(f.bucket.counters().copy_requests == copies);
  CHECK(f.data_objects("exp1") == objs);
  REQUIRE(b->copy("data/final", "data/also", "").is_ok());  // two names, one object
  REQUIRE(b->remove("data/final").is_ok());
  CHECK(f.data_objects("exp1") == objs);
  CHECK(read(*b, "data/also") == "v2");
  REQUIRE(b->remove("data/also").is_ok());
  CHECK(f.data_objects("exp1").empty());
  // A new file written over a name of the snapshot, then deleted: a tombstone stays.
  REQUIRE(put(*b, "data/top.txt", "new top").is_ok());
  REQUIRE(b->remove("data/top.txt").is_ok());
  CHECK(f.data_objects("exp1").empty());
  CHECK(read(*b, "data/top.txt") == "<absent>");
  CHECK(b->record().entries.at("top.txt").kind == BranchEntry::Kind::kDeleted);
  // Metadata: a new object of the name's own; the old one goes.
  REQUIRE(put(*b, "data/m", "meta").is_ok());
  auto h = b->head("data/m");
  REQUIRE(h.is_ok());
  auto r = b->replace_metadata("data/m", *h, ObjectHeaders{"text/plain", {{"mode", "33188"}}});
  REQUIRE(r.is_ok());
  auto h2 = b->head("data/m");
  REQUIRE(h2.is_ok());
  CHECK(h2->metadata.at("mode") == "33188");
  CHECK(h2->content_type == "text/plain");
  CHECK(f.data_objects("exp1").size() == 1);
  CHECK(read(*b, "data/m") == "meta");
  // Of an unchanged snapshot file: its bytes are copied into the branch, the base stays.
  auto s = b->head("data/d2/f2");
  REQUIRE(s.is_ok());
  REQUIRE(b->replace_metadata("data/d2/f2", *s, ObjectHeaders{"", {{"mode", "33261"}}}).is_ok());
  CHECK(b->head("data/d2/f2")->metadata.at("mode") == "33261");
  CHECK(read(*b, "data/d2/f2") == "2-2");
  CHECK(f.bucket.head("data/d2/f2")->metadata.empty());
  f.check_base_untouched();
}

TEST_CASE("two branches of one snapshot never see each other's changes", "[branch]") {
  Fixture f;
  auto a = f.open("a");
  auto b = f.open("b");
  REQUIRE(put(*a, "data/d0/f0", "from a").is_ok());
  REQUIRE(put(*b, "data/d0/f0", "from b").is_ok());
  REQUIRE(a->remove("data/d1/f1").is_ok());
  REQUIRE(rename(*b, "data/d1/f2", "data/b-only").is_ok());
  a.reset();
  b.reset();
  auto a2 = f.open("a");
  auto b2 = f.open("b");
  CHECK(read(*a2, "data/d0/f0") == "from a");
  CHECK(read(*b2, "data/d0/f0") == "from b");
  CHECK(read(*a2, "data/d1/f1") == "<absent>");
  CHECK(read(*b2, "data/d1/f1") == "1-1");
  CHECK(read(*a2, "data/d1/f2") == "1-2");
  CHECK(read(*a2, "data/b-only") == "<absent>");
  CHECK(read(*b2, "data/b-only") == "1-2");
  CHECK(read(*f.snap, "data/d0/f0") == "0-0");
  f.check_base_untouched();
}

TEST_CASE("a record write that surely failed fails the call and leaves no trace", "[branch]") {
  Fixture f;
  auto b = f.open("exp1");
  REQUIRE(put(*b, "data/kept", "k").is_ok());
  f.shadow.put_object("data/kept", "k");
  f.bucket.fail_records = true;
  CHECK(put(*b, "data/x", "x").code() == Errc::kIo);
  CHECK(b->remove("data/top.txt").code() == Errc::kIo);
  CHECK(put(*b, "data/kept", "changed").code() == Errc::kIo);
  CHECK(rename(*b, "data/d0/f0", "data/moved").code() == Errc::kIo);
  // This mount shows what the bucket's record holds, as does a new mount.
  f.check_same(*b);
  f.bucket.fail_records = false;
  f.check_same(*f.open("exp1", false));
  // The next change carries only itself.
  REQUIRE(put(*b, "data/y", "y").is_ok());
  f.shadow.put_object("data/y", "y");
  f.check_same(*b);
  f.check_same(*f.open("exp1", false));
}

TEST_CASE("a record write answered with an error but made counts as made", "[branch]") {
  Fixture f;
  auto b = f.open("exp1");
  f.bucket.lose_record_answers = true;
  REQUIRE(put(*b, "data/x", "x").is_ok());
  REQUIRE(b->remove("data/top.txt").is_ok());
  f.bucket.lose_record_answers = false;
  f.shadow.put_object("data/x", "x");
  REQUIRE(f.shadow.remove("data/top.txt").is_ok());
  f.check_same(*b);
  // Still this mount's branch: its next write is not taken for another mount's.
  REQUIRE(put(*b, "data/y", "y").is_ok());
  f.shadow.put_object("data/y", "y");
  f.check_same(*b);
  f.check_same(*f.open("exp1", false));
}

TEST_CASE("a record write that may have failed stays shown; the next one carries it", "[branch]") {
  Fixture f;
  auto b = f.open("exp1");
  f.bucket.fail_records = true;
  f.bucket.fail_record_reads = true;
  CHECK(put(*b, "data/x", "x").code() == Errc::kIo);
  f.bucket.fail_records = false;
  f.bucket.fail_record_reads = false;
  CHECK(read(*b, "data/x") == "x");
  CHECK(read(*f.open("exp1", false), "data/x") == "<absent>");
  // A write made but unanswered, and its record not readable either: the next write over it
  // finds it there and writes again.
  f.bucket.lose_record_answers = true;
  f.bucket.fail_record_reads = true;
  CHECK(put(*b, "data/y", "y").code() == Errc::kIo);
  f.bucket.lose_record_answers = false;
  f.bucket.fail_record_reads = false;
  REQUIRE(put(*b, "data/z", "z").is_ok());
  for (const char* k : {"data/x", "data/y", "data/z"}) f.shadow.put_object(k, k + 5);
  f.check_same(*b);
  f.check_same(*f.open("exp1", false));
}

TEST_CASE("one writer per branch: a newer writable mount takes the branch over", "[branch]") {
  Fixture f;
  auto first = f.open("exp1");
  REQUIRE(put(*first, "data/one", "1").is_ok());
  auto second = f.open("exp1");
  CHECK(read(*second, "data/one") == "1");
  REQUIRE(put(*second, "data/two", "2").is_ok());
  // The first mount's changes fail from now on, and replace nothing of the second's.
  CHECK(put(*first, "data/two", "clobber").code() == Errc::kPreconditionFailed);
  CHECK(first->remove("data/one").code() == Errc::kPreconditionFailed);
  CHECK(put(*first, "data/three", "3").code() == Errc::kPreconditionFailed);
  CHECK(read(*second, "data/two") == "2");
  auto third = f.open("exp1", false);  // a read-only mount takes nothing over
  CHECK(read(*third, "data/two") == "2");
  CHECK(read(*third, "data/one") == "1");
  CHECK(read(*third, "data/three") == "<absent>");
  REQUIRE(put(*second, "data/four", "4").is_ok());
}

TEST_CASE("multipart uploads in a branch, and a dead mount's upload aborted", "[branch]") {
  Fixture f;
  f.bucket.set_min_part_size(4);
  auto b = f.open("exp1");
  auto id = b->create_multipart("data/big");
  REQUIRE(id.is_ok());
  auto p1 = b->upload_part("data/big", *id, 1, to_bytes("abcd"));
  auto p2 = b->upload_part_copy("data/big", *id, 2, "data/top.txt", 0, 2, "");
  REQUIRE(p1.is_ok());
  REQUIRE(p2.is_ok());
  auto listed = b->list_multipart_uploads(kPrefix);
  REQUIRE(listed.is_ok());
  REQUIRE(listed->size() == 1);
  CHECK(listed->front().key == "data/big");
  CHECK(read(*b, "data/big") == "<absent>");  // nothing until complete
  std::vector<CompletedPart> parts{*p1, *p2};
  auto done = b->complete_multipart("data/big", *id, parts);
  REQUIRE(done.is_ok());
  CHECK(done->key == "data/big");
  CHECK(read(*b, "data/big") == "abcdtop");
  CHECK(f.bucket.upload_count() == 0);
  // An upload this mount did not start (a dead mount's journal names it) is found and aborted.
  auto orphan = b->create_multipart("data/orphan");
  REQUIRE(orphan.is_ok());
  auto later = f.open("exp1");
  REQUIRE(later->abort_multipart("data/orphan", *orphan).is_ok());
  CHECK(f.bucket.upload_count() == 0);
  CHECK(later->abort_multipart("data/orphan", "no-such-upload").is_ok());
}

TEST_CASE("a branch reads the snapshot pinned: a changed base object is stale", "[branch]") {
  Fixture f;
  auto b = f.open("exp1");
  REQUIRE(rename(*b, "data/d3/f3", "data/r").is_ok());
  f.bucket.put_object("data/d3/f3", "changed behind the snapshot");
  std::vector<std::byte> buf(8);
  CHECK(b->get_range("data/r", 0, buf, "").code() == Errc::kPreconditionFailed);
  CHECK(b->get_range("data/d3/f4", 0, buf, "").is_ok());
  CHECK(b->get_range("data/d3/f4", 0, buf, "not-its-etag").code() == Errc::kPreconditionFailed);
}

TEST_CASE("branches refuse what is not theirs", "[branch]") {
  Fixture f;
  // Read-only: a branch that does not exist.
  auto missing = BranchStore::open(f.bucket, *f.snap, BranchOptions{"nope", "snap", false, 0});
  CHECK(missing.code() == Errc::kNotFound);
  f.open("exp1").reset();
  // A branch of another snapshot of the same prefix.
  SnapshotListOptions o;
  auto other = take_snapshot(f.bucket, "b", kPrefix, 43, o);
  REQUIRE(other.is_ok());
  SnapshotStore other_snap(f.bucket, std::make_shared<const Manifest>(std::move(*other)));
  auto wrong = BranchStore::open(f.bucket, other_snap, BranchOptions{"exp1", "other", true, 0});
  CHECK(wrong.code() == Errc::kInvalidArgument);
  // A damaged record.
  f.bucket.put_object("data/.warmfs/branches/exp1/record", "{\"format\": \"warmfs-branch\"");
  CHECK(BranchStore::open(f.bucket, *f.snap, BranchOptions{"exp1", "snap", true, 0}).code() ==
        Errc::kCorrupt);
  f.bucket.put_object("data/.warmfs/branches/exp1/record",
                      "{\"format\": \"warmfs-branch\", \"version\": 2}");
  CHECK(BranchStore::open(f.bucket, *f.snap, BranchOptions{"exp1", "snap", true, 0}).code() ==
        Errc::kNotSupported);
}

TEST_CASE("a branch record encodes and decodes exactly", "[branch]") {
  BranchRecord r;
  r.bucket = "b";
  r.prefix = "p/";
  r.branch = "x";
  r.snapshot = "s";
  r.snapshot_keys = 7;
  r.snapshot_created = 99;
  r.writer = "0123456789abcdef";
  r.generation = 3;
  r.created_sec = 5;
  r.updated_sec = 6;
  r.entries["a b/ü"] = BranchEntry{BranchEntry::Kind::kData, "w/00000001", 10, "e1-2", 77};
  r.entries["c"] = BranchEntry{BranchEntry::Kind::kSnapshot, "d/e", 3, "e2", 78};
  r.entries["f"] = BranchEntry{};
  auto d = decode_branch_record(encode_branch_record(r));
  REQUIRE(d.is_ok());
  CHECK(*d == r);
  CHECK(decode_branch_record("not json").code() == Errc::kCorrupt);
  CHECK(decode_branch_record("{\"format\": \"other\"}").code() == Errc::kCorrupt);
}

TEST_CASE("a manifest with locations: format 2, and format 1 without them", "[branch][snapshot]") {
  ManifestBuilder plain("b", "p/", false, 5);
  REQUIRE(plain.add("k", 1, 2, "e").is_ok());
  CHECK(plain.add("l", 1, 2, "e", {}, "elsewhere").code() == Errc::kInvalidArgument);
  const std::string v1 = encode_manifest(std::move(plain).finish());
  CHECK(v1[8] == 1);  // older warmfs read it
  for (bool versions : {false, true}) {
    ManifestBuilder b("b", "p/", versions, 5, true);
    REQUIRE(b.add("z", 3, 9, "0cc175b9c0f1b6a831c399e269772661", versions ? "v1" : "", "").is_ok());
    REQUIRE(b.add("a/x", 1, 8, "e-2", versions ? "v2" : "", ".warmfs/branches/x/data/w/1").is_ok());
    REQUIRE(b.add("m", 2, 7, "e3", "", "a/x").is_ok());
    const Manifest m = std::move(b).finish();
    const std::string bytes = encode_manifest(m);
    CHECK(bytes[8] == 2);
    auto d = decode_manifest(bytes);
    REQUIRE(d.is_ok());
    REQUIRE(d->size() == 3);
    CHECK(d->has_locations());
    CHECK(d->key(0) == "a/x");
    CHECK(d->location(0) == ".warmfs/branches/x/data/w/1");
    CHECK(d->etag(0) == "e-2");
    CHECK(d->version_id(0) == (versions ? "v2" : ""));
    CHECK(d->location(1) == "a/x");
    CHECK(d->location(2).empty());
    CHECK(d->etag(2) == "0cc175b9c0f1b6a831c399e269772661");
    CHECK(encode_manifest(*d) == bytes);
  }
}

TEST_CASE("a snapshot of a branch reads each name where its bytes are, and pins the branch",
          "[branch]") {
  Fixture f;
  auto b = f.open("exp1");
  REQUIRE(put(*b, "data/new/x", "new x").is_ok());
  REQUIRE(put(*b, "data/d0/f0", "changed").is_ok());
  REQUIRE(rename(*b, "data/d1/f1", "data/moved").is_ok());
  REQUIRE(b->remove("data/d2/f2").is_ok());
  // Pin, then read the record (as `warmfs snapshot MNT` does).
  REQUIRE(pin_branch(f.bucket, kPrefix, "exp1", "snap1").is_ok());
  auto r = load_branch_record(f.bucket, kPrefix, "exp1");
  REQUIRE(r.is_ok());
  auto m = branch_manifest(*f.manifest, *r, 50);
  REQUIRE(m.is_ok());
  // Through a file: the manifest decodes to the same.
  auto decoded = decode_manifest(encode_manifest(*m));
  REQUIRE(decoded.is_ok());
  SnapshotStore snap(f.bucket, std::make_shared<const Manifest>(std::move(*decoded)));
  for (const std::string prefix : {"data/", "data/d1/", "data/new/"}) {
    for (const std::string delim : {"/", ""}) {
      INFO(prefix << " '" << delim << "'");
      CHECK(all_pages(snap, prefix, delim, 2) == all_pages(*b, prefix, delim, 2));
    }
  }
  CHECK(read(snap, "data/new/x") == "new x");
  CHECK(read(snap, "data/d0/f0") == "changed");
  CHECK(read(snap, "data/moved") == "1-1");
  CHECK(read(snap, "data/d2/f2") == "<absent>");
  CHECK(read(snap, "data/d3/f3") == "3-3");
  // The branch goes on; pinned, it deletes none of the data objects the snapshot reads.
  REQUIRE(put(*b, "data/d0/f0", "changed again").is_ok());
  REQUIRE(b->remove("data/new/x").is_ok());
  CHECK(read(snap, "data/d0/f0") == "changed");
  CHECK(read(snap, "data/new/x") == "new x");
  CHECK(read(*b, "data/d0/f0") == "changed again");
  // A branch of the branch's snapshot reads through the locations too.
  auto b2 = BranchStore::open(f.bucket, snap, BranchOptions{"exp2", "s2", true, 60});
  REQUIRE(b2.is_ok());
  CHECK(read(**b2, "data/moved") == "1-1");
  REQUIRE(rename(**b2, "data/d0/f0", "data/f0-again").is_ok());
  REQUIRE((*b2)->copy("data/new/x", "data/x-again", "").is_ok());
  CHECK(read(**b2, "data/f0-again") == "changed");
  auto h = (*b2)->head("data/x-again");
  REQUIRE(h.is_ok());
  REQUIRE((*b2)->replace_metadata("data/x-again", *h, ObjectHeaders{"", {{"mode", "1"}}}).is_ok());
  CHECK(read(**b2, "data/x-again") == "new x");
  // A record of another snapshot is refused.
  r->snapshot_created += 1;
  CHECK(branch_manifest(*f.manifest, *r, 50).code() == Errc::kInvalidArgument);
}

TEST_CASE("an unpinned branch deletes what no name refers to; a pinned one keeps it", "[branch]") {
  Fixture f;
  auto b = f.open("exp1");
  REQUIRE(put(*b, "data/k", "1").is_ok());
  REQUIRE(put(*b, "data/k", "2").is_ok());
  CHECK(f.data_objects("exp1").size() == 1);
  REQUIRE(pin_branch(f.bucket, kPrefix, "exp1", "p").is_ok());
  REQUIRE(put(*b, "data/k", "3").is_ok());
  REQUIRE(b->remove("data/k").is_ok());
  CHECK(f.data_objects("exp1").size() == 2);
}

// A mount killed between a file's data object and its record, and a mount whose branch was
// taken over, leave data objects no record names. A sweep deletes those and nothing a record
// names or may yet name: the record writer's, and anything newer than the record.
TEST_CASE("a sweep deletes orphaned data objects, and only those", "[branch]") {
  using namespace std::chrono_literals;
  Fixture f;
  const std::string root = branch_data_root(kPrefix, "exp1");
  auto first = f.open("exp1");
  REQUIRE(put(*first, "data/kept", "named").is_ok());
  const std::string w1 = first->record().writer;
  f.bucket.put_object(root + w1 + "/00000099", "killed before its record");
  f.clock.advance(2s);
  auto second = f.open("exp1");  // takes the branch over
  const std::string w2 = second->record().writer;
  // The first mount's bytes after the takeover never get a record, but they are as new as the
  // record: a sweep cannot tell them from a later writer's yet.
  CHECK(put(*first, "data/late", "fenced").code() == Errc::kPreconditionFailed);
  f.bucket.put_object(root + "00000000000000ff/00000001", "a later writer's");
  f.bucket.put_object(root + w2 + "/00000077", "the writer's, between bytes and record");
  REQUIRE(f.data_objects("exp1").size() == 5);

  auto swept = sweep_branch_orphans(f.bucket, kPrefix, "exp1", "");
  REQUIRE(swept.is_ok());
  CHECK(swept->data_objects == 5);
  CHECK(swept->orphans == 1);
  CHECK(swept->deleted == 1);
  CHECK(swept->deleted_bytes == std::string("killed before its record").size());
  CHECK(f.object(root + w1 + "/00000099") == "<absent>");
  CHECK(read(*second, "data/kept") == "named");

  // Once a newer record is in the bucket, the fenced bytes and the stray ones are older than it.
  f.clock.advance(2s);
  REQUIRE(put(*second, "data/more", "m").is_ok());
  swept = sweep_branch_orphans(f.bucket, kPrefix, "exp1", "");
  REQUIRE(swept.is_ok());
  CHECK(swept->orphans == 2);
  CHECK(swept->deleted == 2);
  auto left = f.data_objects("exp1");
  CHECK(left.size() == 3);  // kept, more, and the writer's own unnamed object
  CHECK(f.object(root + w2 + "/00000077") == "the writer's, between bytes and record");
  CHECK(read(*second, "data/kept") == "named");
  CHECK(read(*second, "data/more") == "m");

  // A writer's own objects are skipped when it says so, even where the record names another.
  f.clock.advance(2s);
  f.bucket.put_object(root + "00000000000000aa/00000001", "mine");
  f.clock.advance(2s);
  REQUIRE(put(*second, "data/again", "a").is_ok());
  swept = sweep_branch_orphans(f.bucket, kPrefix, "exp1", "00000000000000aa");
  REQUIRE(swept.is_ok());
  CHECK(swept->orphans == 0);

  // A pinned branch keeps them: a snapshot of it may read what an earlier record named.
  REQUIRE(pin_branch(f.bucket, kPrefix, "exp1", "p").is_ok());
  swept = sweep_branch_orphans(f.bucket, kPrefix, "exp1", "");
  REQUIRE(swept.is_ok());
  CHECK(swept->orphans == 1);
  CHECK(swept->pinned);
  CHECK(swept->deleted == 0);
  CHECK(f.object(root + "00000000000000aa/00000001") == "mine");

  CHECK(sweep_branch_orphans(f.bucket, kPrefix, "none", "").code() == Errc::kNotFound);
}

TEST_CASE("a writer sweeps its branch on a thread of its own; a reader does not", "[branch]") {
  using namespace std::chrono_literals;
  Fixture f;
  const std::string root = branch_data_root(kPrefix, "exp1");
  auto first = f.open("exp1");
  REQUIRE(put(*first, "data/kept", "named").is_ok());
  f.bucket.put_object(root + "0000000000000001/00000001", "orphan");
  f.clock.advance(2s);
  auto reader = f.open("exp1", false);
  reader->start_sweep();
  CHECK_FALSE(reader->sweep_result());
  auto second = f.open("exp1");
  second->start_sweep();
  for (int i = 0; i < 500 && !second->sweep_result(); ++i) std::this_thread::sleep_for(10ms);
  auto result = second->sweep_result();
  REQUIRE(result);
  CHECK(result->deleted == 1);
  CHECK(f.object(root + "0000000000000001/00000001") == "<absent>");
  CHECK(f.data_objects("exp1").size() == 1);
  CHECK(read(*second, "data/kept") == "named");
}

TEST_CASE("a reader of a branch reads its record again once it is older than refresh_after",
          "[branch]") {
  using namespace std::chrono_literals;
  Fixture f;
  auto writer = f.open("exp1");
  REQUIRE(put(*writer, "data/one", "1").is_ok());
  BranchOptions o{"exp1", "snap", false, 1000};
  o.refresh_after = 10s;
  o.clock = &f.clock;
  auto opened = BranchStore::open(f.bucket, *f.snap, o);
  REQUIRE(opened.is_ok());
  auto& reader = **opened;
  auto never = f.open("exp1", false);  // refresh_after 0: the record as opened
  CHECK(read(reader, "data/one") == "1");

  REQUIRE(put(*writer, "data/two", "2").is_ok());
  REQUIRE(put(*writer, "data/one", "1b").is_ok());
  REQUIRE(writer->remove("data/top.txt").is_ok());
  const uint64_t heads = f.bucket.counters().head_requests;
  CHECK(read(reader, "data/two") == "<absent>");  // within refresh_after: as read
  CHECK(f.bucket.counters().head_requests == heads);
  f.clock.advance(11s);
  CHECK(read(reader, "data/two") == "2");
  CHECK(read(reader, "data/one") == "1b");
  CHECK(read(reader, "data/top.txt") == "<absent>");
  auto listed = all_pages(reader, "data/", "/", 1000);
  CHECK(std::find_if(listed.begin(), listed.end(), [](const std::string& l) {
          return l.starts_with("data/two ");
        }) != listed.end());
  CHECK(read(*never, "data/two") == "<absent>");
  CHECK(read(*never, "data/top.txt") == "top");

  // An unchanged record costs one HEAD per refresh_after, and no GET.
  f.clock.advance(11s);
  const auto before = f.bucket.counters();
  CHECK(read(reader, "data/two") == "2");
  CHECK(read(reader, "data/two") == "2");
  const auto after = f.bucket.counters();
  CHECK(after.head_requests - before.head_requests == 3);  // the record's, and each read's
  CHECK(after.get_requests - before.get_requests == 2);    // the two reads only
}

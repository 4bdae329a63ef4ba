// The filesystem core over a BranchStore, with no kernel: what the core asks of a store (uploads,
// copies and deletes of renames, markers, metadata copies) lands in the branch, and a new mount
// of the branch shows it.
#include <fcntl.h>
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "cache/memory_cache.h"
#include "fs/filesystem.h"
#include "snapshot/branch_store.h"
#include "snapshot/snapshot_lister.h"
#include "support/fake_clock.h"
#include "support/memory_object_store.h"
#include "support/temp_dir.h"
#include "upload/staging.h"

namespace warmfs {
namespace {

using namespace std::chrono_literals;

// One mount of branch `name`: the core over the branch, files staged in a temporary directory.
struct BranchMount {
  std::unique_ptr<BranchStore> branch;
  MemoryCache memory{MemoryCacheOptions{16 << 20, 4}};
  testing::TempDir tmp{"warmfs-branch-fs-test"};
  std::unique_ptr<StagingArea> staging;
  std::unique_ptr<Uploader> uploader;
  std::unique_ptr<ReadPath> read_path;
  std::unique_ptr<Metadata> meta;
  std::unique_ptr<Filesystem> fs;

  BranchMount(MemoryObjectStore& bucket, SnapshotStore& snap, Clock& clock, const char* name) {
    branch = BranchStore::open(bucket, snap, BranchOptions{name, "s", true, 1}).value();
    staging = StagingArea::open(tmp.path, *branch).value();
    UploaderOptions uo;
    uo.bucket = "b";
    uploader = std::make_unique<Uploader>(*branch, *staging, &memory, clock, uo);
    read_path =
        std::make_unique<ReadPath>(*branch, memory, "b", ReadaheadOptions{.fetch_threads = 2});
    MetaOptions mo;
    mo.prefix = "data/";
    mo.ttl = 5s;
    mo.object_attrs = true;
    meta = std::make_unique<Metadata>(*branch, clock, mo);
    FsOptions fo;
    fo.bucket = "b";
    fo.prefix = "data/";
    fo.read_only = false;
    fs = std::make_unique<Filesystem>(*meta, *read_path, memory, nullptr, *branch, clock, fo,
                                      uploader.get());
  }
  ~BranchMount() {
    fs.reset();
    uploader.reset();
    staging.reset();
  }

  Result<Attr> resolve(const std::string& path) {
    uint64_t ino = kRootIno;
    Result<Attr> attr = fs->getattr(kRootIno);
    size_t start = 0;
    while (start < path.size()) {
      const size_t slash = path.find('/', start);
      const std::string name =
          path.substr(start, slash == std::string::npos ? slash : slash - start);
      attr = fs->lookup(ino, name);
      if (!attr.is_ok()) return attr;
      ino = attr->ino;
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    return attr;
  }
  std::string read(const std::string& path) {
    auto a = resolve(path);
    if (!a.is_ok()) return "<absent>";
    auto h = fs->open(a->ino, O_RDONLY);
    REQUIRE(h.is_ok());
    std::string out(a->size, '\0');
    auto n = fs->read(*h->handle, 0, std::as_writable_bytes(std::span(out)));
    REQUIRE(n.is_ok());
    out.resize(*n);
    fs->release(std::move(h->handle));
    return out;
  }
  void write(const std::string& dir, const std::string& name, std::string_view body) {
    auto d = resolve(dir);
    REQUIRE(d.is_ok());
    auto existing = fs->lookup(d->ino, name);
    std::unique_ptr<FileHandle> h;
    if (existing.is_ok()) {
      auto o = fs->open(existing->ino, O_WRONLY | O_TRUNC);
      REQUIRE(o.is_ok());
      h = std::move(o->handle);
    } else {
      auto c = fs->create(d->ino, name, O_WRONLY | O_CREAT);
      INFO(c.status().to_string());
      REQUIRE(c.is_ok());
      h = std::move(c->open.handle);
    }
    REQUIRE(fs->write(*h, 0, std::as_bytes(std::span(body))).is_ok());
    REQUIRE(fs->flush(*h).is_ok());
    fs->release(std::move(h));
  }
  std::vector<std::string> names(const std::string& dir) {
    auto d = resolve(dir);
    REQUIRE(d.is_ok());
    auto l = fs->opendir(d->ino);
    REQUIRE(l.is_ok());
    std::vector<std::string> out;
    auto entries = (*l)->read_all();
    REQUIRE(entries.is_ok());
    for (auto& e : *entries) out.push_back(e.name.str());
    std::sort(out.begin(), out.end());
    return out;
  }
};

}  // namespace

TEST_CASE("the core over a branch: writes, renames, deletes, mkdir and chmod, then a remount",
          "[branch]") {
  FakeClock clock;
  MemoryObjectStore bucket("b", clock);
  for (int d = 0; d < 3; ++d) {
    for (int f = 0; f < 3; ++f)
      bucket.put_object(fmt::format("data/d{}/f{}", d, f), fmt::format("{}{}", d, f));
  }
  SnapshotListOptions lo;
  auto m = take_snapshot(bucket, "b", "data/", 7, lo);
  REQUIRE(m.is_ok());
  SnapshotStore snap(bucket, std::make_shared<const Manifest>(std::move(*m)));
  const size_t base_objects = bucket.object_count();
  {
    BranchMount mnt(bucket, snap, clock, "x");
    mnt.write("", "new.txt", "new");
    mnt.write("d0", "f0", "changed");
    auto root = mnt.fs->getattr(kRootIno);
    REQUIRE(root.is_ok());
    auto d1 = mnt.resolve("d1");
    REQUIRE(d1.is_ok());
    REQUIRE(mnt.fs->rename(kRootIno, "d1", kRootIno, "d1b", 0).is_ok());
    auto d2 = mnt.resolve("d2");
    REQUIRE(d2.is_ok());
    REQUIRE(mnt.fs->unlink(d2->ino, "f0").is_ok());
    REQUIRE(mnt.fs->rename(d2->ino, "f1", kRootIno, "f1-moved", 0).is_ok());
    REQUIRE(mnt.fs->mkdir(kRootIno, "empty", NewNodeAttrs{0755, 1, 1}).is_ok());
    auto f2 = mnt.resolve("d2/f2");
    REQUIRE(f2.is_ok());
    SetAttrRequest chmod;
    chmod.mode = 0600;
    REQUIRE(mnt.fs->setattr(f2->ino, chmod, nullptr).is_ok());
    CHECK(mnt.read("d0/f0") == "changed");
    CHECK(mnt.read("d1b/f2") == "12");
  }
  // Only the branch's folder changed in the bucket; the snapshot reads as it was.
  for (int d = 0; d < 3; ++d) {
    for (int f = 0; f < 3; ++f) {
      CHECK(bucket.object_bytes(fmt::format("data/d{}/f{}", d, f)).has_value());
    }
  }
  CHECK(to_bytes("00") == *bucket.object_bytes("data/d0/f0"));
  std::vector<std::byte> buf(8);
  CHECK(snap.get_range("data/d2/f0", 0, buf, "").is_ok());
  // record + new.txt + d0/f0 + empty/ + d2/f2 (its mode): the renames copied nothing.
  CHECK(bucket.object_count() == base_objects + 5);

  BranchMount again(bucket, snap, clock, "x");
  CHECK(again.names("") ==
        std::vector<std::string>{"d0", "d1b", "d2", "empty", "f1-moved", "new.txt"});
  CHECK(again.names("d1b") == std::vector<std::string>{"f0", "f1", "f2"});
  CHECK(again.names("d2") == std::vector<std::string>{"f2"});
  CHECK(again.read("new.txt") == "new");
  CHECK(again.read("d0/f0") == "changed");
  CHECK(again.read("d0/f1") == "01");
  CHECK(again.read("d1b/f1") == "11");
  CHECK(again.read("f1-moved") == "21");
  CHECK(again.read("d2/f0") == "<absent>");
  auto f2 = again.resolve("d2/f2");
  REQUIRE(f2.is_ok());
  CHECK((f2->mode & 0777) == 0600);
  CHECK(again.read("d2/f2") == "22");
}

}  // namespace warmfs

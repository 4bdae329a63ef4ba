// Attributes kept in the objects' user metadata (chmod, chown, utimens) and symlinks, in the
// core with an in-memory bucket and no kernel.
#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "support/fs_fixture.h"

namespace warmfs {

using Op = FaultInjectingStore::Op;
using testing::FsFixture;
using testing::FsFixtureOptions;
namespace {

ObjectInfo head(MemoryObjectStore& bucket, const std::string& key) {
  auto h = bucket.head(key);
  REQUIRE(h.is_ok());
  return *h;
}

// A file written and closed through the mount, with attributes as a caller gives them.
uint64_t make_file(FsFixture& f, const std::string& name, const std::string& body,
                   NewNodeAttrs attrs = {0640, 1234, 5678}) {
  auto c = f.fs->create(kRootIno, name, O_WRONLY | O_CREAT, attrs);
  REQUIRE(c.is_ok());
  REQUIRE(f.write(*c->open.handle, 0, body).is_ok());
  REQUIRE(f.fs->flush(*c->open.handle).is_ok());
  f.fs->release(std::move(c->open.handle));
  return c->attr.ino;
}

// What a second mount of the same bucket sees (a remount).
Result<Attr> remount_lookup(FsFixture& f, std::string_view name, MetaOptions mo = {}) {
  Metadata meta(f.store, f.clock, mo);
  FsOptions fo;
  fo.bucket = "b";
  fo.uid = 7;
  fo.gid = 8;
  Filesystem fs(meta, *f.read_path, f.memory, nullptr, f.store, f.clock, fo, nullptr);
  return fs.lookup(kRootIno, name);
}

}  // namespace

TEST_CASE("fs attrs: a new file carries its mode and owner in its upload", "[fs][attrs]") {
  FsFixture f({.writable = true});
  make_file(f, "a", "hello");
  const ObjectInfo h = head(f.bucket, "a");
  CHECK(h.metadata.at("mode") == std::to_string(S_IFREG | 0640));
  CHECK(h.metadata.at("uid") == "1234");
  CHECK(h.metadata.at("gid") == "5678");
  CHECK(f.store.call_count(Op::kCopy) == 0);
  auto a = f.fs->lookup(kRootIno, "a");
  REQUIRE(a.is_ok());
  CHECK(a->mode == (S_IFREG | 0640));
  CHECK(a->uid == 1234);
  // Another mount sees them too.
  auto r = remount_lookup(f, "a");
  REQUIRE(r.is_ok());
  CHECK(r->mode == (S_IFREG | 0640));
  CHECK(r->uid == 1234);
  CHECK(r->gid == 5678);
}

TEST_CASE("fs attrs: chmod, chown and utimens of an object cost one copy onto itself each",
          "[fs][attrs]") {
  FsFixture f({.writable = true});
  const uint64_t ino = make_file(f, "a", "payload");
  const std::string etag = head(f.bucket, "a").etag;
  const size_t puts = f.store.call_count(Op::kPut);

  SetAttrRequest chmod;
  chmod.mode = 0600;
  auto a = f.fs->setattr(ino, chmod, nullptr);
  REQUIRE(a.is_ok());
  CHECK(a->mode == (S_IFREG | 0600));
  CHECK(f.store.call_count(Op::kCopy) == 1);

  SetAttrRequest chown;
  chown.uid = 42;
  chown.gid = 43;
  REQUIRE(f.fs->setattr(ino, chown, nullptr).is_ok());
  CHECK(f.store.call_count(Op::kCopy) == 2);

  SetAttrRequest touch;
  touch.mtime = Timespec{1600000000, 250000000};
  a = f.fs->setattr(ino, touch, nullptr);
  REQUIRE(a.is_ok());
  CHECK(a->mtime_sec == 1600000000);
  CHECK(a->mtime_nsec == 250000000);
  CHECK(f.store.call_count(Op::kCopy) == 3);
  CHECK(f.store.call_count(Op::kPut) == puts);  // never a re-upload
  CHECK(f.object("a") == "payload");
  CHECK(head(f.bucket, "a").etag == etag);

  // Asking for what is already there costs nothing (rsync's second pass, a chown to self).
  REQUIRE(f.fs->setattr(ino, chown, nullptr).is_ok());
  REQUIRE(f.fs->setattr(ino, touch, nullptr).is_ok());
  CHECK(f.store.call_count(Op::kCopy) == 3);

  const ObjectInfo h = head(f.bucket, "a");
  CHECK(h.metadata.at("mode") == std::to_string(S_IFREG | 0600));
  CHECK(h.metadata.at("uid") == "42");
  CHECK(h.metadata.at("gid") == "43");
  CHECK(h.metadata.at("mtime") == "1600000000.250000000");
  CHECK(h.metadata.count("ctime") == 1);
  auto r = remount_lookup(f, "a");
  REQUIRE(r.is_ok());
  CHECK(r->mode == (S_IFREG | 0600));
  CHECK(r->uid == 42);
  CHECK(r->mtime_sec == 1600000000);
  CHECK(r->mtime_nsec == 250000000);
}

TEST_CASE("fs attrs: a file being written takes them in its upload, no copy", "[fs][attrs]") {
  FsFixture f({.writable = true});
  auto c = f.fs->create(kRootIno, "w", O_WRONLY | O_CREAT, NewNodeAttrs{0644, 0, 0});
  REQUIRE(c.is_ok());
  REQUIRE(f.write(*c->open.handle, 0, "data").is_ok());
  SetAttrRequest r;
  r.mode = 0755;
  r.mtime = Timespec{1500000000, 0};
  REQUIRE(f.fs->setattr(c->attr.ino, r, c->open.handle.get()).is_ok());
  REQUIRE(f.fs->flush(*c->open.handle).is_ok());
  f.fs->release(std::move(c->open.handle));
  CHECK(f.store.call_count(Op::kCopy) == 0);
  const ObjectInfo h = head(f.bucket, "w");
  CHECK(h.metadata.at("mode") == std::to_string(S_IFREG | 0755));
  CHECK(h.metadata.at("mtime") == "1500000000");
  auto a = f.fs->lookup(kRootIno, "w");
  REQUIRE(a.is_ok());
  CHECK(a->mtime_sec == 1500000000);
}

TEST_CASE("fs attrs: a write after utimens makes the mtime the write's again", "[fs][attrs]") {
  FsFixture f({.writable = true});
  const uint64_t ino = make_file(f, "a", "one");
  SetAttrRequest touch;
  touch.mtime = Timespec{1000000000, 0};
  REQUIRE(f.fs->setattr(ino, touch, nullptr).is_ok());
  auto o = f.fs->open(ino, O_WRONLY);
  REQUIRE(o.is_ok());
  REQUIRE(f.write(*o->handle, 0, "two").is_ok());
  REQUIRE(f.fs->flush(*o->handle).is_ok());
  f.fs->release(std::move(o->handle));
  const ObjectInfo h = head(f.bucket, "a");
  CHECK(h.metadata.count("mtime") == 0);                           // Last-Modified is the mtime
  CHECK(h.metadata.at("mode") == std::to_string(S_IFREG | 0640));  // the rest stays
  auto a = f.fs->getattr(ino);
  REQUIRE(a.is_ok());
  CHECK(a->mtime_sec == h.mtime_sec);
}

TEST_CASE("fs attrs: objects from s3fs and rclone show theirs, others the mount's defaults",
          "[fs][attrs]") {
  FsFixture f({.writable = true});
  f.bucket.put_object("s3fs", "x");
  f.bucket.set_metadata("s3fs", {{"mode", "33184"},
                                 {"uid", "1234"},
                                 {"gid", "5678"},
                                 {"mtime", "1600000000.250000000"},
                                 {"atime", "1"}});
  f.bucket.put_object("rclone", "x");
  f.bucket.set_metadata("rclone", {{"mode", "100604"}, {"mtime", "1500000000.123456716"}});
  f.bucket.put_object("plain", "x");
  f.bucket.put_object("d/", "");
  f.bucket.set_metadata("d/", {{"mode", "488"}, {"uid", "9"}});
  auto s = remount_lookup(f, "s3fs");
  REQUIRE(s.is_ok());
  CHECK(s->mode == (S_IFREG | 0640));
  CHECK(s->uid == 1234);
  CHECK(s->gid == 5678);
  CHECK(s->mtime_sec == 1600000000);
  auto r = remount_lookup(f, "rclone");
  REQUIRE(r.is_ok());
  CHECK(r->mode == (S_IFREG | 0604));
  CHECK(r->uid == 7);  // the mount's
  CHECK(r->mtime_nsec == 123456716);
  auto p = remount_lookup(f, "plain");
  REQUIRE(p.is_ok());
  CHECK(p->mode == (S_IFREG | 0644));
  CHECK(p->uid == 7);
  auto d = remount_lookup(f, "d");
  REQUIRE(d.is_ok());
  CHECK(d->mode == (S_IFDIR | 0750));
  CHECK(d->uid == 9);
  // Without object attributes, listings answer alone: defaults, and no HEAD.
  MetaOptions off;
  off.object_attrs = false;
  const size_t heads = f.store.call_count(Op::kHead);
  auto o = remount_lookup(f, "s3fs", off);
  REQUIRE(o.is_ok());
  CHECK(o->mode == (S_IFREG | 0644));
  CHECK(f.store.call_count(Op::kHead) == heads);
}

TEST_CASE("fs attrs: listing a directory HEADs each entry once; later listings are LISTs only",
          "[fs][attrs]") {
  FsFixture f({.writable = true});
  for (int i = 0; i < 40; ++i) {
    const std::string k = "dir/f" + std::to_string(i);
    f.bucket.put_object(k, "x");
    f.bucket.set_metadata(k, {{"mode", std::to_string(S_IFREG | 0600)}});
  }
  auto d = f.fs->lookup(kRootIno, "dir");
  REQUIRE(d.is_ok());
  const size_t heads = f.store.call_count(Op::kHead);
  auto l = f.fs->opendir(d->ino);
  REQUIRE(l.is_ok());
  CHECK(f.store.call_count(Op::kHead) == heads + 40);
  for (int i = 0; i < 40; ++i) {
    auto a = f.fs->lookup(d->ino, "f" + std::to_string(i));
    REQUIRE(a.is_ok());
    CHECK(a->mode == (S_IFREG | 0600));
  }
  CHECK(f.store.call_count(Op::kHead) == heads + 40);
  // Past the TTL and after the kernel forgot them: a LIST, and no HEAD (same versions).
  f.clock.advance(std::chrono::minutes(5));
  const size_t lists = f.store.call_count(Op::kList);
  for (int i = 0; i < 40; ++i) f.fs->forget(f.fs->lookup(d->ino, "f" + std::to_string(i))->ino, 2);
  REQUIRE(f.fs->opendir(d->ino).is_ok());
  auto a = f.fs->lookup(d->ino, "f3");
  REQUIRE(a.is_ok());
  CHECK(a->mode == (S_IFREG | 0600));
  CHECK(f.store.call_count(Op::kList) == lists + 1);
  CHECK(f.store.call_count(Op::kHead) == heads + 40);
}

TEST_CASE("fs attrs: rename keeps them; a directory's live on its marker", "[fs][attrs]") {
  FsFixture f({.writable = true});
  make_file(f, "a", "x");
  REQUIRE(f.fs->rename(kRootIno, "a", kRootIno, "b", 0).is_ok());
  CHECK(head(f.bucket, "b").metadata.at("uid") == "1234");
  auto b = remount_lookup(f, "b");
  REQUIRE(b.is_ok());
  CHECK(b->mode == (S_IFREG | 0640));

  auto d = f.fs->mkdir(kRootIno, "d", NewNodeAttrs{0750, 11, 12});
  REQUIRE(d.is_ok());
  CHECK(d->mode == (S_IFDIR | 0750));
  ObjectInfo m = head(f.bucket, "d/");
  CHECK(m.content_type == kDirContentType);
  CHECK(m.metadata.at("mode") == std::to_string(S_IFDIR | 0750));
  SetAttrRequest chmod;
  chmod.mode = 0700;
  REQUIRE(f.fs->setattr(d->ino, chmod, nullptr).is_ok());
  m = head(f.bucket, "d/");
  CHECK(m.content_type == kDirContentType);
  CHECK(m.metadata.at("mode") == std::to_string(S_IFDIR | 0700));
  CHECK(m.metadata.at("uid") == "11");

  // A directory with no marker (implicit) gets one.
  f.bucket.put_object("implicit/x", "x");
  f.clock.advance(std::chrono::minutes(2));  // past the root listing's TTL
  auto i = f.fs->lookup(kRootIno, "implicit");
  REQUIRE(i.is_ok());
  REQUIRE(f.fs->setattr(i->ino, chmod, nullptr).is_ok());
  CHECK(head(f.bucket, "implicit/").metadata.at("mode") == std::to_string(S_IFDIR | 0700));
  auto r = remount_lookup(f, "implicit");
  REQUIRE(r.is_ok());
  CHECK(r->mode == (S_IFDIR | 0700));
}

TEST_CASE("fs symlink: the target as the body, S_IFLNK in the mode; s3fs's links read back",
          "[fs][symlink]") {
  FsFixture f({.writable = true});
  auto l = f.fs->symlink(kRootIno, "ln", "target/x", NewNodeAttrs{0777, 5, 6});
  REQUIRE(l.is_ok());
  CHECK(l->mode == (S_IFLNK | 0777));
  CHECK(l->size == 8);
  CHECK(f.object("ln") == "target/x");
  CHECK(head(f.bucket, "ln").metadata.at("mode") == "41471");
  CHECK(f.store.call_count(Op::kPut) == 1);
  auto t = f.fs->readlink(l->ino);
  REQUIRE(t.is_ok());
  CHECK(*t == "target/x");
  CHECK(f.store.call_count(Op::kGetRange) == 0);  // known since it was made
  CHECK(f.fs->symlink(kRootIno, "ln", "y", NewNodeAttrs{}).code() == Errc::kExists);

  // A link s3fs wrote, read through another mount: one GET of its body.
  f.bucket.put_object("s3fs-link", "../elsewhere");
  f.bucket.set_metadata("s3fs-link", {{"mode", "41471"}, {"uid", "0"}});
  Metadata meta(f.store, f.clock, MetaOptions{});
  FsOptions fo;
  fo.bucket = "b";
  Filesystem fs(meta, *f.read_path, f.memory, nullptr, f.store, f.clock, fo, nullptr);
  auto s = fs.lookup(kRootIno, "s3fs-link");
  REQUIRE(s.is_ok());
  CHECK((s->mode & S_IFMT) == S_IFLNK);
  auto st = fs.readlink(s->ino);
  REQUIRE(st.is_ok());
  CHECK(*st == "../elsewhere");
  auto plain = fs.lookup(kRootIno, "ln");
  REQUIRE(plain.is_ok());
  CHECK(fs.readlink(plain->ino).value() == "target/x");
  f.bucket.put_object("file", "x");
  f.clock.advance(std::chrono::minutes(2));
  auto file = fs.lookup(kRootIno, "file");
  REQUIRE(file.is_ok());
  CHECK(fs.readlink(file->ino).code() == Errc::kInvalidArgument);
}

}  // namespace warmfs

namespace warmfs {

TEST_CASE("fs mknod: FIFOs, sockets and devices are empty objects with their type", "[fs][attrs]") {
  FsFixture f({.writable = true});
  auto fifo = f.fs->mknod(kRootIno, "fifo", S_IFIFO, 0, NewNodeAttrs{0620, 1, 2});
  REQUIRE(fifo.is_ok());
  CHECK(fifo->mode == (S_IFIFO | 0620));
  auto dev = f.fs->mknod(kRootIno, "dev", S_IFCHR, 0x0102, NewNodeAttrs{0600, 0, 0});
  REQUIRE(dev.is_ok());
  CHECK(dev->rdev == 0x0102);
  CHECK(f.object("fifo") == "");
  CHECK(head(f.bucket, "dev").metadata.at("rdev") == std::to_string(0x0102));
  auto r = remount_lookup(f, "fifo");
  REQUIRE(r.is_ok());
  CHECK(r->mode == (S_IFIFO | 0620));
  auto d = remount_lookup(f, "dev");
  REQUIRE(d.is_ok());
  CHECK(d->mode == (S_IFCHR | 0600));
  CHECK(d->rdev == 0x0102);
  CHECK(f.fs->mknod(kRootIno, "fifo", S_IFIFO, 0, NewNodeAttrs{}).code() == Errc::kExists);
}

TEST_CASE("fs: names over 255 bytes are ENAMETOOLONG; an unlinked open file has no links",
          "[fs][attrs]") {
  FsFixture f({.writable = true});
  const std::string longest(255, 'a');
  const std::string too_long(256, 'a');
  CHECK(f.fs->lookup(kRootIno, too_long).code() == Errc::kNameTooLong);
  CHECK(f.fs->mkdir(kRootIno, too_long).code() == Errc::kNameTooLong);
  CHECK(f.fs->create(kRootIno, too_long, O_WRONLY | O_CREAT).code() == Errc::kNameTooLong);
  CHECK(f.fs->lookup(kRootIno, longest).code() == Errc::kNotFound);
  const uint64_t ino = make_file(f, "f", "x");
  auto o = f.fs->open(ino, O_RDONLY);
  REQUIRE(o.is_ok());
  CHECK(f.fs->getattr(ino)->nlink == 1);
  REQUIRE(f.fs->unlink(kRootIno, "f").is_ok());
  CHECK(f.fs->getattr(ino)->nlink == 0);
  f.fs->release(std::move(o->handle));
}

}  // namespace warmfs

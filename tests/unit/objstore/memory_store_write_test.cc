// MemoryObjectStore writes behave like S3's, and FaultInjectingStore fails them on demand.
#include <catch2/catch.hpp>
#include <regex>
#include <string>
#include <vector>

#include "objstore/checksums.h"
#include "support/fault_injecting_store.h"
#include "support/memory_object_store.h"

using warmfs::CompletedPart;
using warmfs::Errc;
using warmfs::FaultInjectingStore;
using warmfs::MemoryObjectStore;
using warmfs::PutOptions;
using warmfs::Status;
namespace s3 = warmfs::s3;

namespace {

std::span<const std::byte> bytes_of(const std::string& s) { return s3::as_bytes(s); }

std::string read_all(MemoryObjectStore& store, const std::string& key) {
  auto bytes = store.object_bytes(key);
  REQUIRE(bytes);
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

}  // namespace

TEST_CASE("memory store: put and its conditions", "[objstore-write]") {
  MemoryObjectStore store;
  auto a = store.put("k", bytes_of("one"), PutOptions{});
  REQUIRE(a.is_ok());
  CHECK(a->etag == s3::md5_hex(bytes_of("one")));
  CHECK(a->size == 3);
  CHECK(store.head("k")->etag == a->etag);

  PutOptions create;
  create.if_none_match = true;
  CHECK(store.put("k", bytes_of("two"), create).code() == Errc::kPreconditionFailed);
  CHECK(store.put("new", bytes_of("two"), create).is_ok());

  PutOptions replace;
  replace.if_match = "stale";
  CHECK(store.put("k", bytes_of("three"), replace).code() == Errc::kPreconditionFailed);
  replace.if_match = a->etag;
  CHECK(store.put("k", bytes_of("three"), replace).is_ok());
  CHECK(read_all(store, "k") == "three");
  CHECK(store.put("absent", bytes_of("x"), replace).code() == Errc::kNotFound);

  auto c = store.counters();
  CHECK(c.put_requests == 6);
  CHECK(c.bytes_written == 3 + 3 + 5);
}

TEST_CASE("memory store: multipart assembles parts with S3's ETag", "[objstore-write]") {
  MemoryObjectStore store;
  const std::string p1(5 << 20, 'a'), p2(5 << 20, 'b'), tail = "the end";
  auto id = store.create_multipart("big");
  REQUIRE(id.is_ok());
  CHECK(store.upload_count() == 1);
  CHECK_FALSE(store.head("big").is_ok());  // nothing visible before complete

  auto r1 = store.upload_part("big", *id, 1, bytes_of(p1));
  auto r3 = store.upload_part("big", *id, 3, bytes_of(tail));
  auto r2 = store.upload_part("big", *id, 2, bytes_of(std::string(10, 'x')));
  r2 = store.upload_part("big", *id, 2, bytes_of(p2));  // replaces
  REQUIRE(r1.is_ok());
  REQUIRE(r2.is_ok());
  REQUIRE(r3.is_ok());
  std::vector<CompletedPart> parts = {*r1, *r2, *r3};

  SECTION("complete") {
    auto done = store.complete_multipart("big", *id, parts);
    REQUIRE(done.is_ok());
    CHECK(done->size == p1.size() + p2.size() + tail.size());
    CHECK(read_all(store, "big") == p1 + p2 + tail);
    // "md5 of the binary md5s-N", computed by the S3 store's own helper as a cross-check.
    std::vector<std::string> etags = {s3::md5_hex(bytes_of(p1)), s3::md5_hex(bytes_of(p2)),
                                      s3::md5_hex(bytes_of(tail))};
    CHECK(done->etag == s3::multipart_etag(etags));
    CHECK(std::regex_match(done->etag, std::regex("[0-9a-f]{32}-3")));
    CHECK(store.head("big")->etag == done->etag);
    CHECK(store.upload_count() == 0);
    CHECK(store.complete_multipart("big", *id, parts).code() == Errc::kNotFound);
  }
  SECTION("a wrong ETag, order or size is refused and the upload stays") {
    auto wrong = parts;
    wrong[1].etag = "0123";
    CHECK(store.complete_multipart("big", *id, wrong).code() == Errc::kInvalidArgument);
    std::vector<CompletedPart> unordered = {parts[1], parts[0], parts[2]};
    CHECK(store.complete_multipart("big", *id, unordered).code() == Errc::kInvalidArgument);
    auto extra = store.upload_part("big", *id, 4, bytes_of("x"));
    REQUIRE(extra.is_ok());
    std::vector<CompletedPart> too_small = {*r3, *extra};
    CHECK(store.complete_multipart("big", *id, too_small).code() == Errc::kInvalidArgument);
    CHECK(store.upload_count() == 1);
    store.set_min_part_size(1);
    CHECK(store.complete_multipart("big", *id, too_small).is_ok());
    CHECK(read_all(store, "big") == tail + "x");
  }
  SECTION("abort drops the parts") {
    CHECK(store.abort_multipart("big", *id).is_ok());
    CHECK(store.upload_count() == 0);
    CHECK(store.upload_part("big", *id, 4, bytes_of("x")).code() == Errc::kNotFound);
    CHECK(store.complete_multipart("big", *id, parts).code() == Errc::kNotFound);
    CHECK(store.abort_multipart("big", *id).is_ok());  // already gone: ok
    CHECK_FALSE(store.head("big").is_ok());
  }
  SECTION("an upload id belongs to its key") {
    CHECK(store.upload_part("other", *id, 1, bytes_of("x")).code() == Errc::kNotFound);
  }
}

TEST_CASE("memory store: list uploads, part copies, copy and remove", "[objstore-write]") {
  MemoryObjectStore store;
  auto u2 = store.create_multipart("p/b");
  auto u1 = store.create_multipart("p/a");
  auto other = store.create_multipart("q/c");
  REQUIRE(u2.is_ok());
  REQUIRE(u1.is_ok());
  REQUIRE(other.is_ok());
  auto uploads = store.list_multipart_uploads("p/");
  REQUIRE(uploads.is_ok());
  REQUIRE(uploads->size() == 2);
  CHECK((*uploads)[0].key == "p/a");
  CHECK((*uploads)[0].upload_id == *u1);
  CHECK((*uploads)[1].key == "p/b");
  CHECK(store.list_multipart_uploads("")->size() == 3);

  store.put_object("src", std::string("0123456789"));
  const std::string src_etag = store.head("src")->etag;
  store.set_min_part_size(1);
  auto c1 = store.upload_part_copy("p/a", *u1, 1, "src", 0, 3, src_etag);
  auto c2 = store.upload_part_copy("p/a", *u1, 2, "src", 8, 9, "");
  REQUIRE(c1.is_ok());
  REQUIRE(c2.is_ok());
  CHECK(c1->size == 4);
  CHECK(store.upload_part_copy("p/a", *u1, 3, "src", 5, 10, "").code() == Errc::kInvalidArgument);
  CHECK(store.upload_part_copy("p/a", *u1, 3, "src", 0, 1, "stale").code() ==
        Errc::kPreconditionFailed);
  CHECK(store.upload_part_copy("p/a", *u1, 3, "nosrc", 0, 1, "").code() == Errc::kNotFound);
  std::vector<CompletedPart> parts = {*c1, *c2};
  REQUIRE(store.complete_multipart("p/a", *u1, parts).is_ok());
  CHECK(read_all(store, "p/a") == "012389");

  auto copied = store.copy("src", "dst", src_etag);
  REQUIRE(copied.is_ok());
  CHECK(copied->etag == src_etag);
  CHECK(copied->size == 10);
  CHECK(read_all(store, "dst") == "0123456789");
  CHECK(store.copy("src", "dst2", "stale").code() == Errc::kPreconditionFailed);
  CHECK(store.copy("nosrc", "dst2", "").code() == Errc::kNotFound);

  CHECK(store.remove("dst").is_ok());
  CHECK(store.remove("dst").is_ok());  // absent: ok
  CHECK_FALSE(store.head("dst").is_ok());
  std::vector<std::string> keys = {"src", "p/a", "never"};
  auto failed = store.remove_many(keys);
  REQUIRE(failed.is_ok());
  CHECK(failed->empty());
  CHECK(store.object_count() == 0);
  auto c = store.counters();
  CHECK(c.copy_requests == 3);
  CHECK(c.delete_requests == 3);
}

TEST_CASE("fault injecting store: write faults and the call log", "[objstore-write]") {
  MemoryObjectStore inner;
  FaultInjectingStore s(inner);
  using Op = FaultInjectingStore::Op;
  s.fail_next(Op::kPut, 1, Status(Errc::kIo, "500 InternalError"));
  CHECK(s.put("k", bytes_of("abc"), PutOptions{}).code() == Errc::kIo);
  CHECK(inner.object_count() == 0);  // the failure never reached the store
  CHECK(s.put("k", bytes_of("abc"), PutOptions{}).is_ok());

  auto id = s.create_multipart("m");
  REQUIRE(id.is_ok());
  s.fail_always(Op::kUploadPart, Status(Errc::kTimeout, "slow"));
  CHECK(s.upload_part("m", *id, 1, bytes_of("x")).code() == Errc::kTimeout);
  s.clear_faults();
  auto part = s.upload_part("m", *id, 1, bytes_of("x"));
  REQUIRE(part.is_ok());
  s.fail_next(Op::kCompleteMultipart, 1, Status(Errc::kIo, "200 InternalError"));
  std::vector<CompletedPart> parts = {*part};
  CHECK_FALSE(s.complete_multipart("m", *id, parts).is_ok());
  CHECK(s.abort_multipart("m", *id).is_ok());
  CHECK(s.list_multipart_uploads("")->empty());

  s.fail_next(Op::kCopy, 1, Status(Errc::kIo, "boom"));
  CHECK_FALSE(s.copy("k", "k2", "").is_ok());
  CHECK(s.copy("k", "k2", "").is_ok());
  s.fail_next(Op::kRemove, 1, Status(Errc::kIo, "boom"));
  CHECK_FALSE(s.remove("k").is_ok());
  CHECK(s.remove("k").is_ok());
  std::vector<std::string> keys = {"k2"};
  CHECK(s.remove_many(keys).is_ok());
  CHECK(inner.object_count() == 0);

  CHECK(s.call_count(Op::kPut) == 2);
  CHECK(s.call_count(Op::kUploadPart) == 2);
  CHECK(s.call_count(Op::kCopy) == 2);
  auto calls = s.calls();
  CHECK(calls[0].op == Op::kPut);
  CHECK(calls[0].length == 3);
  CHECK(calls[0].result == Errc::kIo);
  CHECK(s.in_flight() == 0);
  CHECK(s.counters().put_requests == 1);  // the inner store's own count
}

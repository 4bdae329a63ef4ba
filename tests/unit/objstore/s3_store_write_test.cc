// S3ObjectStore writes against the in-process TestHttpServer playing S3: request shapes
// (headers, checksums, query strings, XML bodies), signed payloads, 200-with-error answers,
// retries and the cleanup of failed multipart copies.
#include <fmt/format.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "objstore/checksums.h"
#include "objstore/s3_store.h"
#include "objstore/sigv4.h"
#include "objstore/time_format.h"
#include "objstore/xml.h"
#include "support/fake_clock.h"
#include "unit/http/test_http_server.h"
#include "unit/objstore/s3_test_support.h"

using warmfs::CompletedPart;
using warmfs::Errc;
using warmfs::FakeClock;
using warmfs::PutOptions;
using warmfs::S3Config;
using warmfs::S3ObjectStore;
using warmfs::testing::ServerReply;
using warmfs::testing::ServerRequest;
using warmfs::testing::TestHttpServer;
namespace s3 = warmfs::s3;

namespace {

using warmfs::testing::config_for;
using warmfs::testing::kKeyId;
using warmfs::testing::kSecret;
using warmfs::testing::make_store;

std::span<const std::byte> bytes_of(const std::string& s) { return s3::as_bytes(s); }

std::string path_of(const ServerRequest& req) { return req.target.substr(0, req.target.find('?')); }

// Decoded query parameters of a request ("uploads" -> "").
std::map<std::string, std::string> query_of(const ServerRequest& req) {
  std::map<std::string, std::string> out;
  for (auto& [k, v] : warmfs::testing::query_params(req)) out[k] = v;
  return out;
}

ServerReply xml_reply(int status, std::string body) {
  ServerReply r;
  r.status = status;
  r.headers = {{"Content-Type", "application/xml"}};
  r.body = std::move(body);
  return r;
}

ServerReply error_reply(int status, const std::string& code) {
  return xml_reply(status, fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{}"
                                       "</Code><Message>msg for {}</Message><RequestId>R"
                                       "</RequestId></Error>",
                                       code, code));
}

ServerReply etag_reply(const std::string& etag) {
  ServerReply r;
  r.headers = {{"ETag", "\"" + etag + "\""}};
  return r;
}

ServerReply head_reply(size_t size, const std::string& etag) {
  ServerReply r = etag_reply(etag);
  r.content_length = size;
  r.omit_body = true;
  return r;
}

// Re-signs what the server received and compares it with the Authorization sent, and checks
// that the signed payload hash is the SHA-256 of the body that arrived.
void check_signed(const ServerRequest& req) {
  const std::string hash = req.header("x-amz-content-sha256");
  if (hash != "UNSIGNED-PAYLOAD") CHECK(hash == s3::sha256_hex(bytes_of(req.body)));
  warmfs::testing::check_resigned(req);
}

}  // namespace

TEST_CASE("put sends a signed body with Content-MD5 and CRC32C", "[objstore-write]") {
  TestHttpServer server([](const ServerRequest&) {
    ServerReply r = etag_reply("5eb63bbbe01eeed093cb22bb8f5acdc3");
    r.headers.emplace_back("Date", "Fri, 17 May 2024 09:30:15 GMT");
    return r;
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  PutOptions opts;
  opts.checksum_crc32c = true;
  opts.if_none_match = true;
  opts.content_type = "text/plain";
  auto info = store->put("dir/my file+1.txt", bytes_of("hello world"), opts);
  REQUIRE(info.is_ok());
  CHECK(info->key == "dir/my file+1.txt");
  CHECK(info->size == 11);
  CHECK(info->etag == "5eb63bbbe01eeed093cb22bb8f5acdc3");
  CHECK(info->mtime_sec == 1715938215);

  auto seen = server.requests();
  REQUIRE(seen.size() == 1);
  const ServerRequest& req = seen[0];
  CHECK(req.method == "PUT");
  CHECK(req.target == "/bkt/dir/my%20file%2B1.txt");
  CHECK(req.body == "hello world");
  CHECK(req.header("content-length") == "11");
  CHECK(req.header("content-md5") == "XrY7u+Ae7tCTyyK7j1rNww==");
  CHECK(req.header("x-amz-checksum-crc32c") == "yZRlqg==");
  CHECK(req.header("if-none-match") == "*");
  CHECK(req.header("content-type") == "text/plain");
  CHECK(req.header("expect").empty());
  CHECK(req.header("x-amz-content-sha256") ==
        "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
  CHECK_THAT(req.header("authorization"), Catch::Contains("content-md5"));
  check_signed(req);

  auto c = store->counters();
  CHECK(c.put_requests == 1);
  CHECK(c.bytes_written == 11);
  CHECK(c.errors == 0);
}

TEST_CASE("put: conditions, checksum failures and defaults", "[objstore-write]") {
  std::atomic<int> calls{0};
  std::string mode;
  TestHttpServer server([&](const ServerRequest& req) {
    ++calls;
    if (mode == "412") return error_reply(412, "PreconditionFailed");
    if (mode == "baddigest") return error_reply(400, "BadDigest");
    if (mode == "denied") return error_reply(403, "AccessDenied");
    CHECK(req.header("x-amz-checksum-crc32c").empty());
    CHECK(req.header("if-match") == "\"abc\"");
    return etag_reply("e");
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  PutOptions if_match;
  if_match.if_match = "abc";
  SECTION("If-Match is quoted; no CRC32C unless asked") {
    auto r = store->put("k", bytes_of("x"), if_match);
    REQUIRE(r.is_ok());
    CHECK(r->mtime_sec == FakeClock::kDefaultWallSeconds);  // no Date: the clock
  }
  SECTION("412 is kPreconditionFailed at once, not an error") {
    mode = "412";
    auto r = store->put("k", bytes_of("x"), if_match);
    CHECK(r.code() == Errc::kPreconditionFailed);
    CHECK(calls == 1);
    CHECK(store->counters().errors == 0);
  }
  SECTION("BadDigest is retried, then kCorrupt") {
    mode = "baddigest";
    auto r = store->put("k", bytes_of("x"), PutOptions{});
    CHECK(r.code() == Errc::kCorrupt);
    CHECK_THAT(r.status().message(), Catch::Contains("BadDigest"));
    CHECK(calls == 6);
    CHECK(store->counters().bytes_written == 0);
  }
  SECTION("403 is kAccessDenied, no retry") {
    mode = "denied";
    auto r = store->put("k", bytes_of("x"), PutOptions{});
    CHECK(r.code() == Errc::kAccessDenied);
    CHECK(calls == 1);
    CHECK(store->counters().errors == 1);
  }
}

TEST_CASE("put is retried on 500 and replays the whole body", "[objstore-write]") {
  std::atomic<int> calls{0};
  std::string body(100000, 'b');
  FakeClock clock;
  TestHttpServer server([&](const ServerRequest& req) {
    CHECK(req.body == body);
    clock.advance(std::chrono::seconds(10));  // so each attempt's signature has its own time
    if (++calls <= 2) return error_reply(500, "InternalError");
    return etag_reply("e1");
  });
  auto store = make_store(config_for(server.url()), clock);
  auto r = store->put("big", bytes_of(body), PutOptions{});
  REQUIRE(r.is_ok());
  CHECK(calls == 3);
  auto seen = server.requests();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].header("x-amz-date") != seen[2].header("x-amz-date"));  // re-signed
  for (const auto& req : seen) check_signed(req);
  auto c = store->counters();
  CHECK(c.retries == 2);
  CHECK(c.bytes_written == body.size());
  CHECK(c.put_requests == 1);
}

TEST_CASE("a conditional put whose answer was lost succeeds on its own 412", "[objstore-write]") {
  const std::string md5 = s3::md5_hex(bytes_of("data"));
  std::atomic<int> puts{0};
  TestHttpServer server([&](const ServerRequest& req) {
    if (req.method == "HEAD") return head_reply(4, md5);
    if (++puts == 1) return error_reply(503, "SlowDown");  // stored, but the answer failed
    return error_reply(412, "PreconditionFailed");
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  PutOptions create;
  create.if_none_match = true;
  auto r = store->put("k", bytes_of("data"), create);
  REQUIRE(r.is_ok());
  CHECK(r->etag == md5);
  CHECK(store->counters().head_requests == 1);
}

TEST_CASE("multipart upload: create, parts, complete", "[objstore-write]") {
  std::mutex mu;
  std::vector<std::string> complete_bodies;
  TestHttpServer server([&](const ServerRequest& req) {
    auto q = query_of(req);
    if (req.method == "POST" && q.count("uploads")) {
      return xml_reply(200,
                       "<InitiateMultipartUploadResult><Bucket>bkt</Bucket><Key>a/b</Key>"
                       "<UploadId>up+/1=</UploadId></InitiateMultipartUploadResult>");
    }
    if (req.method == "PUT" && q.count("partNumber")) {
      return etag_reply(s3::md5_hex(bytes_of(req.body)));
    }
    if (req.method == "POST" && q.count("uploadId")) {
      std::lock_guard lock(mu);
      complete_bodies.push_back(req.body);
      return xml_reply(200,
                       "<CompleteMultipartUploadResult><Key>a/b</Key><ETag>\"abc-2\"</ETag>"
                       "</CompleteMultipartUploadResult>");
    }
    return error_reply(400, "Unexpected");
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);

  auto id = store->create_multipart("a/b");
  REQUIRE(id.is_ok());
  CHECK(*id == "up+/1=");
  auto p1 = store->upload_part("a/b", *id, 1, bytes_of("first part"));
  REQUIRE(p1.is_ok());
  CHECK(p1->part_number == 1);
  CHECK(p1->etag == s3::md5_hex(bytes_of("first part")));
  CHECK(p1->size == 10);
  auto p2 = store->upload_part("a/b", *id, 2, bytes_of("tail"));
  REQUIRE(p2.is_ok());
  std::vector<CompletedPart> parts = {*p1, *p2};
  auto done = store->complete_multipart("a/b", *id, parts);
  REQUIRE(done.is_ok());
  CHECK(done->etag == "abc-2");
  CHECK(done->size == 14);
  CHECK(done->key == "a/b");

  auto seen = server.requests();
  REQUIRE(seen.size() == 4);
  CHECK(seen[0].method == "POST");
  CHECK(seen[0].target == "/bkt/a/b?uploads=");
  CHECK(seen[1].method == "PUT");
  CHECK(seen[1].target == "/bkt/a/b?partNumber=1&uploadId=up%2B%2F1%3D");
  CHECK(seen[1].header("content-md5") == s3::md5_base64(bytes_of("first part")));
  CHECK(seen[1].body == "first part");
  CHECK(seen[3].target == "/bkt/a/b?uploadId=up%2B%2F1%3D");
  REQUIRE(complete_bodies.size() == 1);
  CHECK(complete_bodies[0] == s3::complete_multipart_body(parts));
  CHECK_THAT(complete_bodies[0],
             Catch::Contains("<Part><PartNumber>2</PartNumber><ETag>&quot;" + p2->etag));
  for (const auto& req : seen) check_signed(req);
  auto c = store->counters();
  CHECK(c.multipart_requests == 4);
  CHECK(c.bytes_written == 14);

  SECTION("bad arguments never reach the server") {
    CHECK(store->upload_part("a/b", *id, 0, bytes_of("x")).code() == Errc::kInvalidArgument);
    CHECK(store->upload_part("a/b", *id, 10001, bytes_of("x")).code() == Errc::kInvalidArgument);
    CHECK(store->upload_part("a/b", "", 1, bytes_of("x")).code() == Errc::kInvalidArgument);
    CHECK(store->complete_multipart("a/b", *id, {}).code() == Errc::kInvalidArgument);
    CHECK(server.requests().size() == 4);
  }
}

TEST_CASE("complete: a 200 answer carrying <Error> is a failure", "[objstore-write]") {
  std::atomic<int> calls{0};
  std::string code = "InternalError";
  int errors_before_success = 100;
  TestHttpServer server([&](const ServerRequest&) {
    if (++calls <= errors_before_success) return error_reply(200, code);
    return xml_reply(200,
                     "<CompleteMultipartUploadResult><ETag>\"x-1\"</ETag>"
                     "</CompleteMultipartUploadResult>");
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  std::vector<CompletedPart> parts = {{1, "e", 3}};
  SECTION("transient code: retried until it succeeds") {
    errors_before_success = 2;
    auto r = store->complete_multipart("k", "u", parts);
    REQUIRE(r.is_ok());
    CHECK(r->etag == "x-1");
    CHECK(calls == 3);
    CHECK(store->counters().retries == 2);
  }
  SECTION("transient code forever: kIo with the code") {
    auto r = store->complete_multipart("k", "u", parts);
    CHECK(r.code() == Errc::kIo);
    CHECK_THAT(r.status().message(), Catch::Contains("200 InternalError"));
    CHECK(calls == 6);
  }
  SECTION("other code: kIo at once") {
    code = "AccessDenied";
    auto r = store->complete_multipart("k", "u", parts);
    CHECK(r.code() == Errc::kIo);
    CHECK_THAT(r.status().message(), Catch::Contains("CompleteMultipartUpload s3://bkt/k"));
    CHECK_THAT(r.status().message(), Catch::Contains("AccessDenied"));
    CHECK(calls == 1);
    CHECK(store->counters().errors == 1);
  }
}

TEST_CASE("complete: a retry that finds the upload done checks the ETag", "[objstore-write]") {
  std::vector<CompletedPart> parts = {{1, s3::md5_hex(bytes_of("a")), 5 << 20},
                                      {2, s3::md5_hex(bytes_of("b")), 1}};
  std::string head_etag = "96e024ba2074fe77e8e965ba43a704be-2";
  std::atomic<int> posts{0};
  TestHttpServer server([&](const ServerRequest& req) {
    if (req.method == "HEAD") return head_reply((5 << 20) + 1, head_etag);
    if (++posts == 1) return error_reply(500, "InternalError");  // completed, answer lost
    return error_reply(404, "NoSuchUpload");
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  SECTION("same ETag: success") {
    auto r = store->complete_multipart("k", "u", parts);
    REQUIRE(r.is_ok());
    CHECK(r->etag == head_etag);
  }
  SECTION("another object there: kNotFound") {
    head_etag = "ffffffffffffffffffffffffffffffff-2";
    CHECK(store->complete_multipart("k", "u", parts).code() == Errc::kNotFound);
  }
}

TEST_CASE("abort and list uploads", "[objstore-write]") {
  TestHttpServer server([&](const ServerRequest& req) {
    auto q = query_of(req);
    if (req.method == "DELETE") {
      if (q["uploadId"] == "gone") return error_reply(404, "NoSuchUpload");
      ServerReply r;
      r.status = 204;
      return r;
    }
    if (q.count("key-marker") == 0) {
      return xml_reply(200,
                       "<ListMultipartUploadsResult><EncodingType>url</EncodingType>"
                       "<IsTruncated>true</IsTruncated><NextKeyMarker>p/a</NextKeyMarker>"
                       "<NextUploadIdMarker>u1</NextUploadIdMarker><Upload><Key>p/a</Key>"
                       "<UploadId>u1</UploadId><Initiated>2024-05-17T09:30:15.000Z</Initiated>"
                       "</Upload></ListMultipartUploadsResult>");
    }
    return xml_reply(200,
                     "<ListMultipartUploadsResult><EncodingType>url</EncodingType>"
                     "<IsTruncated>false</IsTruncated><Upload><Key>p/b%20c</Key>"
                     "<UploadId>u2</UploadId></Upload></ListMultipartUploadsResult>");
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  CHECK(store->abort_multipart("k", "u1").is_ok());
  CHECK(store->abort_multipart("k", "gone").is_ok());
  auto uploads = store->list_multipart_uploads("p/");
  REQUIRE(uploads.is_ok());
  REQUIRE(uploads->size() == 2);
  CHECK((*uploads)[0].key == "p/a");
  CHECK((*uploads)[0].initiated_sec == 1715938215);
  CHECK((*uploads)[1].key == "p/b c");
  CHECK((*uploads)[1].upload_id == "u2");
  auto seen = server.requests();
  REQUIRE(seen.size() == 4);
  CHECK(seen[0].method == "DELETE");
  CHECK(seen[0].target == "/bkt/k?uploadId=u1");
  CHECK(seen[2].method == "GET");
  CHECK(seen[2].target == "/bkt?encoding-type=url&prefix=p%2F&uploads=");
  CHECK(seen[3].target ==
        "/bkt?encoding-type=url&key-marker=p%2Fa&prefix=p%2F&upload-id-marker=u1&uploads=");
  for (const auto& req : seen) check_signed(req);
}

TEST_CASE("copy: HEAD, then CopyObject pinned to the ETag", "[objstore-write]") {
  std::string copy_answer =
      "<CopyObjectResult><LastModified>2024-05-17T09:30:15.000Z</LastModified>"
      "<ETag>\"newetag\"</ETag></CopyObjectResult>";
  std::atomic<int> copies{0};
  TestHttpServer server([&](const ServerRequest& req) {
    if (req.method == "HEAD") return head_reply(1234, "srcetag");
    ++copies;
    return xml_reply(200, copy_answer);
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  SECTION("request shape and result") {
    auto r = store->copy("src dir/a+b", "dst/c", "srcetag");
    REQUIRE(r.is_ok());
    CHECK(r->key == "dst/c");
    CHECK(r->size == 1234);
    CHECK(r->etag == "newetag");
    CHECK(r->mtime_sec == 1715938215);
    auto seen = server.requests();
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].method == "HEAD");
    CHECK(seen[0].target == "/bkt/src%20dir/a%2Bb");
    CHECK(seen[1].method == "PUT");
    CHECK(seen[1].target == "/bkt/dst/c");
    CHECK(seen[1].header("x-amz-copy-source") == "/bkt/src%20dir/a%2Bb");
    CHECK(seen[1].header("x-amz-copy-source-if-match") == "\"srcetag\"");
    CHECK(seen[1].body.empty());
    check_signed(seen[1]);
    CHECK(store->counters().copy_requests == 1);
  }
  SECTION("source changed since the caller looked: no copy") {
    CHECK(store->copy("a", "b", "oldetag").code() == Errc::kPreconditionFailed);
    CHECK(copies == 0);
  }
  SECTION("200 with <Error> is a failure") {
    copy_answer = "<Error><Code>AccessDenied</Code><Message>no</Message></Error>";
    auto r = store->copy("a", "b", "");
    CHECK(r.code() == Errc::kIo);
    CHECK_THAT(r.status().message(), Catch::Contains("CopyObject"));
    CHECK_THAT(r.status().message(), Catch::Contains("AccessDenied"));
    CHECK(copies == 1);
  }
  SECTION("200 with a transient <Error> is retried") {
    copy_answer = "<Error><Code>InternalError</Code><Message>try again</Message></Error>";
    auto r = store->copy("a", "b", "");
    CHECK(r.code() == Errc::kIo);
    CHECK(copies == 6);
  }
}

TEST_CASE("copy above the threshold goes part by part", "[objstore-write]") {
  std::mutex mu;
  std::vector<std::string> ranges;
  std::string complete_body;
  bool fail_part_3 = false;
  TestHttpServer server([&](const ServerRequest& req) {
    auto q = query_of(req);
    if (req.method == "HEAD") return head_reply(250, "srcetag");
    if (req.method == "POST" && q.count("uploads")) {
      return xml_reply(200,
                       "<InitiateMultipartUploadResult><UploadId>U</UploadId>"
                       "</InitiateMultipartUploadResult>");
    }
    if (req.method == "PUT") {
      CHECK(req.header("x-amz-copy-source") == "/bkt/src");
      CHECK(req.header("x-amz-copy-source-if-match") == "\"srcetag\"");
      if (fail_part_3 && q["partNumber"] == "3") return error_reply(403, "AccessDenied");
      std::lock_guard lock(mu);
      ranges.push_back(req.header("x-amz-copy-source-range"));
      return xml_reply(
          200, "<CopyPartResult><ETag>\"p" + q["partNumber"] + "\"</ETag></CopyPartResult>");
    }
    if (req.method == "POST") {
      std::lock_guard lock(mu);
      complete_body = req.body;
      return xml_reply(200,
                       "<CompleteMultipartUploadResult><ETag>\"m-7\"</ETag>"
                       "</CompleteMultipartUploadResult>");
    }
    ServerReply r;  // abort
    r.status = 204;
    return r;
  });
  FakeClock clock;
  auto cfg = config_for(server.url());
  cfg.multipart_copy_threshold = 100;
  cfg.multipart_copy_part_size = 40;
  auto store = make_store(cfg, clock);
  SECTION("ranges, parts and the result") {
    auto r = store->copy("src", "dst", "");
    REQUIRE(r.is_ok());
    CHECK(r->etag == "m-7");
    CHECK(r->size == 250);
    CHECK(ranges == std::vector<std::string>{"bytes=0-39", "bytes=40-79", "bytes=80-119",
                                             "bytes=120-159", "bytes=160-199", "bytes=200-239",
                                             "bytes=240-249"});
    CHECK_THAT(complete_body, Catch::Contains("<PartNumber>7</PartNumber><ETag>&quot;p7&quot;"));
    for (const auto& req : server.requests()) CHECK(req.method != "DELETE");
  }
  SECTION("a failed part aborts the upload") {
    fail_part_3 = true;
    auto r = store->copy("src", "dst", "");
    CHECK(r.code() == Errc::kAccessDenied);
    auto seen = server.requests();
    REQUIRE_FALSE(seen.empty());
    CHECK(seen.back().method == "DELETE");
    CHECK(seen.back().target == "/bkt/dst?uploadId=U");
    CHECK(ranges.size() == 2);
  }
}

TEST_CASE("remove and remove_many", "[objstore-write]") {
  std::atomic<int> calls{0};
  std::mutex mu;
  std::vector<size_t> batch_sizes;
  TestHttpServer server([&](const ServerRequest& req) {
    ++calls;
    const std::string path = path_of(req);
    if (req.method == "DELETE") {
      if (path == "/bkt/missing") return error_reply(404, "NoSuchKey");
      if (path == "/bkt/denied") return error_reply(403, "AccessDenied");
      if (path == "/bkt/flaky" && calls == 1) return error_reply(500, "InternalError");
      ServerReply r;
      r.status = 204;
      return r;
    }
    // DeleteObjects: Content-MD5 of the body, as S3 requires.
    CHECK(req.header("content-md5") == s3::md5_base64(bytes_of(req.body)));
    size_t n = 0;
    for (size_t pos = 0; (pos = req.body.find("<Object>", pos)) != std::string::npos; ++pos) ++n;
    std::lock_guard lock(mu);
    batch_sizes.push_back(n);
    return xml_reply(200,
                     "<DeleteResult><Error><Key>k7</Key><Code>AccessDenied</Code>"
                     "<Message>Access Denied</Message></Error></DeleteResult>");
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  SECTION("single deletes") {
    CHECK(store->remove("flaky").is_ok());
    CHECK(calls == 2);
    CHECK(store->remove("missing").is_ok());
    CHECK(store->remove("denied").code() == Errc::kAccessDenied);
    CHECK(store->counters().delete_requests == 3);
  }
  SECTION("batches of 1000, failures returned, unsafe keys alone") {
    std::vector<std::string> keys;
    for (int i = 0; i < 2500; ++i) keys.push_back("k" + std::to_string(i));
    keys.push_back(std::string("ctl\x01key"));
    auto r = store->remove_many(keys);
    REQUIRE(r.is_ok());
    CHECK(batch_sizes == std::vector<size_t>{1000, 1000, 500});
    CHECK(r->size() == 3);  // each batch answered one failure
    CHECK((*r)[0].key == "k7");
    CHECK((*r)[0].code == "AccessDenied");
    auto seen = server.requests();
    CHECK(seen[0].method == "POST");
    CHECK(seen[0].target == "/bkt?delete=");
    CHECK_THAT(seen[0].body, Catch::StartsWith("<Delete xmlns="));
    check_signed(seen[0]);
    size_t singles = 0;
    for (const auto& req : seen) singles += req.method == "DELETE";
    CHECK(singles == 1);
    CHECK(store->counters().delete_requests == 4);
  }
}

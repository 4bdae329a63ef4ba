// S3ObjectStore's request-duration histograms (for /metrics): one sample per request of each
// kind, retries and their backoff inside it, against the in-process TestHttpServer and a fake
// clock that moves only by the backoff.
#include <fmt/format.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "objstore/s3_store.h"
#include "support/fake_clock.h"
#include "unit/http/test_http_server.h"
#include "unit/objstore/s3_test_support.h"

using warmfs::BucketOp;
using warmfs::FakeClock;
using warmfs::testing::ServerReply;
using warmfs::testing::ServerRequest;
using warmfs::testing::TestHttpServer;

TEST_CASE("bucket request durations: one sample per request, backoff included, by kind",
          "[objstore][metrics]") {
  std::atomic<int> calls{0};
  TestHttpServer server([&](const ServerRequest& req) {
    ServerReply r;
    if (req.method == "HEAD") {
      r.headers = {{"ETag", "\"e\""}, {"Last-Modified", "Fri, 17 May 2024 09:30:15 GMT"}};
      r.content_length = 5;
      r.omit_body = true;
      return r;
    }
    if (++calls <= 2) {  // the GET fails twice, then succeeds
      r.status = 500;
      r.body = "<Error><Code>InternalError</Code><Message>x</Message></Error>";
      return r;
    }
    r.status = 206;
    r.body = "hello";
    r.headers = {{"Content-Range", "bytes 0-4/5"}, {"ETag", "\"e\""}};
    return r;
  });
  FakeClock clock;
  auto store = warmfs::testing::make_store(warmfs::testing::config_for(server.url()), clock);
  std::vector<std::byte> buf(5);
  REQUIRE(store->get_range("k", 0, buf, "").is_ok());
  REQUIRE(store->head("k").is_ok());
  REQUIRE(store->head("k").is_ok());

  const auto& get = store->request_latency_us(BucketOp::kGet);
  CHECK(get.count() == 1);
  // The fake clock moved only by the two backoffs: the sample is their sum, in whole µs.
  const auto slept = std::chrono::duration_cast<std::chrono::microseconds>(clock.slept());
  CHECK(slept.count() > 0);
  CHECK(get.sum() == static_cast<uint64_t>(slept.count()));
  CHECK(store->request_latency_us(BucketOp::kHead).count() == 2);
  CHECK(store->request_latency_us(BucketOp::kHead).sum() == 0);
  for (BucketOp op : {BucketOp::kList, BucketOp::kPut, BucketOp::kMultipart, BucketOp::kCopy,
                      BucketOp::kDelete}) {
    CHECK(store->request_latency_us(op).count() == 0);
  }
  CHECK(std::string(warmfs::bucket_op_name(BucketOp::kMultipart)) == "multipart");
  CHECK(std::string(warmfs::bucket_op_name(BucketOp::kDelete)) == "delete");
}

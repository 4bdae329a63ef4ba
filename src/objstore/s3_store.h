// S3ObjectStore: ObjectStore over the S3 REST API (HEAD, ranged GET, ListObjectsV2).
//
// Each call builds one S3 request, signs it with SigV4 (or sends it unsigned for anonymous
// access), sends it through http::Client and maps the answer to a Result. Transient failures
// (transport errors, 5xx, 429 and bodies cut short) are retried with exponential backoff and
// full jitter, re-signing each attempt; sleeping goes through the injected Clock, so tests
// do not wait. Other failures are returned at once with a one-line message carrying the
// HTTP status and the S3 error code, never a secret.
//
// It does not cache, prefetch or know about files: that is the layers above. Write
// operations arrive with the write path. Thread safe: any number of threads may call it at
// once, each request running on its own pooled connection.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "common/clock.h"
#include "http/http_client.h"
#include "objstore/credentials.h"
#include "objstore/object_store.h"
#include "objstore/sigv4.h"

namespace warmfs {

struct RetryPolicy {
  // Total tries including the first: with the delays below, about 10 s of patience in the
  // worst case, which rides out an S3 503 SlowDown burst without hanging a read for minutes.
  int max_attempts = 6;
  // Backoff before retry n (1-based) is uniform in [0, min(max_delay, base_delay * 2^(n-1))]
  // ("full jitter"), so many clients backing off at once spread out instead of colliding.
  std::chrono::milliseconds base_delay{100};
  std::chrono::milliseconds max_delay{5000};
};

struct S3Config {
  // Scheme, host and optional port, e.g. "http://127.0.0.1:5000" or
  // "https://s3.us-east-1.amazonaws.com". Empty means https://s3.REGION.amazonaws.com.
  std::string endpoint;
  std::string region = "us-east-1";
  std::string bucket;
  // Path-style URLs (endpoint/bucket/key) for local servers (MinIO, moto) and bucket names
  // with dots; else virtual-hosted (bucket.host/key), which AWS prefers.
  bool path_style = false;
  // Send requests unsigned (public buckets); credentials are then ignored.
  bool anonymous = false;
  s3::Credentials credentials;
  RetryPolicy retry;
  http::ClientOptions http;
  // Seed for the backoff jitter; 0 draws one from std::random_device. Tests fix it.
  uint64_t jitter_seed = 0;
};

class S3ObjectStore final : public ObjectStore {
 public:
  // Validates the config (bucket present, endpoint http(s)://host[:port], credentials unless
  // anonymous) and makes a store. kInvalidArgument otherwise. The clock must outlive it.
  static Result<std::unique_ptr<S3ObjectStore>> create(S3Config config, Clock& clock);
  ~S3ObjectStore() override;

  Result<ObjectInfo> head(std::string_view key) override;
  // As ObjectStore::get_range. A read at or past the end of the object returns 0 bytes.
  Result<size_t> get_range(std::string_view key, uint64_t offset, std::span<std::byte> out,
                           std::string_view if_match) override;
  // One page; the request's prefix, delimiter and token are sent as given, keys come back
  // decoded (the request asks for encoding-type=url so any key survives the XML).
  Result<ListPage> list(const ListRequest& request) override;
  ObjectStoreCounters counters() const override;
  std::string describe() const override;  // "s3://bucket"

  http::ClientStats http_stats() const { return client_.stats(); }
  const S3Config& config() const { return config_; }

 private:
  struct Endpoint {
    std::string scheme;  // "http" or "https"
    std::string host;    // host[:port] as sent in the Host header (bucket. prefix included)
  };
  struct Call;

  S3ObjectStore(S3Config config, Endpoint endpoint, Clock& clock);

  Result<http::Response> execute(const Call& call);
  http::Request build_request(const Call& call) const;
  std::chrono::nanoseconds backoff(int retry);

  const S3Config config_;
  const Endpoint endpoint_;
  const s3::SigV4Signer signer_;
  Clock& clock_;
  http::Client client_;

  std::mutex rng_mu_;  // protects rng_; held only to draw one number
  std::mt19937_64 rng_;

  std::atomic<uint64_t> get_requests_{0};
  std::atomic<uint64_t> head_requests_{0};
  std::atomic<uint64_t> list_requests_{0};
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> retries_{0};
  std::atomic<uint64_t> errors_{0};
};

// Parses "bytes a-b/total" (total may be "*", returned as -1). False if malformed.
bool parse_content_range(std::string_view value, uint64_t* first, uint64_t* last, int64_t* total);

}  // namespace warmfs

// S3ObjectStore: ObjectStore over the S3 REST API: HEAD, ranged GET and ListObjectsV2
// (s3_store.cc); PutObject, multipart uploads, CopyObject and deletes (s3_store_write.cc).
//
// Each call builds one S3 request, signs it with SigV4 using the credentials its
// CredentialProvider holds at that attempt (or sends it unsigned for anonymous access), sends it
// through http::Client and maps the answer to a Result. Transient failures (transport errors, 5xx,
// 429 and bodies cut short) are retried with exponential backoff and full jitter, re-signing each
// attempt; sleeping goes through the injected Clock, so tests do not wait. Other failures are
// returned at once with a one-line message carrying the HTTP status and the S3 error code, never a
// secret.
//
// Writes sign their body (x-amz-content-sha256 is its SHA-256) and send Content-MD5, so
// neither a proxy nor a flipped bit can change what is stored; each retry replays the body
// from the caller's span. Answers S3 gives as 200 with an <Error> document (Complete, Copy)
// are failures, retried when S3's code says so.
//
// It does not cache, prefetch or know about files: that is the layers above. Thread safe: any
// number of threads may call it at once, each request running on its own pooled connection.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "common/clock.h"
#include "common/histogram.h"
#include "http/http_client.h"
#include "objstore/credential_provider.h"
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
  // with dots; else virtual-hosted (bucket.host/key), which AWS prefers. An endpoint whose
  // host is an IP address or "localhost" is always path-style, as in the AWS SDKs: no name
  // BUCKET.<address> can resolve (see endpoint_needs_path_style).
  bool path_style = false;
  // Send requests unsigned (public buckets); credentials are then ignored.
  bool anonymous = false;
  // What to sign with, asked on every attempt (credential_provider.h): the credential chain's
  // provider in production. When null, a static provider is made from `credentials` (tests,
  // tools); an anonymous provider makes the store anonymous.
  std::shared_ptr<const s3::CredentialProvider> credential_provider;
  s3::Credentials credentials;
  RetryPolicy retry;
  http::ClientOptions http;
  // Seed for the backoff jitter; 0 draws one from std::random_device. Tests fix it.
  uint64_t jitter_seed = 0;
  // copy() of an object larger than this goes part by part (UploadPartCopy): S3 refuses one
  // CopyObject of more than 5 GiB. Tests set it small.
  uint64_t multipart_copy_threshold = kMaxPartSize;
  // Part size of a multipart copy. Large, since the bytes never leave S3 (fewer requests);
  // raised if the object would need more than 10000 parts. S3 wants at least 5 MiB.
  uint64_t multipart_copy_part_size = 512ull << 20;
};

// Kinds of bucket request, as the request-duration histograms sort them.
enum class BucketOp { kGet, kHead, kList, kPut, kMultipart, kCopy, kDelete };
inline constexpr size_t kBucketOpCount = 7;
// "get", "head", "list", "put", "multipart", "copy", "delete".
const char* bucket_op_name(BucketOp op);

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
  // As ObjectStore::get_range_progress. With if_match, an attempt cut short (a reset, a
  // truncated body) is retried from the first byte it did not bring.
  // With if_match, seen is shown the bytes as they land (without it, not at all).
  using ObjectStore::get_range_progress;
  Result<size_t> get_range_progress(std::string_view key, uint64_t offset, std::span<std::byte> out,
                                    std::string_view if_match,
                                    const std::function<void(size_t)>& progress,
                                    const RangeBytesSeen& seen) override;
  // One page; the request's prefix, delimiter and token are sent as given, keys come back
  // decoded (the request asks for encoding-type=url so any key survives the XML).
  Result<ListPage> list(const ListRequest& request) override;
  // next_token is "KEY-MARKER\nVERSION-ID-MARKER".
  Result<ListPage> list_versions(const ListRequest& request) override;
  Result<size_t> get_range_version(std::string_view key, std::string_view version_id,
                                   uint64_t offset, std::span<std::byte> out,
                                   const std::function<void(size_t)>& progress,
                                   const RangeBytesSeen& seen) override;

  // Writes, as ObjectStore. Every one is retried on transport errors, 5xx and 429 (and, for
  // requests with a body, 400 RequestTimeout and BadDigest), re-signed each attempt.
  Result<ObjectInfo> put(std::string_view key, std::span<const std::byte> body,
                         const PutOptions& options) override;
  Result<std::string> create_multipart(std::string_view key,
                                       const ObjectHeaders& headers = {}) override;
  Result<CompletedPart> upload_part(std::string_view key, std::string_view upload_id,
                                    int part_number, std::span<const std::byte> body) override;
  Result<CompletedPart> upload_part_copy(std::string_view key, std::string_view upload_id,
                                         int part_number, std::string_view src_key, uint64_t first,
                                         uint64_t last, std::string_view src_if_match) override;
  // A retry that finds the upload gone (the first attempt completed it but its answer was
  // lost) checks the object's ETag against the one the parts imply, and succeeds if equal.
  Result<ObjectInfo> complete_multipart(std::string_view key, std::string_view upload_id,
                                        std::span<const CompletedPart> parts) override;
  Status abort_multipart(std::string_view key, std::string_view upload_id) override;
  Result<std::vector<MultipartUpload>> list_multipart_uploads(std::string_view prefix) override;
  // HEADs the source for its size and ETag, then one CopyObject (x-amz-copy-source-if-match
  // with the ETag) or, above multipart_copy_threshold, create + UploadPartCopy per range +
  // complete, aborting the upload on failure. A multipart copy is created with the source's
  // Content-Type and user metadata (from the HEAD), so both kinds keep them.
  Result<ObjectInfo> copy(std::string_view src_key, std::string_view dst_key,
                          std::string_view if_match_etag) override;
  // CopyObject of key onto itself with x-amz-metadata-directive REPLACE (no HEAD: current
  // gives the size and ETag); above multipart_copy_threshold, a multipart copy onto itself
  // created with the new headers.
  Result<ObjectInfo> replace_metadata(std::string_view key, const ObjectInfo& current,
                                      const ObjectHeaders& headers) override;
  Status remove(std::string_view key) override;
  // DeleteObjects (quiet, Content-MD5) per 1000 keys; a key XML cannot carry goes alone.
  Result<std::vector<DeleteError>> remove_many(std::span<const std::string> keys) override;

  ObjectStoreCounters counters() const override;
  std::string describe() const override;  // "s3://bucket"
  // How long requests of a kind took, in microseconds, retries and their backoff included
  // (one sample per request as the caller sees it: a GET retried three times is one sample).
  const Histogram& request_latency_us(BucketOp op) const {
    return request_latency_us_[static_cast<size_t>(op)];
  }

  http::ClientStats http_stats() const { return client_.stats(); }
  const s3::CredentialProvider& credential_provider() const { return *config_.credential_provider; }
  const S3Config& config() const { return config_; }

 private:
  // One page of ListObjectsV2, or with versions of ListObjectVersions.
  Result<ListPage> list_impl(const ListRequest& request, bool versions);
  // A range GET, of version_id when not empty, pinned by if_match when not empty.
  Result<size_t> get_range_impl(std::string_view key, std::string_view version_id, uint64_t offset,
                                std::span<std::byte> out, std::string_view if_match,
                                const std::function<void(size_t)>& progress,
                                const RangeBytesSeen& seen);
  struct Endpoint {
    std::string scheme;  // "http" or "https"
    std::string host;    // host[:port] as sent in the Host header (bucket. prefix included)
  };
  // One logical S3 request, before signing.
  struct Call {
    const char* op = "GET";  // for messages: "GET", "HEAD", "LIST", "PUT", ...
    std::string method = "GET";
    std::string key;  // empty for bucket-level requests
    s3::QueryParams query;
    http::Headers extra_headers;  // Range, If-Match, Content-MD5, ...
    std::span<std::byte> sink;
    // Called on a 2xx response; returns a non-empty reason when the body is cut short, which
    // makes the attempt retryable.
    std::function<std::string(const http::Response&)> truncated;
    std::string_view body;     // sent on every attempt; must outlive execute()
    std::string payload_hash;  // hex SHA-256 of body; empty: UNSIGNED-PAYLOAD
    // A 2xx answer may be an <Error> document (CompleteMultipartUpload, CopyObject): a
    // failure, retried when its code is transient.
    bool error_in_2xx = false;
    // The server works before it answers (completing an upload, copying): no low-speed
    // abort (see http::Request::slow_answer).
    bool slow_answer = false;
    // Body bytes landed in sink so far in this attempt (see http::Request).
    std::function<void(size_t, const http::Response&)> on_sink_progress;
    // Body bytes about to land in sink (see http::Request::on_sink_bytes).
    std::function<void(size_t, std::span<const std::byte>, const http::Response&)> on_sink_bytes;
    // Runs before each retry and may change the call (a GET resumes after what it has).
    std::function<void(Call&)> before_retry;
  };

  S3ObjectStore(S3Config config, Endpoint endpoint, Clock& clock);

  // Sends a call, retrying transient failures. Returns the final response (2xx or a
  // non-retryable status, which the caller maps) or the last transient failure. With
  // attempts_used, stores how many attempts were made.
  Result<http::Response> execute(const Call& call, int* attempts_used = nullptr);
  // The request as sent: signed with the provider's current credentials (kAccessDenied when
  // they have expired; never unsigned unless the store is anonymous).
  Result<http::Request> build_request(const Call& call) const;
  std::chrono::nanoseconds backoff(int retry);
  // Maps a non-success answer of op on target to a Status, counting it in errors_ unless
  // its code is one callers expect (404, 412).
  Status http_failure(const char* op, std::string_view target, const http::Response& r);
  // A 2xx answer whose body did not hold up (malformed XML, an <Error> inside): counted as an
  // error, reported as "OP TARGET: why" on one line.
  Status answer_failure(std::string_view op, std::string_view target, const Status& why);
  std::string target_of(std::string_view key) const;
  // x-amz-copy-source for a key of this bucket: "/bucket/key", URL-encoded.
  std::string copy_source(std::string_view src_key) const;
  // Copies src (its size, ETag) to dst_key part by part; the new object gets headers.
  Result<ObjectInfo> copy_multipart(const ObjectInfo& src, std::string_view dst_key,
                                    const ObjectHeaders& headers);
  Result<std::vector<DeleteError>> remove_batch(std::span<const std::string> keys);

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
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> put_requests_{0};
  std::atomic<uint64_t> copy_requests_{0};
  std::atomic<uint64_t> delete_requests_{0};
  std::atomic<uint64_t> multipart_requests_{0};
  std::array<Histogram, kBucketOpCount> request_latency_us_;  // by BucketOp
};

// True when host (as in a URL: "10.0.0.5:9000", "[::1]:9000", "localhost") can only be
// addressed path-style: an IPv4 or IPv6 literal, or localhost.
bool endpoint_needs_path_style(std::string_view host);

// Parses "bytes a-b/total" (total may be "*", returned as -1). False if malformed.
bool parse_content_range(std::string_view value, uint64_t* first, uint64_t* last, int64_t* total);

}  // namespace warmfs

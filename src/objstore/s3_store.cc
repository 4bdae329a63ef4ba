#include "objstore/s3_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>

#include "common/log.h"
#include "objstore/s3_store_util.h"
#include "objstore/time_format.h"
#include "objstore/xml.h"

namespace warmfs {
using namespace s3_detail;  // NOLINT(google-build-using-namespace): helpers shared with writes

bool parse_content_range(std::string_view value, uint64_t* first, uint64_t* last, int64_t* total) {
  if (!value.starts_with("bytes ")) return false;
  value.remove_prefix(6);
  size_t dash = value.find('-');
  size_t slash = value.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash)
    return false;
  if (!parse_number(value.substr(0, dash), first) ||
      !parse_number(value.substr(dash + 1, slash - dash - 1), last) || *last < *first) {
    return false;
  }
  std::string_view t = value.substr(slash + 1);
  if (t == "*") {
    *total = -1;
    return true;
  }
  return parse_number(t, total) && *total > 0;
}

bool endpoint_needs_path_style(std::string_view host) {
  if (host.starts_with("[")) return true;  // an IPv6 literal, [::1] or [::1]:9000
  if (const size_t colon = host.rfind(':'); colon != std::string_view::npos)
    host = host.substr(0, colon);
  if (host == "localhost") return true;
  // A dotted IPv4 address: four decimal numbers of at most three digits.
  int parts = 0;
  size_t digits = 0;
  for (char c : host) {
    if (c >= '0' && c <= '9') {
      if (++digits > 3) return false;
    } else if (c == '.' && digits > 0) {
      ++parts;
      digits = 0;
    } else {
      return false;
    }
  }
  return digits > 0 && parts == 3;
}

Result<std::unique_ptr<S3ObjectStore>> S3ObjectStore::create(S3Config config, Clock& clock) {
  if (config.bucket.empty()) return Status(Errc::kInvalidArgument, "S3 config: no bucket");
  if (config.region.empty()) return Status(Errc::kInvalidArgument, "S3 config: no region");
  if (config.credential_provider) {
    if (config.credential_provider->anonymous()) config.anonymous = true;
  } else if (!config.anonymous) {
    if (config.credentials.access_key_id.empty() || config.credentials.secret_access_key.empty()) {
      return Status(Errc::kInvalidArgument,
                    "S3 config: no credentials (use anonymous for public buckets)");
    }
    config.credential_provider =
        std::make_shared<s3::StaticCredentialProvider>(config.credentials, "explicit");
  } else {
    config.credential_provider =
        std::make_shared<s3::StaticCredentialProvider>(s3::Credentials{}, "anonymous");
  }
  if (config.retry.max_attempts < 1) config.retry.max_attempts = 1;
  if (config.multipart_copy_part_size < 1 || config.multipart_copy_part_size > kMaxPartSize) {
    return Status(Errc::kInvalidArgument, "S3 config: multipart copy part size out of range");
  }
  if (config.endpoint.empty())
    config.endpoint = fmt::format("https://s3.{}.amazonaws.com", config.region);

  Endpoint ep;
  std::string_view rest = config.endpoint;
  size_t sep = rest.find("://");
  if (sep == std::string_view::npos) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("S3 endpoint '{}': expected http://host[:port] or https://...",
                              config.endpoint));
  }
  ep.scheme = std::string(rest.substr(0, sep));
  if (ep.scheme != "http" && ep.scheme != "https") {
    return Status(Errc::kInvalidArgument,
                  fmt::format("S3 endpoint '{}': scheme must be http or https", config.endpoint));
  }
  rest.remove_prefix(sep + 3);
  while (rest.ends_with("/")) rest.remove_suffix(1);
  if (rest.empty() || rest.find_first_of("/?#@ ") != std::string_view::npos) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("S3 endpoint '{}': expected scheme://host[:port] with no path",
                              config.endpoint));
  }
  // A default port would be dropped by some clients when computing Host; drop it here too.
  std::string host(rest);
  if ((ep.scheme == "http" && host.ends_with(":80")) ||
      (ep.scheme == "https" && host.ends_with(":443"))) {
    host.erase(host.rfind(':'));
  }
  if (endpoint_needs_path_style(host)) config.path_style = true;
  ep.host = config.path_style ? host : config.bucket + "." + host;
  return std::unique_ptr<S3ObjectStore>(new S3ObjectStore(std::move(config), std::move(ep), clock));
}

S3ObjectStore::S3ObjectStore(S3Config config, Endpoint endpoint, Clock& clock)
    : config_(std::move(config)),
      endpoint_(std::move(endpoint)),
      signer_(config_.region, "s3", s3::PathMode::kS3),
      clock_(clock),
      client_(config_.http),
      rng_(config_.jitter_seed != 0 ? config_.jitter_seed : std::random_device{}()) {}

S3ObjectStore::~S3ObjectStore() = default;

std::string S3ObjectStore::describe() const { return "s3://" + config_.bucket; }

ObjectStoreCounters S3ObjectStore::counters() const {
  ObjectStoreCounters c;
  c.get_requests = get_requests_.load(std::memory_order_relaxed);
  c.head_requests = head_requests_.load(std::memory_order_relaxed);
  c.list_requests = list_requests_.load(std::memory_order_relaxed);
  c.bytes_read = bytes_read_.load(std::memory_order_relaxed);
  c.retries = retries_.load(std::memory_order_relaxed);
  c.errors = errors_.load(std::memory_order_relaxed);
  c.bytes_written = bytes_written_.load(std::memory_order_relaxed);
  c.put_requests = put_requests_.load(std::memory_order_relaxed);
  c.copy_requests = copy_requests_.load(std::memory_order_relaxed);
  c.delete_requests = delete_requests_.load(std::memory_order_relaxed);
  c.multipart_requests = multipart_requests_.load(std::memory_order_relaxed);
  return c;
}

std::chrono::nanoseconds S3ObjectStore::backoff(int retry) {
  using std::chrono::nanoseconds;
  const auto base = std::chrono::duration_cast<nanoseconds>(config_.retry.base_delay);
  const auto cap = std::chrono::duration_cast<nanoseconds>(config_.retry.max_delay);
  nanoseconds ceiling = base;
  for (int i = 1; i < retry && ceiling < cap; ++i) ceiling *= 2;
  ceiling = std::min(ceiling, cap);
  if (ceiling.count() <= 0) return nanoseconds(0);
  std::uniform_int_distribution<int64_t> dist(0, ceiling.count());
  std::lock_guard lock(rng_mu_);
  return nanoseconds(dist(rng_));
}

Result<http::Request> S3ObjectStore::build_request(const Call& call) const {
  std::string path;
  if (config_.path_style) path = "/" + http::uri_encode(config_.bucket, false);
  if (!call.key.empty() || !config_.path_style) path += "/" + http::uri_encode(call.key, true);
  const std::string query = s3::canonical_query_string(call.query);

  http::Request req;
  req.method = call.method;
  req.url = fmt::format("{}://{}{}{}{}", endpoint_.scheme, endpoint_.host, path,
                        query.empty() ? "" : "?", query);
  req.body_sink = call.sink;
  req.on_sink_progress = call.on_sink_progress;
  req.on_sink_bytes = call.on_sink_bytes;
  req.slow_answer = call.slow_answer;
  req.body = call.body;

  http::Headers headers = call.extra_headers;
  headers.emplace_back("host", endpoint_.host);
  if (config_.anonymous) {
    req.headers = std::move(headers);
    return req;
  }
  const std::string payload_hash =
      call.payload_hash.empty() ? std::string(s3::kUnsignedPayload) : call.payload_hash;
  headers.emplace_back("x-amz-content-sha256", payload_hash);
  s3::SigningRequest to_sign;
  to_sign.method = call.method;
  to_sign.path = path;
  to_sign.query = call.query;
  to_sign.headers = std::move(headers);
  to_sign.payload_hash = payload_hash;
  WARMFS_ASSIGN_OR_RETURN(s3::Credentials credentials, config_.credential_provider->current());
  if (credentials.empty()) {
    return Status(Errc::kAccessDenied, "the credential provider holds no credentials");
  }
  req.headers = signer_.sign(to_sign, credentials, clock_.wall_now()).headers;
  return req;
}

const char* bucket_op_name(BucketOp op) {
  static constexpr const char* kNames[kBucketOpCount] = {"get",       "head", "list",  "put",
                                                         "multipart", "copy", "delete"};
  return kNames[static_cast<size_t>(op)];
}

namespace {

// The kind of a Call, from its op (the names used in messages).
BucketOp bucket_op_of(std::string_view op) {
  if (op == "GET") return BucketOp::kGet;
  if (op == "HEAD") return BucketOp::kHead;
  if (op == "LIST") return BucketOp::kList;
  if (op == "PUT") return BucketOp::kPut;
  if (op == "CopyObject") return BucketOp::kCopy;
  if (op == "DELETE" || op == "DeleteObjects") return BucketOp::kDelete;
  return BucketOp::kMultipart;  // Create/Complete/Abort/ListMultipartUploads, UploadPart(Copy)
}

// Records the time from its construction to its destruction into a histogram.
class LatencyTimer {
 public:
  LatencyTimer(Histogram& h, Clock& clock) : h_(h), clock_(clock), start_(clock.now()) {}
  ~LatencyTimer() {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(clock_.now() - start_);
    h_.record(static_cast<uint64_t>(std::max<int64_t>(us.count(), 0)));
  }
  LatencyTimer(const LatencyTimer&) = delete;
  LatencyTimer& operator=(const LatencyTimer&) = delete;

 private:
  Histogram& h_;
  Clock& clock_;
  const std::chrono::steady_clock::time_point start_;
};

}  // namespace

Result<http::Response> S3ObjectStore::execute(const Call& first_call, int* attempts_used) {
  LatencyTimer timer(request_latency_us_[static_cast<size_t>(bucket_op_of(first_call.op))], clock_);
  const std::string target =
      first_call.key.empty() ? describe() : describe() + "/" + first_call.key;
  Status failure;
  const int attempts = config_.retry.max_attempts;
  Call retry_call;  // the call as before_retry changed it
  const Call* current = &first_call;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    if (attempts_used != nullptr) *attempts_used = attempt;
    if (attempt > 1 && first_call.before_retry) {
      retry_call = *current;
      first_call.before_retry(retry_call);
      current = &retry_call;
    }
    const Call& call = *current;  // this attempt's
    Result<http::Request> request = build_request(call);
    if (!request.is_ok()) {
      // Expired credentials: fail at once (retrying cannot help before a refresh).
      errors_.fetch_add(1, std::memory_order_relaxed);
      return Status(request.code(),
                    fmt::format("{} {}: {}", call.op, target, request.status().message()));
    }
    Result<http::Response> r = client_.perform(*request);
    if (!r.is_ok()) {
      if (!is_retryable_transport(r.code())) {
        errors_.fetch_add(1, std::memory_order_relaxed);
        return std::move(r).take_status();
      }
      failure = Status(r.code(), one_line(r.status().message()));  // names method and URL
    } else if (is_retryable_status(r->status) ||
               ((call.method == "PUT" || call.method == "POST") && is_retryable_client_error(*r))) {
      failure =
          Status(is_retryable_status(r->status) ? Errc::kIo : errc_for(*r),
                 one_line(fmt::format("{} {}: {}", call.op, target, describe_http_error(*r))));
    } else if (r->status >= 200 && r->status < 300 && call.error_in_2xx) {
      auto error = s3::parse_error(r->body);
      if (!error.is_ok()) return r;  // a result document, not an error
      failure = Status(Errc::kIo, one_line(fmt::format("{} {}: {} {}: {}", call.op, target,
                                                       r->status, error->code, error->message)));
      if (!is_retryable_error_code(error->code)) {
        errors_.fetch_add(1, std::memory_order_relaxed);
        return failure;
      }
    } else if (r->status >= 200 && r->status < 300 && call.truncated) {
      std::string reason = call.truncated(*r);
      if (reason.empty()) return r;
      failure = Status(Errc::kIo, one_line(fmt::format("{} {}: {}", call.op, target, reason)));
    } else {
      return r;
    }
    if (attempt == attempts) break;
    retries_.fetch_add(1, std::memory_order_relaxed);
    const auto delay = backoff(attempt);
    log::debug("retry {}/{} in {} ms: {}", attempt, attempts - 1,
               std::chrono::duration_cast<std::chrono::milliseconds>(delay).count(),
               failure.message());
    clock_.sleep_for(delay);
  }
  errors_.fetch_add(1, std::memory_order_relaxed);
  return Status(failure.code(), fmt::format("{} (after {} attempts)", failure.message(), attempts));
}

Result<ObjectInfo> S3ObjectStore::head(std::string_view key) {
  head_requests_.fetch_add(1, std::memory_order_relaxed);
  if (key.empty()) return Status(Errc::kInvalidArgument, "HEAD: empty key");
  Call call;
  call.op = "HEAD";
  call.method = "HEAD";
  call.key = std::string(key);
  WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call));
  const std::string target = describe() + "/" + call.key;
  if (r.status != 200) {
    if (r.status != 404) errors_.fetch_add(1, std::memory_order_relaxed);
    return Status(errc_for_status(r.status),
                  one_line(fmt::format("HEAD {}: {}", target, describe_http_error(r))));
  }
  ObjectInfo info;
  info.key = call.key;
  if (!parse_number(r.header("content-length"), &info.size)) {
    return Status(Errc::kCorrupt, fmt::format("HEAD {}: missing or bad Content-Length", target));
  }
  info.etag = strip_quotes(r.header("etag"));
  if (auto t = s3::parse_http_date(r.header("last-modified"))) info.mtime_sec = *t;
  info.content_type = r.header("content-type");
  constexpr std::string_view kMetaPrefix = "x-amz-meta-";
  for (const auto& [name, value] : r.headers) {
    if (name.size() > kMetaPrefix.size() && name.starts_with(kMetaPrefix)) {
      info.metadata[name.substr(kMetaPrefix.size())] = value;
    }
  }
  return info;
}

namespace {
// True when a GET's answer (its status line and headers) carries the object's bytes from
// `from` on: 206 with a Content-Range starting there, or 200 (a server ignoring Range) for
// a read from the start.
bool answers_range(const http::Response& r, uint64_t from) {
  if (r.status == 200) return from == 0;
  if (r.status != 206) return false;
  uint64_t first = 0, last = 0;
  int64_t total = -1;
  return parse_content_range(r.header("content-range"), &first, &last, &total) && first == from;
}
}  // namespace

Result<size_t> S3ObjectStore::get_range(std::string_view key, uint64_t offset,
                                        std::span<std::byte> out, std::string_view if_match) {
  return get_range_progress(key, offset, out, if_match, nullptr, nullptr);
}

Result<size_t> S3ObjectStore::get_range_progress(std::string_view key, uint64_t offset,
                                                 std::span<std::byte> out,
                                                 std::string_view if_match,
                                                 const std::function<void(size_t)>& progress,
                                                 const RangeBytesSeen& seen) {
  return get_range_impl(key, {}, offset, out, if_match, progress, seen);
}

Result<size_t> S3ObjectStore::get_range_version(std::string_view key, std::string_view version_id,
                                                uint64_t offset, std::span<std::byte> out,
                                                const std::function<void(size_t)>& progress,
                                                const RangeBytesSeen& seen) {
  if (version_id.empty()) return Status(Errc::kInvalidArgument, "GET: empty version id");
  return get_range_impl(key, version_id, offset, out, {}, progress, seen);
}

Result<size_t> S3ObjectStore::get_range_impl(std::string_view key, std::string_view version_id,
                                             uint64_t offset, std::span<std::byte> out,
                                             std::string_view if_match,
                                             const std::function<void(size_t)>& progress,
                                             const RangeBytesSeen& seen) {
  get_requests_.fetch_add(1, std::memory_order_relaxed);
  if (key.empty()) return Status(Errc::kInvalidArgument, "GET: empty key");
  if (out.empty()) return size_t{0};
  if (offset > UINT64_MAX - out.size()) {
    return Status(Errc::kInvalidArgument, fmt::format("GET {}: range past 2^64", key));
  }
  const uint64_t length = out.size();
  // Only with If-Match (or a version id) do the bytes of two attempts belong to one version:
  // then an attempt cut short keeps what it brought, the next asks for the rest, and progress
  // is reported as bytes land. Without it every attempt starts over and progress comes at
  // the end.
  const bool resume = !if_match.empty() || !version_id.empty();
  uint64_t kept = 0;    // bytes at the start of out brought by earlier attempts
  uint64_t landed = 0;  // bytes this attempt has put in its sink so far
  uint64_t reported = 0;
  auto range_header = [&] {
    return fmt::format("bytes={}-{}", offset + kept, offset + length - 1);
  };
  Call call;
  call.op = "GET";
  call.key = std::string(key);
  call.sink = out;
  call.extra_headers.emplace_back("range", range_header());
  if (!if_match.empty()) call.extra_headers.emplace_back("if-match", quote_etag(if_match));
  if (!version_id.empty()) call.query.emplace_back("versionId", std::string(version_id));
  call.on_sink_progress = [&](size_t n, const http::Response& head) {
    // Bytes count only from an answer that starts where this attempt asked.
    if (n == landed || !answers_range(head, offset + kept)) return;
    landed = n;
    if (resume && progress && kept + n > reported) {
      reported = kept + n;
      progress(static_cast<size_t>(reported));
    }
  };
  if (resume) {
    if (seen) {
      call.on_sink_bytes = [&](size_t at, std::span<const std::byte> bytes,
                               const http::Response& head) {
        if (answers_range(head, offset + kept)) seen(kept + at, bytes);
      };
    }
    call.before_retry = [&](Call& c) {
      // Keep what the failed attempt brought, but at least the last byte is asked for again:
      // a retry needs a range to ask for.
      kept = std::min(kept + landed, length - 1);
      landed = 0;
      c.sink = out.subspan(static_cast<size_t>(kept));
      for (auto& [name, value] : c.extra_headers) {
        if (name == "range") value = range_header();
      }
    };
  }
  call.truncated = [&](const http::Response& r) -> std::string {
    if (r.status != 206) return {};
    uint64_t first = 0, last = 0;
    int64_t total = -1;
    if (!parse_content_range(r.header("content-range"), &first, &last, &total)) return {};
    const uint64_t from = offset + kept;
    uint64_t expected = length - kept;
    if (total >= 0)
      expected = std::min<uint64_t>(expected,
                                    static_cast<uint64_t>(total) - std::min<uint64_t>(from, total));
    if (r.body_size >= expected) return {};
    return fmt::format("truncated body ({} of {} bytes)", r.body_size, expected);
  };

  WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call));
  const std::string target = describe() + "/" + call.key;
  const uint64_t from = offset + kept;
  if (r.status == 416) return size_t{0};  // at or past the end of the object
  if (r.status == 206) {
    uint64_t first = 0, last = 0;
    int64_t total = -1;
    if (!parse_content_range(r.header("content-range"), &first, &last, &total) || first != from) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      return Status(Errc::kIo,
                    one_line(fmt::format("GET {}: unexpected Content-Range '{}' for offset {}",
                                         target, r.header("content-range"), from)));
    }
  } else if (r.status == 200) {
    // A server that ignores Range sends the whole object; only usable from offset 0.
    if (from != 0) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      return Status(Errc::kIo, fmt::format("GET {}: server ignored the Range header", target));
    }
  } else {
    if (r.status != 404 && r.status != 412) errors_.fetch_add(1, std::memory_order_relaxed);
    return Status(errc_for_status(r.status),
                  one_line(fmt::format("GET {}: {}", target, describe_http_error(r))));
  }
  const uint64_t total = kept + r.body_size;
  bytes_read_.fetch_add(total, std::memory_order_relaxed);
  if (progress && total > reported) progress(static_cast<size_t>(total));
  return static_cast<size_t>(total);
}

Result<ListPage> S3ObjectStore::list(const ListRequest& request) {
  return list_impl(request, false);
}

Result<ListPage> S3ObjectStore::list_versions(const ListRequest& request) {
  return list_impl(request, true);
}

Result<ListPage> S3ObjectStore::list_impl(const ListRequest& request, bool versions) {
  list_requests_.fetch_add(1, std::memory_order_relaxed);
  Call call;
  call.op = "LIST";
  if (versions) {
    call.query.emplace_back("versions", "");
  } else {
    call.query.emplace_back("list-type", "2");
  }
  call.query.emplace_back("encoding-type", "url");
  if (!request.prefix.empty()) call.query.emplace_back("prefix", request.prefix);
  if (!request.delimiter.empty()) call.query.emplace_back("delimiter", request.delimiter);
  if (!request.continuation_token.empty() && !versions) {
    call.query.emplace_back("continuation-token", request.continuation_token);
  } else if (!request.continuation_token.empty()) {
    // list_versions' token: "KEY-MARKER\nVERSION-ID-MARKER".
    const std::string& t = request.continuation_token;
    const size_t nl = t.find('\n');
    call.query.emplace_back("key-marker", t.substr(0, nl));
    if (nl != std::string::npos && nl + 1 < t.size()) {
      call.query.emplace_back("version-id-marker", t.substr(nl + 1));
    }
  } else if (!request.start_after.empty()) {
    call.query.emplace_back(versions ? "key-marker" : "start-after", request.start_after);
  }
  if (request.max_keys > 0) call.query.emplace_back("max-keys", std::to_string(request.max_keys));

  WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call));
  const std::string target =
      fmt::format("{}{} prefix '{}'", versions ? "versions " : "", describe(), request.prefix);
  if (r.status != 200) {
    if (r.status != 404) errors_.fetch_add(1, std::memory_order_relaxed);
    return Status(errc_for_status(r.status),
                  one_line(fmt::format("LIST {}: {}", target, describe_http_error(r))));
  }
  auto page = versions ? s3::parse_list_object_versions(r.body) : s3::parse_list_objects_v2(r.body);
  if (!page.is_ok()) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return Status(page.code(),
                  one_line(fmt::format("LIST {}: {}", target, page.status().message())));
  }
  return page;
}

}  // namespace warmfs

#include "server/cache_server.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "cache/remote_protocol.h"
#include "common/crc32c.h"
#include "common/log.h"
#include "server/chunk_request.h"

namespace warmfs {
namespace {

http::ServerResponse json_response(int status, const nlohmann::json& j) {
  http::ServerResponse r;
  r.status = status;
  r.body = j.dump();
  r.headers.emplace_back("Content-Type", "application/json");
  return r;
}

uint64_t micros_since(std::chrono::steady_clock::time_point t, const Clock& clock) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(clock.now() - t).count());
}

// Versions checked more than this many times over are pruned of expired entries.
constexpr size_t kMaxVersions = 1 << 20;

}  // namespace

CacheServer::CacheServer(std::map<std::string, ObjectStore*> stores, BlockCache& memory,
                         BlockCache* ssd, Clock& clock, CacheServerOptions options)
    : memory_(memory),
      ssd_(ssd),
      tiers_(ssd != nullptr ? std::make_unique<TieredCache>(memory, *ssd) : nullptr),
      cache_(tiers_ ? static_cast<BlockCache&>(*tiers_) : memory),
      clock_(clock),
      options_(std::move(options)),
      started_(clock.now()) {
  ReadaheadOptions ra = options_.readahead;
  ra.chunk_size = options_.chunk_size;
  for (auto& [name, store] : stores) {
    Bucket b;
    b.store = store;
    b.read_path = std::make_unique<ReadPath>(*store, cache_, name, ra, &memory_);
    buckets_.emplace(name, std::move(b));
  }
}

CacheServer::~CacheServer() { stop(); }

Status CacheServer::start(http::ServerOptions http) {
  auto s = http::HttpServer::start(std::move(http),
                                   [this](const http::ServerRequest& r) { return handle(r); });
  if (!s.is_ok()) return s.status();
  http_ = std::move(*s);
  return Status::ok();
}

void CacheServer::stop() { http_.reset(); }

http::ServerResponse CacheServer::refuse(int status, const std::string& code,
                                         const std::string& message) {
  switch (status) {
    case 400:
      bad_requests_.fetch_add(1, std::memory_order_relaxed);
      break;
    case 401:
      unauthorized_.fetch_add(1, std::memory_order_relaxed);
      break;
    case 403:
      forbidden_.fetch_add(1, std::memory_order_relaxed);
      break;
    case 404:
      not_found_.fetch_add(1, std::memory_order_relaxed);
      break;
    case 412:
      precondition_failed_.fetch_add(1, std::memory_order_relaxed);
      break;
    case 416:
      range_errors_.fetch_add(1, std::memory_order_relaxed);
      break;
    default:
      bucket_failures_.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  auto r = json_response(status, {{"error", code}, {"message", message}});
  if (status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"warmfs\"");
  return r;
}

void CacheServer::note_client(const http::ServerRequest& request) {
  std::string id = request.header("x-warmfs-client");
  if (id.empty()) id = request.peer.substr(0, request.peer.rfind(':'));
  if (id.size() > 256) id.resize(256);
  std::lock_guard lock(clients_mu_);
  if (clients_.size() > 100'000 && !clients_.contains(id)) return;  // bounded against junk ids
  clients_[id] = clock_.now();
}

http::ServerResponse CacheServer::handle(const http::ServerRequest& request) {
  const auto start = clock_.now();
  http::ServerResponse r = answer(request);
  request_latency_us_.record(micros_since(start, clock_));
  const size_t status = r.status >= 0 && static_cast<size_t>(r.status) < kStatuses ? r.status : 0;
  requests_by_status_[status].fetch_add(1, std::memory_order_relaxed);
  return r;
}

std::vector<std::pair<int, uint64_t>> CacheServer::requests_by_status() const {
  std::vector<std::pair<int, uint64_t>> out;
  for (size_t i = 0; i < kStatuses; ++i) {
    const uint64_t n = requests_by_status_[i].load(std::memory_order_relaxed);
    if (n != 0) out.emplace_back(static_cast<int>(i), n);
  }
  return out;
}

http::ServerResponse CacheServer::answer(const http::ServerRequest& request) {
  if (request.path == remote::kHealthPath) {
    http::ServerResponse r;
    r.body = "ok\n";
    return r;
  }
  if (request.method != "GET" && request.method != "HEAD") {
    auto r = refuse(400, "MethodNotAllowed", "only GET is served");
    r.status = 405;
    return r;
  }
  if (!options_.token.empty()) {
    const std::string auth = request.header("authorization");
    if (!bearer_token_ok(auth, options_.token)) {
      return refuse(401, "Unauthorized",
                    auth.empty() ? "no token (Authorization: Bearer TOKEN)" : "wrong token");
    }
  }
  if (request.path == remote::kChunkPath) {
    note_client(request);
    return handle_chunk(request);
  }
  if (request.path == remote::kStatsPath) {
    http::ServerResponse r;
    r.body = stats_json();
    r.headers.emplace_back("Content-Type", "application/json");
    return r;
  }
  if (request.path == remote::kInfoPath) {
    nlohmann::json names = nlohmann::json::array();
    for (const auto& [name, b] : buckets_) names.push_back(name);
    return json_response(200, {{"protocol", remote::kProtocolVersion},
                               {"buckets", names},
                               {"chunk_size", options_.chunk_size}});
  }
  return refuse(404, "NoSuchPath", "no such path: " + request.path + " (this server speaks /v1/)");
}

void CacheServer::forget_version(const std::string& bucket, const std::string& key) {
  std::lock_guard lock(version_mu_);
  versions_.erase(bucket + '\0' + key);
}

Result<uint64_t> CacheServer::check_version(Bucket& b, const std::string& bucket,
                                            const std::string& key, const std::string& etag) {
  const std::string vkey = bucket + '\0' + key;
  std::shared_future<Result<ObjectInfo>> check;
  std::promise<Result<ObjectInfo>> promise;
  bool mine = false;
  {
    std::lock_guard lock(version_mu_);
    const auto now = clock_.now();
    if (auto it = versions_.find(vkey); it != versions_.end()) {
      const auto age = now - it->second.checked;
      if (age < options_.version_check_interval) {
        if (it->second.etag == etag) return it->second.size;
        // A client may have seen a newer version than our last check: look again, but not
        // more than once a second per key.
        if (age < std::chrono::seconds(1)) {
          return Status(Errc::kPreconditionFailed, fmt::format("s3://{}/{} has ETag {}, not {}",
                                                               bucket, key, it->second.etag, etag));
        }
      }
    }
    if (auto it = version_checks_.find(vkey); it != version_checks_.end()) {
      check = it->second;
    } else {
      check = promise.get_future().share();
      version_checks_.emplace(vkey, check);
      mine = true;
    }
  }
  if (mine) {
    Result<ObjectInfo> r = b.store->head(key);
    {
      std::lock_guard lock(version_mu_);
      if (versions_.size() >= kMaxVersions) {
        const auto now = clock_.now();
        std::erase_if(versions_, [&](const auto& e) {
          return now - e.second.checked >= options_.version_check_interval;
        });
      }
      if (r.is_ok())
        versions_[vkey] = Version{r->etag, r->size, clock_.now()};
      else
        versions_.erase(vkey);
      version_checks_.erase(vkey);
    }
    promise.set_value(std::move(r));
  }
  const Result<ObjectInfo>& r = check.get();
  if (!r.is_ok()) return r.status();
  if (r->etag != etag) {
    return Status(Errc::kPreconditionFailed,
                  fmt::format("s3://{}/{} has ETag {}, not {}", bucket, key, r->etag, etag));
  }
  return r->size;
}

http::ServerResponse CacheServer::handle_chunk(const http::ServerRequest& request) {
  const auto start = clock_.now();
  chunk_requests_.fetch_add(1, std::memory_order_relaxed);
  auto parsed = parse_chunk_request(request, options_.chunk_size);
  if (const auto* bad = std::get_if<ChunkRequestError>(&parsed)) {
    return refuse(400, bad->code, bad->message);
  }
  const ChunkKey key = std::get<ChunkKey>(std::move(parsed));
  auto parsed_range = parse_chunk_range(request);
  if (const auto* bad = std::get_if<ChunkRequestError>(&parsed_range)) {
    return refuse(400, bad->code, bad->message);
  }
  const std::optional<ChunkRange> range = std::get<std::optional<ChunkRange>>(parsed_range);
  auto bit = buckets_.find(key.bucket);
  if (bit == buckets_.end()) {
    return refuse(404, "NoSuchBucket", "this server does not serve bucket " + key.bucket);
  }
  Bucket& b = bit->second;
  auto size = check_version(b, key.bucket, key.key, key.etag);
  auto failed = [&](const Status& st) {
    switch (st.code()) {
      case Errc::kNotFound:
        return refuse(404, "NoSuchKey", st.message());
      case Errc::kPreconditionFailed:
        return refuse(412, "PreconditionFailed", st.message());
      case Errc::kAccessDenied:
        return refuse(403, "AccessDenied", "the bucket refused the server: " + st.message());
      default:
        log::warn("serving s3://{}/{} chunk {}: {}", key.bucket, key.key, key.index,
                  st.to_string());
        return refuse(502, "BucketFailed", st.message());
    }
  };
  if (!size.is_ok()) return failed(size.status());
  const uint64_t cs = options_.chunk_size;
  if (key.index >= (*size + cs - 1) / cs) {
    return refuse(416, "IndexPastEnd",
                  fmt::format("{} has {} bytes: no chunk {}", key.key, *size, key.index));
  }
  const uint64_t length = std::min(cs, *size - key.index * cs);
  if (range && (range->offset > length || range->length > length - range->offset)) {
    return refuse(416, "RangePastEnd",
                  fmt::format("chunk {} of {} has {} bytes: no range {}+{}", key.index, key.key,
                              length, range->offset, range->length));
  }
  if (range) {
    // Only the range, from memory or the SSD tier's blocks (never a whole chunk read for
    // it); a miss reads the chunk whole below, as a whole request does.
    std::vector<std::byte> bytes(range->length);
    if (cache_.read_range(key, range->offset, bytes)) {
      return chunk_answer(ChunkBytes(std::move(bytes)), nullptr, true, range->offset, start);
    }
  }
  ChunkPtr chunk = cache_.get(key);
  bool hit = chunk && chunk->bytes.size() == length;
  if (!hit) {
    auto reader = b.read_path->open(ObjectVersion{key.key, key.etag, *size});
    std::vector<ChunkSlice> slices;
    auto got = reader->read_slices(key.index * cs, length, slices);
    if (!got.is_ok()) {
      if (got.code() == Errc::kPreconditionFailed) forget_version(key.bucket, key.key);
      return failed(got.status());
    }
    if (slices.size() != 1 || slices[0].offset != 0 || slices[0].chunk->bytes.size() != length) {
      return refuse(500, "Internal", "the read path returned an unexpected chunk");
    }
    chunk = slices[0].chunk;
  }
  if (range) {
    const std::byte* from = chunk->bytes.data() + range->offset;
    return chunk_answer(ChunkBytes(std::vector<std::byte>(from, from + range->length)), nullptr,
                        hit, range->offset, start);
  }
  return chunk_answer(chunk->bytes, chunk, hit, std::nullopt, start);
}

http::ServerResponse CacheServer::chunk_answer(const ChunkBytes& bytes, ChunkPtr chunk, bool hit,
                                               std::optional<uint64_t> offset,
                                               std::chrono::steady_clock::time_point start) {
  (hit ? hit_bytes_ : miss_bytes_).fetch_add(bytes.size(), std::memory_order_relaxed);
  bytes_served_.fetch_add(bytes.size(), std::memory_order_relaxed);
  http::ServerResponse r;
  r.headers.emplace_back("Content-Type", "application/octet-stream");
  // A whole chunk's CRC was computed when it entered the caches; a range's here.
  const uint32_t crc = chunk ? chunk->crc32c : crc32c(std::span<const std::byte>(bytes));
  r.headers.emplace_back(remote::kCrcHeader, remote::format_crc(crc));
  r.headers.emplace_back(remote::kSourceHeader, hit ? "hit" : "miss");
  if (offset) r.headers.emplace_back(remote::kOffsetHeader, std::to_string(*offset));
  r.body_bytes = bytes;
  if (chunk) {
    r.body_owner = std::move(chunk);
  } else {
    r.body_owner = std::make_shared<const ChunkBytes>(bytes);
  }
  const uint64_t us = micros_since(start, clock_);
  latency_us_.record(us);
  (hit ? hit_latency_us_ : miss_latency_us_).record(us);
  return r;
}

CacheServerCounters CacheServer::counters() const {
  CacheServerCounters c;
  c.chunk_requests = chunk_requests_.load(std::memory_order_relaxed);
  c.bytes_served = bytes_served_.load(std::memory_order_relaxed);
  c.hit_bytes = hit_bytes_.load(std::memory_order_relaxed);
  c.miss_bytes = miss_bytes_.load(std::memory_order_relaxed);
  c.unauthorized = unauthorized_.load(std::memory_order_relaxed);
  c.bad_requests = bad_requests_.load(std::memory_order_relaxed);
  c.not_found = not_found_.load(std::memory_order_relaxed);
  c.precondition_failed = precondition_failed_.load(std::memory_order_relaxed);
  c.forbidden = forbidden_.load(std::memory_order_relaxed);
  c.range_errors = range_errors_.load(std::memory_order_relaxed);
  c.bucket_failures = bucket_failures_.load(std::memory_order_relaxed);
  return c;
}

std::string CacheServer::stats_json() const {
  const CacheServerCounters c = counters();
  ObjectStoreCounters sc;
  nlohmann::json names = nlohmann::json::array();
  for (const auto& [name, b] : buckets_) {
    names.push_back(name);
    sc += b.store->counters();
  }
  uint64_t clients = 0, active = 0;
  {
    std::lock_guard lock(clients_mu_);
    const auto now = clock_.now();
    clients = clients_.size();
    for (const auto& [id, seen] : clients_) active += now - seen < options_.active_window ? 1 : 0;
  }
  auto cache_json = [](const BlockCacheCounters& bc) {
    return nlohmann::json{{"used_bytes", bc.used_bytes},
                          {"capacity_bytes", bc.capacity_bytes},
                          {"hit_bytes", bc.hit_bytes},
                          {"inserted_bytes", bc.inserted_bytes},
                          {"evicted_bytes", bc.evicted_bytes},
                          {"corrupt_chunks", bc.corrupt_chunks},
                          {"errors", bc.errors},
                          {"dropped_writes", bc.dropped_writes},
                          {"rejected_writes", bc.rejected_writes}};
  };
  auto pct = [](const Histogram& h) {
    return nlohmann::json{
        {"p50", h.percentile(50)}, {"p99", h.percentile(99)}, {"count", h.count()}};
  };
  nlohmann::json j;
  j["protocol"] = remote::kProtocolVersion;
  j["buckets"] = names;
  j["uptime_seconds"] = std::chrono::duration<double>(clock_.now() - started_).count();
  j["chunk_requests"] = c.chunk_requests;
  j["bytes_served"] = c.bytes_served;
  j["hit_bytes"] = c.hit_bytes;
  j["miss_bytes"] = c.miss_bytes;
  j["hit_ratio"] = c.bytes_served == 0 ? 0.0 : double(c.hit_bytes) / double(c.bytes_served);
  j["bucket_bytes_read"] = sc.bytes_read;
  j["bucket_requests"] = {
      {"get", sc.get_requests}, {"head", sc.head_requests}, {"list", sc.list_requests}};
  j["bucket_retries"] = sc.retries;
  j["bucket_errors"] = sc.errors;
  j["refused"] = {{"unauthorized", c.unauthorized}, {"bad_request", c.bad_requests},
                  {"not_found", c.not_found},       {"precondition_failed", c.precondition_failed},
                  {"forbidden", c.forbidden},       {"range", c.range_errors}};
  j["bucket_failures"] = c.bucket_failures;
  j["clients"] = clients;
  j["active_clients"] = active;
  j["connections"] = http_ ? http_->open_connections() : 0;
  j["tls"] = http_ ? http_->tls() : false;
  j["latency_us"] = pct(latency_us_);
  j["hit_latency_us"] = pct(hit_latency_us_);
  j["miss_latency_us"] = pct(miss_latency_us_);
  j["memory_cache"] = cache_json(memory_.counters());
  j["ssd_cache"] = ssd_ != nullptr ? cache_json(ssd_->counters()) : nlohmann::json(nullptr);
  for (const auto& part : options_.extra_stats) {
    if (!part) continue;
    auto extra = nlohmann::json::parse(part(), nullptr, false);
    if (extra.is_object()) j.update(extra);
  }
  return j.dump();
}

}  // namespace warmfs

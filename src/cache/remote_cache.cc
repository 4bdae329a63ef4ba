#include "cache/remote_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "cache/remote_protocol.h"
#include "common/buffer.h"
#include "common/crc32c.h"
#include "common/hash.h"
#include "common/log.h"

namespace warmfs {
namespace {

uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string default_client_id() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  return fmt::format("{}:{}", host, ::getpid());
}

int64_t ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// The server's error document, shortened for a log line.
std::string error_text(const http::Response& r) {
  if (auto message = remote::parse_error_message(r.body)) {
    return fmt::format("{} {}", r.status, *message);
  }
  return fmt::format("HTTP {}", r.status);
}

}  // namespace

uint64_t rendezvous_weight(std::string_view server, const ChunkKey& key) {
  uint64_t h = fnv1a(key.bucket);
  h = fnv1a(std::string_view("\0", 1), h);
  h = fnv1a(key.key, h);
  h = fnv1a(std::string_view("\0", 1), h);
  h = fnv1a(key.etag, h);
  return mix64(mix64(h ^ key.index * 0x9e3779b97f4a7c15ULL) ^ fnv1a(server));
}

struct RemoteCache::Server {
  std::string url;
  std::unique_ptr<http::Client> client;
  // Steady-clock nanoseconds until which the server is skipped (0: in use).
  std::atomic<int64_t> down_until_ns{0};
  std::atomic<uint32_t> failures_in_a_row{0};
  std::atomic<uint64_t> chunks{0}, bytes{0}, errors{0};
  std::mutex warn_mu;  // protects the two fields below
  std::chrono::steady_clock::time_point last_warn{};
  uint64_t suppressed = 0;
};

Result<std::unique_ptr<RemoteCache>> RemoteCache::create(RemoteCacheOptions options, Clock& clock) {
  if (options.servers.empty()) return Status(Errc::kInvalidArgument, "no cache server given");
  for (auto& s : options.servers) {
    std::string n = remote::normalize_base_url(s);
    if (n.empty()) {
      return Status(Errc::kInvalidArgument,
                    "cache server '" + s + "' is not an http:// or https:// URL of a host[:port]");
    }
    s = n;
  }
  std::vector<std::string> sorted = options.servers;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return Status(Errc::kInvalidArgument, "a cache server is named twice");
  }
  if (options.chunk_size == 0) options.chunk_size = kDefaultChunkSize;
  if (options.client_id.empty()) options.client_id = default_client_id();
  return std::unique_ptr<RemoteCache>(new RemoteCache(std::move(options), clock));
}

RemoteCache::RemoteCache(RemoteCacheOptions options, Clock& clock)
    : options_(std::move(options)), clock_(clock) {
  for (const auto& url : options_.servers) {
    http::ClientOptions co;
    co.connect_timeout = options_.connect_timeout;
    co.low_speed_time = options_.stall_timeout;
    co.low_speed_bytes = 1;
    co.request_timeout = options_.request_timeout;
    co.ca_bundle = options_.ca_bundle;
    co.max_connections = options_.connections_per_server;
    auto s = std::make_unique<Server>();
    s->url = url;
    s->client = std::make_unique<http::Client>(co);
    servers_.push_back(std::move(s));
  }
}

RemoteCache::~RemoteCache() = default;

const std::string& RemoteCache::server_url(size_t i) const { return servers_.at(i)->url; }

size_t RemoteCache::owner_of(const ChunkKey& key) const {
  size_t best = 0;
  uint64_t best_w = 0;
  for (size_t i = 0; i < servers_.size(); ++i) {
    const uint64_t w = rendezvous_weight(servers_[i]->url, key);
    if (i == 0 || w > best_w) {
      best = i;
      best_w = w;
    }
  }
  return best;
}

http::Request RemoteCache::request_for(const Server& s, std::string target) const {
  http::Request req;
  req.url = s.url + target;
  if (!options_.token.empty())
    req.headers.emplace_back("Authorization", "Bearer " + options_.token);
  req.headers.emplace_back(remote::kClientHeader, options_.client_id);
  return req;
}

void RemoteCache::fail(Server& s, const std::string& why) {
  errors_.fetch_add(1, std::memory_order_relaxed);
  s.errors.fetch_add(1, std::memory_order_relaxed);
  const uint32_t n = s.failures_in_a_row.fetch_add(1, std::memory_order_relaxed) + 1;
  auto backoff = options_.initial_backoff * (int64_t{1} << std::min<uint32_t>(n - 1, 20));
  backoff = std::min(backoff, options_.max_backoff);
  const auto now = clock_.now();
  s.down_until_ns.store(ns(now + backoff), std::memory_order_relaxed);
  std::lock_guard lock(s.warn_mu);
  if (s.last_warn != std::chrono::steady_clock::time_point{} &&
      now - s.last_warn < options_.log_interval) {
    ++s.suppressed;
    return;
  }
  const std::string more =
      s.suppressed > 0 ? fmt::format(" ({} more failures since the last warning)", s.suppressed)
                       : "";
  log::warn(
      "cache server {} failed: {}; its chunks come from the bucket for {} ms, then it is tried "
      "again{}",
      s.url, why, std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count(), more);
  s.last_warn = now;
  s.suppressed = 0;
}

void RemoteCache::succeed(Server& s) {
  if (s.failures_in_a_row.exchange(0, std::memory_order_relaxed) != 0) {
    s.down_until_ns.store(0, std::memory_order_relaxed);
    log::info("cache server {} answers again; reading through it", s.url);
  }
}

ChunkPtr RemoteCache::get(const ChunkKey& key) {
  Server& s = *servers_[owner_of(key)];
  const int64_t down_until = s.down_until_ns.load(std::memory_order_relaxed);
  if (down_until != 0 && ns(clock_.now()) < down_until) {
    fallback_chunks_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const size_t cap = options_.chunk_size;
  std::shared_ptr<std::byte[]> buf = allocate_buffer(cap);
  http::Request req = request_for(s, remote::chunk_target(key, options_.chunk_size));
  req.body_sink = std::span(buf.get(), cap);
  // The CRCs are taken from the bytes as they arrive, while they are in the core's cache, as
  // the bucket's fetches do: not by reading the buffer back.
  ChunkCrcs crcs;
  bool crcs_whole = true;
  req.on_sink_bytes = [&](size_t at, std::span<const std::byte> bytes, const http::Response&) {
    if (at != crcs.size()) crcs_whole = false;  // a body begun again: read the buffer instead
    if (crcs_whole) crcs.update(bytes);
  };
  Result<http::Response> r = s.client->perform(req);
  if (!answered(s, key, r)) return nullptr;
  const http::Response& resp = *r;
  const auto want_crc = remote::parse_crc(resp.header(remote::kCrcHeader));
  ChunkPtr chunk = crcs_whole && crcs.size() == resp.body_size
                       ? make_chunk_slice(buf, 0, resp.body_size, std::move(crcs))
                       : make_chunk(buf, 0, resp.body_size);
  if (!want_crc || *want_crc != chunk->crc32c) {
    fallback_chunks_.fetch_add(1, std::memory_order_relaxed);
    fail(s, fmt::format("chunk {} of {} failed its CRC32C", key.index, key.key));
    return nullptr;
  }
  if (resp.body_size * 2 < cap) {
    // A short last chunk: do not keep a whole chunk's buffer alive for it. Its CRCs are the
    // ones just checked: the copy is not checksummed again.
    auto copy = std::make_shared<Chunk>();
    copy->bytes = ChunkBytes(std::vector<std::byte>(buf.get(), buf.get() + resp.body_size));
    copy->crc32c = chunk->crc32c;
    copy->block_crcs = chunk->block_crcs;
    chunk = std::move(copy);
  }
  succeed(s);
  s.chunks.fetch_add(1, std::memory_order_relaxed);
  s.bytes.fetch_add(resp.body_size, std::memory_order_relaxed);
  hits_.fetch_add(1, std::memory_order_relaxed);
  if (resp.header(remote::kSourceHeader) == "miss")
    miss_bytes_.fetch_add(resp.body_size, std::memory_order_relaxed);
  else
    hit_bytes_.fetch_add(resp.body_size, std::memory_order_relaxed);
  return chunk;
}

bool RemoteCache::read_range(const ChunkKey& key, uint64_t offset, std::span<std::byte> out,
                             bool* /*promote*/) {
  if (out.empty() || offset >= options_.chunk_size || out.size() > options_.chunk_size - offset) {
    return false;
  }
  Server& s = *servers_[owner_of(key)];
  const int64_t down_until = s.down_until_ns.load(std::memory_order_relaxed);
  if (down_until != 0 && ns(clock_.now()) < down_until) {
    fallback_chunks_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // The body is collected (a few kilobytes: no chunk-sized buffer taken for it); a server that
  // predates ranges answers the whole chunk, which lands there too.
  http::Request req =
      request_for(s, remote::chunk_range_target(key, options_.chunk_size, offset, out.size()));
  Result<http::Response> r = s.client->perform(req);
  if (!answered(s, key, r)) return false;
  const http::Response& resp = *r;
  const auto want_crc = remote::parse_crc(resp.header(remote::kCrcHeader));
  const std::span<const std::byte> body = std::as_bytes(std::span(resp.body));
  const bool ranged = !resp.header(remote::kOffsetHeader).empty();
  const bool fits = ranged ? resp.header(remote::kOffsetHeader) == std::to_string(offset) &&
                                 body.size() == out.size()
                           : body.size() >= offset + out.size();
  if (!fits || !want_crc || *want_crc != crc32c(body)) {
    fallback_chunks_.fetch_add(1, std::memory_order_relaxed);
    fail(s, fmt::format("range {}+{} of chunk {} of {} failed its checks", offset, out.size(),
                        key.index, key.key));
    return false;
  }
  std::memcpy(out.data(), body.data() + (ranged ? 0 : offset), out.size());
  succeed(s);
  s.chunks.fetch_add(1, std::memory_order_relaxed);
  s.bytes.fetch_add(body.size(), std::memory_order_relaxed);
  hits_.fetch_add(1, std::memory_order_relaxed);
  range_hits_.fetch_add(1, std::memory_order_relaxed);
  if (resp.header(remote::kSourceHeader) == "miss")
    miss_bytes_.fetch_add(out.size(), std::memory_order_relaxed);
  else
    hit_bytes_.fetch_add(out.size(), std::memory_order_relaxed);
  return true;
}

bool RemoteCache::answered(Server& s, const ChunkKey& key, const Result<http::Response>& r) {
  if (!r.is_ok()) {
    fallback_chunks_.fetch_add(1, std::memory_order_relaxed);
    fail(s, r.status().message());
    return false;
  }
  const http::Response& resp = *r;
  if (resp.status == 403 || resp.status == 404 || resp.status == 412 || resp.status == 416) {
    // The server will not serve this version (its credentials may not read it, gone,
    // changed, past the end): the bucket decides, with our own credentials, and the read
    // path reports what it says. The server itself is fine.
    refused_.fetch_add(1, std::memory_order_relaxed);
    fallback_chunks_.fetch_add(1, std::memory_order_relaxed);
    log::debug("cache server {} refused {} chunk {}: {}", s.url, key.key, key.index,
               error_text(resp));
    succeed(s);
    return false;
  }
  if (resp.status != 200) {
    fallback_chunks_.fetch_add(1, std::memory_order_relaxed);
    std::string why = error_text(resp);
    if (resp.status == 401) why += " (the server refused our token: check --token-file)";
    fail(s, why);
    return false;
  }
  return true;
}

void RemoteCache::put(const ChunkKey& /*key*/, ChunkPtr /*chunk*/) {}

BlockCacheCounters RemoteCache::counters() const {
  BlockCacheCounters c;
  c.hits = hits_.load(std::memory_order_relaxed);
  c.hit_bytes =
      hit_bytes_.load(std::memory_order_relaxed) + miss_bytes_.load(std::memory_order_relaxed);
  c.misses = fallback_chunks_.load(std::memory_order_relaxed);
  c.errors = errors_.load(std::memory_order_relaxed);
  c.range_hits = range_hits_.load(std::memory_order_relaxed);
  return c;
}

RemoteCacheCounters RemoteCache::remote_counters() const {
  RemoteCacheCounters c;
  c.hit_bytes = hit_bytes_.load(std::memory_order_relaxed);
  c.miss_bytes = miss_bytes_.load(std::memory_order_relaxed);
  c.errors = errors_.load(std::memory_order_relaxed);
  c.fallback_chunks = fallback_chunks_.load(std::memory_order_relaxed);
  c.refused = refused_.load(std::memory_order_relaxed);
  const int64_t now = ns(clock_.now());
  for (const auto& s : servers_) {
    RemoteServerCounters sc;
    sc.url = s->url;
    const int64_t until = s->down_until_ns.load(std::memory_order_relaxed);
    sc.up = until == 0 || now >= until;
    sc.chunks = s->chunks.load(std::memory_order_relaxed);
    sc.bytes = s->bytes.load(std::memory_order_relaxed);
    sc.errors = s->errors.load(std::memory_order_relaxed);
    c.servers.push_back(std::move(sc));
  }
  return c;
}

Result<RemoteServerInfo> RemoteCache::info(size_t server) {
  Server& s = *servers_.at(server);
  Result<http::Response> r = s.client->perform(request_for(s, remote::kInfoPath));
  if (!r.is_ok()) return Status(r.code(), "cache server " + s.url + ": " + r.status().message());
  if (r->status == 401) {
    return Status(
        Errc::kAccessDenied,
        "cache server " + s.url + " refused the token (401 Unauthorized): " +
            (options_.token.empty() ? "give it with --token-file" : "check --token-file"));
  }
  if (r->status != 200) return Status(Errc::kIo, "cache server " + s.url + ": " + error_text(*r));
  auto parsed = remote::parse_info(r->body);
  if (!parsed) {
    return Status(Errc::kIo, "cache server " + s.url +
                                 " sent a malformed /v1/info (is it a warmfs cache server?)");
  }
  RemoteServerInfo info;
  info.buckets = std::move(parsed->buckets);
  info.chunk_size = parsed->chunk_size;
  return info;
}

}  // namespace warmfs

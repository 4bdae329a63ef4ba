// CacheServer: `warmfs serve`, one SSD cache tier shared by many mounts over HTTP
// (the protocol is cache/remote_protocol.h; docs/cache-server.md has the deployment picture).
//
// It owns a read path per bucket it serves (readahead/read_path.h) over a memory cache and,
// usually, an SSD tier, the same classes a mount uses. A chunk request names an object
// version (bucket, key, ETag) and a chunk index; the server answers from its caches, or
// fetches the chunk from the bucket with its own credentials (one request however many
// clients ask at once: the read path's single flight), keeps it, and answers.
//
// Access model: a client holding the token may read, through the server, any object version
// the server's own credentials can read in the buckets it was started for, and nothing
// else. Other buckets are refused (404). Before serving a (key, ETag) the server checks with
// its own HEAD that its bucket has that key at that ETag, and repeats the check once
// version_check_interval has passed, so a deleted or replaced object stops being served from
// the cache within that interval (a fetch from the bucket always carries If-Match). Clients
// cannot write into the cache.
//
// handle() answers one parsed request and is usable without sockets (unit tests); start()
// puts it behind an http::HttpServer. Thread safe: handle() runs concurrently on the
// connection threads. Lock order: version_mu_, clients_mu_ each alone.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cache/block_cache.h"
#include "cache/tiered_cache.h"
#include "common/clock.h"
#include "common/histogram.h"
#include "http/http_server.h"
#include "objstore/object_store.h"
#include "readahead/read_path.h"
#include "warmfs/result.h"

namespace warmfs {

struct CacheServerOptions {
  // Required when non-empty: "Authorization: Bearer TOKEN". Empty serves anyone (only when
  // the operator asked for it, --insecure-no-token).
  std::string token;
  uint64_t chunk_size = kDefaultChunkSize;
  // A (key, ETag) checked with HEAD is trusted this long before it is checked again: the
  // most a deleted or replaced object is still served from the cache. One HEAD per object a
  // minute is noise next to the chunk traffic.
  std::chrono::seconds version_check_interval{60};
  // A client seen within this window counts as active in the stats.
  std::chrono::seconds active_window{60};
  ReadaheadOptions readahead;
  // Stats of parts the server does not know (the credentials): each returns a JSON object
  // whose members stats_json() adds at the top level. Cheap and thread safe.
  std::vector<std::function<std::string()>> extra_stats;
};

struct CacheServerCounters {
  uint64_t chunk_requests = 0;
  uint64_t bytes_served = 0;
  uint64_t hit_bytes = 0;   // served from the server's caches
  uint64_t miss_bytes = 0;  // fetched from the bucket to serve
  uint64_t unauthorized = 0, bad_requests = 0, not_found = 0, precondition_failed = 0,
           forbidden = 0, range_errors = 0, bucket_failures = 0;
};

class CacheServer {
 public:
  // stores: one per bucket served, keyed by bucket name (at least one). memory is the fast
  // tier; ssd may be null (memory only, for tests). All must outlive the server.
  CacheServer(std::map<std::string, ObjectStore*> stores, BlockCache& memory, BlockCache* ssd,
              Clock& clock, CacheServerOptions options);
  ~CacheServer();
  CacheServer(const CacheServer&) = delete;
  CacheServer& operator=(const CacheServer&) = delete;

  // Serves over HTTP(S) until destroyed (or stop()).
  Status start(http::ServerOptions http);
  void stop();
  uint16_t port() const { return http_ ? http_->port() : 0; }

  // Answers one request, counting it by status and timing it (request_latency_us).
  http::ServerResponse handle(const http::ServerRequest& request);
  CacheServerCounters counters() const;
  // Requests answered so far, by HTTP status (statuses never answered are left out).
  std::vector<std::pair<int, uint64_t>> requests_by_status() const;
  // Time to produce each answer (a chunk's bytes are sent after), in microseconds.
  const Histogram& request_latency_us() const { return request_latency_us_; }
  uint64_t open_connections() const { return http_ ? http_->open_connections() : 0; }
  std::string stats_json() const;

 private:
  struct Bucket {
    ObjectStore* store;
    std::unique_ptr<ReadPath> read_path;
  };
  struct Version {
    std::string etag;
    uint64_t size = 0;
    std::chrono::steady_clock::time_point checked;
  };

  http::ServerResponse answer(const http::ServerRequest& request);
  http::ServerResponse handle_chunk(const http::ServerRequest& request);
  // A 200 answer of bytes (a whole chunk, kept alive by chunk, whose CRC it carries; or, with
  // chunk null, a range at offset, checksummed here), counted and timed.
  http::ServerResponse chunk_answer(const ChunkBytes& bytes, ChunkPtr chunk, bool hit,
                                    std::optional<uint64_t> offset,
                                    std::chrono::steady_clock::time_point start);
  // Size of key at etag, from a recent check or a new HEAD; an error Status says why not.
  Result<uint64_t> check_version(Bucket& b, const std::string& bucket, const std::string& key,
                                 const std::string& etag);
  void forget_version(const std::string& bucket, const std::string& key);
  http::ServerResponse refuse(int status, const std::string& code, const std::string& message);
  void note_client(const http::ServerRequest& request);

  std::map<std::string, Bucket> buckets_;
  BlockCache& memory_;
  BlockCache* ssd_;
  std::unique_ptr<TieredCache> tiers_;  // memory over ssd, when there is an SSD tier
  BlockCache& cache_;                   // tiers_ or memory_
  Clock& clock_;
  const CacheServerOptions options_;
  const std::chrono::steady_clock::time_point started_;

  std::mutex version_mu_;                              // protects versions_ and version_checks_
  std::unordered_map<std::string, Version> versions_;  // "bucket\0key" -> last check
  std::unordered_map<std::string, std::shared_future<Result<ObjectInfo>>> version_checks_;

  mutable std::mutex clients_mu_;  // protects clients_
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> clients_;

  std::atomic<uint64_t> chunk_requests_{0}, bytes_served_{0}, hit_bytes_{0}, miss_bytes_{0},
      unauthorized_{0}, bad_requests_{0}, not_found_{0}, precondition_failed_{0}, forbidden_{0},
      range_errors_{0}, bucket_failures_{0};
  Histogram latency_us_, hit_latency_us_, miss_latency_us_;
  static constexpr size_t kStatuses = 600;  // index: HTTP status (100..599)
  std::array<std::atomic<uint64_t>, kStatuses> requests_by_status_{};
  Histogram request_latency_us_;

  std::unique_ptr<http::HttpServer> http_;  // last: stopped first
};

}  // namespace warmfs

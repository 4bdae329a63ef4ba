// RemoteCache: the BlockCache tier that reads chunks from warmfs cache servers
// (`warmfs serve`, server/cache_server.h) over HTTP, for mounts that share one SSD tier.
//
// Each chunk has one owner among the configured servers, chosen by rendezvous (highest
// random weight) hashing of the chunk key with each server's URL: every client with the same
// server list picks the same owner, chunks of one file spread over all servers (so a reader
// pulls from several at once), and adding or removing a server moves only that server's
// share. get() asks the owner; the server reads through (on its own miss it fetches the chunk
// from the bucket with its own credentials, once however many clients ask) and answers the
// bytes with a CRC32C, which is checked here.
//
// put() does nothing: a server only serves bytes it fetched itself, so a client can never
// place data in it (docs/cache-server.md, access model).
//
// Failures never fail a read: get() returns nullptr and the read path fetches the chunk from
// the bucket. A server that cannot be reached, times out, answers 5xx or 401, or sends bytes
// that fail their CRC is counted in errors, logged (at most one line per log_interval per
// server, with a count of the ones suppressed), and skipped for a backoff that doubles with
// each failure in a row (initial_backoff .. max_backoff); the first request after it is the
// probe that brings the server back. Answers that refuse one version (403, 404, 412, 416)
// are misses, not server failures.
//
// Thread safe. Each server has its own http::Client (a pool of kept-alive connections);
// warn_mu_ of a server is taken alone.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cache/block_cache.h"
#include "common/clock.h"
#include "http/http_client.h"
#include "warmfs/result.h"

namespace warmfs {

struct RemoteCacheOptions {
  // Base URLs, "http://host:port" or "https://host:port". Required, at least one.
  std::vector<std::string> servers;
  // Sent as "Authorization: Bearer TOKEN"; empty sends none (servers run with no token).
  std::string token;
  // CA bundle to verify https servers; empty: the system's.
  std::string ca_bundle;
  uint64_t chunk_size = kDefaultChunkSize;
  // Sent in X-Warmfs-Client so a server can count its clients; empty: "HOST:PID".
  std::string client_id;
  // A server that does not accept a connection this fast is treated as down: on a LAN a
  // connect takes well under a millisecond, and the bucket is the fallback.
  std::chrono::milliseconds connect_timeout{1000};
  // A transfer that stalls this long fails (a hung or stopped server). Longer than a
  // server's own miss usually takes (it fetches from the bucket first).
  std::chrono::seconds stall_timeout{10};
  std::chrono::seconds request_timeout{60};
  // Backoff of a failing server: doubles per failure in a row, from initial to max.
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::seconds log_interval{10};
  // Idle connections kept alive per server (http::ClientOptions::max_connections). More
  // requests than this may run at once (the read path has 64 fetch threads); the extra
  // connections are closed when their request ends.
  int connections_per_server = 32;
};

struct RemoteServerCounters {
  std::string url;
  bool up = true;       // not in a backoff right now
  uint64_t chunks = 0;  // chunks it served
  uint64_t bytes = 0;   // bytes it served
  uint64_t errors = 0;
};

struct RemoteCacheCounters {
  uint64_t hit_bytes = 0;        // served by a server that held the chunk
  uint64_t miss_bytes = 0;       // served by a server that fetched it from the bucket for us
  uint64_t errors = 0;           // failed requests (each chunk then came from the bucket)
  uint64_t fallback_chunks = 0;  // chunks not served (error, backoff, refused): from the bucket
  uint64_t refused = 0;          // 403/404/412/416 answers
  std::vector<RemoteServerCounters> servers;
};

// What a server's /v1/info says, for the check a mount makes before it starts.
struct RemoteServerInfo {
  std::vector<std::string> buckets;
  uint64_t chunk_size = 0;
};

class RemoteCache final : public BlockCache {
 public:
  // kInvalidArgument if no server, or one that is not an http(s) URL. Makes no request.
  // clock must outlive the cache.
  static Result<std::unique_ptr<RemoteCache>> create(RemoteCacheOptions options, Clock& clock);
  ~RemoteCache() override;
  RemoteCache(const RemoteCache&) = delete;
  RemoteCache& operator=(const RemoteCache&) = delete;

  // The chunk from its owner, or nullptr (never an error; see the top of this file).
  ChunkPtr get(const ChunkKey& key) override;
  // Bytes [offset, offset + out.size()) of the chunk from its owner, which reads only what
  // holds them (protocol: offset and length arguments), checked against the CRC32C the
  // server sends for them; false on a miss, like get(). From a server that answers the whole
  // chunk instead (one that predates ranges), the range is taken from it.
  bool read_range(const ChunkKey& key, uint64_t offset, std::span<std::byte> out,
                  bool* promote = nullptr) override;
  // Does nothing: servers only keep what they fetched themselves.
  void put(const ChunkKey& key, ChunkPtr chunk) override;
  // hits/hit_bytes: chunks servers served (held or fetched for us); misses: chunks not
  // served; errors: failed requests.
  BlockCacheCounters counters() const override;
  RemoteCacheCounters remote_counters() const;

  // GET /v1/info of server i: kAccessDenied for 401 (a missing or wrong token), kUnavailable
  // or kTimeout when it cannot be reached, kIo for anything else unexpected.
  Result<RemoteServerInfo> info(size_t server);
  size_t server_count() const { return servers_.size(); }
  const std::string& server_url(size_t i) const;
  // Index of the server that owns key (rendezvous hashing over all servers, up or not).
  size_t owner_of(const ChunkKey& key) const;

 private:
  struct Server;
  RemoteCache(RemoteCacheOptions options, Clock& clock);
  http::Request request_for(const Server& s, std::string target) const;
  void fail(Server& s, const std::string& why);
  // True for a 200 answer to a chunk request; anything else is counted (a refusal, or a
  // failure of the server) and false.
  bool answered(Server& s, const ChunkKey& key, const Result<http::Response>& r);
  void succeed(Server& s);

  const RemoteCacheOptions options_;
  Clock& clock_;
  std::vector<std::unique_ptr<Server>> servers_;

  std::atomic<uint64_t> hit_bytes_{0}, miss_bytes_{0}, errors_{0}, fallback_chunks_{0}, refused_{0},
      hits_{0}, range_hits_{0};
};

// Rendezvous weight of (server, chunk): the owner is the server with the largest. Stable
// across processes and builds (FNV-1a and a 64-bit mixer, no std::hash).
uint64_t rendezvous_weight(std::string_view server, const ChunkKey& key);

}  // namespace warmfs

// warmfs serve (the cache server), warmfs stats --server, and what a mount needs to read
// through cache servers (its remote tier and the check it makes before mounting).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/remote_cache.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "warmfs/result.h"

namespace warmfs::cli {

struct ServeArgs {
  std::vector<std::string> buckets;       // served buckets; chunks of any other are refused
  std::string listen = "127.0.0.1:7070";  // HOST:PORT
  std::string endpoint, region, profile;
  bool no_sign_request = false;
  bool path_style = false;
  std::string cache_dir;          // the SSD tier (required)
  uint64_t cache_size_bytes = 0;  // 0: 80% of the free space of cache_dir's filesystem
  double cache_ttl_sec = 0;       // 0: until space is needed
  uint64_t memory_cache_bytes = 0;
  double version_check_sec = 60;
  std::string token_file;
  bool insecure_no_token = false;
  std::string tls_cert, tls_key;  // PEM files; both or neither
  std::string log_level = "info";
  std::string log_file;
  std::string metrics_listen;  // HOST:PORT of /metrics (cli/metrics_setup.h); empty: none
};

// Serves in the foreground until SIGTERM or SIGINT.
int run_serve(const ServeArgs& args);
// GET /v1/stats of a server: a table, or the JSON as sent.
int run_server_stats(const std::string& url, const std::string& token_file, bool insecure_no_token,
                     const std::string& ca_file, bool json);

// The token in path (surrounding whitespace dropped); refuses an empty or unreadable file,
// and warns when others may read it.
Result<std::string> read_token_file(const std::string& path);
// The mount's remote tier from --cache-server, --token-file, --cache-server-ca.
Result<std::unique_ptr<RemoteCache>> open_remote_tier(const MountArgs& args, Clock& clock);
// Before mounting: every server that answers must take the token and serve `bucket` with our
// chunk size (else a clear error); one that cannot be reached is a warning (the mount reads
// from the bucket until it answers).
Status check_cache_servers(const MountArgs& args, const std::string& bucket);
// The mount's cache-server counters as a JSON object, for the mount's stats:
// cache_server_hit_bytes, cache_server_miss_bytes, cache_server_errors,
// cache_server_fallback_chunks, cache_server_refused, and cache_servers (one entry a server).
std::string remote_tier_stats_json(const RemoteCache& remote);

}  // namespace warmfs::cli

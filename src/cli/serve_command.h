// warmfs serve (the cache server) and warmfs stats --server. A mount's side of cache servers
// is cli/remote_tier.h; the token file, cli/token_file.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
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

}  // namespace warmfs::cli

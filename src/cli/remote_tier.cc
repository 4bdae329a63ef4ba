// A mount's side of cache servers (cli/remote_tier.h).
#include "cli/remote_tier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/token_file.h"
#include "common/log.h"

namespace warmfs::cli {

Result<std::unique_ptr<RemoteCache>> open_remote_tier(const MountArgs& a, Clock& clock) {
  RemoteCacheOptions o;
  o.servers = a.cache_servers;
  WARMFS_ASSIGN_OR_RETURN(o.token,
                          token_or_none(a.token_file, a.insecure_no_token, "--cache-server"));
  o.ca_bundle = a.cache_server_ca;
  std::string names;
  for (const auto& s : a.cache_servers) names += (names.empty() ? "" : ", ") + s;
  log::info("cache servers: {} (chunks spread over them by rendezvous hashing)", names);
  return RemoteCache::create(std::move(o), clock);
}

Status check_cache_servers(const MountArgs& a, const std::string& bucket) {
  WARMFS_ASSIGN_OR_RETURN(auto remote, open_remote_tier(a, SystemClock::instance()));
  for (size_t i = 0; i < remote->server_count(); ++i) {
    auto info = remote->info(i);
    if (!info.is_ok()) {
      if (info.code() == Errc::kUnavailable || info.code() == Errc::kTimeout) {
        const std::string line =
            info.status().message() + "; reading from the bucket until it answers";
        log::warn("{}", line);
        std::fprintf(stderr, "warmfs: warning: %s\n", line.c_str());
        continue;
      }
      return info.status();
    }
    if (std::find(info->buckets.begin(), info->buckets.end(), bucket) == info->buckets.end()) {
      std::string served;
      for (const auto& b : info->buckets) served += (served.empty() ? "" : ", ") + b;
      return Status(Errc::kInvalidArgument, "cache server " + remote->server_url(i) +
                                                " does not serve bucket " + bucket +
                                                " (it serves: " + served + ")");
    }
    if (info->chunk_size != kDefaultChunkSize) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("cache server {} uses {}-byte chunks, this mount {}",
                                remote->server_url(i), info->chunk_size, kDefaultChunkSize));
    }
  }
  return Status::ok();
}

std::string remote_tier_stats_json(const RemoteCache& remote) {
  const RemoteCacheCounters c = remote.remote_counters();
  nlohmann::json servers = nlohmann::json::array();
  for (const auto& s : c.servers) {
    servers.push_back({{"url", s.url},
                       {"up", s.up},
                       {"chunks", s.chunks},
                       {"bytes", s.bytes},
                       {"errors", s.errors}});
  }
  nlohmann::json j;
  j["cache_server_hit_bytes"] = c.hit_bytes;    // served by a server that held the chunk
  j["cache_server_miss_bytes"] = c.miss_bytes;  // served after the server fetched it for us
  j["cache_server_errors"] = c.errors;  // failed requests; those chunks came from the bucket
  j["cache_server_fallback_chunks"] = c.fallback_chunks;
  j["cache_server_refused"] = c.refused;
  j["cache_servers"] = servers;
  return j.dump();
}

}  // namespace warmfs::cli

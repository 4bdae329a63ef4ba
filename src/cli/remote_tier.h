// What a mount needs to read through cache servers (`warmfs serve`, docs/cache-server.md):
// its remote tier, the check it makes before mounting, and the tier's counters for its stats.
#pragma once

#include <memory>
#include <string>

#include "cache/remote_cache.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "warmfs/result.h"

namespace warmfs::cli {

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

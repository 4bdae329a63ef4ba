// The /metrics of `warmfs mount` and `warmfs serve` (--metrics-listen): which counters
// become which Prometheus families (docs/metrics.md lists them), and the endpoint serving
// them.
//
// Collectors read the counters the parts already keep for `warmfs stats` (relaxed atomics,
// counters() snapshots, the log-linear latency histograms) at scrape time; nothing here runs
// on the read path. The families' names are a contract with dashboards: change them only
// with docs/metrics.md.
//
// More families (credentials, ...) are added with MetricsEndpoint::registry().add() by the
// part that owns the values, before or after the endpoint starts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/block_cache.h"
#include "cache/remote_cache.h"
#include "fs/filesystem.h"
#include "metrics/metrics_server.h"
#include "metrics/registry.h"
#include "objstore/credential_provider.h"
#include "objstore/s3_store.h"
#include "readahead/read_path.h"
#include "server/cache_server.h"
#include "upload/staged_object.h"
#include "warmfs/result.h"

namespace warmfs::cli {

// What a mount's collector reads. All must outlive the endpoint.
struct MountMetricsSources {
  const Filesystem* fs = nullptr;
  const ReadPath* read_path = nullptr;
  const BlockCache* memory = nullptr;
  const BlockCache* disk = nullptr;  // null without --cache-dir
  const S3ObjectStore* store = nullptr;
  const Uploader* uploader = nullptr;   // null with --read-only
  const RemoteCache* remote = nullptr;  // null without --cache-server
};

// What a cache server's collector reads. All must outlive the endpoint.
struct ServeMetricsSources {
  const CacheServer* server = nullptr;
  const BlockCache* memory = nullptr;
  const BlockCache* disk = nullptr;
  std::vector<const S3ObjectStore*> stores;  // one per bucket served; summed
};

// warmfs_build_info, the process's resident memory and start time.
metrics::Collector process_collector();
metrics::Collector mount_collector(MountMetricsSources sources);
metrics::Collector serve_collector(ServeMetricsSources sources);
// warmfs_credentials_info{source} and, for credentials that expire,
// warmfs_credentials_expiry_timestamp_seconds. provider must outlive the endpoint.
metrics::Collector credentials_collector(const s3::CredentialProvider& provider);

// A registry and the server that answers /metrics from it.
class MetricsEndpoint {
 public:
  // listen: as --metrics-listen (checked again here). Fails with a one-line message naming
  // the address (in use, not an address). The collectors are added before it serves.
  static Result<std::unique_ptr<MetricsEndpoint>> start(const std::string& listen,
                                                        std::vector<metrics::Collector> collectors);
  metrics::Registry& registry() { return *registry_; }
  uint16_t port() const { return server_->port(); }

 private:
  MetricsEndpoint() = default;
  std::unique_ptr<metrics::Registry> registry_;
  std::unique_ptr<metrics::MetricsServer> server_;  // after registry_: stopped first
};

}  // namespace warmfs::cli

// warmfs plan: what feeding a training job from a dataset will cost, per epoch, four ways
// (streaming, per-node caches, a shared cache server, a staged copy), from a short probe of
// the bucket and the local disk and the arithmetic of plan/plan_model.h (docs/loaders.md).
#pragma once

#include <cstdint>
#include <string>

namespace warmfs::cli {

struct PlanArgs {
  // s3://BUCKET[/PREFIX], a warmfs mountpoint, or a snapshot file (docs/snapshots.md).
  std::string source;
  std::string snapshot;  // --snapshot FILE|NAME: the dataset is this snapshot of the source
  std::string endpoint;
  std::string region;
  std::string profile;
  bool no_sign_request = false;
  bool path_style = false;
  uint32_t epochs = 1;
  uint32_t jobs = 1;
  uint32_t nodes = 1;
  uint64_t memory_cache_bytes = 1ull << 30;   // each node's --memory-cache-size (mount's default)
  uint64_t cache_size_bytes = 0;              // each node's SSD tier; 0: none
  uint64_t server_cache_bytes = 0;            // a shared cache server's SSD tier; 0: none
  uint64_t server_memory_bytes = 1ull << 30;  // its --memory-cache-size (serve's default)
  uint64_t server_rate_bytes = 0;             // what it serves a second; 0: the disk's rate
  std::string cache_dir = "/var/tmp";         // where the disk is probed
  uint32_t inflight = 64;                     // requests in flight (the mount's fetch threads)
  double probe_seconds = 2;                   // length of the bucket burst
  uint64_t probe_disk_bytes = 64ull << 20;
  bool json = false;
};

int run_plan(const PlanArgs& args);

}  // namespace warmfs::cli

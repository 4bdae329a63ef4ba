// The warmfs subcommands. Each returns the process exit status: 0 success, 1 failure
// (with one "warmfs: ..." line on stderr), 2 usage error.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "warmfs/result.h"

namespace warmfs::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct MountArgs {
  std::string source;  // s3://bucket[/prefix]
  std::string mountpoint;
  std::string endpoint;
  std::string region;
  std::string profile;
  bool no_sign_request = false;
  bool path_style = false;
  uint64_t memory_cache_bytes = 0;
  double metadata_ttl_sec = 60;
  bool read_only = false;
  bool object_attrs = false;  // --object-attrs: HEAD objects for their attributes (read-only too)
  bool no_object_attrs = false;     // --no-object-attrs: no HEAD per object for its attributes
  bool readdirplus_always = false;  // --readdirplus-always: attributes in every listing reply
  bool allow_other = false;
  int64_t uid = -1;  // -1: the mounting user
  int64_t gid = -1;
  // Shown for every file and directory; without --file-mode/--dir-mode: 0644/0755, or
  // 0444/0555 with --read-only.
  uint32_t file_mode = 0;
  uint32_t dir_mode = 0;
  std::string log_level = "info";
  std::string log_file;
  bool foreground = false;
  std::string cache_dir;              // empty: memory only
  uint64_t cache_size_bytes = 0;      // 0: the default (see mount_command.cc)
  double cache_ttl_sec = 0;           // 0: until space is needed
  std::vector<std::string> prefetch;  // paths to warm right after mounting
  std::string staging_dir;            // files being written; empty: CACHE_DIR/staging or /var/tmp
  uint32_t upload_threads = 4;        // parts uploaded at once
  // Cache servers (`warmfs serve`) under memory, and their token (cli/remote_tier.h).
  std::vector<std::string> cache_servers;  // base URLs; empty: none
  std::string token_file;
  bool insecure_no_token = false;  // talk to servers without a token (tests, trusted networks)
  std::string cache_server_ca;     // CA bundle for https servers; empty: the system's
  std::string metrics_listen;      // HOST:PORT of /metrics (cli/metrics_setup.h); empty: none
  std::string snapshot;            // manifest file to serve (cli/snapshot_command.h); read-only
  bool snapshot_versions = false;  // read the snapshot's version ids, not the keys' latest
  std::string branch;              // with snapshot: mount this writable branch of it
  // --restartable: a supervisor keeps the mount and restarts its daemon (cli/supervisor.h).
  bool restartable = false;
  // Set by the supervisor for the daemon it runs: the mounted session to serve, the state
  // directory one daemon leaves the next, and where to report readiness.
  int session_fd = -1;
  std::string session_state;
  std::string session_mountpoint;  // resolved
  int ready_fd = -1;
};

int run_mount(const MountArgs& args);
int run_unmount(const std::string& mountpoint);
// warmfs restart: a new daemon for a --restartable mount, which stays mounted (supervisor.cc).
int run_restart(const std::string& mountpoint);
int run_stats(const std::string& mountpoint, bool json);
// The "credentials" line of the stats tables (mounts and cache servers), from the stats JSON;
// nothing when it has no "credentials" member.
void print_credentials_line(const nlohmann::json& stats);
// Reads paths (relative to the mountpoint, or absolute inside it) through the mount.
int run_prefetch(const std::string& mountpoint, const std::vector<std::string>& paths,
                 unsigned threads);
// Publishes an order file (paths relative to the mount, one per line, optionally with
// OFFSET LENGTH; "-" reads stdin) through MOUNT/.warmfs/order, and returns (order_command.cc).
int run_publish_order(const std::string& mountpoint, const std::string& order_file);
// warmfs stats --epochs: the epochs' table, or their JSON array with json.
int run_epochs(const std::string& mountpoint, bool json);

// Reads an attribute warmfs serves on a mount's root (user.warmfs.stats, ...); empty on
// failure (errno set).
std::string read_xattr(const std::string& path, const char* name);

// Prints "warmfs: <message>" to stderr.
void print_error(const std::string& message);

}  // namespace warmfs::cli

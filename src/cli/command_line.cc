// warmfs's subcommands and their options (cli/command_line.h).
#include "cli/command_line.h"

#include "common/listen_address.h"
#include "common/sizes.h"

namespace warmfs::cli {

uint64_t size_option(const char* flag, const std::string& text, const char* wanted, uint64_t min) {
  auto v = parse_size(text);
  if (!v || *v < min) throw UsageError{std::string(flag) + ": '" + text + "' is not " + wanted};
  return *v;
}

double duration_option(const char* flag, const std::string& text, const char* wanted) {
  auto v = parse_duration_seconds(text);
  if (!v) throw UsageError{std::string(flag) + ": '" + text + "' is not " + wanted};
  return *v;
}

uint32_t parse_mode(const std::string& text, const char* what) {
  size_t pos = 0;
  unsigned long v = 0;
  try {
    v = std::stoul(text, &pos, 8);
  } catch (...) {
    pos = 0;
  }
  if (pos != text.size() || text.empty() || v > 07777) {
    throw UsageError{std::string(what) + " must be an octal mode such as 0644, not '" + text + "'"};
  }
  return static_cast<uint32_t>(v);
}

namespace {

// --metrics-listen: checked here so a typo is a usage error, not a failed mount.
void check_metrics_listen(const std::string& text) {
  if (text.empty()) return;
  auto a = parse_listen_address(text, kMetricsListenRules);
  if (!a.is_ok()) throw UsageError{a.status().message()};
}

// --cache-size and --cache-ttl of mount and serve: left at 0 (the defaults) when not given.
void ssd_tier_options(const std::string& size, const std::string& ttl, uint64_t* size_bytes,
                      double* ttl_sec) {
  if (!size.empty()) *size_bytes = size_option("--cache-size", size, "a size like 100G");
  if (!ttl.empty()) *ttl_sec = duration_option("--cache-ttl", ttl, "a duration like 30m or 1h");
}

}  // namespace

void MountCommand::register_options(CLI::App& parent) {
  app = parent.add_subcommand("mount", "Mount s3://BUCKET[/PREFIX] at MOUNTPOINT");
  app->add_option("source", args.source, "s3://BUCKET[/PREFIX]")->required();
  app->add_option("mountpoint", args.mountpoint, "An existing, empty directory")->required();
  app->add_option("--endpoint", args.endpoint,
                  "S3 endpoint URL (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, or AWS's "
                  "regional endpoint)");
  app->add_option("--region", args.region,
                  "Region for signing (default: AWS_REGION, the profile, us-east-1)");
  app->add_option("--profile", args.profile, "Profile in ~/.aws/credentials and ~/.aws/config");
  app->add_flag("--no-sign-request", args.no_sign_request,
                "Send requests unsigned (public buckets)");
  app->add_flag("--path-style", args.path_style,
                "Use endpoint/bucket/key URLs instead of bucket.endpoint/key");
  app->add_option("--memory-cache-size", memory_cache_size,
                  "Memory for cached chunks, e.g. 512M, 4G (default 1G)");
  app->add_option("--metadata-ttl", metadata_ttl,
                  "Seconds listings and attributes are trusted (default 60)");
  app->add_flag("--read-only", args.read_only, "Refuse all writes with EROFS");
  auto* attrs_on = app->add_flag(
      "--object-attrs", args.object_attrs,
      "Read mode, owner and times from objects' metadata on a read-only mount too (one HEAD "
      "per object's first lookup; the default of writable mounts)");
  app->add_flag("--no-object-attrs", args.no_object_attrs,
                "Do not read mode, owner and times from objects' metadata: listings alone "
                "answer lookups (no HEAD per object), objects show the defaults below (the "
                "default of read-only mounts)")
      ->excludes(attrs_on);
  app->add_flag("--readdirplus-always", args.readdirplus_always,
                "Give the kernel every listed entry's attributes, for every caller (default: "
                "names only to a caller until it looks up files it listed; writable mounts "
                "always give them)");
  app->add_flag("--allow-other", args.allow_other,
                "Let other users see the mount (needs user_allow_other for non-root)");
  app->add_option("--uid", args.uid,
                  "Owner of objects that carry none (default: the mounting user)");
  app->add_option("--gid", args.gid,
                  "Group of objects that carry none (default: the mounting user's)");
  app->add_option("--file-mode", file_mode,
                  "Permission bits of files that carry none, octal (default 0644; 0444 with "
                  "--read-only)");
  app->add_option("--dir-mode", dir_mode,
                  "Permission bits of directories that carry none, octal (default 0755; 0555 "
                  "with --read-only)");
  app->add_option("--staging-dir", args.staging_dir,
                  "Where files being written are kept until uploaded (default: "
                  "CACHE_DIR/staging, else /var/tmp/warmfs-staging)");
  app->add_option("--upload-threads", args.upload_threads, "Parts uploaded at once (default 4)")
      ->check(CLI::Range(1u, 64u));
  app->add_option("--log-level", args.log_level, "debug, info, warn or error (default info)")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  app->add_option("--log-file", args.log_file,
                  "Append logs here (default: stderr in the foreground, else syslog)");
  app->add_flag("-f,--foreground", args.foreground, "Stay attached to the terminal");
  app->add_flag("--restartable", args.restartable,
                "Keep the mount across daemon restarts and crashes: `warmfs restart MOUNTPOINT` "
                "replaces the daemon (docs/reliability.md)");
  // Set by a restartable mount's supervisor for the daemon it runs (cli/supervisor.h).
  app->add_option("--session-fd", args.session_fd)->group("");
  app->add_option("--session-state", args.session_state)->group("");
  app->add_option("--session-mountpoint", args.session_mountpoint)->group("");
  app->add_option("--ready-fd", args.ready_fd)->group("");
  app->add_option("--cache-dir", args.cache_dir,
                  "SSD cache tier directory (default: none, memory only)");
  app->add_option(
      "--cache-size", cache_size,
      "Most bytes the SSD tier holds (default: 80% of the free space of --cache-dir's filesystem)");
  app->add_option(
      "--cache-ttl", cache_ttl,
      "Keep data this long after its last read, e.g. 1h (default: until space is needed)");
  app->add_option("--prefetch", args.prefetch,
                  "Paths to warm in the background after mounting (comma-separated)")
      ->delimiter(',');
  app->add_option("--cache-server", args.cache_servers,
                  "Cache servers (warmfs serve) read through below memory: URL[,URL...] "
                  "(docs/cache-server.md)")
      ->delimiter(',');
  app->add_option("--token-file", args.token_file,
                  "File holding the cache servers' token (required with --cache-server)");
  app->add_flag("--insecure-no-token", args.insecure_no_token,
                "Talk to cache servers without a token (trusted networks, tests)");
  app->add_option("--cache-server-ca", args.cache_server_ca,
                  "CA bundle that signed https cache servers' certificates");
  app->add_option("--metrics-listen", args.metrics_listen,
                  "Serve Prometheus metrics at http://HOST:PORT/metrics (docs/metrics.md)");
  app->add_option("--snapshot", args.snapshot,
                  "Serve the namespace of this snapshot (a FILE, or a NAME stored in the "
                  "bucket), read-only unless --branch (docs/snapshots.md)");
  app->add_flag("--snapshot-versions", args.snapshot_versions,
                "Read the snapshot's object versions (a snapshot taken with --versions)");
  app->add_option("--branch", args.branch,
                  "With --snapshot: mount this writable branch of the snapshot, created if new "
                  "(docs/snapshots.md#branches)");
}

void MountCommand::finish() {
  args.memory_cache_bytes =
      size_option("--memory-cache-size", memory_cache_size, "a size like 512M or 4G", 0);
  args.metadata_ttl_sec = duration_option("--metadata-ttl", metadata_ttl, "a number of seconds");
  ssd_tier_options(cache_size, cache_ttl, &args.cache_size_bytes, &args.cache_ttl_sec);
  if ((!cache_size.empty() || !cache_ttl.empty()) && args.cache_dir.empty()) {
    throw UsageError{"--cache-size and --cache-ttl need --cache-dir"};
  }
  if (!args.cache_servers.empty() && args.token_file.empty() && !args.insecure_no_token) {
    throw UsageError{
        "--cache-server needs --token-file (or --insecure-no-token on a trusted network)"};
  }
  if (!args.branch.empty() && args.snapshot.empty()) {
    throw UsageError{"--branch needs --snapshot (a branch is of a snapshot)"};
  }
  // A snapshot is read-only; a branch of one is not.
  const bool read_only = args.read_only || (!args.snapshot.empty() && args.branch.empty());
  args.file_mode =
      !file_mode.empty() ? parse_mode(file_mode, "--file-mode") : (read_only ? 0444 : 0644);
  args.dir_mode =
      !dir_mode.empty() ? parse_mode(dir_mode, "--dir-mode") : (read_only ? 0555 : 0755);
  check_metrics_listen(args.metrics_listen);
}

void UnmountCommand::register_options(CLI::App& parent) {
  app =
      parent.add_subcommand("unmount", "Unmount a warmfs mount and wait for its daemon to finish");
  app->add_option("mountpoint", mountpoint)->required();
}

void RestartCommand::register_options(CLI::App& parent) {
  app = parent.add_subcommand(
      "restart", "Replace the daemon of a --restartable mount; files stay open, reads go on");
  app->add_option("mountpoint", mountpoint)->required();
}

void StatsCommand::register_options(CLI::App& parent) {
  app = parent.add_subcommand("stats", "Counters of a mount since it started");
  app->add_option("mountpoint", mountpoint);
  app->add_flag("--json", json, "One JSON object instead of the human-readable table");
  app->add_option("--server", server,
                  "A cache server's URL (warmfs serve) instead of a mountpoint");
  app->add_option("--token-file", token_file, "The cache server's token (with --server)");
  app->add_flag("--insecure-no-token", no_token, "Ask a cache server that runs without a token");
  app->add_option("--cache-server-ca", ca, "CA bundle for an https cache server");
  app->add_flag("--epochs", epochs,
                "Per epoch: samples/s, input stall, hit ratios, bytes from the bucket");
}

void StatsCommand::finish() {
  if (server.empty() == mountpoint.empty()) {
    throw UsageError{"warmfs stats takes a MOUNTPOINT or --server URL"};
  }
}

void ServeCommand::register_options(CLI::App& parent) {
  app = parent.add_subcommand("serve",
                              "Run a cache server: one SSD cache tier shared by many mounts");
  app->add_option("--bucket", args.buckets,
                  "Buckets served, comma-separated; chunks of any other are refused")
      ->required()
      ->delimiter(',');
  app->add_option("--listen", args.listen,
                  "HOST:PORT to listen on (default 127.0.0.1:7070; 0.0.0.0:PORT for all)");
  app->add_option("--endpoint", args.endpoint, "S3 endpoint URL, as for mount");
  app->add_option("--region", args.region, "Region for signing, as for mount");
  app->add_option("--profile", args.profile, "Profile in ~/.aws/credentials and ~/.aws/config");
  app->add_flag("--no-sign-request", args.no_sign_request,
                "Send requests unsigned (public buckets)");
  app->add_flag("--path-style", args.path_style, "Use endpoint/bucket/key URLs");
  app->add_option("--cache-dir", args.cache_dir, "SSD cache tier directory (kept across restarts)")
      ->required();
  app->add_option("--cache-size", cache_size,
                  "Most bytes the SSD tier holds (default: 80% of the free space)");
  app->add_option(
      "--cache-ttl", cache_ttl,
      "Keep data this long after its last read, e.g. 12h (default: until space is needed)");
  app->add_option("--memory-cache-size", memory, "Memory for hot chunks (default 1G)");
  app->add_option(
      "--version-check-interval", version_check,
      "Seconds a checked object version is trusted before the server HEADs it again (default 60)");
  app->add_option("--token-file", args.token_file,
                  "File holding the token clients must send (required)");
  app->add_flag("--insecure-no-token", args.insecure_no_token,
                "Serve without a token (trusted networks, tests)");
  app->add_option("--tls-cert", args.tls_cert, "PEM certificate (chain): serve https");
  app->add_option("--tls-key", args.tls_key, "PEM key of --tls-cert");
  app->add_option("--log-level", args.log_level, "debug, info, warn or error (default info)")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  app->add_option("--log-file", args.log_file, "Append logs here (default: stderr)");
  app->add_option("--metrics-listen", args.metrics_listen,
                  "Serve Prometheus metrics at http://HOST:PORT/metrics (docs/metrics.md)");
}

void ServeCommand::finish() {
  ssd_tier_options(cache_size, cache_ttl, &args.cache_size_bytes, &args.cache_ttl_sec);
  args.memory_cache_bytes =
      size_option("--memory-cache-size", memory, "a size of at least 16M", 16 * kMiB);
  args.version_check_sec = duration_option("--version-check-interval", version_check, "a duration");
  check_metrics_listen(args.metrics_listen);
  if (!args.insecure_no_token && args.token_file.empty()) {
    throw UsageError{
        "warmfs serve needs --token-file (or --insecure-no-token on a trusted network)"};
  }
}

void PrefetchCommand::register_options(CLI::App& parent) {
  app = parent.add_subcommand("prefetch", "Warm files or directories of a mount into its caches");
  app->add_option("mountpoint", mountpoint)->required();
  app->add_option("paths", paths, "Files or directories, relative to the mountpoint");
  app->add_option("--order", order,
                  "Publish FILE as the order to prefetch in (docs/loaders.md) and return");
  app->add_option("-j,--threads", threads, "Files read in parallel (default 8)")
      ->check(CLI::Range(1u, 256u));
}

void PrefetchCommand::finish() {
  if (paths.empty() == order.empty())
    throw UsageError{"warmfs prefetch takes PATHS or --order FILE"};
}

void SnapshotCommand::register_options(CLI::App& parent) {
  app = parent.add_subcommand(
      "snapshot", "Write the namespace of s3://BUCKET[/PREFIX] or of a mount to a FILE or --name");
  app->add_option("source", args.source, "s3://BUCKET[/PREFIX], or a warmfs mountpoint")
      ->required();
  app->add_option("file", args.file, "The snapshot file to write");
  app->add_option("--name", args.name,
                  "Store the snapshot in the bucket under this name (docs/snapshots.md)");
  app->add_option("--endpoint", args.endpoint, "S3 endpoint URL, as for mount");
  app->add_option("--region", args.region, "Region for signing, as for mount");
  app->add_option("--profile", args.profile, "Profile in ~/.aws/credentials and ~/.aws/config");
  app->add_flag("--no-sign-request", args.no_sign_request, "Send requests unsigned");
  app->add_flag("--path-style", args.path_style, "Use endpoint/bucket/key URLs");
  app->add_flag("--versions", args.versions,
                "Record each object's version id (a versioned bucket)");
  app->add_option("--concurrency", args.concurrency, "Listings in flight (default 32)");
}

void PlanCommand::register_options(CLI::App& parent) {
  app = parent.add_subcommand(
      "plan", "Predict time and bucket bytes per epoch, four ways to feed a job (docs/loaders.md)");
  app->add_option("source", args.source,
                  "s3://BUCKET[/PREFIX], a warmfs mountpoint, or a snapshot file")
      ->required();
  app->add_option("--snapshot", args.snapshot,
                  "The dataset is this snapshot (a FILE, or a NAME stored in the bucket)");
  app->add_option("--epochs", args.epochs, "Epochs to plan for (default 1)")
      ->check(CLI::Range(1u, 100000u));
  app->add_option("--jobs", args.jobs, "Jobs reading the dataset at once, each on its own nodes")
      ->check(CLI::Range(1u, 1000u));
  app->add_option("--nodes", args.nodes, "Nodes per job; each reads its share of every epoch")
      ->check(CLI::Range(1u, 100000u));
  app->add_option("--memory-cache-size", memory_cache_size,
                  "Each node's --memory-cache-size (default 1G)");
  app->add_option("--cache-size", cache_size, "Each node's SSD tier (default: none)");
  app->add_option("--server-cache-size", server_cache_size,
                  "SSD tier of one cache server shared by all nodes (default: none)");
  app->add_option("--server-memory-size", server_memory_size,
                  "That server's --memory-cache-size (default 1G)");
  app->add_option("--server-rate", server_rate,
                  "Bytes a second that server serves all nodes, e.g. 2G (default: the disk's)");
  app->add_option("--cache-dir", args.cache_dir,
                  "Where to measure the local disk (default /var/tmp)");
  app->add_option("--inflight", args.inflight, "Requests in flight in the probe (default 64)")
      ->check(CLI::Range(1u, 256u));
  app->add_option("--probe-seconds", probe_seconds,
                  "Length of the bucket probe's burst (default 2)")
      ->check(CLI::Range(0.1, 600.0));
  app->add_option("--endpoint", args.endpoint, "S3 endpoint URL, as for mount");
  app->add_option("--region", args.region, "Region for signing, as for mount");
  app->add_option("--profile", args.profile, "Profile in ~/.aws/credentials and ~/.aws/config");
  app->add_flag("--no-sign-request", args.no_sign_request, "Send requests unsigned");
  app->add_flag("--path-style", args.path_style, "Use endpoint/bucket/key URLs");
  app->add_flag("--json", args.json, "Print JSON");
}

void PlanCommand::finish() {
  args.memory_cache_bytes =
      size_option("--memory-cache-size", memory_cache_size, "a size of at least 16M", 16 * kMiB);
  // The SSD tier holds whole 64 MiB regions: less than one is refused by mount and serve.
  if (!cache_size.empty()) {
    args.cache_size_bytes =
        size_option("--cache-size", cache_size, "a size of at least 64M (one region)", 64 * kMiB);
  }
  if (!server_cache_size.empty()) {
    args.server_cache_bytes = size_option("--server-cache-size", server_cache_size,
                                          "a size of at least 64M (one region)", 64 * kMiB);
  }
  args.server_memory_bytes =
      size_option("--server-memory-size", server_memory_size, "a size of at least 16M", 16 * kMiB);
  if (!server_rate.empty()) {
    args.server_rate_bytes =
        size_option("--server-rate", server_rate, "a rate in bytes a second, like 2G");
  }
  args.probe_seconds = probe_seconds;
}

}  // namespace warmfs::cli

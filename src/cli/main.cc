// warmfs: mount an S3 bucket as a filesystem for training jobs.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/mount_options.h"
#include "cli/serve_command.h"
#include "cli/snapshot_command.h"
#include "common/listen_address.h"
#include "common/sizes.h"

namespace {

using warmfs::cli::kExitUsage;

struct UsageError {
  std::string message;
};

// --metrics-listen: checked here so a typo is a usage error, not a failed mount.
void check_metrics_listen(const std::string& text) {
  if (text.empty()) return;
  auto a = warmfs::parse_listen_address(text, warmfs::kMetricsListenRules);
  if (!a.is_ok()) throw UsageError{a.status().message()};
}

// A size flag's value ("512M", "100G"), at least min; else a usage error naming the flag and
// what it wants.
uint64_t size_option(const char* flag, const std::string& text, const char* wanted,
                     uint64_t min = 1) {
  auto v = warmfs::parse_size(text);
  if (!v || *v < min) throw UsageError{std::string(flag) + ": '" + text + "' is not " + wanted};
  return *v;
}

// A duration flag's value in seconds ("90", "30m", "1h"); else a usage error.
double duration_option(const char* flag, const std::string& text, const char* wanted) {
  auto v = warmfs::parse_duration_seconds(text);
  if (!v) throw UsageError{std::string(flag) + ": '" + text + "' is not " + wanted};
  return *v;
}

// --cache-size and --cache-ttl of mount and serve: left at 0 (the defaults) when not given.
void ssd_tier_options(const std::string& size, const std::string& ttl, uint64_t* size_bytes,
                      double* ttl_sec) {
  if (!size.empty()) *size_bytes = size_option("--cache-size", size, "a size like 100G");
  if (!ttl.empty()) *ttl_sec = duration_option("--cache-ttl", ttl, "a duration like 30m or 1h");
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

}  // namespace

int main(int argc, char** argv) {
  // As /sbin/mount.warmfs or /sbin/mount.fuse.warmfs: mount(8)'s helper (cli/mount_options.h).
  if (argc > 0 && warmfs::cli::is_mount_helper_name(argv[0]))
    return warmfs::cli::run_mount_helper(argc, argv);
  CLI::App app{"warmfs: mount an S3 bucket as a filesystem, cached in memory, for training jobs"};
  app.set_version_flag("--version", std::string("warmfs ") + WARMFS_VERSION);
  app.require_subcommand(1);

  warmfs::cli::MountArgs m;
  std::string memory_cache_size = "1G";
  std::string metadata_ttl = "60";
  std::string file_mode, dir_mode;
  auto* mount = app.add_subcommand("mount", "Mount s3://BUCKET[/PREFIX] at MOUNTPOINT");
  mount->add_option("source", m.source, "s3://BUCKET[/PREFIX]")->required();
  mount->add_option("mountpoint", m.mountpoint, "An existing, empty directory")->required();
  mount->add_option("--endpoint", m.endpoint,
                    "S3 endpoint URL (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, or AWS's "
                    "regional endpoint)");
  mount->add_option("--region", m.region,
                    "Region for signing (default: AWS_REGION, the profile, us-east-1)");
  mount->add_option("--profile", m.profile, "Profile in ~/.aws/credentials and ~/.aws/config");
  mount->add_flag("--no-sign-request", m.no_sign_request,
                  "Send requests unsigned (public buckets)");
  mount->add_flag("--path-style", m.path_style,
                  "Use endpoint/bucket/key URLs instead of bucket.endpoint/key");
  mount->add_option("--memory-cache-size", memory_cache_size,
                    "Memory for cached chunks, e.g. 512M, 4G (default 1G)");
  mount->add_option("--metadata-ttl", metadata_ttl,
                    "Seconds listings and attributes are trusted (default 60)");
  mount->add_flag("--read-only", m.read_only, "Refuse all writes with EROFS");
  mount->add_flag("--no-object-attrs", m.no_object_attrs,
                  "Do not read mode, owner and mtime from objects' metadata: listings alone "
                  "answer lookups (no HEAD per object), objects show the defaults below");
  mount->add_flag("--allow-other", m.allow_other,
                  "Let other users see the mount (needs user_allow_other for non-root)");
  mount->add_option("--uid", m.uid,
                    "Owner of objects that carry none (default: the mounting user)");
  mount->add_option("--gid", m.gid,
                    "Group of objects that carry none (default: the mounting user's)");
  mount->add_option("--file-mode", file_mode,
                    "Permission bits of files that carry none, octal (default 0644; 0444 with "
                    "--read-only)");
  mount->add_option("--dir-mode", dir_mode,
                    "Permission bits of directories that carry none, octal (default 0755; 0555 "
                    "with --read-only)");
  mount->add_option("--staging-dir", m.staging_dir,
                    "Where files being written are kept until uploaded (default: "
                    "CACHE_DIR/staging, else /var/tmp/warmfs-staging)");
  mount->add_option("--upload-threads", m.upload_threads, "Parts uploaded at once (default 4)")
      ->check(CLI::Range(1u, 64u));
  mount->add_option("--log-level", m.log_level, "debug, info, warn or error (default info)")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  mount->add_option("--log-file", m.log_file,
                    "Append logs here (default: stderr in the foreground, else syslog)");
  mount->add_flag("-f,--foreground", m.foreground, "Stay attached to the terminal");
  std::string cache_size, cache_ttl;
  mount->add_option("--cache-dir", m.cache_dir,
                    "SSD cache tier directory (default: none, memory only)");
  mount->add_option(
      "--cache-size", cache_size,
      "Most bytes the SSD tier holds (default: 80% of the free space of --cache-dir's filesystem)");
  mount->add_option(
      "--cache-ttl", cache_ttl,
      "Keep data this long after its last read, e.g. 1h (default: until space is needed)");
  mount
      ->add_option("--prefetch", m.prefetch,
                   "Paths to warm in the background after mounting (comma-separated)")
      ->delimiter(',');
  mount
      ->add_option("--cache-server", m.cache_servers,
                   "Cache servers (warmfs serve) read through below memory: URL[,URL...] "
                   "(docs/cache-server.md)")
      ->delimiter(',');
  mount->add_option("--token-file", m.token_file,
                    "File holding the cache servers' token (required with --cache-server)");
  mount->add_flag("--insecure-no-token", m.insecure_no_token,
                  "Talk to cache servers without a token (trusted networks, tests)");
  mount->add_option("--cache-server-ca", m.cache_server_ca,
                    "CA bundle that signed https cache servers' certificates");
  mount->add_option("--metrics-listen", m.metrics_listen,
                    "Serve Prometheus metrics at http://HOST:PORT/metrics (docs/metrics.md)");
  mount->add_option("--snapshot", m.snapshot,
                    "Serve the namespace of this snapshot (a FILE, or a NAME stored in the "
                    "bucket), read-only (docs/snapshots.md)");
  mount->add_flag("--snapshot-versions", m.snapshot_versions,
                  "Read the snapshot's object versions (a snapshot taken with --versions)");

  warmfs::cli::SnapshotArgs sn;
  auto* snapshot = app.add_subcommand(
      "snapshot", "Write the namespace of s3://BUCKET[/PREFIX] or of a mount to a FILE or --name");
  snapshot->add_option("source", sn.source, "s3://BUCKET[/PREFIX], or a warmfs mountpoint")
      ->required();
  snapshot->add_option("file", sn.file, "The snapshot file to write");
  snapshot->add_option("--name", sn.name,
                       "Store the snapshot in the bucket under this name (docs/snapshots.md)");
  snapshot->add_option("--endpoint", sn.endpoint, "S3 endpoint URL, as for mount");
  snapshot->add_option("--region", sn.region, "Region for signing, as for mount");
  snapshot->add_option("--profile", sn.profile, "Profile in ~/.aws/credentials and ~/.aws/config");
  snapshot->add_flag("--no-sign-request", sn.no_sign_request, "Send requests unsigned");
  snapshot->add_flag("--path-style", sn.path_style, "Use endpoint/bucket/key URLs");
  snapshot->add_flag("--versions", sn.versions,
                     "Record each object's version id (a versioned bucket)");
  snapshot->add_option("--concurrency", sn.concurrency, "Listings in flight (default 32)");

  std::string unmount_point;
  auto* unmount =
      app.add_subcommand("unmount", "Unmount a warmfs mount and wait for its daemon to finish");
  unmount->add_option("mountpoint", unmount_point)->required();

  std::string stats_point;
  bool stats_json = false;
  auto* stats = app.add_subcommand("stats", "Counters of a mount since it started");
  stats->add_option("mountpoint", stats_point);
  stats->add_flag("--json", stats_json, "One JSON object instead of the human-readable table");
  std::string stats_server, stats_token_file, stats_ca;
  bool stats_no_token = false;
  stats->add_option("--server", stats_server,
                    "A cache server's URL (warmfs serve) instead of a mountpoint");
  stats->add_option("--token-file", stats_token_file, "The cache server's token (with --server)");
  stats->add_flag("--insecure-no-token", stats_no_token,
                  "Ask a cache server that runs without a token");
  stats->add_option("--cache-server-ca", stats_ca, "CA bundle for an https cache server");
  bool stats_epochs = false;
  stats->add_flag("--epochs", stats_epochs,
                  "Per epoch: samples/s, input stall, hit ratios, bytes from the bucket");

  warmfs::cli::ServeArgs sv;
  std::string serve_cache_size, serve_cache_ttl, serve_memory = "1G", serve_version_check = "60";
  auto* serve =
      app.add_subcommand("serve", "Run a cache server: one SSD cache tier shared by many mounts");
  serve
      ->add_option("--bucket", sv.buckets,
                   "Buckets served, comma-separated; chunks of any other are refused")
      ->required()
      ->delimiter(',');
  serve->add_option("--listen", sv.listen,
                    "HOST:PORT to listen on (default 127.0.0.1:7070; 0.0.0.0:PORT for all)");
  serve->add_option("--endpoint", sv.endpoint, "S3 endpoint URL, as for mount");
  serve->add_option("--region", sv.region, "Region for signing, as for mount");
  serve->add_option("--profile", sv.profile, "Profile in ~/.aws/credentials and ~/.aws/config");
  serve->add_flag("--no-sign-request", sv.no_sign_request,
                  "Send requests unsigned (public buckets)");
  serve->add_flag("--path-style", sv.path_style, "Use endpoint/bucket/key URLs");
  serve->add_option("--cache-dir", sv.cache_dir, "SSD cache tier directory (kept across restarts)")
      ->required();
  serve->add_option("--cache-size", serve_cache_size,
                    "Most bytes the SSD tier holds (default: 80% of the free space)");
  serve->add_option(
      "--cache-ttl", serve_cache_ttl,
      "Keep data this long after its last read, e.g. 12h (default: until space is needed)");
  serve->add_option("--memory-cache-size", serve_memory, "Memory for hot chunks (default 1G)");
  serve->add_option(
      "--version-check-interval", serve_version_check,
      "Seconds a checked object version is trusted before the server HEADs it again (default 60)");
  serve->add_option("--token-file", sv.token_file,
                    "File holding the token clients must send (required)");
  serve->add_flag("--insecure-no-token", sv.insecure_no_token,
                  "Serve without a token (trusted networks, tests)");
  serve->add_option("--tls-cert", sv.tls_cert, "PEM certificate (chain): serve https");
  serve->add_option("--tls-key", sv.tls_key, "PEM key of --tls-cert");
  serve->add_option("--log-level", sv.log_level, "debug, info, warn or error (default info)")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  serve->add_option("--log-file", sv.log_file, "Append logs here (default: stderr)");
  serve->add_option("--metrics-listen", sv.metrics_listen,
                    "Serve Prometheus metrics at http://HOST:PORT/metrics (docs/metrics.md)");

  std::string prefetch_point;
  std::vector<std::string> prefetch_paths;
  unsigned prefetch_threads = 8;
  auto* prefetch =
      app.add_subcommand("prefetch", "Warm files or directories of a mount into its caches");
  prefetch->add_option("mountpoint", prefetch_point)->required();
  prefetch->add_option("paths", prefetch_paths, "Files or directories, relative to the mountpoint");
  std::string prefetch_order;
  prefetch->add_option("--order", prefetch_order,
                       "Publish FILE as the order to prefetch in (docs/loaders.md) and return");
  prefetch->add_option("-j,--threads", prefetch_threads, "Files read in parallel (default 8)")
      ->check(CLI::Range(1u, 256u));

  try {
    app.parse(argc, argv);
    if (mount->parsed()) {
      m.memory_cache_bytes =
          size_option("--memory-cache-size", memory_cache_size, "a size like 512M or 4G", 0);
      m.metadata_ttl_sec = duration_option("--metadata-ttl", metadata_ttl, "a number of seconds");
      ssd_tier_options(cache_size, cache_ttl, &m.cache_size_bytes, &m.cache_ttl_sec);
      if ((!cache_size.empty() || !cache_ttl.empty()) && m.cache_dir.empty()) {
        throw UsageError{"--cache-size and --cache-ttl need --cache-dir"};
      }
      if (!m.cache_servers.empty() && m.token_file.empty() && !m.insecure_no_token) {
        throw UsageError{
            "--cache-server needs --token-file (or --insecure-no-token on a trusted network)"};
      }
      const bool read_only = m.read_only || !m.snapshot.empty();  // a snapshot is read-only
      m.file_mode =
          !file_mode.empty() ? parse_mode(file_mode, "--file-mode") : (read_only ? 0444 : 0644);
      m.dir_mode =
          !dir_mode.empty() ? parse_mode(dir_mode, "--dir-mode") : (read_only ? 0555 : 0755);
      check_metrics_listen(m.metrics_listen);
    }
    if (prefetch->parsed() && prefetch_paths.empty() == prefetch_order.empty()) {
      throw UsageError{"warmfs prefetch takes PATHS or --order FILE"};
    }
    if (stats->parsed() && stats_server.empty() == stats_point.empty()) {
      throw UsageError{"warmfs stats takes a MOUNTPOINT or --server URL"};
    }
    if (serve->parsed()) {
      ssd_tier_options(serve_cache_size, serve_cache_ttl, &sv.cache_size_bytes, &sv.cache_ttl_sec);
      sv.memory_cache_bytes = size_option("--memory-cache-size", serve_memory,
                                          "a size of at least 16M", 16 * warmfs::kMiB);
      sv.version_check_sec =
          duration_option("--version-check-interval", serve_version_check, "a duration");
      check_metrics_listen(sv.metrics_listen);
      if (!sv.insecure_no_token && sv.token_file.empty()) {
        throw UsageError{
            "warmfs serve needs --token-file (or --insecure-no-token on a trusted network)"};
      }
    }
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion&) {
    std::printf("warmfs %s\n", WARMFS_VERSION);
    return 0;
  } catch (const CLI::ParseError& e) {
    // Help for a subcommand arrives as CallForHelp of the subcommand too.
    if (e.get_exit_code() == 0) {
      std::fputs(app.help().c_str(), stdout);
      return 0;
    }
    warmfs::cli::print_error(std::string(e.what()) + " (see warmfs --help)");
    return kExitUsage;
  } catch (const UsageError& e) {
    warmfs::cli::print_error(e.message);
    return kExitUsage;
  }

  if (mount->parsed()) return warmfs::cli::run_mount(m);
  if (unmount->parsed()) return warmfs::cli::run_unmount(unmount_point);
  if (snapshot->parsed()) return warmfs::cli::run_snapshot(sn);
  if (stats->parsed() && !stats_server.empty()) {
    return warmfs::cli::run_server_stats(stats_server, stats_token_file, stats_no_token, stats_ca,
                                         stats_json);
  }
  if (stats->parsed() && stats_epochs) return warmfs::cli::run_epochs(stats_point, stats_json);
  if (stats->parsed()) return warmfs::cli::run_stats(stats_point, stats_json);
  if (serve->parsed()) return warmfs::cli::run_serve(sv);
  if (prefetch->parsed() && !prefetch_order.empty())
    return warmfs::cli::run_publish_order(prefetch_point, prefetch_order);
  if (prefetch->parsed())
    return warmfs::cli::run_prefetch(prefetch_point, prefetch_paths, prefetch_threads);
  return kExitUsage;
}

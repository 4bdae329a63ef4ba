// warmfs mount: check the bucket answers, build the daemon's object graph (its caches from
// cli/tier_setup.h), then mount and serve, in the background unless --foreground
// (cli/daemon.h reports readiness to the waiting parent).
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "cache/kv_db.h"
#include "cli/commands.h"
#include "cli/daemon.h"
#include "cli/metrics_setup.h"
#include "cli/prefetch.h"
#include "cli/remote_tier.h"
#include "cli/s3_setup.h"
#include "cli/serve_command.h"
#include "cli/snapshot_command.h"
#include "cli/snapshot_from_index.h"
#include "cli/supervisor.h"
#include "cli/tier_setup.h"
#include "common/buffer.h"
#include "common/clock.h"
#include "common/heap.h"
#include "common/log.h"
#include "common/mountinfo.h"
#include "common/service_notify.h"
#include "common/sizes.h"
#include "fs/filesystem.h"
#include "fuse/fuse_session.h"
#include "fuse/handover.h"
#include "meta/listing_index.h"
#include "meta/metadata.h"
#include "objstore/credential_chain.h"
#include "objstore/credentials.h"
#include "objstore/s3_store.h"
#include "readahead/read_path.h"
#include "upload/staged_object.h"
#include "upload/staging.h"

namespace warmfs::cli {
namespace {

// Attributes from objects' metadata cost a HEAD per object's first lookup: the default of
// writable mounts, where chmod and rsync -a keep them; a read-only mount (a dataset) answers
// from listings alone unless asked (docs/posix.md).
bool object_attrs_on(const MountArgs& a) {
  const bool read_only = a.read_only || (!a.snapshot.empty() && a.branch.empty());
  return a.object_attrs || (!a.no_object_attrs && !read_only);
}

S3Flags s3_flags(const MountArgs& a) {
  return S3Flags{a.endpoint, a.region, a.profile, a.no_sign_request, a.path_style};
}

// Gives config the credential chain's provider, for this process (see resolve_credentials).
Status attach_credentials(const MountArgs& a, S3Config& config) {
  WARMFS_ASSIGN_OR_RETURN(config.credential_provider, resolve_credentials(s3_flags(a), config));
  config.anonymous = config.credential_provider->anonymous();
  return Status::ok();
}

std::chrono::milliseconds metadata_ttl(const MountArgs& a) {
  return std::chrono::milliseconds(static_cast<int64_t>(a.metadata_ttl_sec * 1000));
}

// Everything a mounted filesystem needs, built in the process that serves it.
struct Daemon {
  std::unique_ptr<S3ObjectStore> store;
  std::unique_ptr<SnapshotStore> snapshot;  // with --snapshot: over store, for all reads
  std::unique_ptr<BranchStore> branch;      // with --branch: over snapshot and store, for all
  CacheTiers caches;
  std::unique_ptr<ReadPath> read_path;
  std::unique_ptr<KvDb> listing_db;  // with --cache-dir (not --snapshot): listings kept
  std::unique_ptr<ListingIndex> listings;
  std::unique_ptr<Metadata> meta;
  std::unique_ptr<StagingArea> staging;  // not with --read-only
  std::unique_ptr<Uploader> uploader;
  std::unique_ptr<Filesystem> fs;
};

// Files being written are staged next to the SSD tier when there is one (the same fast disk),
// else in /var/tmp (not /tmp: often a RAM disk, and files being written may exceed RAM).
std::string staging_dir_for(const MountArgs& a) {
  if (!a.staging_dir.empty()) return a.staging_dir;
  if (!a.cache_dir.empty()) return a.cache_dir + "/staging";
  return "/var/tmp/warmfs-staging";
}

// Warms --prefetch paths through the mount itself, in the background, once it answers.
void start_prefetch(const MountArgs& a, const std::string& mountpoint) {
  if (a.prefetch.empty()) return;
  std::vector<std::string> paths;
  for (const auto& p : a.prefetch) paths.push_back(mountpoint + "/" + p);
  std::thread([paths] {
    auto on_error = [](const std::string& m) { log::warn("prefetch: {}", m); };
    auto files = collect_files(paths, on_error);
    PrefetchProgress progress;
    const auto start = std::chrono::steady_clock::now();
    const uint64_t failed = prefetch_files(files, 8, progress, on_error);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    log::info("prefetch: {} files, {} in {:.1f} s, {} failed", files.size(),
              format_size(progress.bytes_done.load()), secs, failed);
  }).detach();
}

Result<Daemon> build_daemon(const MountArgs& a, const S3Source& src, S3Config config) {
  Clock& clock = SystemClock::instance();
  Daemon d;
  if (!config.credential_provider) WARMFS_RETURN_IF_ERROR(attach_credentials(a, config));
  std::shared_ptr<const s3::CredentialProvider> credentials = config.credential_provider;
  log_credentials(*credentials);  // by the daemon (its log), not by the command that starts it
  WARMFS_ASSIGN_OR_RETURN(d.store, S3ObjectStore::create(std::move(config), clock));
  ObjectStore* store = d.store.get();
  if (!a.snapshot.empty()) {
    WARMFS_ASSIGN_OR_RETURN(d.snapshot, open_snapshot_store(a.snapshot, src.bucket, src.prefix,
                                                            a.snapshot_versions, *d.store));
    store = d.snapshot.get();
  }
  if (!a.branch.empty()) {
    WARMFS_ASSIGN_OR_RETURN(d.branch, open_branch_store(a.branch, a.snapshot, a.read_only,
                                                        metadata_ttl(a), *d.snapshot, *d.store));
    store = d.branch.get();
  }
  // Where files written go: the bucket, or the branch.
  ObjectStore& writes = d.branch ? *d.branch : static_cast<ObjectStore&>(*d.store);
  ReadaheadOptions ra;
  WARMFS_ASSIGN_OR_RETURN(d.caches, build_tiers(a, ra.chunk_size, clock));
  ra.max_inflight_bytes = d.caches.readahead_bytes;
  d.read_path =
      std::make_unique<ReadPath>(*store, *d.caches.top, src.bucket, ra, d.caches.memory.get());
  MetaOptions mo;
  mo.prefix = src.prefix;
  mo.ttl = metadata_ttl(a);
  mo.dir_mtime_sec = std::chrono::system_clock::to_time_t(clock.wall_now());
  mo.object_attrs = object_attrs_on(a);
  d.meta = std::make_unique<Metadata>(*store, clock, mo);
  if (!a.cache_dir.empty() && a.snapshot.empty()) {   // docs/ssd-cache.md, "Listing index"
    auto db = KvDb::open(a.cache_dir + "/listings");  // an optimization: mount without it
    if (!db.is_ok()) log::warn("no listing index: {}", db.status().message());
    if (db.is_ok()) d.listing_db = std::move(*db);
    if (d.listing_db) {
      d.listings = std::make_unique<ListingIndex>(*d.listing_db, d.store->config().endpoint,
                                                  src.bucket, src.prefix);
      d.meta->set_listing_index(d.listings.get());
    }
  }
  FsOptions fo;
  fo.bucket = src.bucket;
  fo.prefix = src.prefix;
  fo.uid = a.uid >= 0 ? static_cast<uint32_t>(a.uid) : ::getuid();
  fo.gid = a.gid >= 0 ? static_cast<uint32_t>(a.gid) : ::getgid();
  fo.file_mode = a.file_mode;
  fo.dir_mode = a.dir_mode;
  fo.read_only = a.read_only;
  if (d.caches.remote)
    fo.extra_stats.push_back([r = d.caches.remote.get()] { return remote_tier_stats_json(*r); });
  fo.extra_stats.push_back(credentials_stats(credentials));
  fo.extra_stats.push_back(mount_source_stats(d.store->config().endpoint, d.store->config().region,
                                              d.store->config().path_style, a.snapshot,
                                              d.snapshot ? &d.snapshot->manifest() : nullptr));
  if (d.branch) fo.extra_stats.push_back(branch_stats(*d.branch));
  if (d.listings) fo.extra_stats.push_back(listing_index_stats(a.cache_dir, mo.ttl.count()));
  if (!a.read_only) {
    auto staging = StagingArea::open(staging_dir_for(a), writes);
    if (!staging.is_ok())
      return Status(staging.code(), "--staging-dir: " + staging.status().message());
    d.staging = std::move(*staging);
    if (d.staging->recovered_uploads() > 0) {
      log::info("aborted {} unfinished uploads of an earlier mount",
                d.staging->recovered_uploads());
    }
    UploaderOptions uo;
    uo.bucket = src.bucket;
    uo.threads = a.upload_threads;
    // What was just written goes to the SSD tier if there is one (a checkpoint read back
    // should not push the dataset out of memory), else to memory.
    BlockCache* write_through =
        d.caches.disk ? static_cast<BlockCache*>(d.caches.disk.get()) : d.caches.memory.get();
    d.uploader = std::make_unique<Uploader>(writes, *d.staging, write_through, clock, uo);
  }
  d.fs = std::make_unique<Filesystem>(*d.meta, *d.read_path, *d.caches.memory, d.caches.disk.get(),
                                      *store, clock, fo, d.uploader.get());
  return d;
}

// True if the mount on top at path is a warmfs mount (from /proc/self/mountinfo: no FUSE
// request, so a hung mount cannot hang the check).
bool is_warmfs_mount(const std::string& path) {
  const auto mount = top_mount_at(read_mountinfo(), path);
  return mount && mount->fstype == "fuse.warmfs";
}

FuseOptions fuse_options_for(const MountArgs& a, const S3Source& src,
                             const std::string& mountpoint) {
  FuseOptions fo;
  fo.mountpoint = mountpoint;
  fo.fsname = "s3://" + src.bucket + (src.prefix.empty() ? "" : "/" + src.prefix);
  for (char& c : fo.fsname) {
    if (c == ',' || c == ' ' || c == '\\') c = '_';  // not allowed in the mount's source field
  }
  fo.allow_other = a.allow_other;
  fo.read_only = a.read_only;
  fo.entry_timeout_sec = a.metadata_ttl_sec;
  fo.attr_timeout_sec = a.metadata_ttl_sec;
  fo.negative_timeout_sec = a.metadata_ttl_sec;
  // Names only are exact where a listing is all there is to know of an entry's type: with
  // objects' attributes read, a symlink's type is in its metadata (docs/posix.md#listings).
  fo.readdirplus_always = a.readdirplus_always || object_attrs_on(a);
  return fo;
}

int serve(const MountArgs& a, const S3Source& src, S3Config config, const std::string& mountpoint,
          int ready_fd) {
  prepare_process();
  HeapTrimmer heap_trimmer(kHeapTrimInterval);
  auto daemon = build_daemon(a, src, std::move(config));
  if (!daemon.is_ok()) {
    send_ready(ready_fd, daemon.status());
    if (ready_fd < 0) print_error(daemon.status().message());
    return kExitFailure;
  }
  std::unique_ptr<MetricsEndpoint> metrics;  // declared after daemon: stopped before it goes
  if (!a.metrics_listen.empty()) {
    const Daemon& d = *daemon;
    auto m = MetricsEndpoint::start(
        a.metrics_listen,
        {process_collector(),
         mount_collector({d.fs.get(), d.read_path.get(), d.caches.memory.get(), d.caches.disk.get(),
                          d.store.get(), d.uploader.get(), d.caches.remote.get()}),
         credentials_collector(d.store->credential_provider())});
    if (!m.is_ok()) {
      send_ready(ready_fd, m.status());
      if (ready_fd < 0) print_error(m.status().message());
      return kExitFailure;
    }
    metrics = std::move(*m);
    log::info("metrics at http://{}/metrics", a.metrics_listen);
  }
  const FuseOptions fo = fuse_options_for(a, src, mountpoint);
  bool reported = false;
  bool mounted = false;
  auto on_ready = [&](const Status& st) {
    if (st.is_ok()) {
      log::info("mounted {} at {}", fo.fsname, mountpoint);
      // Under systemd (Type=notify, --foreground): ready only now that a stat of the root
      // has been answered, so units ordered after this one find the files there. A daemon in
      // the background says nothing: its parent is what was started, and reports by exiting.
      if (a.foreground) service::notify_ready("mounted " + fo.fsname + " at " + mountpoint);
      start_prefetch(a, mountpoint);
      if (daemon->branch) daemon->branch->start_sweep();  // a writer's orphaned data objects
    } else
      log::error("mount failed: {}", st.message());
    if (!st.is_ok() && ready_fd < 0) print_error(st.message());
    send_ready(ready_fd, st);
    ready_fd = -1;
    reported = true;
    mounted = st.is_ok();
  };
  // A restartable mount's daemon serves the session its supervisor mounted (fuse/handover.h).
  int rc = a.session_fd >= 0
               ? run_fuse_on_fd(*daemon->fs, fo, a.session_fd, a.session_state, on_ready)
               : run_fuse(*daemon->fs, fo, on_ready);
  if (!reported)
    send_ready(ready_fd, Status(Errc::kInternal, "the mount ended before it was ready"));
  // The loop ended (SIGTERM, SIGINT or an unmount) and the mount is gone; what was written
  // may still be uploading.
  if (mounted && a.foreground)
    service::notify_stopping("unmounted " + mountpoint + "; finishing uploads");
  const size_t failed = daemon->fs->flush_all();
  if (failed > 0)
    log::error("{} files written here could not be uploaded before the unmount", failed);
  if (a.session_fd >= 0)
    log::info("daemon stopped; {} stays with its supervisor while mounted", mountpoint);
  else
    log::info("unmounted {}", mountpoint);
  return rc == 0 ? kExitOk : kExitFailure;
}

}  // namespace

void print_error(const std::string& message) {
  std::fprintf(stderr, "warmfs: %s\n", message.c_str());
}

int run_mount(const MountArgs& args) {
  MountArgs a = args;
  if (!a.snapshot.empty()) {
    // A snapshot mount is read-only (a branch of it is not); its file (or stored snapshot) is
    // read by the daemon.
    if (a.branch.empty()) a.read_only = true;
    auto resolved = resolve_snapshot_arg(a.snapshot);
    if (!resolved.is_ok()) {
      print_error("--snapshot " + resolved.status().message());
      return kExitFailure;
    }
    a.snapshot = *resolved;
  }
  log::Level level;
  log::parse_level(a.log_level, &level);
  log::set_level(level);
  if (!a.log_file.empty() && !log::set_file(a.log_file)) {
    print_error("cannot open log file " + a.log_file + ": " + std::strerror(errno));
    return kExitFailure;
  }
  if (a.memory_cache_bytes < 16 * kMiB) {
    print_error("--memory-cache-size must be at least 16M");
    return kExitUsage;
  }
  auto src = parse_s3_source(a.source);
  if (!src.is_ok()) {
    print_error(src.status().message());
    return kExitUsage;
  }
  if (a.session_fd >= 0) {
    // A restartable mount's daemon: its mountpoint (resolved by the supervisor) is mounted
    // and answers only once this daemon serves it.
    if (a.log_file.empty() && ::isatty(STDERR_FILENO) == 0) log::use_syslog();
    S3Config config = s3_config(s3_flags(a), src->bucket);
    return serve(a, *src, std::move(config), a.session_mountpoint, a.ready_fd);
  }
  char resolved[PATH_MAX];
  struct stat st {};
  if (::realpath(a.mountpoint.c_str(), resolved) == nullptr || ::stat(resolved, &st) != 0) {
    print_error("mountpoint " + a.mountpoint + ": " + std::strerror(errno));
    return kExitFailure;
  }
  if (!S_ISDIR(st.st_mode)) {
    print_error("mountpoint " + a.mountpoint + " is not a directory");
    return kExitFailure;
  }
  const std::string mountpoint = resolved;
  if (is_warmfs_mount(mountpoint)) {
    print_error(mountpoint + " is already a warmfs mount (warmfs unmount " + mountpoint +
                " first)");
    return kExitFailure;
  }

  S3Config config = s3_config(s3_flags(a), src->bucket);
  // The chain is resolved first: a source that fails is one clear line and no mount. Then one
  // LIST: the endpoint answers, the bucket exists, the credentials may read it.
  Status checked = attach_credentials(a, config);
  // A snapshot mount asks the bucket nothing until the first read (docs/snapshots.md).
  if (checked.is_ok() && a.snapshot.empty()) checked = check_bucket(config, src->prefix);
  if (!checked.is_ok()) {
    print_error(checked.message());
    return kExitFailure;
  }
  if (!a.cache_servers.empty()) {
    // A wrong token or a server for another bucket is a clear error now, not a slow mount.
    if (Status st = check_cache_servers(a, src->bucket); !st.is_ok()) {
      print_error(st.message());
      return kExitFailure;
    }
  }

  if (a.restartable) {
    // The supervisor mounts and runs the daemons (cli/supervisor.h).
    const FuseOptions fo = fuse_options_for(a, *src, mountpoint);
    if (a.foreground) return run_supervisor(fo, -1);
    return run_in_background(a.log_file,
                             [&](int ready_fd) { return run_supervisor(fo, ready_fd); });
  }
  if (a.foreground) return serve(a, *src, std::move(config), mountpoint, -1);
  // The daemon resolves the chain again after the fork: a provider's refresh thread does not
  // survive fork().
  config.credential_provider.reset();
  config.anonymous = a.no_sign_request;

  return run_in_background(a.log_file, [&](int ready_fd) {
    return serve(a, *src, std::move(config), mountpoint, ready_fd);
  });
}

}  // namespace warmfs::cli

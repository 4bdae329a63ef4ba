#include "cli/snapshot_command.h"

#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/commands.h"
#include "cli/s3_setup.h"
#include "cli/snapshot_from_index.h"
#include "common/clock.h"
#include "common/log.h"
#include "objstore/s3_store.h"
#include "snapshot/branch_store.h"
#include "snapshot/manifest.h"
#include "snapshot/snapshot_lister.h"
#include "snapshot/stored_snapshot.h"

namespace warmfs::cli {
namespace {

constexpr char kStatsXattr[] = "user.warmfs.stats";

// Where a snapshot comes from and goes to.
struct Plan {
  S3Source src;
  S3Flags flags;
  std::string mounted_snapshot;  // from a mount of a snapshot: its file or name
  int64_t mounted_keys = -1;     // and what the mount says it holds (-1: not said)
  int64_t mounted_created = -1;
  std::string mounted_branch;                // from a mount of a branch of that snapshot: its name
  std::optional<IndexSnapshotSource> index;  // a plain mount's listing index
};

// Branch `branch` of base as a snapshot: the branch is pinned first (so it keeps the data
// objects the snapshot reads), then its record is read from the bucket.
Result<Manifest> snapshot_of_branch(ObjectStore& store, const Manifest& base,
                                    const std::string& branch, const std::string& pin) {
  WARMFS_RETURN_IF_ERROR(pin_branch(store, base.prefix(), branch, pin));
  WARMFS_ASSIGN_OR_RETURN(BranchRecord r, load_branch_record(store, base.prefix(), branch));
  const int64_t now = std::chrono::system_clock::to_time_t(SystemClock::instance().wall_now());
  return branch_manifest(base, r, now);
}

// A pin's name: the snapshot's name, or for a file a random one.
std::string pin_name(const SnapshotArgs& a) {
  if (!a.name.empty()) return a.name;
  std::random_device rd;
  return fmt::format("file-{:08x}{:08x}", rd(), rd());
}

// The source of `warmfs snapshot MNT ...`: the mount's stats say its bucket, prefix, endpoint
// and snapshot. Flags given on the command line win over the mount's.
Result<Plan> plan_from_mount(const SnapshotArgs& a) {
  const std::string text = read_xattr(a.source, kStatsXattr);
  if (text.empty()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("'{}' is neither s3://BUCKET[/PREFIX] nor a warmfs mount ({})",
                              a.source, std::strerror(errno)));
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("bucket") || !j["bucket"].is_string()) {
    return Status(Errc::kCorrupt, a.source + ": the mount's stats do not name its bucket");
  }
  Plan p;
  if (j.contains("branch") && j["branch"].is_object()) {
    p.mounted_branch = j["branch"].value("name", "");
  }
  WARMFS_ASSIGN_OR_RETURN(p.src, parse_s3_source(j["bucket"].get<std::string>()));
  p.flags = S3Flags{a.endpoint, a.region, a.profile, a.no_sign_request, a.path_style};
  if (j.contains("source") && j["source"].is_object()) {
    const auto& s = j["source"];
    if (p.flags.endpoint.empty()) p.flags.endpoint = s.value("endpoint", "");
    if (p.flags.region.empty()) p.flags.region = s.value("region", "");
    p.flags.path_style = p.flags.path_style || s.value("path_style", false);
    p.mounted_snapshot = s.value("snapshot", "");
    p.mounted_keys = s.value("snapshot_keys", int64_t{-1});
    p.mounted_created = s.value("snapshot_created", int64_t{-1});
  }
  if (j.contains("listing_index") && j["listing_index"].is_object() && j.contains("source") &&
      j["source"].is_object()) {
    const auto& l = j["listing_index"];
    IndexSnapshotSource ix;
    ix.cache_dir = l.value("cache_dir", "");
    ix.ttl_ms = l.value("ttl_ms", int64_t{0});
    ix.endpoint = j["source"].value("endpoint", "");  // the mount's, not a flag's
    ix.bucket = p.src.bucket;
    ix.prefix = p.src.prefix;
    if (!ix.cache_dir.empty() && ix.ttl_ms > 0) p.index = std::move(ix);
  }
  return p;
}

// A plain mount's snapshot from its listing index: true with the manifest (or the error that
// stopped building it) in *manifest, false with why in *why when the index cannot tell.
bool from_index(const IndexSnapshotSource& ix, Result<Manifest>* manifest, std::string* why) {
  const auto wall = SystemClock::instance().wall_now();
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count();
  auto m = snapshot_from_index(ix, now_ms, std::chrono::system_clock::to_time_t(wall), why);
  if (!m.is_ok()) {
    *manifest = m.status();
    return true;
  }
  if (!*m) return false;
  *manifest = std::move(**m);
  return true;
}

Result<std::unique_ptr<S3ObjectStore>> open_store(const Plan& p) {
  S3Config config = s3_config(p.flags, p.src.bucket);
  WARMFS_ASSIGN_OR_RETURN(config.credential_provider, resolve_credentials(p.flags, config));
  config.anonymous = config.credential_provider->anonymous();
  return S3ObjectStore::create(std::move(config), SystemClock::instance());
}

}  // namespace

int run_snapshot(const SnapshotArgs& a) {
  if (a.file.empty() == a.name.empty()) {
    print_error("give the snapshot a FILE or a --name (one of them)");
    return kExitUsage;
  }
  if (!a.name.empty() && !is_snapshot_name(a.name)) {
    print_error("--name '" + a.name + "': a name is 1 to 128 of A-Z a-z 0-9 . _ -");
    return kExitUsage;
  }
  if (a.concurrency == 0 || a.concurrency > 1024) {
    print_error("--concurrency must be 1 to 1024");
    return kExitUsage;
  }
  Plan plan;
  if (a.source.rfind("s3://", 0) == 0) {
    auto src = parse_s3_source(a.source);
    if (!src.is_ok()) {
      print_error(src.status().message());
      return kExitUsage;
    }
    plan.src = *src;
    plan.flags = S3Flags{a.endpoint, a.region, a.profile, a.no_sign_request, a.path_style};
  } else {
    auto p = plan_from_mount(a);
    if (!p.is_ok()) {
      print_error(p.status().message());
      return p.code() == Errc::kInvalidArgument ? kExitUsage : kExitFailure;
    }
    plan = std::move(*p);
  }
  const std::string what = fmt::format("s3://{}/{}", plan.src.bucket, plan.src.prefix);

  std::unique_ptr<S3ObjectStore> store;  // made when the bucket is needed
  auto need_store = [&]() -> Status {
    if (store) return Status::ok();
    WARMFS_ASSIGN_OR_RETURN(store, open_store(plan));
    return Status::ok();
  };

  const auto started = std::chrono::steady_clock::now();
  Result<Manifest> manifest = Status(Errc::kInternal, "no manifest");
  std::string how;
  std::string how_index_missed;  // why a mount's listing index was not used
  if (!plan.mounted_snapshot.empty()) {
    // A mount of a snapshot: its manifest is the snapshot, with no listing.
    if (plan.mounted_snapshot.front() == '/') {
      manifest = read_manifest_file(plan.mounted_snapshot);
    } else if (Status st = need_store(); !st.is_ok()) {
      manifest = st;
    } else {
      manifest = load_stored_snapshot(*store, plan.src.prefix, plan.mounted_snapshot);
    }
    how = "copied from the mount's snapshot " + plan.mounted_snapshot + ", no LIST";
    // The file or name may hold another snapshot by now than the one mounted.
    if (manifest.is_ok() && plan.mounted_keys >= 0 &&
        (static_cast<int64_t>(manifest->size()) != plan.mounted_keys ||
         manifest->created_sec() != plan.mounted_created)) {
      manifest =
          Status(Errc::kPreconditionFailed,
                 fmt::format("{} is no longer the snapshot mounted at {} (remount it, or "
                             "snapshot s3://{}/{} instead)",
                             plan.mounted_snapshot, a.source, plan.src.bucket, plan.src.prefix));
    }
    // A mount of a branch: the branch's names over the snapshot's.
    if (manifest.is_ok() && !plan.mounted_branch.empty()) {
      if (Status st = need_store(); !st.is_ok()) {
        manifest = st;
      } else {
        manifest = snapshot_of_branch(*store, *manifest, plan.mounted_branch, pin_name(a));
        how = fmt::format("branch {} of snapshot {}, no LIST", plan.mounted_branch,
                          plan.mounted_snapshot);
      }
    }
  } else if (plan.index && !a.versions && from_index(*plan.index, &manifest, &how_index_missed)) {
    how = "from the listing index, 0 LIST requests";
  } else if (Status st = need_store(); !st.is_ok()) {
    manifest = st;
  } else {
    SnapshotListOptions lo;
    lo.concurrency = a.concurrency;
    lo.versions = a.versions;
    SnapshotListStats stats;
    const int64_t now = std::chrono::system_clock::to_time_t(SystemClock::instance().wall_now());
    manifest = take_snapshot(*store, plan.src.bucket, plan.src.prefix, now, lo, &stats);
    how = fmt::format("listed: {} LIST requests", stats.list_requests.load());
    if (!how_index_missed.empty()) how += " (" + how_index_missed + ")";
  }
  if (!manifest.is_ok()) {
    print_error(fmt::format("cannot snapshot {}: {}", what, manifest.status().message()));
    return kExitFailure;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  Status written = Status::ok();
  std::string where = a.file;
  if (!a.file.empty()) {
    written = write_manifest_file(*manifest, a.file);
  } else {
    written = need_store();
    if (written.is_ok()) written = store_snapshot(*store, *manifest, a.name);
    where = fmt::format("s3://{}/{} (--snapshot {})", plan.src.bucket,
                        stored_snapshot_key(plan.src.prefix, a.name), a.name);
  }
  if (!written.is_ok()) {
    print_error("cannot write the snapshot: " + written.message());
    return kExitFailure;
  }
  std::fprintf(stderr, "warmfs: snapshot of %s: %zu keys, %s, %.2f s; written to %s\n",
               what.c_str(), manifest->size(), how.c_str(), secs, where.c_str());
  return kExitOk;
}

Result<std::string> resolve_snapshot_arg(const std::string& value) {
  char abs[PATH_MAX];
  if (::realpath(value.c_str(), abs) != nullptr) return std::string(abs);
  const int err = errno;
  if (value.find('/') == std::string::npos && is_snapshot_name(value)) return value;
  return Status(Errc::kNotFound, fmt::format("{}: {}", value, std::strerror(err)));
}

Result<std::unique_ptr<SnapshotStore>> open_snapshot_store(const std::string& file,
                                                           const std::string& bucket,
                                                           const std::string& prefix, bool versions,
                                                           ObjectStore& bucket_store) {
  auto manifest = !file.empty() && file.front() == '/'
                      ? read_manifest_file(file)
                      : load_stored_snapshot(bucket_store, prefix, file);
  if (!manifest.is_ok()) {
    return Status(manifest.code(), "--snapshot " + manifest.status().message());
  }
  if (manifest->bucket() != bucket || manifest->prefix() != prefix) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("--snapshot {} is of s3://{}/{}, not of s3://{}/{}", file,
                              manifest->bucket(), manifest->prefix(), bucket, prefix));
  }
  if (versions && !manifest->has_versions()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("--snapshot-versions: {} was taken without version ids (take it "
                              "with warmfs snapshot --versions)",
                              file));
  }
  auto shared = std::make_shared<const Manifest>(std::move(*manifest));
  return std::make_unique<SnapshotStore>(bucket_store, std::move(shared), versions);
}

Result<std::unique_ptr<BranchStore>> open_branch_store(const std::string& name,
                                                       const std::string& snapshot, bool read_only,
                                                       std::chrono::milliseconds refresh_after,
                                                       SnapshotStore& snapshot_store,
                                                       ObjectStore& bucket_store) {
  if (!is_snapshot_name(name)) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("--branch '{}': a name is 1 to 128 of A-Z a-z 0-9 . _ -", name));
  }
  const auto started = std::chrono::steady_clock::now();
  BranchOptions o;
  o.name = name;
  o.snapshot = snapshot;
  o.writer = !read_only;
  o.refresh_after = refresh_after;
  o.clock = &SystemClock::instance();
  o.now_sec = std::chrono::system_clock::to_time_t(SystemClock::instance().wall_now());
  auto b = BranchStore::open(bucket_store, snapshot_store, o);
  if (!b.is_ok()) return Status(b.code(), "--branch " + b.status().message());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  log::info("branch '{}' of snapshot {}: {} in {:.1f} ms ({} changed names{})", name, snapshot,
            (*b)->created() ? "created" : "opened", ms, (*b)->record().entries.size(),
            read_only ? ", read-only" : "");
  return b;
}

std::function<std::string()> branch_stats(const BranchStore& branch) {
  return [&branch] {
    const BranchRecord r = branch.record();
    nlohmann::json b = {{"name", r.branch}, {"entries", r.entries.size()}, {"writer", r.writer}};
    if (auto s = branch.sweep_result()) {
      b["orphans_swept"] = {{"data_objects", s->data_objects},
                            {"orphans", s->orphans},
                            {"deleted", s->deleted},
                            {"deleted_bytes", s->deleted_bytes},
                            {"pinned", s->pinned}};
    }
    return nlohmann::json{{"branch", b}}.dump();
  };
}

std::function<std::string()> mount_source_stats(std::string endpoint, std::string region,
                                                bool path_style, std::string snapshot,
                                                const Manifest* manifest) {
  nlohmann::json s = {{"endpoint", endpoint}, {"region", region}, {"path_style", path_style}};
  if (!snapshot.empty()) s["snapshot"] = snapshot;
  if (manifest != nullptr) {
    s["snapshot_keys"] = manifest->size();
    s["snapshot_created"] = manifest->created_sec();
  }
  std::string text = nlohmann::json{{"source", s}}.dump();
  return [text] { return text; };
}

}  // namespace warmfs::cli

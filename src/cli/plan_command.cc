// warmfs plan (cli/plan_command.h): finds the dataset (a listing, a mount's source, or a
// snapshot), probes the bucket and the disk (plan/plan_probe.h), and prints the arithmetic of
// plan/plan_model.h as a table or JSON.
#include "cli/plan_command.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/s3_setup.h"
#include "cli/snapshot_command.h"
#include "cli/tier_setup.h"
#include "common/clock.h"
#include "common/sizes.h"
#include "objstore/s3_store.h"
#include "plan/plan_model.h"
#include "plan/plan_probe.h"
#include "snapshot/manifest.h"
#include "snapshot/snapshot_lister.h"
#include "snapshot/stored_snapshot.h"

namespace warmfs::cli {
namespace {

// Where the dataset is: a bucket prefix, with the S3 flags to reach it, and the snapshot (a
// file or a stored name) that lists it, if any.
struct Source {
  S3Source s3;
  S3Flags flags;
  std::string snapshot;
  std::string what;  // for messages: s3://B/P
};

// A mount's stats name its bucket, endpoint and snapshot (mount_source_stats).
Result<Source> source_of_mount(const PlanArgs& a, Source src) {
  const std::string text = read_xattr(a.source, "user.warmfs.stats");
  if (text.empty()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("'{}' is neither s3://BUCKET[/PREFIX], a snapshot file nor a warmfs "
                              "mount ({})",
                              a.source, std::strerror(errno)));
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("bucket") || !j["bucket"].is_string()) {
    return Status(Errc::kCorrupt, a.source + ": the mount's stats do not name its bucket");
  }
  WARMFS_ASSIGN_OR_RETURN(src.s3, parse_s3_source(j["bucket"].get<std::string>()));
  if (j.contains("source") && j["source"].is_object()) {
    const auto& s = j["source"];
    if (src.flags.endpoint.empty()) src.flags.endpoint = s.value("endpoint", "");
    if (src.flags.region.empty()) src.flags.region = s.value("region", "");
    src.flags.path_style = src.flags.path_style || s.value("path_style", false);
    if (src.snapshot.empty()) src.snapshot = s.value("snapshot", "");
  }
  return src;
}

Result<Source> find_source(const PlanArgs& a, std::optional<Manifest>* file_manifest) {
  Source src;
  src.flags = S3Flags{a.endpoint, a.region, a.profile, a.no_sign_request, a.path_style};
  src.snapshot = a.snapshot;
  struct stat st {};
  if (a.source.rfind("s3://", 0) == 0) {
    WARMFS_ASSIGN_OR_RETURN(src.s3, parse_s3_source(a.source));
  } else if (::stat(a.source.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    // A snapshot file: it names its bucket and prefix.
    auto m = read_manifest_file(a.source);
    if (!m.is_ok()) return Status(m.code(), a.source + ": " + m.status().message());
    src.s3 = S3Source{m->bucket(), m->prefix()};
    *file_manifest = std::move(*m);
  } else {
    WARMFS_ASSIGN_OR_RETURN(src, source_of_mount(a, src));
  }
  if (!src.snapshot.empty() && !file_manifest->has_value()) {
    WARMFS_ASSIGN_OR_RETURN(src.snapshot, resolve_snapshot_arg(src.snapshot));
  }
  src.what = "s3://" + src.s3.bucket;
  if (!src.s3.prefix.empty()) src.what += "/" + src.s3.prefix.substr(0, src.s3.prefix.size() - 1);
  return src;
}

Result<Manifest> list_dataset(const Source& src, ObjectStore& store) {
  if (src.snapshot.empty()) {
    const int64_t now = std::chrono::system_clock::to_time_t(SystemClock::instance().wall_now());
    return take_snapshot(store, src.s3.bucket, src.s3.prefix, now, SnapshotListOptions{});
  }
  auto m = src.snapshot.front() == '/' ? read_manifest_file(src.snapshot)
                                       : load_stored_snapshot(store, src.s3.prefix, src.snapshot);
  if (!m.is_ok()) return Status(m.code(), "--snapshot " + m.status().message());
  return m;
}

// Up to 64 objects spread over the dataset (every k-th with bytes), for the probe.
std::vector<plan::ProbeObject> probe_objects(const Manifest& m, const std::string& prefix) {
  std::vector<plan::ProbeObject> out;
  const size_t step = std::max<size_t>(m.size() / 64, 1);
  for (size_t i = 0; i < m.size() && out.size() < 64; i += step) {
    if (m.object_size(i) == 0) continue;
    out.push_back(plan::ProbeObject{prefix + std::string(m.key(i)), m.object_size(i)});
  }
  return out;
}

std::string rate(double bytes_per_sec) {
  return format_size(static_cast<uint64_t>(bytes_per_sec)) + "/s";
}

std::string bytes_text(double b) { return format_size(static_cast<uint64_t>(b + 0.5)); }

std::string pct(double v) { return fmt::format("{:.0f}%", 100 * v); }

// Epoch rows shown: all up to 6, else 1-4 and the mean of the rest.
struct Row {
  std::string label;
  double seconds = 0, bucket = 0, mem = 0, ssd = 0, server = 0, worst = 0;
};

std::vector<Row> rows_of(const plan::Scenario& s) {
  std::vector<Row> rows;
  if (s.prep_seconds > 0 || s.prep_bucket_bytes > 0) {
    rows.push_back(Row{"copy", s.prep_seconds, s.prep_bucket_bytes});
  }
  const size_t shown = s.epochs.size() <= 6 ? s.epochs.size() : 4;
  for (size_t i = 0; i < shown; ++i) {
    const plan::EpochPlan& e = s.epochs[i];
    rows.push_back(Row{std::to_string(e.epoch), e.seconds, e.bucket_bytes, e.memory_hit, e.ssd_hit,
                       e.server_hit, e.worst_hit});
  }
  if (shown < s.epochs.size()) {
    Row r{fmt::format("{}-{} each", shown + 1, s.epochs.size())};
    const double n = static_cast<double>(s.epochs.size() - shown);
    for (size_t i = shown; i < s.epochs.size(); ++i) {
      const plan::EpochPlan& e = s.epochs[i];
      r.seconds += e.seconds / n;
      r.bucket += e.bucket_bytes / n;
      r.mem += e.memory_hit / n;
      r.ssd += e.ssd_hit / n;
      r.server += e.server_hit / n;
      r.worst += e.worst_hit / n;
    }
    rows.push_back(r);
  }
  return rows;
}

nlohmann::json to_json(const std::string& what, const plan::Dataset& d, const plan::Cluster& c,
                       const plan::Rates& r, const plan::BucketProbe& bp, const plan::DiskProbe& dp,
                       const PlanArgs& a, const plan::Plan& p) {
  nlohmann::json j;
  j["dataset"] = {{"source", what},
                  {"objects", d.objects},
                  {"bytes", d.bytes},
                  {"chunks", d.chunks},
                  {"requests", d.requests}};
  j["probe"] = {{"bucket",
                 {{"first_byte_seconds", bp.first_byte_sec},
                  {"requests_per_second", bp.requests_per_sec},
                  {"bytes_per_second", bp.bytes_per_sec},
                  {"requests", bp.requests},
                  {"bytes", bp.bytes},
                  {"seconds", bp.seconds},
                  {"inflight", bp.inflight}}},
                {"disk",
                 {{"dir", a.cache_dir},
                  {"write_bytes_per_second", dp.write_bytes_per_sec},
                  {"read_bytes_per_second", dp.read_bytes_per_sec},
                  {"read_block_bytes", dp.read_block_bytes},
                  {"direct", dp.direct}}}};
  j["cluster"] = {
      {"epochs", c.epochs},
      {"jobs", c.jobs},
      {"nodes", c.nodes},
      {"memory_cache_bytes", a.memory_cache_bytes},
      {"memory_tier_bytes", c.memory_tier_bytes},
      {"ssd_bytes", c.ssd_bytes},
      {"ssd_usable_bytes", plan::ssd_usable_bytes(c.ssd_bytes, d.chunks ? d.bytes / d.chunks : 1)},
      {"server_ssd_bytes", c.server_ssd_bytes},
      {"server_memory_tier_bytes", c.server_memory_bytes},
      {"server_bytes_per_second", r.server_bytes_per_sec}};
  nlohmann::json scenarios = nlohmann::json::array();
  for (const plan::Scenario& s : p.scenarios) {
    nlohmann::json sj = {{"name", s.name}, {"title", s.title}, {"feasible", s.feasible}};
    if (!s.feasible) {
      sj["why_not"] = s.why_not;
      scenarios.push_back(sj);
      continue;
    }
    sj["prep_seconds"] = s.prep_seconds;
    sj["prep_bucket_bytes"] = s.prep_bucket_bytes;
    sj["total_seconds"] = s.total_seconds();
    sj["total_bucket_bytes"] = s.total_bucket_bytes();
    nlohmann::json epochs = nlohmann::json::array();
    for (const plan::EpochPlan& e : s.epochs) {
      epochs.push_back({{"epoch", e.epoch},
                        {"seconds", e.seconds},
                        {"bucket_bytes", e.bucket_bytes},
                        {"hit_ratio",
                         {{"memory", e.memory_hit},
                          {"ssd", e.ssd_hit},
                          {"local", e.local_hit()},
                          {"server", e.server_hit},
                          {"worst", e.worst_hit}}}});
    }
    sj["epochs"] = epochs;
    scenarios.push_back(sj);
  }
  j["scenarios"] = scenarios;
  j["recommendation"] = {{"scenario", p.recommended}, {"reason", p.reason}};
  return j;
}

void print_table(const std::string& what, const plan::Dataset& d, const plan::Cluster& c,
                 const plan::BucketProbe& bp, const plan::DiskProbe& dp, const PlanArgs& a,
                 const plan::Plan& p) {
  std::printf("dataset   %s: %llu objects, %s in %llu chunks\n", what.c_str(),
              static_cast<unsigned long long>(d.objects), format_size(d.bytes).c_str(),
              static_cast<unsigned long long>(d.chunks));
  std::printf("bucket    %.0f GETs/s, %s with %u in flight; first byte %.1f ms\n",
              bp.requests_per_sec, rate(bp.bytes_per_sec).c_str(), bp.inflight,
              bp.first_byte_sec * 1e3);
  std::printf("disk      %s: write %s, read %s (%s blocks%s)\n", a.cache_dir.c_str(),
              rate(dp.write_bytes_per_sec).c_str(), rate(dp.read_bytes_per_sec).c_str(),
              format_size(dp.read_block_bytes).c_str(), dp.direct ? ", O_DIRECT" : "");
  std::printf(
      "cluster   %u epochs, %u job(s) x %u node(s); per node: memory tier %s, SSD %s; "
      "cache server: %s\n\n",
      c.epochs, c.jobs, c.nodes, format_size(c.memory_tier_bytes).c_str(),
      c.ssd_bytes ? format_size(c.ssd_bytes).c_str() : "none",
      c.server_ssd_bytes ? format_size(c.server_ssd_bytes).c_str() : "none");
  std::printf("%-26s %-9s %10s %12s %5s %5s %6s %6s %6s\n", "scenario", "epoch", "seconds",
              "from bucket", "mem", "ssd", "server", "local", "worst");
  for (const plan::Scenario& s : p.scenarios) {
    if (!s.feasible) {
      std::printf("%-26s not possible: %s\n", s.title.c_str(), s.why_not.c_str());
      continue;
    }
    bool first = true;
    for (const Row& r : rows_of(s)) {
      std::printf("%-26s %-9s %10.1f %12s %5s %5s %6s %6s %6s\n", first ? s.title.c_str() : "",
                  r.label.c_str(), r.seconds, bytes_text(r.bucket).c_str(), pct(r.mem).c_str(),
                  pct(r.ssd).c_str(), pct(r.server).c_str(),
                  pct(s.name == "cache-server" ? r.server : r.mem + r.ssd).c_str(),
                  pct(r.worst).c_str());
      first = false;
    }
    std::printf("%-26s %-9s %10.1f %12s\n", "", "total", s.total_seconds(),
                bytes_text(s.total_bucket_bytes()).c_str());
  }
  std::printf("\nrecommended: %s: %s\n", p.recommended.c_str(), p.reason.c_str());
}

}  // namespace

int run_plan(const PlanArgs& a) {
  std::optional<Manifest> file_manifest;
  auto src = find_source(a, &file_manifest);
  if (!src.is_ok()) {
    print_error(src.status().message());
    return src.code() == Errc::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  S3Config config = s3_config(src->flags, src->s3.bucket);
  auto creds = resolve_credentials(src->flags, config);
  if (!creds.is_ok()) {
    print_error(creds.status().message());
    return kExitFailure;
  }
  config.credential_provider = *creds;
  config.anonymous = config.credential_provider->anonymous();
  if (Status st = check_bucket(config, src->s3.prefix); !st.is_ok()) {
    print_error(st.message());
    return kExitFailure;
  }
  auto store = S3ObjectStore::create(std::move(config), SystemClock::instance());
  if (!store.is_ok()) {
    print_error(store.status().message());
    return kExitFailure;
  }
  Result<Manifest> manifest = file_manifest.has_value()
                                  ? Result<Manifest>(std::move(*file_manifest))
                                  : list_dataset(*src, **store);
  if (!manifest.is_ok()) {
    print_error(fmt::format("cannot list {}: {}", src->what, manifest.status().message()));
    return kExitFailure;
  }
  plan::Dataset d;
  for (size_t i = 0; i < manifest->size(); ++i) plan::add_object(d, manifest->object_size(i));
  if (d.bytes == 0) {
    print_error(src->what + " holds no data to plan for");
    return kExitFailure;
  }

  auto bp = plan::probe_bucket(**store, probe_objects(*manifest, src->s3.prefix), a.inflight,
                               a.probe_seconds);
  if (!bp.is_ok()) {
    print_error("probe of " + src->what + ": " + bp.status().message());
    return kExitFailure;
  }
  const uint64_t chunk = d.bytes / std::max<uint64_t>(d.chunks, 1);
  auto dp = plan::probe_disk(a.cache_dir, a.probe_disk_bytes, plan::ssd_record_bytes(chunk));
  if (!dp.is_ok()) {
    print_error("probe of the disk: " + dp.status().message());
    return kExitFailure;
  }

  plan::Rates r;
  r.bucket_requests_per_sec = bp->requests_per_sec;
  r.bucket_bytes_per_sec = bp->bytes_per_sec;
  r.first_byte_sec = bp->first_byte_sec;
  r.disk_read_bytes_per_sec = dp->read_bytes_per_sec;
  r.disk_write_bytes_per_sec = dp->write_bytes_per_sec;
  // Without --server-rate: a server's disk like this one's, its network no slower.
  r.server_bytes_per_sec =
      a.server_rate_bytes > 0 ? static_cast<double>(a.server_rate_bytes) : dp->read_bytes_per_sec;
  plan::Cluster c;
  c.epochs = a.epochs;
  c.jobs = a.jobs;
  c.nodes = a.nodes;
  // The memory tier is the share of --memory-cache-size the mount gives it (tier_setup.h).
  c.memory_tier_bytes =
      split_memory_budget(a.memory_cache_bytes, a.cache_size_bytes > 0).cache_bytes;
  c.ssd_bytes = a.cache_size_bytes;
  c.server_ssd_bytes = a.server_cache_bytes;
  c.server_memory_bytes = split_memory_budget(a.server_memory_bytes, true).cache_bytes;
  const plan::Plan p = plan::make_plan(d, c, r);
  if (a.json) {
    std::printf("%s\n", to_json(src->what, d, c, r, *bp, *dp, a, p).dump(2).c_str());
  } else {
    print_table(src->what, d, c, *bp, *dp, a, p);
  }
  return kExitOk;
}

}  // namespace warmfs::cli

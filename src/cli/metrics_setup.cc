#include "cli/metrics_setup.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/process_stats.h"
#include "metrics/histogram_export.h"

namespace warmfs::cli {
namespace {

using metrics::Labels;
using metrics::MetricSink;

double d(uint64_t v) { return static_cast<double>(v); }

// Bucket traffic of one or more stores (a cache server has one per bucket), summed.
void add_bucket_families(MetricSink& out, const std::vector<const S3ObjectStore*>& stores) {
  ObjectStoreCounters c;
  std::array<metrics::HistogramData, kBucketOpCount> latency{};
  for (const S3ObjectStore* s : stores) {
    c += s->counters();
    for (size_t i = 0; i < kBucketOpCount; ++i) {
      metrics::accumulate(latency[i],
                          metrics::export_microseconds(s->request_latency_us(BucketOp(i))));
    }
  }
  const std::pair<BucketOp, uint64_t> by_op[] = {{BucketOp::kGet, c.get_requests},
                                                 {BucketOp::kHead, c.head_requests},
                                                 {BucketOp::kList, c.list_requests},
                                                 {BucketOp::kPut, c.put_requests},
                                                 {BucketOp::kMultipart, c.multipart_requests},
                                                 {BucketOp::kCopy, c.copy_requests},
                                                 {BucketOp::kDelete, c.delete_requests}};
  auto& requests = out.counter("warmfs_bucket_requests_total",
                               "Requests to the bucket by operation, retries not counted "
                               "(copy: copy calls; multipart: each multipart request)");
  for (const auto& [op, n] : by_op) requests.add(d(n), {{"op", bucket_op_name(op)}});
  auto& duration = out.histogram(
      "warmfs_bucket_request_duration_seconds",
      "Duration of bucket requests by operation, from the first attempt to the answer "
      "(retries and backoff included)");
  for (size_t i = 0; i < kBucketOpCount; ++i)
    duration.add(std::move(latency[i]), {{"op", bucket_op_name(BucketOp(i))}});
  out.counter("warmfs_bucket_bytes_total", "Body bytes read from (GET) and written to the bucket")
      .add(d(c.bytes_read), {{"direction", "read"}})
      .add(d(c.bytes_written), {{"direction", "written"}});
  out.counter("warmfs_bucket_retries_total", "Bucket request attempts that were retried")
      .add(d(c.retries));
  out.counter("warmfs_bucket_errors_total", "Bucket requests that failed after all retries")
      .add(d(c.errors));
}

// The memory tier and, when there is one, the SSD tier.
void add_cache_families(MetricSink& out, const BlockCache& memory, const BlockCache* disk) {
  const BlockCacheCounters m = memory.counters();
  const BlockCacheCounters k = disk != nullptr ? disk->counters() : BlockCacheCounters{};
  auto both = [&](std::string_view name, std::string_view help, bool counter, uint64_t mv,
                  uint64_t dv) {
    auto& f = counter ? out.counter(name, help) : out.gauge(name, help);
    f.add(d(mv), {{"tier", "memory"}});
    if (disk != nullptr) f.add(d(dv), {{"tier", "disk"}});
  };
  both("warmfs_cache_used_bytes", "Bytes of chunks the cache tier holds", false, m.used_bytes,
       k.used_bytes);
  both("warmfs_cache_capacity_bytes", "Most bytes the cache tier holds", false, m.capacity_bytes,
       k.capacity_bytes);
  both("warmfs_cache_evicted_bytes_total", "Bytes of chunks evicted to make room", true,
       m.evicted_bytes, k.evicted_bytes);
  both("warmfs_cache_inserted_bytes_total", "Bytes of chunks stored in the cache tier", true,
       m.inserted_bytes, k.inserted_bytes);
  both("warmfs_cache_hits_total", "Chunk lookups the cache tier answered", true, m.hits, k.hits);
  both("warmfs_cache_misses_total", "Chunk lookups the cache tier could not answer", true, m.misses,
       k.misses);
  out.counter("warmfs_cache_corrupt_chunks_total",
              "Chunks whose checksum failed when read back (served from elsewhere instead)")
      .add(d(m.corrupt_chunks + k.corrupt_chunks));
  if (disk != nullptr) {
    out.counter("warmfs_cache_disk_errors_total", "I/O errors of the SSD tier (each one a miss)")
        .add(d(k.errors));
    out.counter("warmfs_cache_dropped_writes_total",
                "Chunks the SSD tier did not store: write queue full or tier disabled")
        .add(d(k.dropped_writes));
  }
}

// Order prefetch, and the four numbers of the last finished epoch and of the running one.
void add_order_families(MetricSink& out, const Filesystem& fs) {
  const OrderCounters c = fs.order_counters();
  out.counter("warmfs_orders_published_total", "Orders loaders published (docs/loaders.md)")
      .add(d(c.orders));
  out.counter("warmfs_order_entries_total",
              "Order entries: read by the readers, prefetched, or prefetched and never read")
      .add(d(c.read_entries), {{"state", "read"}})
      .add(d(c.fetched_entries), {{"state", "prefetched"}})
      .add(d(c.wasted_entries), {{"state", "wasted"}});
  out.counter("warmfs_order_late_reads_total",
              "Reads that found their order entry not fetched yet (the readers caught up)")
      .add(d(c.late_reads));
  out.gauge("warmfs_order_lead_entries", "Entries the order prefetch keeps ahead of the readers")
      .add(d(c.lead));
  out.gauge("warmfs_order_requests_in_flight", "Order prefetch requests in flight")
      .add(d(c.requests_inflight));
  const std::vector<Epoch> epochs = fs.epochs();
  const Epoch* running = !epochs.empty() && epochs.back().running ? &epochs.back() : nullptr;
  const Epoch* last = nullptr;
  for (const Epoch& e : epochs) {
    if (!e.running) last = &e;
  }
  auto& number = out.gauge("warmfs_epoch_number", "Number of the epoch (1, 2, ... since mount)");
  auto& rate = out.gauge("warmfs_epoch_samples_per_second",
                         "Samples per second at the loader over the epoch (order entries read, "
                         "or files opened without an order)");
  auto& stall = out.gauge("warmfs_epoch_stall_seconds",
                          "Seconds readers spent blocked in warmfs reads during the epoch");
  auto& hits = out.gauge("warmfs_epoch_hit_ratio",
                         "Chunk lookups a cache tier answered, of those "
                         "asked of it, over the epoch (local: any tier)");
  auto& pulled =
      out.gauge("warmfs_epoch_bucket_bytes", "Bytes pulled from the bucket in the epoch");
  for (const auto& [e, which] : {std::pair{last, "last"}, std::pair{running, "running"}}) {
    if (e == nullptr) continue;
    const nlohmann::json j = epoch_json(*e);
    number.add(d(e->number), {{"epoch", which}});
    rate.add(j["samples_per_second"].get<double>(), {{"epoch", which}});
    stall.add(j["stall_seconds"].get<double>(), {{"epoch", which}});
    for (const char* tier : {"memory", "disk", "local"}) {
      hits.add(j["hit_ratio"][tier].get<double>(), {{"epoch", which}, {"tier", tier}});
    }
    pulled.add(d(e->end.bucket_bytes - e->start.bucket_bytes), {{"epoch", which}});
  }
}

}  // namespace

metrics::Collector process_collector() {
  const double started =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return [started](MetricSink& out) {
    out.gauge("warmfs_build_info", "Always 1; the version of warmfs running")
        .add(1, {{"version", WARMFS_VERSION}});
    const ProcessMemory pm = process_memory();
    out.gauge("warmfs_process_resident_memory_bytes", "Resident set size of the process (VmRSS)")
        .add(d(pm.rss_bytes));
    out.gauge("warmfs_process_held_memory_bytes",
              "Memory the process holds: resident set without shared pages, plus its memory file")
        .add(d(pm.held_bytes));
    out.gauge("warmfs_process_heap_in_use_bytes", "Bytes allocated from the malloc heap")
        .add(d(pm.heap_in_use_bytes));
    out.gauge("warmfs_process_heap_free_bytes",
              "Bytes free inside the malloc heap's arenas, resident or given back to the system")
        .add(d(pm.heap_free_bytes));
    out.gauge("warmfs_process_start_time_seconds", "When the process started serving, Unix time")
        .add(started);
  };
}

metrics::Collector mount_collector(MountMetricsSources s) {
  return [s](MetricSink& out) {
    const FsReadCounters fc = s.fs->read_counters();
    const ReadPathCounters rc = s.read_path->counters();
    const ObjectStoreCounters sc = s.store->counters();
    const uint64_t disk_bytes = s.disk != nullptr ? s.disk->counters().hit_bytes : 0;
    uint64_t server_bytes = 0;
    RemoteCacheCounters remote;
    if (s.remote != nullptr) {
      remote = s.remote->remote_counters();
      server_bytes = remote.hit_bytes + remote.miss_bytes;
    }
    out.counter("warmfs_read_bytes_total",
                "Bytes served to readers by tier: memory (already in memory), disk (SSD tier "
                "hits), server (cache servers), bucket (fetched from the bucket)")
        .add(d(rc.memory_served_bytes), {{"tier", "memory"}})
        .add(d(disk_bytes), {{"tier", "disk"}})
        .add(d(server_bytes), {{"tier", "server"}})
        .add(d(sc.bytes_read), {{"tier", "bucket"}});
    out.counter("warmfs_reads_total", "Read calls").add(d(fc.reads));
    out.counter("warmfs_read_errors_total", "Read calls that failed").add(d(fc.errors));
    out.counter("warmfs_read_returned_bytes_total", "Bytes returned by read calls")
        .add(d(fc.bytes));
    out.counter("warmfs_opens_total", "Files opened").add(d(fc.opens));
    const double wait_seconds = static_cast<double>(fc.wait_ns) / 1e9;
    out.histogram("warmfs_read_latency_seconds", "Duration of read calls as warmfs answers them")
        .add(metrics::export_microseconds(s.fs->read_latency_us(), wait_seconds));
    out.counter("warmfs_reader_wait_seconds_total",
                "Time readers spent blocked inside warmfs read calls (the reader's input stall)")
        .add(wait_seconds);
    out.gauge("warmfs_readahead_inflight_bytes",
              "Read-ahead budget in use: chunks fetched ahead and not yet read")
        .add(d(rc.inflight_bytes));
    out.counter("warmfs_readahead_prefetched_chunks_total", "Chunks requested by read-ahead")
        .add(d(rc.prefetched_chunks));
    out.counter("warmfs_readahead_wasted_chunks_total", "Chunks fetched ahead but never read")
        .add(d(rc.prefetch_wasted_chunks));
    add_cache_families(out, *s.memory, s.disk);
    add_bucket_families(out, {s.store});
    add_order_families(out, *s.fs);
    const UploadCounters uc = s.uploader != nullptr ? s.uploader->counters() : UploadCounters{};
    out.gauge("warmfs_uploads_in_flight", "PutObjects and parts being sent right now")
        .add(d(uc.uploads_in_flight));
    out.counter("warmfs_uploads_completed_total", "Objects written here and made durable")
        .add(d(uc.completed_uploads));
    out.counter("warmfs_upload_failures_total", "Flushes (fsync, close) that reported an error")
        .add(d(uc.upload_failures));
    out.gauge("warmfs_staged_files", "Files with a staged copy on local disk")
        .add(d(uc.staged_objects));
    if (s.remote != nullptr) {
      out.counter("warmfs_cache_server_errors_total",
                  "Failed requests to cache servers (those chunks came from the bucket)")
          .add(d(remote.errors));
      out.counter("warmfs_cache_server_fallback_chunks_total",
                  "Chunks cache servers did not serve (error, backoff, refused)")
          .add(d(remote.fallback_chunks));
      auto& up = out.gauge("warmfs_cache_server_up", "1 if the cache server is not backed off");
      for (const auto& server : remote.servers) up.add(server.up ? 1 : 0, {{"server", server.url}});
    }
  };
}

metrics::Collector serve_collector(ServeMetricsSources s) {
  return [s](MetricSink& out) {
    const CacheServerCounters c = s.server->counters();
    auto& requests =
        out.counter("warmfs_server_requests_total", "Requests answered, by HTTP status");
    for (const auto& [status, n] : s.server->requests_by_status())
      requests.add(d(n), {{"status", std::to_string(status)}});
    out.histogram("warmfs_server_request_duration_seconds",
                  "Time to produce each answer (a chunk's bytes are sent after)")
        .add(metrics::export_microseconds(s.server->request_latency_us()));
    out.counter("warmfs_server_chunk_requests_total", "Chunk requests received")
        .add(d(c.chunk_requests));
    out.counter("warmfs_server_served_bytes_total",
                "Chunk bytes served: hit (from the server's caches) or miss (fetched first)")
        .add(d(c.hit_bytes), {{"result", "hit"}})
        .add(d(c.miss_bytes), {{"result", "miss"}});
    out.gauge("warmfs_server_connections", "Client connections open")
        .add(d(s.server->open_connections()));
    add_cache_families(out, *s.memory, s.disk);
    add_bucket_families(out, s.stores);
  };
}

metrics::Collector credentials_collector(const s3::CredentialProvider& provider) {
  return [p = &provider](MetricSink& out) {
    const s3::CredentialStatus st = p->status();
    out.gauge("warmfs_credentials_info", "Always 1; where the credentials in use come from")
        .add(1, {{"source", st.source}});
    if (st.expires_at) {
      out.gauge("warmfs_credentials_expiry_timestamp_seconds",
                "When the credentials in use expire, Unix time")
          .add(std::chrono::duration<double>(st.expires_at->time_since_epoch()).count());
    }
    out.counter("warmfs_credentials_refreshes_total", "Successful refreshes of the credentials")
        .add(d(st.refreshes));
    out.counter("warmfs_credentials_refresh_failures_total", "Failed refresh attempts")
        .add(d(st.refresh_failures));
  };
}

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(
    const std::string& listen, std::vector<metrics::Collector> collectors) {
  WARMFS_ASSIGN_OR_RETURN(ListenAddress address, parse_listen_address(listen, kMetricsListenRules));
  std::unique_ptr<MetricsEndpoint> e(new MetricsEndpoint());
  e->registry_ = std::make_unique<metrics::Registry>();
  for (auto& c : collectors) e->registry_->add(std::move(c));
  WARMFS_ASSIGN_OR_RETURN(e->server_, metrics::MetricsServer::start(address, *e->registry_));
  return e;
}

}  // namespace warmfs::cli

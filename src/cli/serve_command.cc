// warmfs serve: the cache server in the foreground; warmfs stats --server; the mount's side
// of cache servers (token, remote tier, the check before mounting).
#include "cli/serve_command.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cache/memory_cache.h"
#include "cache/remote_protocol.h"
#include "cache/ssd_cache.h"
#include "cli/metrics_setup.h"
#include "cli/s3_setup.h"
#include "common/listen_address.h"
#include "common/log.h"
#include "common/service_notify.h"
#include "common/sizes.h"
#include "http/http_client.h"
#include "objstore/credential_chain.h"
#include "objstore/credentials.h"
#include "objstore/s3_store.h"
#include "server/cache_server.h"

namespace warmfs::cli {
namespace {

Result<std::string> read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status(Errc::kInvalidArgument,
                  fmt::format("{} {}: {}", what, path, std::strerror(errno)));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One provider for every bucket served: the chain is resolved once (credential_chain.h).
Result<S3Config> s3_config_for(const ServeArgs& a, const std::string& bucket,
                               std::shared_ptr<const s3::CredentialProvider>* provider) {
  const S3Flags flags{a.endpoint, a.region, a.profile, a.no_sign_request, a.path_style};
  S3Config c = s3_config(flags, bucket);
  if (!*provider) {
    WARMFS_ASSIGN_OR_RETURN(*provider, resolve_credentials(flags, c));
    log_credentials(**provider);
  }
  c.credential_provider = *provider;
  c.anonymous = (*provider)->anonymous();
  return c;
}

void raise_fd_limit() {
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
}

Result<std::string> token_or_none(const std::string& token_file, bool insecure, const char* who) {
  if (insecure) {
    if (!token_file.empty())
      return Status(Errc::kInvalidArgument,
                    "--token-file and --insecure-no-token exclude each other");
    return std::string();
  }
  if (token_file.empty()) {
    return Status(
        Errc::kInvalidArgument,
        fmt::format("{} needs --token-file (or --insecure-no-token on a trusted network)", who));
  }
  return read_token_file(token_file);
}

}  // namespace

Result<std::string> read_token_file(const std::string& path) {
  WARMFS_ASSIGN_OR_RETURN(std::string text, read_file(path, "--token-file"));
  const size_t first = text.find_first_not_of(" \t\r\n");
  const size_t last = text.find_last_not_of(" \t\r\n");
  if (first == std::string::npos)
    return Status(Errc::kInvalidArgument, "--token-file " + path + " is empty");
  std::string token = text.substr(first, last - first + 1);
  for (unsigned char c : token) {
    if (c < 0x21 || c > 0x7e) {
      return Status(Errc::kInvalidArgument,
                    "--token-file " + path + ": the token must be one line of printable ASCII");
    }
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    log::warn("--token-file {} may be read by other users (mode {:o}); chmod 600 it", path,
              st.st_mode & 0777);
  }
  return token;
}

int run_serve(const ServeArgs& a) {
  log::Level level;
  log::parse_level(a.log_level, &level);
  log::set_level(level);
  if (!a.log_file.empty() && !log::set_file(a.log_file)) {
    print_error("cannot open log file " + a.log_file + ": " + std::strerror(errno));
    return kExitFailure;
  }
  auto listen = parse_listen_address(a.listen);
  if (!listen.is_ok()) {
    print_error(listen.status().message());
    return kExitUsage;
  }
  auto token = token_or_none(a.token_file, a.insecure_no_token, "warmfs serve");
  if (!token.is_ok()) {
    print_error(token.status().message());
    return token.code() == Errc::kInvalidArgument && a.token_file.empty() ? kExitUsage
                                                                          : kExitFailure;
  }
  http::ServerOptions ho;
  ho.host = listen->host;
  ho.port = listen->port;
  if (a.tls_cert.empty() != a.tls_key.empty()) {
    print_error("--tls-cert and --tls-key go together");
    return kExitUsage;
  }
  if (!a.tls_cert.empty()) {
    auto cert = read_file(a.tls_cert, "--tls-cert");
    auto key = read_file(a.tls_key, "--tls-key");
    if (!cert.is_ok() || !key.is_ok()) {
      print_error(!cert.is_ok() ? cert.status().message() : key.status().message());
      return kExitFailure;
    }
    ho.tls_cert_pem = std::move(*cert);
    ho.tls_key_pem = std::move(*key);
  }
  if (token->empty())
    log::warn("serving without a token (--insecure-no-token): anyone who can connect may read");

  Clock& clock = SystemClock::instance();
  std::vector<std::unique_ptr<S3ObjectStore>> stores;
  std::map<std::string, ObjectStore*> by_bucket;
  std::shared_ptr<const s3::CredentialProvider> credentials;
  for (const auto& bucket : a.buckets) {
    auto config = s3_config_for(a, bucket, &credentials);
    Status st = config.is_ok() ? check_bucket(*config, "") : config.status();
    if (!st.is_ok()) {
      print_error(st.message());
      return kExitFailure;
    }
    auto store = S3ObjectStore::create(std::move(*config), clock);
    if (!store.is_ok()) {
      print_error(store.status().message());
      return kExitFailure;
    }
    by_bucket[bucket] = store->get();
    stores.push_back(std::move(*store));
  }

  // The SSD tier's files are private; it may hold one descriptor per region.
  ::umask(077);
  raise_fd_limit();
  // SIGINT and SIGTERM are taken by sigwait below, not by whichever thread they hit.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  const MemoryBudget budget = split_memory_budget(a.memory_cache_bytes, true);
  auto ssd = open_ssd_tier(a.cache_dir, a.cache_size_bytes, a.cache_ttl_sec, budget.ssd_queue_bytes,
                           clock);
  if (!ssd.is_ok()) {
    print_error(ssd.status().message());
    return kExitFailure;
  }
  MemoryCacheOptions mo;
  mo.capacity_bytes = budget.cache_bytes;
  MemoryCache memory(mo);
  CacheServerOptions so;
  so.token = *token;
  so.version_check_interval = std::chrono::seconds(static_cast<int64_t>(a.version_check_sec));
  // Misses of many clients at once, one bucket request per fetch thread.
  so.readahead.fetch_threads = 32;
  so.readahead.max_inflight_bytes = budget.readahead_bytes;
  if (credentials) so.extra_stats.push_back(credentials_stats(credentials));
  int rc = kExitOk;
  {
    CacheServer server(by_bucket, memory, ssd->get(), clock, so);
    std::unique_ptr<MetricsEndpoint> metrics;  // after server: stopped before it goes
    if (!a.metrics_listen.empty()) {
      std::vector<const S3ObjectStore*> served;
      for (const auto& s : stores) served.push_back(s.get());
      auto m = MetricsEndpoint::start(
          a.metrics_listen,
          {process_collector(), serve_collector({&server, &memory, ssd->get(), served}),
           credentials_collector(*credentials)});
      if (!m.is_ok()) {
        print_error(m.status().message());
        return kExitFailure;
      }
      metrics = std::move(*m);
      log::info("metrics at http://{}/metrics", a.metrics_listen);
    }
    Status st = server.start(ho);
    if (!st.is_ok()) {
      print_error(st.message());
      return kExitFailure;
    }
    const BlockCacheCounters dc = (*ssd)->counters();
    std::string names;
    for (const auto& b : a.buckets) names += (names.empty() ? "s3://" : ", s3://") + b;
    log::info("warmfs serve: {}://{}:{} for {}; SSD tier {} ({} of {} in use){}{}",
              ho.tls_cert_pem.empty() ? "http" : "https", ho.host, server.port(), names,
              a.cache_dir, format_size(dc.used_bytes), format_size(dc.capacity_bytes),
              a.cache_ttl_sec > 0 ? fmt::format(", ttl {:.0f} s", a.cache_ttl_sec) : "",
              token->empty() ? ", no token" : "");
    // Under systemd (Type=notify): ready once the socket listens.
    service::notify_ready(fmt::format("serving {} on port {}", names, server.port()));
    int sig = 0;
    sigwait(&stop_signals, &sig);
    log::info("warmfs serve: signal {}, stopping", sig);
    service::notify_stopping("stopping on signal " + std::to_string(sig));
    server.stop();
    log::info("warmfs serve: served {}, {} from the bucket",
              format_size(server.counters().bytes_served),
              format_size(server.counters().miss_bytes));
  }
  (*ssd)->flush();
  return rc;
}

int run_server_stats(const std::string& url, const std::string& token_file, bool insecure_no_token,
                     const std::string& ca_file, bool json) {
  const std::string base = remote::normalize_base_url(url);
  if (base.empty()) {
    print_error("--server '" + url + "' is not an http:// or https:// URL of a host[:port]");
    return kExitUsage;
  }
  auto token = token_or_none(token_file, insecure_no_token, "warmfs stats --server");
  if (!token.is_ok()) {
    print_error(token.status().message());
    return token_file.empty() ? kExitUsage : kExitFailure;
  }
  http::ClientOptions co;
  co.connect_timeout = std::chrono::milliseconds(3000);
  co.request_timeout = std::chrono::seconds(15);
  co.ca_bundle = ca_file;
  http::Client client(co);
  http::Request req;
  req.url = base + remote::kStatsPath;
  if (!token->empty()) req.headers.emplace_back("Authorization", "Bearer " + *token);
  auto r = client.perform(req);
  if (!r.is_ok()) {
    print_error("cannot reach cache server " + base + ": " + r.status().message());
    return kExitFailure;
  }
  if (r->status == 401) {
    print_error("cache server " + base +
                " refused the token (401 Unauthorized): check --token-file");
    return kExitFailure;
  }
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (r->status != 200 || j.is_discarded() || !j.is_object()) {
    print_error(fmt::format("cache server {} answered HTTP {} to /v1/stats", base, r->status));
    return kExitFailure;
  }
  if (json) {
    std::printf("%s\n", r->body.c_str());
    return kExitOk;
  }
  auto u = [&](const nlohmann::json& v) { return v.get<uint64_t>(); };
  std::string buckets;
  for (const auto& b : j["buckets"])
    buckets += (buckets.empty() ? "s3://" : ", s3://") + b.get<std::string>();
  std::printf("warmfs cache server %s for %s, up %.0f s\n", base.c_str(), buckets.c_str(),
              j["uptime_seconds"].get<double>());
  std::printf(
      "  served              %s in %llu chunk requests, hit ratio %.1f%% (%s held, %s fetched)\n",
      format_size(u(j["bytes_served"])).c_str(), (unsigned long long)u(j["chunk_requests"]),
      j["hit_ratio"].get<double>() * 100, format_size(u(j["hit_bytes"])).c_str(),
      format_size(u(j["miss_bytes"])).c_str());
  std::printf(
      "  from the bucket     %s; requests: %llu GET, %llu HEAD; %llu retries, %llu errors\n",
      format_size(u(j["bucket_bytes_read"])).c_str(),
      (unsigned long long)u(j["bucket_requests"]["get"]),
      (unsigned long long)u(j["bucket_requests"]["head"]),
      (unsigned long long)u(j["bucket_retries"]), (unsigned long long)u(j["bucket_errors"]));
  std::printf(
      "  latency             p50 %llu us, p99 %llu us (hits p50 %llu us, p99 %llu us; misses p50 "
      "%llu us, p99 %llu us)\n",
      (unsigned long long)u(j["latency_us"]["p50"]), (unsigned long long)u(j["latency_us"]["p99"]),
      (unsigned long long)u(j["hit_latency_us"]["p50"]),
      (unsigned long long)u(j["hit_latency_us"]["p99"]),
      (unsigned long long)u(j["miss_latency_us"]["p50"]),
      (unsigned long long)u(j["miss_latency_us"]["p99"]));
  std::printf(
      "  clients             %llu seen, %llu active in the last minute, %llu connections open\n",
      (unsigned long long)u(j["clients"]), (unsigned long long)u(j["active_clients"]),
      (unsigned long long)u(j["connections"]));
  print_credentials_line(j);
  const auto& rf = j["refused"];
  std::printf(
      "  refused             %llu unauthorized, %llu not found, %llu changed, %llu forbidden, %llu "
      "bad requests\n",
      (unsigned long long)u(rf["unauthorized"]), (unsigned long long)u(rf["not_found"]),
      (unsigned long long)u(rf["precondition_failed"]), (unsigned long long)u(rf["forbidden"]),
      (unsigned long long)u(rf["bad_request"]));
  if (j["ssd_cache"].is_object()) {
    const auto& s = j["ssd_cache"];
    std::printf(
        "  SSD tier            %s of %s used, %s written, %s evicted, %llu corrupt chunks, %llu "
        "errors\n",
        format_size(u(s["used_bytes"])).c_str(), format_size(u(s["capacity_bytes"])).c_str(),
        format_size(u(s["inserted_bytes"])).c_str(), format_size(u(s["evicted_bytes"])).c_str(),
        (unsigned long long)u(s["corrupt_chunks"]), (unsigned long long)u(s["errors"]));
  }
  const auto& m = j["memory_cache"];
  std::printf("  memory              %s of %s used\n", format_size(u(m["used_bytes"])).c_str(),
              format_size(u(m["capacity_bytes"])).c_str());
  return kExitOk;
}

Result<std::unique_ptr<RemoteCache>> open_remote_tier(const MountArgs& a, Clock& clock) {
  RemoteCacheOptions o;
  o.servers = a.cache_servers;
  WARMFS_ASSIGN_OR_RETURN(o.token,
                          token_or_none(a.token_file, a.insecure_no_token, "--cache-server"));
  o.ca_bundle = a.cache_server_ca;
  std::string names;
  for (const auto& s : a.cache_servers) names += (names.empty() ? "" : ", ") + s;
  log::info("cache servers: {} (chunks spread over them by rendezvous hashing)", names);
  return RemoteCache::create(std::move(o), clock);
}

Status check_cache_servers(const MountArgs& a, const std::string& bucket) {
  WARMFS_ASSIGN_OR_RETURN(auto remote, open_remote_tier(a, SystemClock::instance()));
  for (size_t i = 0; i < remote->server_count(); ++i) {
    auto info = remote->info(i);
    if (!info.is_ok()) {
      if (info.code() == Errc::kUnavailable || info.code() == Errc::kTimeout) {
        const std::string line =
            info.status().message() + "; reading from the bucket until it answers";
        log::warn("{}", line);
        std::fprintf(stderr, "warmfs: warning: %s\n", line.c_str());
        continue;
      }
      return info.status();
    }
    if (std::find(info->buckets.begin(), info->buckets.end(), bucket) == info->buckets.end()) {
      std::string served;
      for (const auto& b : info->buckets) served += (served.empty() ? "" : ", ") + b;
      return Status(Errc::kInvalidArgument, "cache server " + remote->server_url(i) +
                                                " does not serve bucket " + bucket +
                                                " (it serves: " + served + ")");
    }
    if (info->chunk_size != kDefaultChunkSize) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("cache server {} uses {}-byte chunks, this mount {}",
                                remote->server_url(i), info->chunk_size, kDefaultChunkSize));
    }
  }
  return Status::ok();
}

std::string remote_tier_stats_json(const RemoteCache& remote) {
  const RemoteCacheCounters c = remote.remote_counters();
  nlohmann::json servers = nlohmann::json::array();
  for (const auto& s : c.servers) {
    servers.push_back({{"url", s.url},
                       {"up", s.up},
                       {"chunks", s.chunks},
                       {"bytes", s.bytes},
                       {"errors", s.errors}});
  }
  nlohmann::json j;
  j["cache_server_hit_bytes"] = c.hit_bytes;    // served by a server that held the chunk
  j["cache_server_miss_bytes"] = c.miss_bytes;  // served after the server fetched it for us
  j["cache_server_errors"] = c.errors;  // failed requests; those chunks came from the bucket
  j["cache_server_fallback_chunks"] = c.fallback_chunks;
  j["cache_server_refused"] = c.refused;
  j["cache_servers"] = servers;
  return j.dump();
}

}  // namespace warmfs::cli

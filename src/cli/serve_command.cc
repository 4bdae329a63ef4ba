// warmfs serve: the cache server in the foreground.
#include "cli/serve_command.h"

#include <fmt/format.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "cache/memory_cache.h"
#include "cache/ssd_cache.h"
#include "cli/daemon.h"
#include "cli/metrics_setup.h"
#include "cli/s3_setup.h"
#include "cli/tier_setup.h"
#include "cli/token_file.h"
#include "common/heap.h"
#include "common/listen_address.h"
#include "common/log.h"
#include "common/service_notify.h"
#include "common/sizes.h"
#include "objstore/credential_chain.h"
#include "objstore/credentials.h"
#include "objstore/s3_store.h"
#include "server/cache_server.h"

namespace warmfs::cli {
namespace {

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

}  // namespace

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
  prepare_process();
  HeapTrimmer heap_trimmer(kHeapTrimInterval);
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

}  // namespace warmfs::cli

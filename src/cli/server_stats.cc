// warmfs stats --server: a cache server's /v1/stats as a table or as JSON.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cache/remote_protocol.h"
#include "cli/commands.h"
#include "cli/serve_command.h"
#include "cli/token_file.h"
#include "common/sizes.h"
#include "http/http_client.h"

namespace warmfs::cli {

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

}  // namespace warmfs::cli

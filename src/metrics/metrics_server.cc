#include "metrics/metrics_server.h"

namespace warmfs::metrics {

http::ServerResponse answer(const Registry& registry, const http::ServerRequest& request) {
  http::ServerResponse r;
  if (request.path != kMetricsPath || (request.method != "GET" && request.method != "HEAD")) {
    r.status = 404;
    r.body = "not found: metrics are at /metrics\n";
    r.headers.emplace_back("Content-Type", "text/plain; charset=utf-8");
    return r;
  }
  r.body = registry.scrape();
  r.headers.emplace_back("Content-Type", kContentType);
  return r;
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const ListenAddress& address,
                                                            const Registry& registry) {
  http::ServerOptions o;
  o.host = address.host;
  o.port = address.port;
  // A few scrapers at most; each connection costs a thread.
  o.max_connections = 16;
  o.idle_timeout_sec = 120;
  auto http = http::HttpServer::start(
      o, [&registry](const http::ServerRequest& request) { return answer(registry, request); });
  if (!http.is_ok()) {
    return Status(http.code(), "--metrics-listen: " + http.status().message());
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(*http)));
}

}  // namespace warmfs::metrics

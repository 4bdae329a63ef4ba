// MetricsServer: a Registry served over HTTP for Prometheus (`--metrics-listen`).
//
// GET (or HEAD) /metrics answers 200 with the registry's exposition text
// (text/plain; version=0.0.4); every other path or method answers 404. Served by the one
// libmicrohttpd wrapper (http/http_server.h), on its own port, apart from anything else the
// process serves. Plain HTTP: it is meant for a loopback or cluster-internal address.
//
// Thread safe: requests are answered on libmicrohttpd's connection threads; scrapes run one
// at a time (Registry). The registry must outlive the server.
#pragma once

#include <cstdint>
#include <memory>

#include "common/listen_address.h"
#include "http/http_server.h"
#include "metrics/registry.h"
#include "warmfs/result.h"

namespace warmfs::metrics {

inline constexpr const char* kMetricsPath = "/metrics";

// The answer to one request (testable without sockets).
http::ServerResponse answer(const Registry& registry, const http::ServerRequest& request);

class MetricsServer {
 public:
  // Binds address and serves; a one-line error names the address and why, e.g.
  // "--metrics-listen: cannot listen on 127.0.0.1:9100: Address already in use".
  static Result<std::unique_ptr<MetricsServer>> start(const ListenAddress& address,
                                                      const Registry& registry);
  uint16_t port() const { return http_->port(); }

 private:
  explicit MetricsServer(std::unique_ptr<http::HttpServer> http) : http_(std::move(http)) {}
  std::unique_ptr<http::HttpServer> http_;
};

}  // namespace warmfs::metrics

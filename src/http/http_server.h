// HttpServer: a small HTTP/1.1 server over libmicrohttpd, for `warmfs serve`.
//
// Only this folder includes microhttpd.h (as only it includes curl). The server runs one
// thread per connection (libmicrohttpd's internal polling thread accepts), so a handler may
// block, for example while a chunk is fetched from the bucket, without holding up other
// clients; connections are kept alive between requests (HTTP/1.1 default). With a
// certificate and key it speaks TLS (libmicrohttpd's GnuTLS backend).
//
// The handler sees a parsed request (method, path, URL-decoded query arguments, lower-cased
// headers, the peer address) and returns a response whose body is either a string or a
// span of bytes kept alive by a shared owner until libmicrohttpd has sent them, so chunk
// bytes go out without a copy. Request bodies are not supported (read-only protocol): a
// request that has one is answered 413. No exception may escape the handler.
//
// Thread safe: the handler is called concurrently from the connection threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/http_client.h"
#include "warmfs/result.h"

struct MHD_Daemon;

namespace warmfs::http {

struct ServerRequest {
  std::string method;
  std::string path;                                        // URL path, decoded
  std::vector<std::pair<std::string, std::string>> query;  // decoded
  Headers headers;                                         // names lower-cased
  std::string peer;                                        // "ip:port" of the client

  // First value of a query argument or header (header names compare lower-case); empty if
  // absent. has_arg tells an empty argument from a missing one.
  std::string arg(std::string_view name) const;
  bool has_arg(std::string_view name) const;
  std::string header(std::string_view lname) const;
};

struct ServerResponse {
  int status = 200;
  Headers headers;
  std::string body;  // used when body_owner is null
  // A body kept alive by owner (e.g. a cached chunk) until sent; used when owner is set.
  std::shared_ptr<const void> body_owner;
  std::span<const std::byte> body_bytes;
};

struct ServerOptions {
  std::string host = "127.0.0.1";  // address to bind: an IPv4 or IPv6 literal, or "0.0.0.0"
  uint16_t port = 0;               // 0: any free port (see HttpServer::port())
  // PEM text of a certificate (chain) and its key: with both, the server speaks TLS only.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // Connections held at once; beyond it new ones are refused. Each costs a thread: 1024 is
  // far more clients than one cache node serves, well below any thread limit.
  unsigned max_connections = 1024;
  // An idle kept-alive connection is closed after this many seconds (clients reconnect).
  unsigned idle_timeout_sec = 300;
};

class HttpServer {
 public:
  using Handler = std::function<ServerResponse(const ServerRequest&)>;

  // Binds and starts serving. Fails with a one-line reason (address in use, bad address, bad
  // certificate).
  static Result<std::unique_ptr<HttpServer>> start(ServerOptions options, Handler handler);
  // Stops accepting, closes connections and joins the threads.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const { return port_; }
  bool tls() const { return tls_; }
  // Connections open right now.
  uint64_t open_connections() const { return open_connections_.load(std::memory_order_relaxed); }

  // Internal: called from libmicrohttpd's C callbacks (never throws).
  ServerResponse dispatch(const ServerRequest& request) const;
  void connection_opened() { open_connections_.fetch_add(1, std::memory_order_relaxed); }
  void connection_closed() { open_connections_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  HttpServer(ServerOptions options, Handler handler);

  const ServerOptions options_;
  const Handler handler_;
  MHD_Daemon* daemon_ = nullptr;
  uint16_t port_ = 0;
  bool tls_ = false;
  std::atomic<uint64_t> open_connections_{0};
};

}  // namespace warmfs::http

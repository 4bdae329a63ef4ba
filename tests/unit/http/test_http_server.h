// TestHttpServer: a tiny HTTP/1.1 server on 127.0.0.1 for unit tests of the http and objstore
// layers, run in-process (an accept thread plus one thread per connection).
//
// A handler decides each reply; replies can lie about Content-Length and close early (to
// simulate truncated bodies) or close the connection after answering. The server records
// every request and counts accepted connections, so tests can check keep-alive reuse and
// what a client sent. Keep-alive is the default. Not for production; no TLS, no chunked
// request bodies. Thread safe: the handler may be called from several connection threads.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace warmfs::testing {

struct ServerRequest {
  std::string method;
  std::string target;                                        // path and query as sent
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  int connection = 0;  // 1-based index of the connection it arrived on

  std::string header(const std::string& lname) const;
};

struct ServerReply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Content-Length to announce; default body.size(). Announcing more than the body and
  // setting close makes a truncated response.
  std::optional<size_t> content_length;
  bool close = false;      // close the connection after the reply
  bool omit_body = false;  // send headers only (replies to HEAD)
};

class TestHttpServer {
 public:
  using Handler = std::function<ServerReply(const ServerRequest&)>;

  explicit TestHttpServer(Handler handler);
  ~TestHttpServer();
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  int port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:PORT"
  int connections_accepted() const { return connections_.load(); }
  std::vector<ServerRequest> requests() const;

 private:
  void accept_loop();
  void serve(int fd, int connection);

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread acceptor_;

  mutable std::mutex mu_;  // protects requests_ and workers_
  std::vector<ServerRequest> requests_;
  std::vector<std::thread> workers_;
};

// A port on 127.0.0.1 where nothing listens (bound, then closed), for refused connections.
int unused_local_port();

}  // namespace warmfs::testing

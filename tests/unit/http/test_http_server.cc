#include "unit/http/test_http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <stdexcept>

namespace warmfs::testing {
namespace {

constexpr int kPollMs = 50;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 206:
      return "Partial Content";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 412:
      return "Precondition Failed";
    case 416:
      return "Range Not Satisfiable";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string ServerRequest::header(const std::string& lname) const {
  for (const auto& [k, v] : headers) {
    if (k == lname) return v;
  }
  return {};
}

TestHttpServer::TestHttpServer(Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket failed");
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error("bind/listen failed");
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

TestHttpServer::~TestHttpServer() {
  stop_ = true;
  acceptor_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
  ::close(listen_fd_);
}

std::string TestHttpServer::url() const { return fmt::format("http://127.0.0.1:{}", port_); }

std::vector<ServerRequest> TestHttpServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

void TestHttpServer::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int connection = ++connections_;
    std::lock_guard lock(mu_);
    workers_.emplace_back([this, fd, connection] { serve(fd, connection); });
  }
}

void TestHttpServer::serve(int fd, int connection) {
  std::string buffer;
  char chunk[16384];
  // Reads until `want` returns true or the peer closes / the server stops.
  auto read_more = [&]() -> bool {
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      int r = ::poll(&p, 1, kPollMs);
      if (r == 0) continue;
      if (r < 0) return false;
      ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<size_t>(n));
      return true;
    }
    return false;
  };

  while (!stop_) {
    size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
      if (!read_more()) {
        ::close(fd);
        return;
      }
    }
    ServerRequest req;
    req.connection = connection;
    std::string head = buffer.substr(0, end);
    buffer.erase(0, end + 4);
    size_t line_end = head.find("\r\n");
    std::string request_line = head.substr(0, line_end);
    size_t sp1 = request_line.find(' ');
    size_t sp2 = request_line.rfind(' ');
    req.method = request_line.substr(0, sp1);
    req.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      size_t e = head.find("\r\n", pos);
      if (e == std::string::npos) e = head.size();
      std::string line = head.substr(pos, e - pos);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        req.headers.emplace_back(lower(trim(line.substr(0, colon))), trim(line.substr(colon + 1)));
      }
      pos = e + 2;
    }
    size_t body_len = 0;
    if (std::string cl = req.header("content-length"); !cl.empty()) body_len = std::stoul(cl);
    while (buffer.size() < body_len) {
      if (!read_more()) {
        ::close(fd);
        return;
      }
    }
    req.body = buffer.substr(0, body_len);
    buffer.erase(0, body_len);
    {
      std::lock_guard lock(mu_);
      requests_.push_back(req);
    }

    ServerReply reply = handler_(req);
    std::string out = fmt::format("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (const auto& [k, v] : reply.headers) out += fmt::format("{}: {}\r\n", k, v);
    out += fmt::format("Content-Length: {}\r\n", reply.content_length.value_or(reply.body.size()));
    if (reply.close) out += "Connection: close\r\n";
    out += "\r\n";
    if (!reply.omit_body && req.method != "HEAD") out += reply.body;
    if (!send_all(fd, out) || reply.close) {
      ::shutdown(fd, SHUT_RDWR);
      ::close(fd);
      return;
    }
  }
  ::close(fd);
}

int unused_local_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace warmfs::testing

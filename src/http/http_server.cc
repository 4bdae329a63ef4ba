#include "http/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>

#include "common/log.h"

namespace warmfs::http {
namespace {

// Markers kept in libmicrohttpd's per-request pointer: the headers were seen; a body came.
int kHeadersSeen = 0;
int kHadBody = 0;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

MHD_Result collect_header(void* cls, MHD_ValueKind /*kind*/, const char* key, const char* value) {
  static_cast<Headers*>(cls)->emplace_back(lower(key), value != nullptr ? value : "");
  return MHD_YES;
}

MHD_Result collect_arg(void* cls, MHD_ValueKind /*kind*/, const char* key, const char* value) {
  static_cast<std::vector<std::pair<std::string, std::string>>*>(cls)->emplace_back(
      key, value != nullptr ? value : "");
  return MHD_YES;
}

std::string peer_of(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  const sockaddr* sa = info->client_addr;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "?";
}

void release_owner(void* cls) { delete static_cast<std::shared_ptr<const void>*>(cls); }

MHD_Result reply(MHD_Connection* c, ServerResponse r) {
  MHD_Response* resp = nullptr;
  if (r.body_owner) {
    auto* holder = new std::shared_ptr<const void>(std::move(r.body_owner));
    resp = MHD_create_response_from_buffer_with_free_callback_cls(
        r.body_bytes.size(), const_cast<std::byte*>(r.body_bytes.data()), &release_owner, holder);
    if (resp == nullptr) release_owner(holder);
  } else {
    resp = MHD_create_response_from_buffer(r.body.size(), r.body.data(), MHD_RESPMEM_MUST_COPY);
  }
  if (resp == nullptr) return MHD_NO;
  for (const auto& [name, value] : r.headers)
    MHD_add_response_header(resp, name.c_str(), value.c_str());
  const MHD_Result ok = MHD_queue_response(c, static_cast<unsigned>(r.status), resp);
  MHD_destroy_response(resp);
  return ok;
}

MHD_Result on_request(void* cls, MHD_Connection* c, const char* url, const char* method,
                      const char* /*version*/, const char* /*upload_data*/,
                      size_t* upload_data_size, void** req_cls) {
  auto* server = static_cast<HttpServer*>(cls);
  if (*req_cls == nullptr) {  // first call: headers only
    *req_cls = &kHeadersSeen;
    return MHD_YES;
  }
  if (*upload_data_size != 0) {  // a body: discard it, answer 413 once it is all in
    *upload_data_size = 0;
    *req_cls = &kHadBody;
    return MHD_YES;
  }
  if (*req_cls == &kHadBody) {
    ServerResponse r;
    r.status = 413;
    r.body = "{\"error\":\"BodyNotAllowed\",\"message\":\"requests carry no body\"}";
    r.headers.emplace_back("Content-Type", "application/json");
    return reply(c, std::move(r));
  }
  ServerRequest req;
  req.method = method != nullptr ? method : "";
  req.path = url != nullptr ? url : "";
  MHD_get_connection_values(c, MHD_HEADER_KIND, &collect_header, &req.headers);
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, &collect_arg, &req.query);
  req.peer = peer_of(c);
  return reply(c, server->dispatch(req));
}

void on_connection(void* cls, MHD_Connection* /*c*/, void** /*socket_context*/,
                   MHD_ConnectionNotificationCode code) {
  auto* server = static_cast<HttpServer*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED)
    server->connection_opened();
  else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
    server->connection_closed();
}

void on_log(void* /*cls*/, const char* fmt, va_list ap) {
  char line[512];
  std::vsnprintf(line, sizeof line, fmt, ap);
  std::string s(line);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  log::debug("http server: {}", s);
}

}  // namespace

std::string ServerRequest::arg(std::string_view name) const {
  for (const auto& [k, v] : query) {
    if (k == name) return v;
  }
  return {};
}

bool ServerRequest::has_arg(std::string_view name) const {
  for (const auto& [k, v] : query) {
    if (k == name) return true;
  }
  return false;
}

std::string ServerRequest::header(std::string_view lname) const {
  for (const auto& [k, v] : headers) {
    if (k == lname) return v;
  }
  return {};
}

HttpServer::HttpServer(ServerOptions options, Handler handler)
    : options_(std::move(options)), handler_(std::move(handler)) {}

HttpServer::~HttpServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

ServerResponse HttpServer::dispatch(const ServerRequest& request) const {
  try {
    return handler_(request);
  } catch (const std::exception& e) {
    log::error("http server: handler failed on {}: {}", request.path, e.what());
  } catch (...) {
    log::error("http server: handler failed on {}", request.path);
  }
  ServerResponse r;
  r.status = 500;
  r.body = "{\"error\":\"Internal\",\"message\":\"the server failed\"}";
  return r;
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(ServerOptions options, Handler handler) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(options.port);
  if (int rc = ::getaddrinfo(options.host.c_str(), port_text.c_str(), &hints, &res); rc != 0) {
    return Status(Errc::kInvalidArgument,
                  "cannot resolve listen address " + options.host + ": " + ::gai_strerror(rc));
  }
  sockaddr_storage addr{};
  std::memcpy(&addr, res->ai_addr, res->ai_addrlen);
  const bool v6 = res->ai_family == AF_INET6;
  ::freeaddrinfo(res);

  const bool tls = !options.tls_cert_pem.empty() || !options.tls_key_pem.empty();
  if (tls && (options.tls_cert_pem.empty() || options.tls_key_pem.empty())) {
    return Status(Errc::kInvalidArgument, "TLS needs both a certificate and a key");
  }
  if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    return Status(Errc::kNotSupported, "this libmicrohttpd was built without TLS");
  }
  std::unique_ptr<HttpServer> server(new HttpServer(std::move(options), std::move(handler)));
  const ServerOptions& o = server->options_;
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
                   MHD_USE_ERROR_LOG;
  if (v6) flags |= MHD_USE_IPv6;
  if (tls) flags |= MHD_USE_TLS;
  std::vector<MHD_OptionItem> opts;
  // The logger first, so that libmicrohttpd logs nothing of its own before it is set.
  opts.push_back({MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&on_log), nullptr});
  opts.push_back({MHD_OPTION_SOCK_ADDR, 0, &addr});
  opts.push_back({MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(o.max_connections), nullptr});
  opts.push_back(
      {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(o.idle_timeout_sec), nullptr});
  opts.push_back(
      {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&on_connection), server.get()});
  if (tls) {
    opts.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(o.tls_key_pem.c_str())});
    opts.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(o.tls_cert_pem.c_str())});
  }
  opts.push_back({MHD_OPTION_END, 0, nullptr});
  server->daemon_ = MHD_start_daemon(flags, o.port, nullptr, nullptr, &on_request, server.get(),
                                     MHD_OPTION_ARRAY, opts.data(), MHD_OPTION_END);
  if (server->daemon_ == nullptr) {
    const int err = errno;
    std::string why = err != 0 ? std::strerror(err) : "unknown reason";
    if (tls) why += " (or the certificate and key are not valid PEM of one pair)";
    return Status(Errc::kUnavailable,
                  "cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + why);
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(server->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  server->port_ = info != nullptr ? info->port : o.port;
  server->tls_ = tls;
  return server;
}

}  // namespace warmfs::http

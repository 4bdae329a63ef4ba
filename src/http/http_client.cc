#include "http/http_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/buffer.h"
#include "common/hex.h"

namespace warmfs::http {
namespace {

// Per-handle connection cache. One request at a time runs on a handle and warmfs talks to one
// host per client, so a handle needs one warm connection; the second absorbs a host change.
constexpr long kConnectionsPerHandle = 2;
// TCP keepalive probes so a NAT or load balancer does not silently drop an idle pooled socket.
constexpr long kKeepIdleSeconds = 30;
constexpr long kKeepIntervalSeconds = 10;

std::once_flag g_curl_init_once;
CURLcode g_curl_init_result = CURLE_OK;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// The URL without its query, for messages: short, and never carries a query-string credential.
std::string_view url_for_message(std::string_view url) {
  size_t q = url.find('?');
  return q == std::string_view::npos ? url : url.substr(0, q);
}

Errc map_curl_error(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return Errc::kUnavailable;
    case CURLE_OPERATION_TIMEDOUT:
      return Errc::kTimeout;
    default:
      return Errc::kIo;
  }
}

// State of one transfer, shared with the curl callbacks through their userdata pointer.
struct Transfer {
  Response* response = nullptr;
  std::span<std::byte> sink;
  const std::function<void(size_t, const Response&)>* progress = nullptr;
  const std::function<void(size_t, std::span<const std::byte>, const Response&)>* bytes_seen =
      nullptr;
  bool use_sink = false;
  long status = 0;  // from the latest status line
  size_t received = 0;
  bool overflow = false;         // body longer than the sink
  bool callback_failed = false;  // an exception (bad_alloc) was caught in a callback
};

// curl write callback. Returning less than size*nmemb aborts the transfer (CURLE_WRITE_ERROR).
size_t on_body(char* data, size_t size, size_t nmemb, void* userp) noexcept {
  auto* t = static_cast<Transfer*>(userp);
  const size_t n = size * nmemb;
  if (t->use_sink && t->status >= 200 && t->status < 300) {
    if (t->received + n > t->sink.size()) {
      t->overflow = true;
      return 0;
    }
    if (t->bytes_seen != nullptr && *t->bytes_seen) {
      (*t->bytes_seen)(t->received, std::span(reinterpret_cast<const std::byte*>(data), n),
                       *t->response);
    }
    // pwrite when the sink is a fill buffer (common/buffer.h): no page faults for new memory.
    fill_buffer(t->sink.data() + t->received, reinterpret_cast<const std::byte*>(data), n);
    t->received += n;
    if (t->progress != nullptr && *t->progress) (*t->progress)(t->received, *t->response);
    return n;
  } else {
    try {
      std::string& body = t->response->body;
      const size_t keep =
          t->use_sink ? std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, body.size())) : n;
      body.append(data, keep);
    } catch (...) {
      t->callback_failed = true;
      return 0;
    }
  }
  t->received += n;
  return n;
}

// curl header callback: one raw header line per call, including status lines.
size_t on_header(char* data, size_t size, size_t nmemb, void* userp) noexcept {
  auto* t = static_cast<Transfer*>(userp);
  const size_t n = size * nmemb;
  try {
    apply_header_line(std::string_view(data, n), *t->response);
    t->status = t->response->status;
  } catch (...) {
    t->callback_failed = true;
    return 0;
  }
  return n;
}

struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

bool has_header(const Headers& headers, std::string_view lname) {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return lower(h.first) == lname; });
}

Result<Slist> build_header_list(const Request& request, bool has_body) {
  Slist list;
  auto append = [&list](const std::string& line) {
    curl_slist* next = curl_slist_append(list.get(), line.c_str());
    if (next == nullptr) return false;
    list.release();
    list.reset(next);
    return true;
  };
  for (const auto& [name, value] : request.headers) {
    // "Name;" is curl's spelling for a header sent with an empty value.
    if (!append(value.empty() ? name + ";" : name + ": " + value)) {
      return Status(Errc::kInternal, "out of memory building request headers");
    }
  }
  // No 100-continue round trip; and no curl default content type on bodies we send.
  if (!has_header(request.headers, "expect") && !append("Expect:")) {
    return Status(Errc::kInternal, "out of memory building request headers");
  }
  if (has_body && !has_header(request.headers, "content-type") && !append("Content-Type:")) {
    return Status(Errc::kInternal, "out of memory building request headers");
  }
  return list;
}

}  // namespace

void apply_header_line(std::string_view line, Response& response) {
  if (line.starts_with("HTTP/")) {
    response.headers.clear();  // a new response (after 100 Continue or similar)
    size_t sp = line.find(' ');
    long status = 0;
    if (sp != std::string_view::npos) {
      std::string_view code = line.substr(sp + 1, 3);
      std::from_chars(code.data(), code.data() + code.size(), status);
    }
    response.status = status;  // so far; perform() sets the final one
    return;
  }
  std::string_view content = trim(line);
  if (content.empty()) return;
  if (line.front() == ' ' || line.front() == '\t') {  // obsolete line folding
    if (!response.headers.empty()) {
      auto& value = response.headers.back().second;
      value.push_back(' ');
      value.append(content);
    }
    return;
  }
  size_t colon = content.find(':');
  if (colon == std::string_view::npos) return;
  response.headers.emplace_back(lower(trim(content.substr(0, colon))),
                                std::string(trim(content.substr(colon + 1))));
}

std::string Response::header(std::string_view name) const {
  std::string lname = lower(name);
  for (const auto& [k, v] : headers) {
    if (k == lname) return v;
  }
  return {};
}

// Idle easy handles. Each keeps its own connection cache, so handing a warm handle to the
// next request reuses its connection.
struct Client::Pool {
  std::mutex mu;  // protects idle; never held while a transfer runs
  std::vector<CURL*> idle;
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> connections_opened{0};
  std::atomic<uint64_t> transport_errors{0};

  ~Pool() {
    for (CURL* h : idle) curl_easy_cleanup(h);
  }
  // Returns a handle (reset to defaults, connections kept) or nullptr if curl cannot make one.
  CURL* acquire() {
    {
      std::lock_guard lock(mu);
      if (!idle.empty()) {
        CURL* h = idle.back();
        idle.pop_back();
        curl_easy_reset(h);
        return h;
      }
    }
    return curl_easy_init();
  }
  void release(CURL* h, size_t max_idle) {
    {
      std::lock_guard lock(mu);
      if (idle.size() < max_idle) {
        idle.push_back(h);
        return;
      }
    }
    curl_easy_cleanup(h);
  }
};

Client::Client(ClientOptions options)
    : pool_(std::make_unique<Pool>()), options_(std::move(options)) {
  std::call_once(g_curl_init_once,
                 [] { g_curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (options_.ca_bundle.empty()) {
    const char* env = std::getenv("AWS_CA_BUNDLE");
    if (env != nullptr && *env != '\0') options_.ca_bundle = env;
  }
  if (options_.max_connections < 1) options_.max_connections = 1;
}

Client::~Client() = default;

ClientStats Client::stats() const {
  ClientStats s;
  s.requests = pool_->requests.load(std::memory_order_relaxed);
  s.connections_opened = pool_->connections_opened.load(std::memory_order_relaxed);
  s.transport_errors = pool_->transport_errors.load(std::memory_order_relaxed);
  return s;
}

Result<Response> Client::perform(const Request& request) {
  if (g_curl_init_result != CURLE_OK) {
    return Status(Errc::kInternal, fmt::format("curl_global_init failed: {}",
                                               curl_easy_strerror(g_curl_init_result)));
  }
  CURL* h = pool_->acquire();
  if (h == nullptr) return Status(Errc::kInternal, "curl_easy_init failed");
  struct Releaser {
    Pool* pool;
    CURL* h;
    size_t max_idle;
    ~Releaser() { pool->release(h, max_idle); }
  } releaser{pool_.get(), h, static_cast<size_t>(options_.max_connections)};

  Response response;
  Transfer transfer;
  transfer.response = &response;
  transfer.sink = request.body_sink;
  transfer.use_sink = !request.body_sink.empty();
  transfer.progress = &request.on_sink_progress;
  transfer.bytes_seen = &request.on_sink_bytes;

  const bool is_head = request.method == "HEAD";
  const bool has_body =
      request.method == "PUT" || request.method == "POST" || !request.body.empty();
  WARMFS_ASSIGN_OR_RETURN(Slist header_list, build_header_list(request, has_body));
  char errbuf[CURL_ERROR_SIZE] = {0};

  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  // Send the path exactly as given: object keys may contain "/./" or "/../", which curl
  // would otherwise squash (and the signature covers the path as given).
  curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.connect_timeout.count()));
  const auto total = request.slow_answer ? options_.slow_answer_timeout : options_.request_timeout;
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(std::chrono::milliseconds(total).count()));
  // A server at work on a slow answer sends nothing meanwhile (S3 sends spaces now and then,
  // others nothing at all): only the total bound applies then.
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, request.slow_answer ? 0L : options_.low_speed_bytes);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                   request.slow_answer ? 0L : static_cast<long>(options_.low_speed_time.count()));
  curl_easy_setopt(h, CURLOPT_BUFFERSIZE, options_.buffer_size);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, kKeepIdleSeconds);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, kKeepIntervalSeconds);
  curl_easy_setopt(h, CURLOPT_MAXCONNECTS, kConnectionsPerHandle);
  if (!options_.ca_bundle.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, options_.ca_bundle.c_str());
  if (!options_.verify_tls) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, header_list.get());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &transfer);

  if (is_head) {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (has_body) {
    static const char kEmpty[] = "";
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.empty() ? kEmpty : request.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  } else if (request.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }

  pool_->requests.fetch_add(1, std::memory_order_relaxed);
  const CURLcode rc = curl_easy_perform(h);
  long new_connections = 0;
  curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &new_connections);
  pool_->connections_opened.fetch_add(static_cast<uint64_t>(new_connections),
                                      std::memory_order_relaxed);
  // The handle outlives this call in the pool: drop pointers into this stack frame.
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);

  const std::string_view where = url_for_message(request.url);
  auto fail = [&](Errc code, std::string message) -> Status {
    pool_->transport_errors.fetch_add(1, std::memory_order_relaxed);
    return Status(code, std::move(message));
  };
  if (transfer.overflow) {
    return fail(Errc::kIo, fmt::format("{} {}: response body larger than the {}-byte buffer",
                                       request.method, where, transfer.sink.size()));
  }
  if (transfer.callback_failed) {
    return fail(Errc::kInternal,
                fmt::format("{} {}: out of memory receiving response", request.method, where));
  }
  if (rc != CURLE_OK) {
    std::string detail = errbuf[0] != '\0' ? fmt::format(" ({})", trim(errbuf)) : std::string();
    return fail(map_curl_error(rc),
                fmt::format("{} {}: {}{}", request.method, where, curl_easy_strerror(rc), detail));
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
  response.body_size = transfer.received;

  // curl reports a body cut short by a closed connection as PARTIAL_FILE; this is a second
  // guard for any path where it does not.
  const std::string content_length = response.header("content-length");
  if (!is_head && !content_length.empty() && response.status != 204 && response.status != 304) {
    uint64_t expected = 0;
    auto [ptr, ec] = std::from_chars(content_length.data(),
                                     content_length.data() + content_length.size(), expected);
    if (ec == std::errc() && expected != transfer.received) {
      return fail(Errc::kIo, fmt::format("{} {}: truncated body ({} of {} bytes)", request.method,
                                         where, transfer.received, expected));
    }
  }
  return response;
}

std::string uri_encode(std::string_view s, bool keep_slash) {
  std::string out;
  out.reserve(s.size() * 3 / 2);
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      append_hex_byte(out, c, HexCase::kUpper);
    }
  }
  return out;
}

}  // namespace warmfs::http

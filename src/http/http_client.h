// HttpClient: blocking HTTP/1.1 requests over libcurl, with connection reuse.
//
// Only this folder includes curl. A client keeps a pool of easy handles (each holding its
// own kept-alive connections) and hands one to each request, so concurrent requests from
// many threads run in parallel and later requests reuse warm connections. It does not retry:
// retry policy belongs to the caller, which knows what is safe to repeat and must re-sign.
// Thread safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "warmfs/result.h"

namespace warmfs::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// Most bytes of a non-2xx body kept when the request has a body sink (S3 error documents
// are well under 1 KiB; the rest is counted and dropped).
inline constexpr size_t kMaxErrorBody = 64 * 1024;

struct Response;

struct Request {
  std::string method = "GET";
  std::string url;        // absolute, already percent-encoded
  Headers headers;        // sent as given (names as written)
  std::string_view body;  // request body for PUT/POST (must outlive perform())
  // Where the response body goes. When set, a 2xx body is written here and one longer than
  // the span is an error (kIo); any other status's body (an error document) still goes to
  // Response::body, capped at kMaxErrorBody. When empty, the body is collected into
  // Response::body.
  std::span<std::byte> body_sink;
  // With a body_sink: called on perform()'s thread each time 2xx body bytes have landed in
  // it, with how many have so far (counting from the sink's start) and the response's status
  // and headers. Must not throw.
  std::function<void(size_t, const Response&)> on_sink_progress;
  // With a body_sink: called with each piece of a 2xx body just before it is written to the
  // sink at offset `at` (from the sink's start), while the bytes are still in the core's
  // cache (a checksum costs no second pass over memory). Must not throw.
  std::function<void(size_t at, std::span<const std::byte> bytes, const Response&)> on_sink_bytes;
  // The server may work a long time before it sends a byte (CompleteMultipartUpload of a
  // large object, copies): no low-speed abort, and ClientOptions::slow_answer_timeout as
  // the total bound.
  bool slow_answer = false;
};

struct Response {
  long status = 0;
  Headers headers;       // names lower-cased
  std::string body;      // when no body_sink was given, or a non-2xx body with one
  size_t body_size = 0;  // bytes received (either way)
  // Value of a header (names compare lower-case), or empty.
  std::string header(std::string_view name) const;
};

struct ClientOptions {
  // Abort a connection attempt after this long (an unreachable endpoint fails fast).
  std::chrono::milliseconds connect_timeout{5000};
  // Abort a transfer that moves fewer than low_speed_bytes per second for this long
  // (a stalled server), rather than putting a wall-clock bound on large bodies.
  std::chrono::seconds low_speed_time{20};
  long low_speed_bytes = 1024;
  // Total bound on one request, as a backstop against a server that trickles forever.
  std::chrono::seconds request_timeout{300};
  // Total bound on a request marked slow_answer: S3 may take minutes to assemble a large
  // object, and a retry while the first attempt is still at work races it.
  std::chrono::seconds slow_answer_timeout{1800};
  // CA bundle for TLS; empty uses AWS_CA_BUNDLE if set, else the system default.
  std::string ca_bundle;
  bool verify_tls = true;
  // Receive buffer; larger than curl's 16 KiB default because bodies are mostly chunks, and
  // small enough that its bytes are still in the CPU cache when they are copied out (each
  // of the up to 64 handles has one).
  long buffer_size = 256 * 1024;
  // Most idle handles the pool keeps, each with its warm connection (so, with one host, the
  // most kept-alive connections); handles beyond it are closed when their request ends.
  int max_connections = 64;
};

// Totals since the client was made, for `warmfs stats` and for tests of connection reuse.
struct ClientStats {
  uint64_t requests = 0;            // perform() calls that reached curl
  uint64_t connections_opened = 0;  // new TCP connections (the rest reused a warm one)
  uint64_t transport_errors = 0;    // perform() calls that returned an error Status
};

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Performs one request. A transport failure (refused, reset, timeout, truncated body)
  // is a Status with kUnavailable, kTimeout or kIo and a message naming curl's reason;
  // any HTTP status, including 4xx/5xx, is a Response.
  Result<Response> perform(const Request& request);

  ClientStats stats() const;

 private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
  ClientOptions options_;
};

// What one raw header line, as the server sent it (CRLF included), does to a response being
// received: a status line ("HTTP/1.1 206 ...") starts a new response (headers cleared, status
// set, 0 if unreadable); a line starting with a space or tab continues the last header's value
// (obsolete folding); "Name: value" adds a header (name lower-cased, both trimmed); anything
// else is ignored. May throw std::bad_alloc.
void apply_header_line(std::string_view line, Response& response);

// Percent-encodes per RFC 3986 (unreserved characters kept); keeps '/' when keep_slash.
std::string uri_encode(std::string_view s, bool keep_slash);

}  // namespace warmfs::http

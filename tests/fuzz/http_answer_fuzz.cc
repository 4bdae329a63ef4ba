// The HTTP answers the S3 store reads: header lines as curl hands them over
// (http::apply_header_line), then what S3ObjectStore takes from them: Content-Range
// (parse_content_range), Content-Length and Last-Modified, and the error text of a failed
// answer. The input is the raw header block (lines ending in "\n"); after a blank line, the
// body.
#include <fmt/format.h>

#include "fuzz_util.h"
#include "http/http_client.h"
#include "objstore/s3_store.h"
#include "objstore/s3_store_util.h"
#include "objstore/time_format.h"

using namespace warmfs;

namespace {

void check_content_range(std::string_view value) {
  uint64_t first = 0, last = 0;
  int64_t total = 0;
  if (!parse_content_range(value, &first, &last, &total)) return;
  FUZZ_CHECK(first <= last);
  FUZZ_CHECK(total == -1 || total > 0);
  // What was accepted reads back the same from its canonical spelling.
  const std::string canonical = total < 0 ? fmt::format("bytes {}-{}/*", first, last)
                                          : fmt::format("bytes {}-{}/{}", first, last, total);
  uint64_t f2 = 0, l2 = 0;
  int64_t t2 = 0;
  FUZZ_CHECK(parse_content_range(canonical, &f2, &l2, &t2));
  FUZZ_CHECK(f2 == first && l2 == last && t2 == total);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_view(data, size);
  const size_t blank = input.find("\n\n");
  const std::string_view head = input.substr(0, blank);
  const std::string_view body =
      blank == std::string_view::npos ? std::string_view() : input.substr(blank + 2);

  http::Response r;
  for (std::string_view line : fuzz::split(head, '\n')) {
    http::apply_header_line(std::string(line) + "\r\n", r);
  }
  r.body = std::string(body);
  r.body_size = r.body.size();
  for (size_t i = 0; i < r.headers.size(); ++i) {
    const auto& [name, value] = r.headers[i];
    for (char c : name) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
    // header() finds the first header of a name.
    size_t first = 0;
    while (r.headers[first].first != name) ++first;
    FUZZ_CHECK(r.header(name) == r.headers[first].second);
    check_content_range(value);
  }
  check_content_range(r.header("content-range"));
  check_content_range(input);
  uint64_t length = 0;
  (void)s3_detail::parse_number(r.header("content-length"), &length);
  (void)s3::parse_http_date(r.header("last-modified"));
  (void)s3::parse_iso8601(r.header("last-modified"));
  const std::string text = s3_detail::describe_http_error(r);
  FUZZ_CHECK(!text.empty());
  (void)s3_detail::errc_for(r);
  (void)s3_detail::is_retryable_client_error(r);
  return 0;
}

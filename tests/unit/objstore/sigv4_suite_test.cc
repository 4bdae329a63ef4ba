// The AWS Signature Version 4 test suite (tests/data/aws-sig-v4-test-suite, Apache-2.0, see
// its LICENSE and NOTICE): for each case, parse the .req file, sign it and compare the
// canonical request (.creq), string to sign (.sts) and Authorization header (.authz).
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "objstore/sigv4.h"
#include "objstore/xml.h"

using warmfs::s3::Credentials;
using warmfs::s3::PathMode;
using warmfs::s3::SigningRequest;
using warmfs::s3::SigV4Signer;

namespace {

const std::string kSuite =
    std::string(WARMFS_TEST_DATA) + "/aws-sig-v4-test-suite/aws-sig-v4-test-suite/";
constexpr const char* kToken =
    "AQoDYXdzEPT//////////"
    "wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx"
    "7mSEI/qkPpKPi/"
    "kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNV"
    "XAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+"
    "scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  INFO("reading " << path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string decode(const std::string& s) {
  auto r = warmfs::s3::url_decode(s, false);
  REQUIRE(r.is_ok());
  return *r;
}

// Parses the suite's raw HTTP request. The request line's target may contain spaces, so it is
// everything between the first space and the last " HTTP/". A line starting with whitespace
// continues the previous header (obsolete folding); the suite expects each folded line as a
// further value of that header, which the signer joins with ','.
SigningRequest parse_req(const std::string& text) {
  SigningRequest req;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  size_t sp = line.find(' ');
  size_t http = line.rfind(" HTTP/");
  req.method = line.substr(0, sp);
  std::string target = line.substr(sp + 1, http - sp - 1);
  size_t q = target.find('?');
  req.path = target.substr(0, q);
  if (q != std::string::npos) {
    std::string query = target.substr(q + 1);
    size_t pos = 0;
    while (pos <= query.size()) {
      size_t amp = query.find('&', pos);
      if (amp == std::string::npos) amp = query.size();
      std::string pair = query.substr(pos, amp - pos);
      if (!pair.empty()) {
        size_t eq = pair.find('=');
        req.query.emplace_back(decode(pair.substr(0, eq)),
                               eq == std::string::npos ? "" : decode(pair.substr(eq + 1)));
      }
      pos = amp + 1;
    }
  }
  std::string body;
  bool in_body = false;
  while (std::getline(in, line)) {
    if (in_body) {
      body += (body.empty() ? "" : "\n") + line;
      continue;
    }
    if (line.empty()) {
      in_body = true;
      continue;
    }
    if ((line[0] == ' ' || line[0] == '\t') && !req.headers.empty()) {
      req.headers.emplace_back(req.headers.back().first, line);
      continue;
    }
    size_t colon = line.find(':');
    req.headers.emplace_back(line.substr(0, colon), line.substr(colon + 1));
  }
  req.payload_hash = warmfs::s3::sha256_hex(body);
  return req;
}

std::chrono::system_clock::time_point suite_time() {
  // 20150830T123600Z
  return std::chrono::system_clock::time_point(std::chrono::seconds(1440938160));
}

void check_case(const std::string& dir, bool with_token = false) {
  const std::string name = dir.substr(dir.rfind('/') + 1);
  const std::string base = kSuite + dir + "/" + name;
  INFO("case " << dir);
  SigningRequest req = parse_req(read_file(base + ".req"));
  Credentials creds{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                    with_token ? kToken : ""};
  SigV4Signer signer("us-east-1", "service", PathMode::kNormalized);
  auto signed_req = signer.sign(req, creds, suite_time());
  CHECK(signed_req.canonical_request == read_file(base + ".creq"));
  CHECK(signed_req.string_to_sign == read_file(base + ".sts"));
  CHECK(signed_req.authorization == read_file(base + ".authz"));
}

// The two x-www-form-urlencoded cases are inconsistent in the suite itself: the .creq signs
// Content-Length, but the .sts (not the SHA-256 of that .creq) and the .sreq come from signing
// without it, and for "-parameters" with an older "charset=utf8" content type. So: the
// canonical request is checked as given, and the string to sign and signature by signing the
// request the .sreq shows.
void check_form_case(const std::string& dir, const std::string& content_type) {
  const std::string base = kSuite + dir + "/" + dir;
  INFO("case " << dir);
  SigningRequest req = parse_req(read_file(base + ".req"));
  Credentials creds{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
  SigV4Signer signer("us-east-1", "service", PathMode::kNormalized);
  CHECK(signer.sign(req, creds, suite_time()).canonical_request == read_file(base + ".creq"));

  std::erase_if(req.headers, [](const auto& h) { return h.first == "Content-Length"; });
  for (auto& h : req.headers) {
    if (h.first == "Content-Type") h.second = content_type;
  }
  auto as_sent = signer.sign(req, creds, suite_time());
  CHECK(as_sent.string_to_sign == read_file(base + ".sts"));
  const std::string authz = read_file(base + ".authz");
  CHECK(as_sent.signature == authz.substr(authz.rfind('=') + 1));
  CHECK_THAT(read_file(base + ".sreq"), Catch::Contains(as_sent.authorization));
}

}  // namespace

TEST_CASE("SigV4 suite: vanilla and query cases", "[sigv4]") {
  for (const char* c : {"get-vanilla", "get-vanilla-query", "get-vanilla-empty-query-key",
                        "get-vanilla-query-order-key", "get-vanilla-query-order-key-case",
                        "get-vanilla-query-order-value", "get-vanilla-query-unreserved",
                        "get-vanilla-utf8-query", "get-unreserved", "get-utf8"}) {
    check_case(c);
  }
}

TEST_CASE("SigV4 suite: header cases", "[sigv4]") {
  for (const char* c : {"get-header-key-duplicate", "get-header-value-multiline",
                        "get-header-value-order", "get-header-value-trim"}) {
    check_case(c);
  }
}

TEST_CASE("SigV4 suite: post cases", "[sigv4]") {
  for (const char* c : {"post-vanilla", "post-vanilla-query", "post-vanilla-empty-query-value",
                        "post-header-key-case", "post-header-key-sort", "post-header-value-case"}) {
    check_case(c);
  }
  check_form_case("post-x-www-form-urlencoded", "application/x-www-form-urlencoded");
  check_form_case("post-x-www-form-urlencoded-parameters",
                  "application/x-www-form-urlencoded; charset=utf8");
}

TEST_CASE("SigV4 suite: normalize-path cases", "[sigv4]") {
  for (const char* c : {"get-relative", "get-relative-relative", "get-slash", "get-slash-dot-slash",
                        "get-slash-pointless-dot", "get-slashes", "get-space"}) {
    check_case(std::string("normalize-path/") + c);
  }
}

TEST_CASE("SigV4 suite: session token cases", "[sigv4]") {
  // "before": the token is part of the signed request, which is what the signer does when
  // the credentials carry one (and what S3 requires).
  check_case("post-sts-token/post-sts-header-before", true);
  // "after": the token is added after signing; signing without it gives the same result.
  check_case("post-sts-token/post-sts-header-after", false);
}

TEST_CASE("S3 path mode neither normalizes nor re-encodes", "[sigv4]") {
  SigningRequest req;
  req.method = "GET";
  req.path = "/bucket/a//b/./c/../my%20file";
  req.headers = {{"Host", "example.com"}};
  req.payload_hash = std::string(warmfs::s3::kUnsignedPayload);
  Credentials creds{"AKIDEXAMPLE", "secret", ""};
  auto s3 = SigV4Signer("us-east-1", "s3", PathMode::kS3).sign(req, creds, suite_time());
  CHECK_THAT(s3.canonical_request, Catch::StartsWith("GET\n/bucket/a//b/./c/../my%20file\n"));
  auto generic =
      SigV4Signer("us-east-1", "s3", PathMode::kNormalized).sign(req, creds, suite_time());
  CHECK_THAT(generic.canonical_request, Catch::StartsWith("GET\n/bucket/a/b/my%2520file\n"));
}

TEST_CASE("signer sets x-amz-date and the session token header", "[sigv4]") {
  SigningRequest req;
  req.headers = {{"Host", "example.com"}, {"X-Amz-Date", "19990101T000000Z"}};
  req.payload_hash = std::string(warmfs::s3::kEmptyPayloadSha256);
  Credentials creds{"AKID", "secret", "TOKEN"};
  auto s = SigV4Signer("us-east-1", "s3", PathMode::kS3).sign(req, creds, suite_time());
  int dates = 0;
  std::string token, auth;
  for (const auto& [k, v] : s.headers) {
    std::string lk = k;
    for (char& c : lk) c = static_cast<char>(std::tolower(c));
    if (lk == "x-amz-date") {
      ++dates;
      CHECK(v == "20150830T123600Z");
    }
    if (lk == "x-amz-security-token") token = v;
    if (lk == "authorization") auth = v;
  }
  CHECK(dates == 1);
  CHECK(token == "TOKEN");
  CHECK(auth == s.authorization);
  CHECK(s.signed_headers == "host;x-amz-date;x-amz-security-token");
  CHECK_THAT(auth, !Catch::Contains("secret"));
}

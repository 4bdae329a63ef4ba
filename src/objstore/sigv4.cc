#include "objstore/sigv4.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include "common/hex.h"
#include "objstore/time_format.h"

namespace warmfs::s3 {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";

using Digest = std::array<unsigned char, 32>;

Digest hmac(std::string_view key, std::string_view data) {
  Digest out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &len);
  return out;
}

std::string_view as_view(const Digest& d) {
  return {reinterpret_cast<const char*>(d.data()), d.size()};
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Trims and collapses runs of spaces and tabs into one space.
std::string canonical_header_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  bool in_space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      in_space = true;
      continue;
    }
    if (in_space && !out.empty()) out.push_back(' ');
    in_space = false;
    out.push_back(c);
  }
  return out;
}

// RFC 3986 remove_dot_segments plus collapsing empty segments; keeps a trailing slash.
std::string normalize_path(std::string_view path) {
  std::vector<std::string_view> kept;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view segment = path.substr(pos, slash - pos);
    if (segment == "..") {
      if (!kept.empty()) kept.pop_back();
    } else if (!segment.empty() && segment != ".") {
      kept.push_back(segment);
    }
    pos = slash + 1;
  }
  std::string out = "/";
  for (size_t i = 0; i < kept.size(); ++i) {
    if (i > 0) out.push_back('/');
    out.append(kept[i]);
  }
  const bool trailing = path.ends_with("/") || path.ends_with("/.") || path.ends_with("/..");
  if (trailing && out.size() > 1) out.push_back('/');
  return out;
}

void set_header(http::Headers& headers, std::string_view lname, std::string value) {
  std::erase_if(headers, [&](const auto& h) { return lower(h.first) == lname; });
  headers.emplace_back(std::string(lname), std::move(value));
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
  return to_hex(std::span<const unsigned char>(out, len));
}

std::string canonical_query_string(const QueryParams& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [k, v] : query) {
    encoded.emplace_back(http::uri_encode(k, false), http::uri_encode(v, false));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [k, v] : encoded) {
    if (!out.empty()) out.push_back('&');
    out.append(k);
    out.push_back('=');
    out.append(v);
  }
  return out;
}

SigV4Signer::SigV4Signer(std::string region, std::string service, PathMode path_mode)
    : region_(std::move(region)), service_(std::move(service)), path_mode_(path_mode) {}

std::string SigV4Signer::canonical_uri(std::string_view path) const {
  if (path.empty()) return "/";
  if (path_mode_ == PathMode::kS3) return std::string(path);
  return http::uri_encode(normalize_path(path), true);
}

SigningResult SigV4Signer::sign(const SigningRequest& request, const Credentials& credentials,
                                std::chrono::system_clock::time_point now) const {
  SigningResult out;
  const std::string amz_date = format_amz_date(now);
  const std::string date = amz_date.substr(0, 8);

  out.headers = request.headers;
  set_header(out.headers, "x-amz-date", amz_date);
  if (!credentials.session_token.empty()) {
    set_header(out.headers, "x-amz-security-token", credentials.session_token);
  }

  // Canonical headers: lower-case names, sorted; repeated names joined with ',' in order.
  std::map<std::string, std::string> canonical;
  for (const auto& [name, value] : out.headers) {
    auto [it, inserted] = canonical.try_emplace(lower(name), canonical_header_value(value));
    if (!inserted) {
      it->second.push_back(',');
      it->second.append(canonical_header_value(value));
    }
  }
  std::string header_block;
  for (const auto& [name, value] : canonical) {
    header_block += fmt::format("{}:{}\n", name, value);
    if (!out.signed_headers.empty()) out.signed_headers.push_back(';');
    out.signed_headers.append(name);
  }

  out.canonical_request =
      fmt::format("{}\n{}\n{}\n{}\n{}\n{}", request.method, canonical_uri(request.path),
                  canonical_query_string(request.query), header_block, out.signed_headers,
                  request.payload_hash);
  const std::string scope = fmt::format("{}/{}/{}/aws4_request", date, region_, service_);
  out.string_to_sign =
      fmt::format("{}\n{}\n{}\n{}", kAlgorithm, amz_date, scope, sha256_hex(out.canonical_request));

  const Digest k_date = hmac("AWS4" + credentials.secret_access_key, date);
  const Digest k_region = hmac(as_view(k_date), region_);
  const Digest k_service = hmac(as_view(k_region), service_);
  const Digest k_signing = hmac(as_view(k_service), "aws4_request");
  const Digest sig = hmac(as_view(k_signing), out.string_to_sign);
  out.signature = to_hex(std::span<const unsigned char>(sig.data(), sig.size()));

  out.authorization =
      fmt::format("{} Credential={}/{}, SignedHeaders={}, Signature={}", kAlgorithm,
                  credentials.access_key_id, scope, out.signed_headers, out.signature);
  out.headers.emplace_back("authorization", out.authorization);
  return out;
}

}  // namespace warmfs::s3

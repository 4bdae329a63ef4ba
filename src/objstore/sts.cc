#include "objstore/sts.h"

#include <fmt/format.h>

#include "objstore/sigv4.h"
#include "objstore/time_format.h"
#include "objstore/xml.h"

namespace warmfs::s3 {
namespace {

std::string env_value(const EnvLookup& env, const char* name) {
  if (!env) return {};
  const char* v = env(name);
  return v == nullptr ? std::string() : std::string(v);
}

// "https://host:port/path" -> "host:port".
std::string host_of(std::string_view url) {
  size_t sep = url.find("://");
  if (sep != std::string_view::npos) url.remove_prefix(sep + 3);
  return std::string(url.substr(0, url.find('/')));
}

std::string form(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [k, v] : fields) {
    if (!out.empty()) out += '&';
    out += http::uri_encode(k, false) + "=" + http::uri_encode(v, false);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> role_fields(const char* action,
                                                             const AssumeRoleParams& p) {
  std::vector<std::pair<std::string, std::string>> f = {{"Action", action},
                                                        {"Version", "2011-06-15"},
                                                        {"RoleArn", p.role_arn},
                                                        {"RoleSessionName", p.session_name}};
  if (!p.external_id.empty()) f.emplace_back("ExternalId", p.external_id);
  if (p.duration_seconds > 0) f.emplace_back("DurationSeconds", std::to_string(p.duration_seconds));
  return f;
}

}  // namespace

std::string sts_endpoint(const std::string& region, const EnvLookup& env) {
  std::string url = env_value(env, "AWS_ENDPOINT_URL_STS");
  if (url.empty()) url = env_value(env, "AWS_ENDPOINT_URL");
  if (url.empty()) url = fmt::format("https://sts.{}.amazonaws.com", region);
  while (url.ends_with("/")) url.pop_back();
  return url;
}

StsClient::StsClient(std::string endpoint, std::string region, HttpSend send, Clock& clock)
    : endpoint_(std::move(endpoint)),
      region_(std::move(region)),
      send_(std::move(send)),
      clock_(clock) {}

Result<TemporaryCredentials> StsClient::assume_role(const Credentials& with,
                                                    const AssumeRoleParams& p) const {
  return call("AssumeRole", form(role_fields("AssumeRole", p)), &with);
}

Result<TemporaryCredentials> StsClient::assume_role_with_web_identity(
    const AssumeRoleParams& p, const std::string& token) const {
  auto fields = role_fields("AssumeRoleWithWebIdentity", p);
  fields.emplace_back("WebIdentityToken", token);
  return call("AssumeRoleWithWebIdentity", form(fields), nullptr);
}

Result<TemporaryCredentials> StsClient::call(const char* action, const std::string& body,
                                             const Credentials* sign_with) const {
  const std::string where = fmt::format("{} at {}", action, endpoint_);
  http::Request req;
  req.method = "POST";
  req.url = endpoint_ + "/";
  req.body = body;
  http::Headers headers = {{"host", host_of(endpoint_)},
                           {"content-type", "application/x-www-form-urlencoded; charset=utf-8"}};
  if (sign_with != nullptr) {
    SigV4Signer signer(region_, "sts", PathMode::kNormalized);
    SigningRequest to_sign;
    to_sign.method = "POST";
    to_sign.path = "/";
    to_sign.headers = std::move(headers);
    to_sign.payload_hash = sha256_hex(body);
    req.headers = signer.sign(to_sign, *sign_with, clock_.wall_now()).headers;
  } else {
    req.headers = std::move(headers);
  }
  auto r = send_(req);
  if (!r.is_ok()) return Status(r.code(), fmt::format("{}: {}", where, r.status().message()));
  if (r->status != 200) {
    auto err = parse_sts_error(r->body);
    const Errc code =
        r->status == 403 || r->status == 401 || r->status == 400 ? Errc::kAccessDenied : Errc::kIo;
    if (err.is_ok()) {
      return Status(code, fmt::format("{}: {} {}: {}", where, r->status, err->code, err->message));
    }
    return Status(code, fmt::format("{}: HTTP {} without an STS error document", where, r->status));
  }
  auto parsed = parse_sts_credentials(r->body, action);
  if (!parsed.is_ok())
    return Status(parsed.code(), fmt::format("{}: {}", where, parsed.status().message()));
  TemporaryCredentials out;
  out.credentials = {parsed->access_key_id, parsed->secret_access_key, parsed->session_token};
  out.expiration = time_from_epoch_seconds(parsed->expiration_sec);
  return out;
}

}  // namespace warmfs::s3

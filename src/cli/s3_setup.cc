#include "cli/s3_setup.h"

#include <chrono>
#include <cstdlib>

#include "common/clock.h"
#include "common/log.h"
#include "objstore/credential_chain.h"
#include "objstore/credentials.h"
#include "objstore/time_format.h"

namespace warmfs::cli {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

}  // namespace

S3Config s3_config(const S3Flags& flags, const std::string& bucket) {
  const auto env = s3::process_environment();
  S3Config c;
  c.bucket = bucket;
  c.region = s3::resolve_region(flags.region, flags.profile, env);
  c.endpoint = !flags.endpoint.empty()
                   ? flags.endpoint
                   : env_or("AWS_ENDPOINT_URL_S3", env_or("AWS_ENDPOINT_URL", ""));
  c.path_style = flags.path_style;
  c.anonymous = flags.no_sign_request;
  return c;
}

Result<std::shared_ptr<const s3::CredentialProvider>> resolve_credentials(const S3Flags& flags,
                                                                          const S3Config& config) {
  s3::CredentialRequest req;
  req.profile = flags.profile;
  req.anonymous = flags.no_sign_request;
  auto provider =
      s3::resolve_credential_chain(req, config.region, s3::default_chain_deps(config.http));
  if (!provider.is_ok())
    return Status(provider.code(), "credentials: " + provider.status().message());
  return std::shared_ptr<const s3::CredentialProvider>(std::move(*provider));
}

void log_credentials(const s3::CredentialProvider& provider) {
  const s3::CredentialStatus cs = provider.status();
  log::info("credentials: {}{}{}", cs.source, cs.origin.empty() ? "" : " " + cs.origin,
            cs.expires_at ? ", expire at " + s3::format_iso8601(*cs.expires_at) : "");
}

std::function<std::string()> credentials_stats(
    std::shared_ptr<const s3::CredentialProvider> provider) {
  return [provider = std::move(provider)] {
    return "{\"credentials\":" + s3::credential_status_json(provider->status()) + "}";
  };
}

std::string explain_check_failure(const Status& st, const std::string& what,
                                  const S3Config& config) {
  const std::string endpoint = config.endpoint.empty() ? "the S3 endpoint" : config.endpoint;
  const std::string& m = st.message();
  std::string hint;
  switch (st.code()) {
    case Errc::kAccessDenied:
      if (m.find("SignatureDoesNotMatch") != std::string::npos)
        hint = "check AWS_SECRET_ACCESS_KEY";
      else if (m.find("InvalidAccessKeyId") != std::string::npos)
        hint = "check AWS_ACCESS_KEY_ID";
      else if (m.find("ExpiredToken") != std::string::npos ||
               m.find("InvalidToken") != std::string::npos)
        hint = "refresh AWS_SESSION_TOKEN";
      else
        hint = "check the credentials and that they may list this bucket";
      break;
    case Errc::kNotFound:
      hint = m.find("NoSuchBucket") != std::string::npos ? "check the bucket name and --endpoint"
                                                         : "check the bucket name";
      break;
    case Errc::kUnavailable:
    case Errc::kTimeout:
      // Virtual-hosted URLs need BUCKET.HOST to resolve; servers such as MinIO and Ceph
      // often answer only on HOST.
      if (!config.path_style && m.find("resolve host") != std::string::npos) {
        return "cannot reach " + endpoint + ": " + m +
               " (check --endpoint and the network; if the endpoint " + "does not answer " +
               config.bucket + ".HOST names, add --path-style)";
      }
      return "cannot reach " + endpoint + ": " + m + " (check --endpoint and the network)";
    default:
      hint = "check --endpoint, --region and the credentials";
  }
  return "cannot list " + what + ": " + m + " (" + hint + ")";
}

Status check_bucket(const S3Config& config, const std::string& prefix) {
  S3Config check = config;
  check.retry.max_attempts = 2;
  check.http.connect_timeout = std::chrono::milliseconds(3000);
  check.http.request_timeout = std::chrono::seconds(20);
  WARMFS_ASSIGN_OR_RETURN(auto store, S3ObjectStore::create(check, SystemClock::instance()));
  ListRequest req;
  req.prefix = prefix;
  req.max_keys = 1;
  auto page = store->list(req);
  if (page.is_ok()) return Status::ok();
  std::string what = "s3://" + config.bucket;
  if (!prefix.empty())
    what += "/" + prefix.substr(0, prefix.size() - (prefix.ends_with('/') ? 1 : 0));
  return Status(page.code(), explain_check_failure(page.status(), what, store->config()));
}

Result<S3Source> parse_s3_source(const std::string& text) {
  constexpr std::string_view kScheme = "s3://";
  if (text.rfind(kScheme, 0) != 0) {
    return Status(Errc::kInvalidArgument, "'" + text + "' is not of the form s3://BUCKET[/PREFIX]");
  }
  std::string rest = text.substr(kScheme.size());
  S3Source s;
  const size_t slash = rest.find('/');
  s.bucket = rest.substr(0, slash);
  if (s.bucket.empty()) return Status(Errc::kInvalidArgument, "'" + text + "' names no bucket");
  if (slash != std::string::npos) {
    std::string p = rest.substr(slash + 1);
    while (!p.empty() && p.back() == '/') p.pop_back();
    while (!p.empty() && p.front() == '/') p.erase(0, 1);
    if (!p.empty()) s.prefix = p + "/";
  }
  return s;
}

}  // namespace warmfs::cli

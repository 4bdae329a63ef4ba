#include "objstore/credential_chain.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "common/log.h"

namespace warmfs::s3 {
namespace {

constexpr int kMaxProfileDepth = 5;
constexpr const char* kDefaultImdsEndpoint = "http://169.254.169.254";
constexpr const char* kContainerHost = "http://169.254.170.2";

std::string env_value(const EnvLookup& env, const char* name) {
  if (!env) return {};
  const char* v = env(name);
  return v == nullptr ? std::string() : std::string(v);
}

std::string get(const ProfileSettings& s, const char* key) {
  auto it = s.find(key);
  return it == s.end() ? std::string() : it->second;
}

Result<std::string> read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Errc::kAccessDenied, fmt::format("cannot read {} {}", what, path));
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  if (text.empty()) return Status(Errc::kAccessDenied, fmt::format("{} {} is empty", what, path));
  return text;
}

std::string session_name(const std::string& configured, Clock& clock) {
  if (!configured.empty()) return configured;
  return fmt::format("warmfs-{}", std::chrono::duration_cast<std::chrono::seconds>(
                                      clock.wall_now().time_since_epoch())
                                      .count());
}

// A source resolved: how to fetch it (again), what to call it. static_keys when it never
// changes (then fetch is empty).
struct Source {
  std::string id;      // CredentialStatus::source
  std::string origin;  // for messages and stats
  CredentialFetcher fetch;
  std::optional<Credentials> static_keys;
};

Source static_source(std::string id, std::string origin, Credentials keys) {
  Source s;
  s.id = std::move(id);
  s.origin = std::move(origin);
  s.static_keys = std::move(keys);
  return s;
}

class Chain {
 public:
  Chain(const CredentialRequest& request, std::string region, const ChainDeps& deps)
      : request_(request), region_(std::move(region)), deps_(deps), env_(deps.env) {}

  // nullopt: nothing configured anywhere.
  Result<std::optional<Source>> resolve();

  Source web_identity(std::string role_arn, std::string token_file, std::string session) const;
  CredentialFetcher container() const;
  CredentialFetcher imds() const;

 private:
  Result<std::optional<Source>> from_profile(const std::string& name, bool named, int depth) const;
  Result<Source> assume_role_source(const std::string& name, const ProfileSettings& p,
                                    const std::string& where, int depth) const;
  // Whether IMDS answers with a role; false when unreachable or without a role.
  bool imds_available() const;

  const CredentialRequest& request_;
  const std::string region_;
  const ChainDeps& deps_;
  const EnvLookup& env_;
};

}  // namespace

bool container_uri_allowed(std::string_view url) {
  if (url.starts_with("https://")) return true;
  if (!url.starts_with("http://")) return false;
  url.remove_prefix(7);
  url = url.substr(0, url.find_first_of("/?#"));
  std::string_view host = url;
  if (host.starts_with("[")) {
    host =
        host.substr(1, host.find(']') == std::string_view::npos ? host.size() : host.find(']') - 1);
  } else {
    host = host.substr(0, host.find(':'));
  }
  const bool loopback_v4 =
      host.starts_with("127.") && host.find_first_not_of("0123456789.") == std::string_view::npos;
  return host == "localhost" || loopback_v4 || host == "::1" || host == "169.254.170.2" ||
         host == "169.254.170.23" || host == "fd00:ec2::23";
}

namespace {

Result<Credentials> fetch_once(const Source& s) {
  if (s.static_keys) return *s.static_keys;
  WARMFS_ASSIGN_OR_RETURN(TemporaryCredentials t, s.fetch());
  return t.credentials;
}

Result<std::optional<Source>> Chain::resolve() {
  if (!request_.access_key_id.empty() || !request_.secret_access_key.empty()) {
    if (request_.access_key_id.empty() || request_.secret_access_key.empty()) {
      return Status(Errc::kInvalidArgument,
                    "explicit credentials need both an access key id and a secret");
    }
    return std::optional(static_source(
        "explicit", "",
        {request_.access_key_id, request_.secret_access_key, request_.session_token}));
  }
  const std::string env_id = env_value(env_, "AWS_ACCESS_KEY_ID");
  const std::string env_secret = env_value(env_, "AWS_SECRET_ACCESS_KEY");
  // A profile named by the caller (--profile) sets the environment's keys aside, as the AWS
  // CLI does: the profile may use them itself (credential_source = Environment).
  if (request_.profile.empty() && (!env_id.empty() || !env_secret.empty())) {
    if (env_id.empty() || env_secret.empty()) {
      return Status(Errc::kInvalidArgument,
                    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together");
    }
    return std::optional(static_source("environment", "",
                                       {env_id, env_secret, env_value(env_, "AWS_SESSION_TOKEN")}));
  }
  const std::string token_file = env_value(env_, "AWS_WEB_IDENTITY_TOKEN_FILE");
  const std::string role_arn = env_value(env_, "AWS_ROLE_ARN");
  if (!token_file.empty() || !role_arn.empty()) {
    if (token_file.empty() || role_arn.empty()) {
      return Status(
          Errc::kInvalidArgument,
          "web identity: AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN must be set together");
    }
    return std::optional(
        web_identity(role_arn, token_file, env_value(env_, "AWS_ROLE_SESSION_NAME")));
  }
  bool named = false;
  const std::string profile = choose_profile(request_.profile, env_, &named);
  WARMFS_ASSIGN_OR_RETURN(auto from_files, from_profile(profile, named, 0));
  if (from_files) return from_files;

  const std::string full = env_value(env_, "AWS_CONTAINER_CREDENTIALS_FULL_URI");
  const std::string relative = env_value(env_, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  if (!full.empty() || !relative.empty()) {
    if (relative.empty() && !container_uri_allowed(full)) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("AWS_CONTAINER_CREDENTIALS_FULL_URI {}: must be https, or http to "
                                "a loopback address or the ECS/EKS agent (169.254.170.2, "
                                "169.254.170.23, fd00:ec2::23), as the AWS SDKs require",
                                full));
    }
    Source s;
    s.id = "container";
    s.origin = !relative.empty() ? std::string(kContainerHost) + relative : full;
    s.fetch = container();
    return std::optional(std::move(s));
  }
  if (imds_available()) {
    Source s;
    s.id = "imds";
    s.origin = env_value(env_, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
    if (s.origin.empty()) s.origin = kDefaultImdsEndpoint;
    s.fetch = imds();
    return std::optional(std::move(s));
  }
  return std::optional<Source>();
}

Source Chain::web_identity(std::string role_arn, std::string token_file,
                           std::string session) const {
  Source s;
  s.id = "web-identity";
  s.origin = role_arn;
  auto sts =
      std::make_shared<StsClient>(sts_endpoint(region_, env_), region_, deps_.http, *deps_.clock);
  Clock* clock = deps_.clock;
  s.fetch = [sts, role_arn, token_file, session, clock]() -> Result<TemporaryCredentials> {
    WARMFS_ASSIGN_OR_RETURN(std::string token,
                            read_text_file(token_file, "web identity token file"));
    AssumeRoleParams p;
    p.role_arn = role_arn;
    p.session_name = session_name(session, *clock);
    return sts->assume_role_with_web_identity(p, token);
  };
  return s;
}

Result<std::optional<Source>> Chain::from_profile(const std::string& name, bool named,
                                                  int depth) const {
  std::string where;
  auto settings = load_profile(name, env_, &where);
  if (!settings) {
    if (!named && depth == 0) return std::optional<Source>();
    return Status(
        Errc::kInvalidArgument,
        fmt::format("profile '{}' not found in the shared credentials or config file", name));
  }
  const ProfileSettings& p = *settings;
  if (!get(p, "sso_session").empty() || !get(p, "sso_start_url").empty()) {
    return Status(Errc::kNotSupported,
                  fmt::format("{}: SSO profiles (sso_session, sso_start_url) are not supported; "
                              "run `aws configure export-credentials` and export the keys, or use "
                              "a role or static keys",
                              where));
  }
  const std::string id = get(p, "aws_access_key_id");
  const std::string secret = get(p, "aws_secret_access_key");
  // A role wins over keys in the same profile (the SDKs' order for a profile with both).
  if (!get(p, "role_arn").empty()) {
    WARMFS_ASSIGN_OR_RETURN(Source s, assume_role_source(name, p, where, depth));
    return std::optional(std::move(s));
  }
  if (!id.empty() || !secret.empty()) {
    if (id.empty() || secret.empty()) {
      return Status(
          Errc::kInvalidArgument,
          fmt::format("{}: needs both aws_access_key_id and aws_secret_access_key", where));
    }
    std::string token = get(p, "aws_session_token");
    if (token.empty()) token = get(p, "aws_security_token");
    return std::optional(static_source("shared-files", where, {id, secret, token}));
  }
  if (const std::string command = get(p, "credential_process"); !command.empty()) {
    WARMFS_ASSIGN_OR_RETURN(std::vector<std::string> argv, split_command(command));
    Source s;
    s.id = "credential-process";
    s.origin = where;
    ProcessRunner run = deps_.run_process;
    const auto timeout = deps_.process_timeout;
    s.fetch = [run, argv, timeout]() -> Result<TemporaryCredentials> {
      auto r = run(argv, timeout);
      if (!r.is_ok()) return Status(r.code(), "credential_process: " + r.status().message());
      std::string err = r->err;
      while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
      if (!err.empty()) log::warn("credential_process {}: stderr: {}", argv[0], err);
      if (r->exit_code != 0) {
        return Status(Errc::kAccessDenied,
                      fmt::format("credential_process {} exited with {}{}{}", argv[0], r->exit_code,
                                  err.empty() ? "" : ": ", err.substr(0, 300)));
      }
      return parse_process_credentials(r->out);
    };
    return std::optional(std::move(s));
  }
  if (depth > 0) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("{}: source profile has no credentials", where));
  }
  return std::optional<Source>();
}

Result<Source> Chain::assume_role_source(const std::string& name, const ProfileSettings& p,
                                         const std::string& where, int depth) const {
  if (depth >= kMaxProfileDepth) {
    return Status(
        Errc::kInvalidArgument,
        fmt::format("{}: source_profile chain deeper than {} (a loop?)", where, kMaxProfileDepth));
  }
  const std::string role_arn = get(p, "role_arn");
  const std::string source_profile = get(p, "source_profile");
  const std::string credential_source = get(p, "credential_source");
  const std::string token_file = get(p, "web_identity_token_file");
  const int sources = !source_profile.empty() + !credential_source.empty() + !token_file.empty();
  if (sources != 1) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("{}: role_arn needs exactly one of source_profile, credential_source "
                              "and web_identity_token_file",
                              where));
  }
  if (!token_file.empty()) {
    Source s = web_identity(role_arn, token_file, get(p, "role_session_name"));
    s.origin = fmt::format("{} ({})", role_arn, where);
    return s;
  }
  Source base;
  if (!source_profile.empty()) {
    if (source_profile == name) {
      // A profile may name itself: its own static keys are the source.
      const std::string id = get(p, "aws_access_key_id"), secret = get(p, "aws_secret_access_key");
      if (id.empty() || secret.empty())
        return Status(Errc::kInvalidArgument,
                      fmt::format("{}: source_profile is itself but has no keys", where));
      base = static_source("shared-files", where, {id, secret, get(p, "aws_session_token")});
    } else {
      WARMFS_ASSIGN_OR_RETURN(auto src, from_profile(source_profile, true, depth + 1));
      base = std::move(*src);
    }
  } else if (credential_source == "Environment") {
    const std::string id = env_value(env_, "AWS_ACCESS_KEY_ID");
    const std::string secret = env_value(env_, "AWS_SECRET_ACCESS_KEY");
    if (id.empty() || secret.empty())
      return Status(Errc::kInvalidArgument,
                    fmt::format("{}: credential_source Environment but AWS_ACCESS_KEY_ID and "
                                "AWS_SECRET_ACCESS_KEY are not set",
                                where));
    base = static_source("environment", "", {id, secret, env_value(env_, "AWS_SESSION_TOKEN")});
  } else if (credential_source == "Ec2InstanceMetadata") {
    base.id = "imds";
    base.fetch = imds();
  } else if (credential_source == "EcsContainer") {
    base.id = "container";
    base.fetch = container();
  } else {
    return Status(Errc::kInvalidArgument,
                  fmt::format("{}: credential_source '{}' is not one of Environment, "
                              "Ec2InstanceMetadata, EcsContainer",
                              where, credential_source));
  }
  AssumeRoleParams params;
  params.role_arn = role_arn;
  params.external_id = get(p, "external_id");
  if (const std::string d = get(p, "duration_seconds"); !d.empty()) {
    params.duration_seconds = std::atoi(d.c_str());
    if (params.duration_seconds < 900)
      return Status(Errc::kInvalidArgument,
                    fmt::format("{}: duration_seconds must be >= 900", where));
  }
  auto sts =
      std::make_shared<StsClient>(sts_endpoint(region_, env_), region_, deps_.http, *deps_.clock);
  Clock* clock = deps_.clock;
  const std::string configured_session = get(p, "role_session_name");
  auto base_ptr = std::make_shared<Source>(std::move(base));
  Source s;
  s.id = "assume-role";
  s.origin = fmt::format("{} ({})", role_arn, where);
  s.fetch = [sts, base_ptr, params, configured_session, clock]() -> Result<TemporaryCredentials> {
    auto with = fetch_once(*base_ptr);
    if (!with.is_ok()) {
      return Status(with.code(), fmt::format("source credentials ({}): {}", base_ptr->id,
                                             with.status().message()));
    }
    AssumeRoleParams p = params;
    p.session_name = session_name(configured_session, *clock);
    return sts->assume_role(*with, p);
  };
  return s;
}

// --- Container endpoint and IMDS ---

CredentialFetcher Chain::container() const {
  const std::string full = env_value(env_, "AWS_CONTAINER_CREDENTIALS_FULL_URI");
  const std::string relative = env_value(env_, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  const std::string url = !relative.empty() ? std::string(kContainerHost) + relative : full;
  const std::string token_file = env_value(env_, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  const std::string token = env_value(env_, "AWS_CONTAINER_AUTHORIZATION_TOKEN");
  HttpSend send = deps_.http;
  return [url, token_file, token, send]() -> Result<TemporaryCredentials> {
    const std::string where = "container endpoint " + url;
    if (url.empty()) {
      return Status(Errc::kInvalidArgument,
                    "container endpoint: AWS_CONTAINER_CREDENTIALS_FULL_URI or "
                    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is not set");
    }
    http::Request req;
    req.url = url;
    if (!token_file.empty()) {
      auto t = read_text_file(token_file, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
      if (!t.is_ok()) return Status(t.code(), where + ": " + t.status().message());
      req.headers.emplace_back("Authorization", *t);
    } else if (!token.empty()) {
      req.headers.emplace_back("Authorization", token);
    }
    auto r = send(req);
    if (!r.is_ok()) return Status(r.code(), where + ": " + r.status().message());
    if (r->status != 200) {
      return Status(r->status == 401 || r->status == 403 ? Errc::kAccessDenied : Errc::kIo,
                    fmt::format("{}: HTTP {}: {}", where, r->status, r->body.substr(0, 200)));
    }
    auto c = parse_metadata_credentials(r->body);
    if (!c.is_ok()) return Status(c.code(), where + ": " + c.status().message());
    return c;
  };
}

namespace {

// IMDSv2: a session token, the role name, then its credentials.
Result<TemporaryCredentials> imds_fetch(const HttpSend& send, const std::string& base,
                                        bool* not_here) {
  const std::string where = "instance metadata " + base;
  http::Request put;
  put.method = "PUT";
  put.url = base + "/latest/api/token";
  put.headers.emplace_back("X-aws-ec2-metadata-token-ttl-seconds", "21600");
  auto t = send(put);
  if (!t.is_ok()) {
    if (not_here != nullptr) *not_here = true;
    return Status(t.code(), where + ": " + t.status().message());
  }
  if (t->status != 200 || t->body.empty()) {
    if (not_here != nullptr) *not_here = t->status == 404 || t->status == 403 || t->status == 405;
    return Status(Errc::kIo, fmt::format("{}: token request answered HTTP {}", where, t->status));
  }
  const std::string token = t->body;
  http::Request list;
  list.url = base + "/latest/meta-data/iam/security-credentials/";
  list.headers.emplace_back("X-aws-ec2-metadata-token", token);
  auto roles = send(list);
  if (!roles.is_ok()) return Status(roles.code(), where + ": " + roles.status().message());
  if (roles->status == 404) {
    if (not_here != nullptr) *not_here = true;
    return Status(Errc::kNotFound, where + ": no IAM role attached to this instance");
  }
  if (roles->status != 200) {
    return Status(roles->status == 401 ? Errc::kAccessDenied : Errc::kIo,
                  fmt::format("{}: role list answered HTTP {}", where, roles->status));
  }
  std::string role = roles->body.substr(0, roles->body.find('\n'));
  while (!role.empty() && (role.back() == '\r' || role.back() == ' ')) role.pop_back();
  if (role.empty()) {
    if (not_here != nullptr) *not_here = true;
    return Status(Errc::kNotFound, where + ": no IAM role attached to this instance");
  }
  http::Request get;
  get.url = base + "/latest/meta-data/iam/security-credentials/" + http::uri_encode(role, false);
  get.headers.emplace_back("X-aws-ec2-metadata-token", token);
  auto r = send(get);
  if (!r.is_ok()) return Status(r.code(), where + ": " + r.status().message());
  if (r->status != 200) {
    return Status(
        r->status == 401 ? Errc::kAccessDenied : Errc::kIo,
        fmt::format("{}: credentials of role {} answered HTTP {}", where, role, r->status));
  }
  auto c = parse_metadata_credentials(r->body);
  if (!c.is_ok()) return Status(c.code(), where + ": " + c.status().message());
  return c;
}

}  // namespace

CredentialFetcher Chain::imds() const {
  std::string base = env_value(env_, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
  if (base.empty()) base = kDefaultImdsEndpoint;
  while (base.ends_with("/")) base.pop_back();
  HttpSend send = deps_.metadata_http ? deps_.metadata_http : deps_.http;
  return [send, base]() { return imds_fetch(send, base, nullptr); };
}

bool Chain::imds_available() const {
  std::string disabled = env_value(env_, "AWS_EC2_METADATA_DISABLED");
  for (char& c : disabled) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (disabled == "true") return false;
  std::string base = env_value(env_, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
  if (base.empty()) base = kDefaultImdsEndpoint;
  while (base.ends_with("/")) base.pop_back();
  bool not_here = false;
  auto r = imds_fetch(deps_.metadata_http ? deps_.metadata_http : deps_.http, base, &not_here);
  if (!r.is_ok() && not_here) {
    log::debug("credentials: no instance metadata: {}", r.status().message());
    return false;
  }
  return true;  // answered (a failure now is reported by the provider's first fetch)
}

}  // namespace

ChainDeps default_chain_deps(const http::ClientOptions& base) {
  ChainDeps d;
  d.env = process_environment();
  d.clock = &SystemClock::instance();
  http::ClientOptions sts_options = base;
  sts_options.request_timeout = std::chrono::seconds(30);
  sts_options.max_connections = 2;
  auto sts_client = std::make_shared<http::Client>(sts_options);
  d.http = [sts_client](const http::Request& r) { return sts_client->perform(r); };
  http::ClientOptions md = base;
  md.connect_timeout = std::chrono::milliseconds(1000);
  md.request_timeout = std::chrono::seconds(3);
  md.max_connections = 2;
  auto md_client = std::make_shared<http::Client>(md);
  d.metadata_http = [md_client](const http::Request& r) { return md_client->perform(r); };
  d.run_process = run_process;
  return d;
}

Result<std::shared_ptr<CredentialProvider>> resolve_credential_chain(
    const CredentialRequest& request, const std::string& region, const ChainDeps& deps) {
  if (request.anonymous) {
    return std::shared_ptr<CredentialProvider>(std::make_shared<StaticCredentialProvider>(
        Credentials{}, "anonymous", "--no-sign-request"));
  }
  Chain chain(request, region, deps);
  WARMFS_ASSIGN_OR_RETURN(std::optional<Source> source, chain.resolve());
  if (!source) {
    log::info(
        "credentials: none found (environment, web identity, shared files, container, "
        "instance metadata): requests are sent unsigned");
    return std::shared_ptr<CredentialProvider>(std::make_shared<StaticCredentialProvider>(
        Credentials{}, "anonymous", "no credentials found"));
  }
  if (source->static_keys) {
    return std::shared_ptr<CredentialProvider>(std::make_shared<StaticCredentialProvider>(
        std::move(*source->static_keys), source->id, source->origin));
  }
  auto provider = RefreshingCredentialProvider::create(source->fetch, source->id, source->origin,
                                                       *deps.clock, deps.refresh);
  if (!provider.is_ok()) {
    return Status(provider.code(),
                  fmt::format("{}{}: {}", source->id,
                              source->origin.empty() ? "" : " (" + source->origin + ")",
                              provider.status().message()));
  }
  return std::shared_ptr<CredentialProvider>(std::move(*provider));
}

}  // namespace warmfs::s3

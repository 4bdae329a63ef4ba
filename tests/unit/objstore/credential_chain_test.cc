// The credential chain with fake HTTP, a fake process runner and a fake environment: which
// source wins, what profiles mean, how STS is called and how its answers are read.
#include "objstore/credential_chain.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "objstore/time_format.h"
#include "objstore/xml.h"
#include "support/fake_clock.h"
#include "support/temp_dir.h"

using namespace std::chrono_literals;
using warmfs::Errc;
using warmfs::FakeClock;
using warmfs::Result;
using warmfs::Status;
using warmfs::http::Request;
using warmfs::http::Response;
using namespace warmfs::s3;

namespace {

using warmfs::testing::TempHome;

constexpr const char* kStsOk =
    R"(<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <Credentials>
      <AccessKeyId>ASIAROLE</AccessKeyId>
      <SecretAccessKey>rolesecret</SecretAccessKey>
      <SessionToken>roletoken</SessionToken>
      <Expiration>2024-01-01T01:00:00Z</Expiration>
    </Credentials>
    <AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/r/s</Arn></AssumedRoleUser>
  </AssumeRoleResult>
</AssumeRoleResponse>)";

constexpr const char* kWebOk =
    R"(<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>ASIAWEB</AccessKeyId>
      <SecretAccessKey>websecret</SecretAccessKey>
      <SessionToken>webtoken</SessionToken>
      <Expiration>2024-01-01T01:00:00Z</Expiration>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>)";

constexpr const char* kStsError =
    R"(<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>
  <Message>Couldn't retrieve
 verification key</Message></Error><RequestId>r</RequestId></ErrorResponse>)";

constexpr const char* kMetadataJson =
    R"({"Code":"Success","AccessKeyId":"ASIAMD","SecretAccessKey":"mdsecret","Token":"mdtoken","Expiration":"2024-01-01T00:30:00Z"})";

// Everything the chain can reach, faked; requests are recorded.
struct World {
  FakeClock clock;
  TempHome home;
  std::map<std::string, std::string> vars;
  std::mutex mu;
  std::vector<Request> requests;  // copies (body copied into bodies)
  std::vector<std::string> bodies;
  std::vector<std::vector<std::string>> processes;
  std::string process_out =
      R"({"Version":1,"AccessKeyId":"AKIAPROC","SecretAccessKey":"procsecret"})";
  int sts_status = 200;
  bool imds_up = false;

  World() {
    vars = {{"HOME", home.dir.string()},
            {"AWS_CONFIG_FILE", (home.dir / ".aws/config").string()},
            {"AWS_SHARED_CREDENTIALS_FILE", (home.dir / ".aws/credentials").string()},
            {"AWS_ENDPOINT_URL_STS", "http://sts.test:9000"},
            {"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://imds.test"}};
  }

  Result<Response> answer(const Request& r) {
    {
      std::lock_guard lock(mu);
      requests.push_back(r);
      requests.back().body = {};
      bodies.emplace_back(r.body);
    }
    Response resp;
    resp.status = 200;
    if (r.url.starts_with("http://sts.test:9000")) {
      resp.status = sts_status;
      const bool web = std::string(r.body).find("AssumeRoleWithWebIdentity") != std::string::npos;
      resp.body = sts_status != 200 ? kStsError : web ? kWebOk : kStsOk;
      return resp;
    }
    if (r.url.starts_with("http://imds.test")) {
      if (!imds_up) return Status(Errc::kUnavailable, "connection refused");
      if (r.url.ends_with("/latest/api/token"))
        resp.body = "imds-token";
      else if (r.url.ends_with("/security-credentials/"))
        resp.body = "node-role";
      else
        resp.body = kMetadataJson;
      return resp;
    }
    if (r.url.starts_with("http://169.254.170.2") || r.url.starts_with("http://127.0.0.1:8099")) {
      resp.body = kMetadataJson;
      return resp;
    }
    return Status(Errc::kUnavailable, "no route to " + r.url);
  }

  ChainDeps deps() {
    ChainDeps d;
    d.env = [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
    d.clock = &clock;
    d.http = [this](const Request& r) { return answer(r); };
    d.metadata_http = d.http;
    d.run_process = [this](const std::vector<std::string>& argv, std::chrono::milliseconds) {
      processes.push_back(argv);
      ProcessOutput out;
      out.exit_code = 0;
      out.out = process_out;
      return Result<ProcessOutput>(out);
    };
    d.refresh.start_thread = false;
    return d;
  }

  Result<std::shared_ptr<CredentialProvider>> resolve(CredentialRequest req = {}) {
    return resolve_credential_chain(req, "eu-west-1", deps());
  }
};

std::string source_of(World& w, CredentialRequest req = {}) {
  auto p = w.resolve(req);
  if (!p.is_ok()) return "error: " + p.status().message();
  return (*p)->status().source;
}

}  // namespace

TEST_CASE("the chain's order: each source wins over the ones after it", "[credentials]") {
  World w;
  const std::string token_file = w.home.write("token", "jwt-token\n");
  w.home.write(".aws/credentials",
               "[default]\naws_access_key_id=AKIAFILE\naws_secret_access_key=f\n");
  w.vars["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = "http://127.0.0.1:8099/creds";
  w.imds_up = true;
  w.vars["AWS_WEB_IDENTITY_TOKEN_FILE"] = token_file;
  w.vars["AWS_ROLE_ARN"] = "arn:aws:iam::1:role/web";
  w.vars["AWS_ACCESS_KEY_ID"] = "AKIAENV";
  w.vars["AWS_SECRET_ACCESS_KEY"] = "envsecret";

  CredentialRequest explicit_keys;
  explicit_keys.access_key_id = "AKIAX";
  explicit_keys.secret_access_key = "x";
  CHECK(source_of(w, explicit_keys) == "explicit");
  CHECK(source_of(w) == "environment");
  w.vars.erase("AWS_ACCESS_KEY_ID");
  w.vars.erase("AWS_SECRET_ACCESS_KEY");
  CHECK(source_of(w) == "web-identity");
  w.vars.erase("AWS_WEB_IDENTITY_TOKEN_FILE");
  w.vars.erase("AWS_ROLE_ARN");
  CHECK(source_of(w) == "shared-files");
  std::filesystem::remove(w.home.dir / ".aws/credentials");
  CHECK(source_of(w) == "container");
  w.vars.erase("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  CHECK(source_of(w) == "imds");
  w.vars["AWS_EC2_METADATA_DISABLED"] = "true";
  CHECK(source_of(w) == "anonymous");
  w.vars.erase("AWS_EC2_METADATA_DISABLED");
  w.imds_up = false;  // unreachable: not an error, just nothing there
  auto p = w.resolve();
  REQUIRE(p.is_ok());
  CHECK((*p)->anonymous());
  CredentialRequest anon;
  anon.anonymous = true;
  w.imds_up = true;
  CHECK(source_of(w, anon) == "anonymous");
}

TEST_CASE("web identity: an unsigned AssumeRoleWithWebIdentity with the token file's token",
          "[credentials]") {
  World w;
  w.vars["AWS_WEB_IDENTITY_TOKEN_FILE"] = w.home.write("token", "jwt-token\n");
  w.vars["AWS_ROLE_ARN"] = "arn:aws:iam::1:role/web";
  w.vars["AWS_ROLE_SESSION_NAME"] = "my-session";
  auto p = w.resolve();
  REQUIRE(p.is_ok());
  CHECK((*p)->current()->access_key_id == "ASIAWEB");
  CHECK((*p)->current()->session_token == "webtoken");
  REQUIRE(w.requests.size() == 1);
  const Request& r = w.requests[0];
  CHECK(r.method == "POST");
  CHECK(r.url == "http://sts.test:9000/");
  bool signed_request = false;
  for (const auto& [k, v] : r.headers)
    signed_request |= k == "authorization" || k == "Authorization";
  CHECK_FALSE(signed_request);
  CHECK_THAT(w.bodies[0], Catch::Contains("Action=AssumeRoleWithWebIdentity") &&
                              Catch::Contains("Version=2011-06-15") &&
                              Catch::Contains("RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fweb") &&
                              Catch::Contains("RoleSessionName=my-session") &&
                              Catch::Contains("WebIdentityToken=jwt-token"));
  CHECK_FALSE(Catch::Contains("%0A").match(w.bodies[0]));  // the newline is trimmed

  SECTION("an STS error is one line with its code and message") {
    w.sts_status = 403;
    auto e = w.resolve();
    REQUIRE_FALSE(e.is_ok());
    CHECK(e.code() == Errc::kAccessDenied);
    CHECK(e.status().message() ==
          "web-identity (arn:aws:iam::1:role/web): AssumeRoleWithWebIdentity at "
          "http://sts.test:9000: 403 InvalidIdentityToken: Couldn't retrieve  verification key");
  }
  SECTION("the token file must exist") {
    w.vars["AWS_WEB_IDENTITY_TOKEN_FILE"] = "/nonexistent/token";
    CHECK_THAT(w.resolve().status().message(), Catch::Contains("/nonexistent/token"));
  }
  SECTION("a role without a token file is an error") {
    w.vars.erase("AWS_WEB_IDENTITY_TOKEN_FILE");
    CHECK(w.resolve().code() == Errc::kInvalidArgument);
  }
}

TEST_CASE("profiles: role_arn with source_profile is a signed AssumeRole", "[credentials]") {
  World w;
  w.home.write(".aws/credentials",
               "[base]\naws_access_key_id=AKIABASE\naws_secret_access_key=basesecret\n");
  w.home.write(
      ".aws/config",
      "[profile dev]\nrole_arn = arn:aws:iam::1:role/dev\nsource_profile = base\n"
      "external_id = ext-1\nrole_session_name = sess\nduration_seconds = 900\n"
      "[profile chained]\nrole_arn = arn:aws:iam::1:role/top\nsource_profile = dev\n"
      "[profile env]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = Environment\n"
      "[profile node]\nrole_arn = arn:aws:iam::1:role/n\ncredential_source = Ec2InstanceMetadata\n"
      "[profile bad]\nrole_arn = arn:aws:iam::1:role/b\ncredential_source = Somewhere\n"
      "[profile lonely]\nrole_arn = arn:aws:iam::1:role/l\n"
      "[profile loop]\nrole_arn = arn:aws:iam::1:role/l\nsource_profile = loop2\n"
      "[profile loop2]\nrole_arn = arn:aws:iam::1:role/l\nsource_profile = loop\n");
  CredentialRequest req;
  req.profile = "dev";
  auto p = w.resolve(req);
  REQUIRE(p.is_ok());
  CHECK((*p)->status().source == "assume-role");
  CHECK_THAT((*p)->status().origin, Catch::Contains("arn:aws:iam::1:role/dev"));
  CHECK((*p)->current()->access_key_id == "ASIAROLE");
  REQUIRE(w.requests.size() == 1);
  std::string auth;
  for (const auto& [k, v] : w.requests[0].headers)
    if (k == "authorization") auth = v;
  CHECK_THAT(auth, Catch::StartsWith(
                       "AWS4-HMAC-SHA256 Credential=AKIABASE/20240101/eu-west-1/sts/aws4_request"));
  CHECK_THAT(w.bodies[0],
             Catch::Contains("Action=AssumeRole&") && Catch::Contains("ExternalId=ext-1") &&
                 Catch::Contains("DurationSeconds=900") && Catch::Contains("RoleSessionName=sess"));

  SECTION("a role whose source is another role: two AssumeRole calls") {
    req.profile = "chained";
    w.requests.clear();
    REQUIRE(w.resolve(req).is_ok());
    CHECK(w.requests.size() == 2);
  }
  SECTION("credential_source Environment signs with the environment's keys") {
    // --profile sets the environment's keys aside for the chain; the profile uses them.
    w.vars["AWS_ACCESS_KEY_ID"] = "AKIAENV";
    w.vars["AWS_SECRET_ACCESS_KEY"] = "e";
    req.profile = "env";
    w.requests.clear();
    auto q = w.resolve(req);
    REQUIRE(q.is_ok());
    CHECK((*q)->status().source == "assume-role");
    REQUIRE(w.requests.size() == 1);
    CHECK_THAT(w.requests[0].headers.back().second, Catch::Contains("Credential=AKIAENV/"));
    w.vars.erase("AWS_ACCESS_KEY_ID");
    CHECK(w.resolve(req).code() == Errc::kInvalidArgument);  // one of the two is missing
  }
  SECTION("credential_source Ec2InstanceMetadata") {
    w.imds_up = true;
    req.profile = "node";
    w.requests.clear();
    REQUIRE(w.resolve(req).is_ok());
    REQUIRE(w.requests.size() == 4);  // token, role, credentials, AssumeRole
    CHECK(w.requests[0].method == "PUT");
    CHECK(w.requests[3].url == "http://sts.test:9000/");
  }
  SECTION("errors: unknown credential_source, no source, a loop, a missing profile") {
    req.profile = "bad";
    CHECK_THAT(w.resolve(req).status().message(), Catch::Contains("Somewhere"));
    req.profile = "lonely";
    CHECK_THAT(w.resolve(req).status().message(), Catch::Contains("exactly one of"));
    req.profile = "loop";
    CHECK_THAT(w.resolve(req).status().message(), Catch::Contains("deeper than"));
    req.profile = "missing";
    CHECK(w.resolve(req).code() == Errc::kInvalidArgument);
  }
}

TEST_CASE("profiles: credential_process, SSO refused, static keys", "[credentials]") {
  World w;
  w.home.write(".aws/config",
               "[default]\ncredential_process = /opt/bin/creds --role \"my role\" 'a b'\n"
               "[profile sso]\nsso_session = corp\n"
               "[profile sso2]\nsso_start_url = https://x.awsapps.com/start\n"
               "[profile keys]\naws_access_key_id = AKIAK\naws_secret_access_key = "
               "k\naws_session_token = t\n");
  auto p = w.resolve();
  REQUIRE(p.is_ok());
  CHECK((*p)->status().source == "credential-process");
  CHECK((*p)->current()->access_key_id == "AKIAPROC");
  REQUIRE(w.processes.size() == 1);
  CHECK(w.processes[0] == std::vector<std::string>{"/opt/bin/creds", "--role", "my role", "a b"});

  CredentialRequest req;
  req.profile = "sso";
  auto sso = w.resolve(req);
  CHECK(sso.code() == Errc::kNotSupported);
  CHECK_THAT(sso.status().message(), Catch::Contains("SSO profiles"));
  req.profile = "sso2";
  CHECK(w.resolve(req).code() == Errc::kNotSupported);
  req.profile = "keys";
  auto keys = w.resolve(req);
  REQUIRE(keys.is_ok());
  CHECK((*keys)->status().source == "shared-files");
  CHECK((*keys)->current()->session_token == "t");
  CHECK_FALSE((*keys)->status().expires_at);
}

TEST_CASE("credential_process output, container and metadata documents", "[credentials]") {
  auto ok = parse_process_credentials(
      R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","SessionToken":"T","Expiration":"2024-01-01T00:10:00Z"})");
  REQUIRE(ok.is_ok());
  CHECK(ok->credentials.session_token == "T");
  REQUIRE(ok->expiration);
  CHECK(std::chrono::system_clock::to_time_t(*ok->expiration) == 1704067800);
  CHECK(format_iso8601(*ok->expiration) == "2024-01-01T00:10:00Z");
  // Found by tests/fuzz/credentials_fuzz.cc: a year past the clock's range (2262) overflowed
  // the time point; it is held to the range, an expiration far away.
  auto far = parse_process_credentials(
      R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","Expiration":"4060-01-01T00:00:00Z"})");
  REQUIRE(far.is_ok());
  REQUIRE(far->expiration);
  CHECK(*far->expiration > std::chrono::system_clock::now() + std::chrono::hours(24 * 365 * 200));
  CHECK(time_from_epoch_seconds(INT64_MIN) < std::chrono::system_clock::time_point());
  CHECK(parse_process_credentials(R"({"Version":2,"AccessKeyId":"A","SecretAccessKey":"S"})")
            .code() == Errc::kCorrupt);
  CHECK(parse_process_credentials(R"({"Version":1,"AccessKeyId":"A"})").code() == Errc::kCorrupt);
  CHECK(parse_process_credentials("not json").code() == Errc::kCorrupt);
  CHECK(parse_process_credentials(
            R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","Expiration":"soon"})")
            .code() == Errc::kCorrupt);
  auto md = parse_metadata_credentials(kMetadataJson);
  REQUIRE(md.is_ok());
  CHECK(md->credentials.session_token == "mdtoken");
  CHECK(parse_metadata_credentials(R"({"Code":"Failure","Message":"no"})").code() ==
        Errc::kAccessDenied);
  CHECK(split_command("a 'b").code() == Errc::kInvalidArgument);
  CHECK(*split_command(R"(  x  y\ z "" )") == std::vector<std::string>{"x", "y z", ""});
}

TEST_CASE("IMDSv2 and the container endpoint: the requests as the services want them",
          "[credentials]") {
  World w;
  SECTION("IMDS: token PUT with a TTL, then the role, then its credentials with the token") {
    w.imds_up = true;
    auto p = w.resolve();
    REQUIRE(p.is_ok());
    CHECK((*p)->status().source == "imds");
    CHECK((*p)->current()->access_key_id == "ASIAMD");
    REQUIRE(w.requests.size() >= 3);
    CHECK(w.requests[0].method == "PUT");
    CHECK(w.requests[0].url == "http://imds.test/latest/api/token");
    CHECK(w.requests[0].headers[0].first == "X-aws-ec2-metadata-token-ttl-seconds");
    CHECK(w.requests[1].url == "http://imds.test/latest/meta-data/iam/security-credentials/");
    CHECK(w.requests[2].url ==
          "http://imds.test/latest/meta-data/iam/security-credentials/node-role");
    CHECK(w.requests[2].headers[0] ==
          std::pair<std::string, std::string>{"X-aws-ec2-metadata-token", "imds-token"});
  }
  SECTION("container: a full URI must be https, loopback or the agent's") {
    CHECK(container_uri_allowed("https://creds.example.com/x"));
    CHECK(container_uri_allowed("http://127.0.0.1:51679/creds"));
    CHECK(container_uri_allowed("http://localhost/creds"));
    CHECK(container_uri_allowed("http://[::1]:80/creds"));
    CHECK(container_uri_allowed("http://169.254.170.23/v1/credentials"));
    CHECK(container_uri_allowed("http://[fd00:ec2::23]/v1/credentials"));
    CHECK_FALSE(container_uri_allowed("http://evil.example.com/creds"));
    CHECK_FALSE(container_uri_allowed("http://127.0.0.1.evil.example.com/creds"));
    CHECK_FALSE(container_uri_allowed("ftp://127.0.0.1/creds"));
    w.vars["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = "http://container.test/creds";
    w.vars["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "secret-token";
    auto p = w.resolve();
    CHECK(p.code() == Errc::kInvalidArgument);
    CHECK(w.requests.empty());  // the token went nowhere
  }
  SECTION("container: relative URI on 169.254.170.2, the token file's token") {
    w.vars["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"] = "/v2/credentials/abc";
    w.vars["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"] = w.home.write("ctoken", "pod-token\n");
    w.vars["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "ignored-when-the-file-is-set";
    auto p = w.resolve();
    REQUIRE(p.is_ok());
    CHECK((*p)->status().source == "container");
    REQUIRE(w.requests.size() == 1);
    CHECK(w.requests[0].url == "http://169.254.170.2/v2/credentials/abc");
    CHECK(w.requests[0].headers[0] ==
          std::pair<std::string, std::string>{"Authorization", "pod-token"});
  }
}

TEST_CASE("STS answers: success, error documents, malformed", "[credentials]") {
  auto ok = parse_sts_credentials(kStsOk, "AssumeRole");
  REQUIRE(ok.is_ok());
  CHECK(ok->access_key_id == "ASIAROLE");
  CHECK(ok->secret_access_key == "rolesecret");
  CHECK(ok->session_token == "roletoken");
  CHECK(ok->expiration_sec == 1704070800);
  CHECK(parse_sts_credentials(kWebOk, "AssumeRoleWithWebIdentity").is_ok());
  // The wrong action's document, an error document, truncated XML, missing members.
  CHECK(parse_sts_credentials(kWebOk, "AssumeRole").code() == Errc::kCorrupt);
  CHECK(parse_sts_credentials(kStsError, "AssumeRole").code() == Errc::kCorrupt);
  CHECK(parse_sts_credentials(std::string(kStsOk).substr(0, 200), "AssumeRole").code() ==
        Errc::kCorrupt);
  CHECK(parse_sts_credentials("", "AssumeRole").code() == Errc::kCorrupt);
  std::string no_token = kStsOk;
  no_token.replace(no_token.find("<SessionToken>"),
                   std::string("<SessionToken>roletoken</SessionToken>").size(), "");
  CHECK(parse_sts_credentials(no_token, "AssumeRole").code() == Errc::kCorrupt);
  std::string bad_time = kStsOk;
  bad_time.replace(bad_time.find("2024-01-01T01:00:00Z"), 20, "tomorrow");
  CHECK_THAT(parse_sts_credentials(bad_time, "AssumeRole").status().message(),
             Catch::Contains("Expiration"));

  auto err = parse_sts_error(kStsError);
  REQUIRE(err.is_ok());
  CHECK(err->code == "InvalidIdentityToken");
  CHECK(err->message == "Couldn't retrieve  verification key");
  CHECK(parse_sts_error("<html>503</html>").code() == Errc::kCorrupt);
}

TEST_CASE("the STS endpoint: AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL, the region's",
          "[credentials]") {
  std::map<std::string, std::string> vars;
  EnvLookup env = [&](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  CHECK(sts_endpoint("eu-west-1", env) == "https://sts.eu-west-1.amazonaws.com");
  vars["AWS_ENDPOINT_URL"] = "http://all.test/";
  CHECK(sts_endpoint("eu-west-1", env) == "http://all.test");
  vars["AWS_ENDPOINT_URL_STS"] = "http://sts.test:1";
  CHECK(sts_endpoint("eu-west-1", env) == "http://sts.test:1");
}

TEST_CASE("run_process: output, exit status, stderr, timeout", "[credentials]") {
  auto ok = run_process({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, 10s);
  REQUIRE(ok.is_ok());
  CHECK(ok->out == "out\n");
  CHECK(ok->err == "err\n");
  CHECK(ok->exit_code == 3);
  auto by_name = run_process({"sh", "-c", "echo found"}, 10s);  // found on PATH, no shell
  REQUIRE(by_name.is_ok());
  CHECK(by_name->out == "found\n");
  auto slow = run_process({"/bin/sleep", "5"}, 100ms);
  CHECK(slow.code() == warmfs::Errc::kTimeout);
  auto missing = run_process({"/nonexistent/creds"}, 10s);
  REQUIRE(missing.is_ok());
  CHECK(missing->exit_code == 127);
}

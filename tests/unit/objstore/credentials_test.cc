#include "objstore/credentials.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "objstore/credential_chain.h"
#include "support/fake_clock.h"
#include "support/temp_dir.h"

using warmfs::Errc;
using warmfs::s3::CredentialRequest;
using warmfs::s3::EnvLookup;
using warmfs::s3::resolve_region;

namespace {

using warmfs::testing::TempHome;

// A fake environment for the resolver.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

const char* kCredentialsFile = R"(# comment
[default]
aws_access_key_id = AKIADEFAULT00000001
aws_secret_access_key = defaultsecret/abc+def

[dev]
aws_access_key_id=AKIADEV0000000000002
aws_secret_access_key=devsecret
aws_session_token = devtoken==
; another comment
)";

const char* kConfigFile = R"([default]
region = eu-west-1

[profile cfgonly]
region = ap-south-1
aws_access_key_id = AKIACFG0000000000003
aws_secret_access_key = cfgsecret
s3 =
  max_concurrent_requests = 20

[profile sso]
sso_start_url = https://example.awsapps.com/start
sso_region = us-east-1

[profile regiononly]
region = ca-central-1
)";

// The chain with static sources only: no HTTP (IMDS disabled, any request fails), no
// processes.
struct Resolved {
  warmfs::Result<std::shared_ptr<warmfs::s3::CredentialProvider>> provider;
  std::string source() const { return provider.is_ok() ? (*provider)->status().source : "error"; }
  std::string origin() const { return provider.is_ok() ? (*provider)->status().origin : ""; }
  warmfs::s3::Credentials credentials() const { return *(*provider)->current(); }
  bool anonymous() const { return (*provider)->anonymous(); }
};

Resolved resolve(const CredentialRequest& req, FakeEnv& env) {
  static warmfs::FakeClock clock;
  env.vars["AWS_EC2_METADATA_DISABLED"] = "true";
  warmfs::s3::ChainDeps deps;
  deps.env = env.lookup();
  deps.clock = &clock;
  deps.http = [](const warmfs::http::Request& r) -> warmfs::Result<warmfs::http::Response> {
    return warmfs::Status(Errc::kUnavailable, "no network in this test: " + r.url);
  };
  deps.run_process = [](const std::vector<std::string>&, std::chrono::milliseconds) {
    return warmfs::Result<warmfs::s3::ProcessOutput>(Errc::kInternal, "no processes in this test");
  };
  deps.refresh.start_thread = false;
  return Resolved{warmfs::s3::resolve_credential_chain(req, "us-east-1", deps)};
}

}  // namespace

TEST_CASE("explicit credentials win", "[objstore]") {
  FakeEnv env;
  env.vars = {{"AWS_ACCESS_KEY_ID", "AKIAENV"}, {"AWS_SECRET_ACCESS_KEY", "envsecret"}};
  CredentialRequest req;
  req.access_key_id = "AKIAEXPLICIT";
  req.secret_access_key = "explicitsecret";
  auto r = resolve(req, env);
  REQUIRE(r.provider.is_ok());
  CHECK(r.source() == "explicit");
  CHECK(r.credentials().access_key_id == "AKIAEXPLICIT");

  req.secret_access_key.clear();
  CHECK(resolve(req, env).provider.code() == Errc::kInvalidArgument);
}

TEST_CASE("environment credentials", "[objstore]") {
  FakeEnv env;
  env.vars = {{"AWS_ACCESS_KEY_ID", "AKIAENV0000000000009"},
              {"AWS_SECRET_ACCESS_KEY", "envsecret"},
              {"AWS_SESSION_TOKEN", "envtoken"},
              {"HOME", "/nonexistent"}};
  auto r = resolve({}, env);
  REQUIRE(r.provider.is_ok());
  CHECK(r.source() == "environment");
  CHECK(r.credentials().secret_access_key == "envsecret");
  CHECK(r.credentials().session_token == "envtoken");
  CHECK_FALSE(r.anonymous());

  env.vars.erase("AWS_SECRET_ACCESS_KEY");
  auto partial = resolve({}, env);
  CHECK(partial.provider.code() == Errc::kInvalidArgument);
  CHECK_THAT(partial.provider.status().message(), !Catch::Contains("AKIAENV"));
}

TEST_CASE("shared credentials and config files", "[objstore]") {
  TempHome home;
  home.write(".aws/credentials", kCredentialsFile);
  home.write(".aws/config", kConfigFile);
  FakeEnv env;
  env.vars = {{"HOME", home.dir.string()}};

  SECTION("default profile from the credentials file") {
    auto r = resolve({}, env);
    REQUIRE(r.provider.is_ok());
    CHECK(r.source() == "shared-files");
    CHECK(r.credentials().access_key_id == "AKIADEFAULT00000001");
    CHECK(r.credentials().secret_access_key == "defaultsecret/abc+def");
    CHECK(r.credentials().session_token.empty());
    CHECK_THAT(r.origin(), Catch::Contains("credentials [default]"));
  }
  SECTION("profile from the argument, with a session token") {
    CredentialRequest req;
    req.profile = "dev";
    auto r = resolve(req, env);
    REQUIRE(r.provider.is_ok());
    CHECK(r.credentials().access_key_id == "AKIADEV0000000000002");
    CHECK(r.credentials().session_token == "devtoken==");
  }
  SECTION("profile from AWS_PROFILE, found in the config file") {
    env.vars["AWS_PROFILE"] = "cfgonly";
    auto r = resolve({}, env);
    REQUIRE(r.provider.is_ok());
    CHECK(r.source() == "shared-files");
    CHECK(r.credentials().access_key_id == "AKIACFG0000000000003");
    CHECK_THAT(r.origin(), Catch::Contains("config [profile cfgonly]"));
  }
  SECTION("the argument beats AWS_PROFILE") {
    env.vars["AWS_PROFILE"] = "cfgonly";
    CredentialRequest req;
    req.profile = "dev";
    auto r = resolve(req, env);
    REQUIRE(r.provider.is_ok());
    CHECK(r.credentials().access_key_id == "AKIADEV0000000000002");
  }
  SECTION("environment beats files") {
    env.vars["AWS_ACCESS_KEY_ID"] = "AKIAENV";
    env.vars["AWS_SECRET_ACCESS_KEY"] = "s";
    CHECK(resolve({}, env).source() == "environment");
  }
  SECTION("a named profile that does not exist is an error") {
    CredentialRequest req;
    req.profile = "nope";
    auto r = resolve(req, env);
    CHECK(r.provider.code() == Errc::kInvalidArgument);
    CHECK_THAT(r.provider.status().message(), Catch::Contains("nope"));
  }
  SECTION("an SSO profile is not supported") {
    CredentialRequest req;
    req.profile = "sso";
    CHECK(resolve(req, env).provider.code() == Errc::kNotSupported);
  }
  SECTION("a profile with only a region is anonymous") {
    CredentialRequest req;
    req.profile = "regiononly";
    auto r = resolve(req, env);
    REQUIRE(r.provider.is_ok());
    CHECK(r.anonymous());
    CHECK(r.origin() == "no credentials found");
  }
  SECTION("anonymous when asked, whatever is configured") {
    CredentialRequest req;
    req.anonymous = true;
    auto r = resolve(req, env);
    REQUIRE(r.provider.is_ok());
    CHECK(r.anonymous());
    CHECK(r.origin() == "--no-sign-request");
  }
  SECTION("file locations from AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE") {
    home.write("other-creds", "[default]\naws_access_key_id=AKIAOTHER\naws_secret_access_key=o\n");
    env.vars["AWS_SHARED_CREDENTIALS_FILE"] = (home.dir / "other-creds").string();
    env.vars["AWS_CONFIG_FILE"] = "~/.aws/config";
    auto r = resolve({}, env);
    REQUIRE(r.provider.is_ok());
    CHECK(r.credentials().access_key_id == "AKIAOTHER");
    CHECK(resolve_region("", "", env.lookup()) == "eu-west-1");
  }
}

TEST_CASE("nothing configured means anonymous, and says so", "[objstore]") {
  TempHome home;  // no files
  FakeEnv env;
  env.vars = {{"HOME", home.dir.string()}};
  auto r = resolve({}, env);
  REQUIRE(r.provider.is_ok());
  CHECK(r.anonymous());
  CHECK(r.source() == "anonymous");
  CHECK(r.origin() == "no credentials found");

  FakeEnv no_home;
  auto r2 = resolve({}, no_home);
  REQUIRE(r2.provider.is_ok());
  CHECK(r2.anonymous());
}

TEST_CASE("region resolution order", "[objstore]") {
  TempHome home;
  home.write(".aws/config", kConfigFile);
  FakeEnv env;
  env.vars = {{"HOME", home.dir.string()}};
  CHECK(resolve_region("", "", env.lookup()) == "eu-west-1");
  CHECK(resolve_region("", "cfgonly", env.lookup()) == "ap-south-1");
  CHECK(resolve_region("", "missing", env.lookup()) == "us-east-1");
  env.vars["AWS_PROFILE"] = "regiononly";
  CHECK(resolve_region("", "", env.lookup()) == "ca-central-1");
  env.vars["AWS_DEFAULT_REGION"] = "us-west-1";
  CHECK(resolve_region("", "", env.lookup()) == "us-west-1");
  env.vars["AWS_REGION"] = "us-west-2";
  CHECK(resolve_region("", "", env.lookup()) == "us-west-2");
  CHECK(resolve_region("sa-east-1", "", env.lookup()) == "sa-east-1");
  FakeEnv empty;
  CHECK(resolve_region("", "", empty.lookup()) == "us-east-1");
}

TEST_CASE("describe() never shows secrets", "[objstore]") {
  warmfs::s3::Credentials c{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                            "SESSIONTOKENVALUE"};
  const std::string d = c.describe();
  CHECK_THAT(d, Catch::Contains("MPLE"));
  CHECK_THAT(d, !Catch::Contains("AKIAIOSFODNN7"));
  CHECK_THAT(d, !Catch::Contains("wJalr"));
  CHECK_THAT(d, !Catch::Contains("SESSIONTOKEN"));
  CHECK(warmfs::s3::Credentials{}.describe() == "anonymous");
}

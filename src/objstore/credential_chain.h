// The AWS credential chain: which source signs warmfs's requests, resolved once at startup
// into a CredentialProvider that keeps them fresh for the life of the mount.
//
// Order (the AWS SDKs'; the first source that is configured wins, and a configured source
// that fails is an error, not a silent fall to the next):
//   1. --no-sign-request: anonymous.
//   2. explicit keys (the caller's).
//   3. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY [, AWS_SESSION_TOKEN];
//      skipped when the caller names a profile (--profile), as the AWS CLI does.
//   4. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN [+ AWS_ROLE_SESSION_NAME] ->
//      STS AssumeRoleWithWebIdentity (EKS IRSA); the token file is read again at each refresh.
//   5. the shared files' profile (--profile, AWS_PROFILE, "default"): static keys;
//      role_arn with source_profile (recursively) or credential_source (Environment,
//      Ec2InstanceMetadata, EcsContainer) -> STS AssumeRole; role_arn with
//      web_identity_token_file; credential_process (JSON Version 1). sso_session and
//      sso_start_url are refused with a clear error.
//   6. the container endpoint: AWS_CONTAINER_CREDENTIALS_FULL_URI or
//      AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (on http://169.254.170.2), with
//      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or AWS_CONTAINER_AUTHORIZATION_TOKEN (ECS, EKS
//      Pod Identity).
//   7. IMDSv2 at AWS_EC2_METADATA_SERVICE_ENDPOINT or http://169.254.169.254 (skipped with
//      AWS_EC2_METADATA_DISABLED=true); an unreachable service or no role means "not here".
//   8. nothing: anonymous, with a log line.
// STS is reached at AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else
// https://sts.REGION.amazonaws.com.
//
// All I/O goes through ChainDeps (HTTP, running a process, the environment, the clock), so
// tests run the chain with fakes. Errors are one line naming the source that failed.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "http/http_client.h"
#include "objstore/credential_provider.h"
#include "objstore/credentials.h"
#include "objstore/sts.h"

namespace warmfs::s3 {

struct ProcessOutput {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs argv (no shell) with a timeout; kTimeout when it runs too long (it is killed).
using ProcessRunner = std::function<Result<ProcessOutput>(const std::vector<std::string>& argv,
                                                          std::chrono::milliseconds timeout)>;

struct ChainDeps {
  EnvLookup env;
  Clock* clock = nullptr;
  HttpSend http;           // STS and the container endpoint
  HttpSend metadata_http;  // IMDS: 1 s connect timeout, short total timeout (as the SDKs)
  ProcessRunner run_process;
  RefreshOptions refresh;
  // How long credential_process may run.
  std::chrono::milliseconds process_timeout{60'000};
};

// The process environment, the system clock, http::Clients (the metadata one with a 1 s
// connect and 3 s total timeout) built from base, and fork/exec.
ChainDeps default_chain_deps(const http::ClientOptions& base);

// Resolves the chain above for request (profile, explicit keys, anonymous) and region (for
// STS). Errors name the source: "web identity (AWS_ROLE_ARN=...): AssumeRoleWithWebIdentity
// at https://...: 403 InvalidIdentityToken: ...".
Result<std::shared_ptr<CredentialProvider>> resolve_credential_chain(
    const CredentialRequest& request, const std::string& region, const ChainDeps& deps);

// Pieces, exposed for tests.
// credential_process's standard output (JSON, Version 1) to credentials.
Result<TemporaryCredentials> parse_process_credentials(std::string_view json);
// The container endpoint's and IMDS's JSON (AccessKeyId, SecretAccessKey, Token, Expiration).
Result<TemporaryCredentials> parse_metadata_credentials(std::string_view json);
// Splits a credential_process command line: whitespace-separated words, '...' and "..."
// quoting, backslash escapes (outside single quotes). No shell expansion.
Result<std::vector<std::string>> split_command(std::string_view command);
// Whether AWS_CONTAINER_CREDENTIALS_FULL_URI may receive the authorization token: https, or
// http to a loopback address or the ECS/EKS agent's (the SDKs' rule).
bool container_uri_allowed(std::string_view url);
// fork/exec with a timeout; stderr is collected (the caller logs it).
Result<ProcessOutput> run_process(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout);

}  // namespace warmfs::s3

// StsClient: the two STS calls the credential chain needs, AssumeRole (SigV4-signed with
// the source credentials, service "sts") and AssumeRoleWithWebIdentity (unsigned, as AWS
// wants it: the web identity token is the proof). Both are POSTs of the Query API
// (form-urlencoded, Version=2011-06-15) to the endpoint the AWS SDKs use:
// AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else https://sts.REGION.amazonaws.com.
//
// It does not retry or cache: the refreshing provider above it retries with backoff. A
// failure is one line naming the call, the endpoint, the HTTP status and STS's error code
// and message ("AssumeRoleWithWebIdentity at https://...: 403 InvalidIdentityToken: ...");
// never a secret or a token. Thread safe (stateless after construction).
#pragma once

#include <functional>
#include <string>

#include "common/clock.h"
#include "http/http_client.h"
#include "objstore/credential_provider.h"
#include "warmfs/result.h"

namespace warmfs::s3 {

// Sends one HTTP request (http::Client::perform in production, a fake in tests).
using HttpSend = std::function<Result<http::Response>(const http::Request&)>;

// The STS endpoint for region, from env as above; no trailing slash.
std::string sts_endpoint(const std::string& region, const EnvLookup& env);

struct AssumeRoleParams {
  std::string role_arn;
  std::string session_name;
  std::string external_id;   // optional
  int duration_seconds = 0;  // 0: STS's default (one hour)
};

class StsClient {
 public:
  StsClient(std::string endpoint, std::string region, HttpSend send, Clock& clock);

  Result<TemporaryCredentials> assume_role(const Credentials& with,
                                           const AssumeRoleParams& p) const;
  Result<TemporaryCredentials> assume_role_with_web_identity(const AssumeRoleParams& p,
                                                             const std::string& token) const;
  const std::string& endpoint() const { return endpoint_; }

 private:
  Result<TemporaryCredentials> call(const char* action, const std::string& body,
                                    const Credentials* sign_with) const;

  std::string endpoint_;
  std::string region_;
  HttpSend send_;
  Clock& clock_;
};

}  // namespace warmfs::s3

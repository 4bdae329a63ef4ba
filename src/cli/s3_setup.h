// The bucket side of `warmfs mount` and `warmfs serve`, written once for both: the S3 config
// from the flags and the AWS environment, the credential chain, and the check before starting
// (one LIST: the endpoint answers, the bucket exists, the credentials may read it), with a
// one-line explanation of a failure that names the cause and the fix.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "objstore/credential_provider.h"
#include "objstore/s3_store.h"
#include "warmfs/result.h"

namespace warmfs::cli {

// s3://BUCKET[/PREFIX], as mount and snapshot take it.
struct S3Source {
  std::string bucket;
  std::string prefix;  // "" or "a/b/"
};
// kInvalidArgument, naming the text, for anything else.
Result<S3Source> parse_s3_source(const std::string& text);

// The flags mount and serve share.
struct S3Flags {
  std::string endpoint;  // empty: AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL, then AWS's own
  std::string region;    // empty: AWS_REGION, AWS_DEFAULT_REGION, the profile's, us-east-1
  std::string profile;   // empty: AWS_PROFILE, then "default"
  bool no_sign_request = false;
  bool path_style = false;
};

// The config of one bucket, without credentials (reads the process environment).
S3Config s3_config(const S3Flags& flags, const std::string& bucket);

// Resolves the credential chain (objstore/credential_chain.h) for the config's region; its
// provider refreshes temporary credentials on its own thread, so it is made in the process that
// uses it. Errors read "credentials: ...".
Result<std::shared_ptr<const s3::CredentialProvider>> resolve_credentials(const S3Flags& flags,
                                                                          const S3Config& config);

// Logs where the credentials come from and when they expire (never a secret).
void log_credentials(const s3::CredentialProvider& provider);

// A part of `warmfs stats --json` (FsOptions/CacheServerOptions::extra_stats): the
// credentials' source, expiry and refreshes under "credentials".
std::function<std::string()> credentials_stats(
    std::shared_ptr<const s3::CredentialProvider> provider);

// One LIST of prefix with few retries and short timeouts, so a wrong endpoint, bucket or key
// is reported in seconds: "cannot list s3://B/P: ... (hint)" or "cannot reach URL: ...".
Status check_bucket(const S3Config& config, const std::string& prefix);

// The one-line message check_bucket gives for a failed LIST of `what` (s3://B[/P]).
std::string explain_check_failure(const Status& st, const std::string& what,
                                  const S3Config& config);

}  // namespace warmfs::cli

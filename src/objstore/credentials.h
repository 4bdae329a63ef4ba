// AWS credentials and region: what to sign with, and where it came from.
//
// What a request asks of the credential chain (credential_chain.h, which resolves it), the
// shared files' profiles (the config file's section with the credentials file's on top, for
// the profile named by the caller, else AWS_PROFILE, else "default") and the region.
//
// The environment is read through an injected lookup so tests do not depend on the process
// environment. Pure functions apart from reading the two files; thread safe.
// Secrets never appear in a Status message, a log line or describe().
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "warmfs/result.h"

namespace warmfs::s3 {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty for long-term keys

  bool empty() const { return access_key_id.empty(); }
  // "access key ****MPLE (with session token)": never the secret or the token.
  std::string describe() const;
};

// Returns the value of an environment variable, or nullptr when unset.
using EnvLookup = std::function<const char*(const char*)>;
// The process environment (getenv). Read once at startup; the process must not setenv
// concurrently.
EnvLookup process_environment();

struct CredentialRequest {
  // Explicit keys; used when access_key_id is not empty (then the secret is required).
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  // Profile for the shared files; empty means AWS_PROFILE, else "default".
  std::string profile;
  // Sign nothing (public buckets), whatever else is configured.
  bool anonymous = false;
};

// The settings of a profile, keys lower-cased: its section of the config file ("[profile
// NAME]", or "[default]"), with its section of the credentials file on top. nullopt when
// neither file has it. `where` names the file(s) and section for messages.
using ProfileSettings = std::map<std::string, std::string>;
std::optional<ProfileSettings> load_profile(const std::string& profile, const EnvLookup& env,
                                            std::string* where);
// The profile to use: requested, else AWS_PROFILE, else "default". *named is true when it
// was chosen (then a missing profile is an error rather than "no credentials").
std::string choose_profile(std::string_view requested, const EnvLookup& env, bool* named);

// Region: explicit_region, else AWS_REGION, else AWS_DEFAULT_REGION, else `region` of the
// profile (as above) in the config file, else "us-east-1".
std::string resolve_region(std::string_view explicit_region, std::string_view profile,
                           const EnvLookup& env);

}  // namespace warmfs::s3

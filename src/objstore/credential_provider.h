// CredentialProvider: the credentials S3ObjectStore signs with, read on every attempt.
//
// current() does no I/O: it copies the credentials held in memory under a short lock, so it
// is cheap on the request path. A StaticCredentialProvider holds keys that never change
// (explicit, environment, shared files) or nothing at all (anonymous). A
// RefreshingCredentialProvider holds temporary credentials from a fetch function (STS,
// instance metadata, the container endpoint, credential_process) and replaces them off the
// request path, on its own thread, before they expire:
//
//   refresh at  expiration - min(15 min, half the life left when they were fetched)
//
// so one-hour credentials are replaced 15 minutes ahead (the AWS SDKs' advisory window), and
// credentials that live only seconds at about half their life. A new set is swapped in whole
// (one lock), so a request signs with either the old or the new set, never a mix and never
// nothing. A failed refresh keeps the old set, logs a warning and tries again after 1 s,
// 2 s, 4 s ... (at most 5 min, and never later than half the time left before expiry).
// Once the held set has expired, current() fails at once with kAccessDenied (EACCES to
// readers) and logs one line; it never blocks waiting for a refresh and never hands out
// empty credentials, so no request goes unsigned. A later successful refresh recovers.
//
// Time goes through the injected Clock (wall time, as expirations are). The thread waits
// with real time derived from the clock's deadlines; tests use a FakeClock, do not start the
// thread, and drive refresh_due() themselves.
//
// Thread safe: current() and status() from any thread; one refresher.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "objstore/credentials.h"
#include "objstore/time_format.h"
#include "warmfs/result.h"

namespace warmfs::s3 {

// What `warmfs stats` and the metrics show: never a secret.
struct CredentialStatus {
  std::string source;  // "environment", "web-identity", "imds", ... (credential_source_id)
  std::string origin;  // e.g. the role ARN or the profile; may be empty
  bool anonymous = false;
  // Expiration of the credentials held; nullopt for credentials that do not expire.
  std::optional<std::chrono::system_clock::time_point> expires_at;
  uint64_t refreshes = 0;         // successful refreshes after the first fetch
  uint64_t refresh_failures = 0;  // failed refresh attempts
  std::string last_error;         // the last failure's message; empty after a success
};

// Credentials and when they stop working (nullopt: never).
struct TemporaryCredentials {
  Credentials credentials;
  std::optional<std::chrono::system_clock::time_point> expiration;
};

class CredentialProvider {
 public:
  virtual ~CredentialProvider() = default;
  // The credentials to sign the next request with; empty credentials mean an anonymous
  // (unsigned) provider. kAccessDenied once temporary credentials have expired. No I/O.
  virtual Result<Credentials> current() const = 0;
  virtual CredentialStatus status() const = 0;
  virtual bool anonymous() const = 0;
};

class StaticCredentialProvider final : public CredentialProvider {
 public:
  // Empty credentials: anonymous.
  StaticCredentialProvider(Credentials credentials, std::string source, std::string origin = {});
  Result<Credentials> current() const override { return credentials_; }
  CredentialStatus status() const override;
  bool anonymous() const override { return credentials_.empty(); }

 private:
  const Credentials credentials_;
  const std::string source_;
  const std::string origin_;
};

// One fetch of a temporary source: does I/O, may take seconds. Must not throw.
using CredentialFetcher = std::function<Result<TemporaryCredentials>()>;

struct RefreshOptions {
  // Most time ahead of expiry a refresh happens (the SDKs' advisory window).
  std::chrono::seconds max_ahead{15 * 60};
  // Backoff of a failed refresh: first delay, doubled per failure up to max_backoff.
  std::chrono::milliseconds first_backoff{1000};
  std::chrono::milliseconds max_backoff{5 * 60 * 1000};
  // Start the refresher thread (tests drive refresh_due() instead).
  bool start_thread = true;
};

class RefreshingCredentialProvider final : public CredentialProvider {
 public:
  // Fetches once now; an error is returned as is (the caller adds which source failed).
  static Result<std::unique_ptr<RefreshingCredentialProvider>> create(CredentialFetcher fetch,
                                                                      std::string source,
                                                                      std::string origin,
                                                                      Clock& clock,
                                                                      RefreshOptions options = {});
  ~RefreshingCredentialProvider() override;

  Result<Credentials> current() const override;
  CredentialStatus status() const override;
  bool anonymous() const override { return false; }

  // Refreshes if the clock has reached the next refresh time; returns that (new) time, or
  // nullopt if the credentials never expire. Called by the thread; tests call it directly.
  std::optional<std::chrono::system_clock::time_point> refresh_due();
  // When the next refresh is planned (for tests and logs).
  std::optional<std::chrono::system_clock::time_point> next_refresh() const;

 private:
  RefreshingCredentialProvider(CredentialFetcher fetch, std::string source, std::string origin,
                               Clock& clock, RefreshOptions options, TemporaryCredentials first);
  void run();
  // The refresh time for credentials expiring at `expiration`, fetched at `now`.
  std::chrono::system_clock::time_point plan(
      std::chrono::system_clock::time_point now,
      std::chrono::system_clock::time_point expiration) const;

  const CredentialFetcher fetch_;
  const std::string source_;
  const std::string origin_;
  Clock& clock_;
  const RefreshOptions options_;

  mutable std::mutex mu_;  // protects the fields below; never held across a fetch
  TemporaryCredentials held_;
  std::optional<std::chrono::system_clock::time_point> next_refresh_;
  int consecutive_failures_ = 0;
  uint64_t refreshes_ = 0;
  uint64_t refresh_failures_ = 0;
  std::string last_error_;
  mutable bool expired_logged_ = false;
  bool stopping_ = false;
  std::condition_variable wake_;  // stopping_ set

  std::thread thread_;  // last: started after the fields above exist
};

// The status as the JSON object `warmfs stats` shows under "credentials".
std::string credential_status_json(const CredentialStatus& s);

}  // namespace warmfs::s3

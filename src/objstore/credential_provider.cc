#include "objstore/credential_provider.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/log.h"

namespace warmfs::s3 {

using std::chrono::system_clock;

std::string credential_status_json(const CredentialStatus& s) {
  nlohmann::json j;
  j["source"] = s.source;
  if (!s.origin.empty()) j["origin"] = s.origin;
  j["anonymous"] = s.anonymous;
  j["expires_at"] = s.expires_at ? nlohmann::json(format_iso8601(*s.expires_at)) : nlohmann::json();
  j["refreshes"] = s.refreshes;
  j["refresh_failures"] = s.refresh_failures;
  j["last_error"] = s.last_error;
  return j.dump();
}

StaticCredentialProvider::StaticCredentialProvider(Credentials credentials, std::string source,
                                                   std::string origin)
    : credentials_(std::move(credentials)),
      source_(std::move(source)),
      origin_(std::move(origin)) {}

CredentialStatus StaticCredentialProvider::status() const {
  CredentialStatus s;
  s.source = source_;
  s.origin = origin_;
  s.anonymous = credentials_.empty();
  return s;
}

Result<std::unique_ptr<RefreshingCredentialProvider>> RefreshingCredentialProvider::create(
    CredentialFetcher fetch, std::string source, std::string origin, Clock& clock,
    RefreshOptions options) {
  WARMFS_ASSIGN_OR_RETURN(TemporaryCredentials first, fetch());
  if (first.credentials.access_key_id.empty() || first.credentials.secret_access_key.empty()) {
    return Status(Errc::kAccessDenied, "the answer holds no access key or secret");
  }
  if (first.expiration && *first.expiration <= clock.wall_now()) {
    return Status(Errc::kAccessDenied, fmt::format("the credentials handed out expired at {}",
                                                   format_iso8601(*first.expiration)));
  }
  return std::unique_ptr<RefreshingCredentialProvider>(new RefreshingCredentialProvider(
      std::move(fetch), std::move(source), std::move(origin), clock, options, std::move(first)));
}

RefreshingCredentialProvider::RefreshingCredentialProvider(CredentialFetcher fetch,
                                                           std::string source, std::string origin,
                                                           Clock& clock, RefreshOptions options,
                                                           TemporaryCredentials first)
    : fetch_(std::move(fetch)),
      source_(std::move(source)),
      origin_(std::move(origin)),
      clock_(clock),
      options_(options),
      held_(std::move(first)) {
  if (held_.expiration) next_refresh_ = plan(clock_.wall_now(), *held_.expiration);
  if (options_.start_thread && next_refresh_) thread_ = std::thread([this] { run(); });
}

RefreshingCredentialProvider::~RefreshingCredentialProvider() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

system_clock::time_point RefreshingCredentialProvider::plan(
    system_clock::time_point now, system_clock::time_point expiration) const {
  if (expiration <= now) return now;
  const auto left = expiration - now;
  const auto ahead = std::min<system_clock::duration>(options_.max_ahead, left / 2);
  return expiration - ahead;
}

Result<Credentials> RefreshingCredentialProvider::current() const {
  std::lock_guard lock(mu_);
  if (held_.expiration && *held_.expiration <= clock_.wall_now()) {
    std::string why = fmt::format("credentials from {} expired at {}{}{}", source_,
                                  format_iso8601(*held_.expiration),
                                  last_error_.empty() ? "" : "; refresh failing: ", last_error_);
    if (!expired_logged_) {
      expired_logged_ = true;
      log::error("{}; requests fail until a refresh succeeds", why);
    }
    return Status(Errc::kAccessDenied, why);
  }
  return held_.credentials;
}

CredentialStatus RefreshingCredentialProvider::status() const {
  std::lock_guard lock(mu_);
  CredentialStatus s;
  s.source = source_;
  s.origin = origin_;
  s.expires_at = held_.expiration;
  s.refreshes = refreshes_;
  s.refresh_failures = refresh_failures_;
  s.last_error = last_error_;
  return s;
}

std::optional<system_clock::time_point> RefreshingCredentialProvider::next_refresh() const {
  std::lock_guard lock(mu_);
  return next_refresh_;
}

std::optional<system_clock::time_point> RefreshingCredentialProvider::refresh_due() {
  {
    std::lock_guard lock(mu_);
    if (!next_refresh_ || clock_.wall_now() < *next_refresh_) return next_refresh_;
  }
  Result<TemporaryCredentials> got = fetch_();  // no lock held: may take seconds
  if (got.is_ok() &&
      (got->credentials.access_key_id.empty() || got->credentials.secret_access_key.empty())) {
    got = Status(Errc::kAccessDenied, "the answer holds no access key or secret");
  }
  const auto now = clock_.wall_now();
  std::lock_guard lock(mu_);
  if (got.is_ok() && got->expiration && *got->expiration <= now) {
    got = Status(Errc::kAccessDenied, fmt::format("the credentials handed out expired at {}",
                                                  format_iso8601(*got->expiration)));
  }
  if (got.is_ok()) {
    held_ = std::move(*got);
    ++refreshes_;
    consecutive_failures_ = 0;
    last_error_.clear();
    expired_logged_ = false;
    next_refresh_ = held_.expiration ? std::optional(plan(now, *held_.expiration)) : std::nullopt;
    log::info("credentials from {} refreshed{}", source_,
              held_.expiration ? ", they expire at " + format_iso8601(*held_.expiration) : "");
    return next_refresh_;
  }
  ++refresh_failures_;
  last_error_ = got.status().message();
  auto delay = std::chrono::duration_cast<system_clock::duration>(options_.first_backoff);
  for (int i = 0; i < consecutive_failures_ && delay < options_.max_backoff; ++i) delay *= 2;
  delay = std::min<system_clock::duration>(delay, options_.max_backoff);
  ++consecutive_failures_;
  if (held_.expiration && *held_.expiration > now) {
    // Never sleep past expiry: half the time left, so several tries fit before it.
    delay = std::min<system_clock::duration>(delay, (*held_.expiration - now) / 2);
  }
  delay = std::max<system_clock::duration>(delay, std::chrono::milliseconds(50));
  next_refresh_ = now + delay;
  const bool expired = held_.expiration && *held_.expiration <= now;
  log::warn("credentials from {}: refresh failed ({}); {}, next try in {} ms", source_, last_error_,
            expired ? "the held credentials have expired"
                    : "keeping the held credentials until " + format_iso8601(*held_.expiration),
            std::chrono::duration_cast<std::chrono::milliseconds>(delay).count());
  return next_refresh_;
}

void RefreshingCredentialProvider::run() {
  while (true) {
    auto next = refresh_due();
    std::unique_lock lock(mu_);
    if (stopping_ || !next) return;
    // Real time to wait, from the clock's deadline; re-checked on wake.
    const auto wait =
        std::max<system_clock::duration>(*next - clock_.wall_now(), std::chrono::milliseconds(10));
    wake_.wait_for(lock, wait, [this] { return stopping_; });
    if (stopping_) return;
  }
}

}  // namespace warmfs::s3

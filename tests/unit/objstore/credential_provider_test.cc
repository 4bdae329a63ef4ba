// RefreshingCredentialProvider with a fake clock (no thread, no sleeping): when it refreshes,
// what a failing refresh keeps, expiry as kAccessDenied; and S3ObjectStore signing every
// request with the provider's current credentials across refreshes, never unsigned.
#include "objstore/credential_provider.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "objstore/s3_store.h"
#include "support/fake_clock.h"
#include "unit/http/test_http_server.h"
#include "unit/objstore/s3_test_support.h"

using namespace std::chrono_literals;
using warmfs::Errc;
using warmfs::FakeClock;
using warmfs::Result;
using warmfs::Status;
using warmfs::s3::Credentials;
using warmfs::s3::RefreshingCredentialProvider;
using warmfs::s3::RefreshOptions;
using warmfs::s3::TemporaryCredentials;

namespace {

// Hands out numbered credentials living `life` from the clock's wall time; fails while
// `failing` is set.
struct Issuer {
  FakeClock& clock;
  std::chrono::seconds life;
  std::atomic<int> issued{0};
  std::atomic<bool> failing{false};

  Result<TemporaryCredentials> operator()() {
    if (failing) return Status(Errc::kIo, "endpoint down");
    const int n = ++issued;
    TemporaryCredentials t;
    t.credentials = {"ASIA" + std::to_string(n), "secret" + std::to_string(n),
                     "token" + std::to_string(n)};
    t.expiration = clock.wall_now() + life;
    return t;
  }
};

RefreshOptions no_thread() {
  RefreshOptions o;
  o.start_thread = false;
  return o;
}

std::unique_ptr<RefreshingCredentialProvider> make(Issuer& issuer, FakeClock& clock) {
  auto p = RefreshingCredentialProvider::create([&issuer] { return issuer(); }, "test", "", clock,
                                                no_thread());
  REQUIRE(p.is_ok());
  return std::move(p).value();
}

}  // namespace

TEST_CASE("refresh times: 15 min ahead of long-lived credentials, half-life of short ones",
          "[credentials]") {
  FakeClock clock;
  SECTION("one hour") {
    Issuer issuer{clock, 1h};
    auto p = make(issuer, clock);
    REQUIRE(p->next_refresh());
    CHECK(*p->next_refresh() == clock.wall_now() + 45min);
  }
  SECTION("fifteen minutes (STS's shortest)") {
    Issuer issuer{clock, 15min};
    auto p = make(issuer, clock);
    CHECK(*p->next_refresh() == clock.wall_now() + 450s);
  }
  SECTION("ten seconds") {
    Issuer issuer{clock, 10s};
    auto p = make(issuer, clock);
    CHECK(*p->next_refresh() == clock.wall_now() + 5s);
  }
  SECTION("credentials without expiration are never refreshed") {
    auto p = RefreshingCredentialProvider::create(
        [] {
          return Result<TemporaryCredentials>(TemporaryCredentials{{"AKIA1", "s", ""}, {}});
        },
        "test", "", clock, no_thread());
    REQUIRE(p.is_ok());
    CHECK_FALSE((*p)->next_refresh());
    CHECK_FALSE((*p)->status().expires_at);
  }
}

TEST_CASE("refresh happens when due and not before", "[credentials]") {
  FakeClock clock;
  Issuer issuer{clock, 10s};
  auto p = make(issuer, clock);
  CHECK(issuer.issued == 1);
  clock.advance(4900ms);
  p->refresh_due();
  CHECK(issuer.issued == 1);
  CHECK(p->current()->access_key_id == "ASIA1");
  clock.advance(100ms);
  p->refresh_due();
  CHECK(issuer.issued == 2);
  CHECK(p->current()->access_key_id == "ASIA2");
  CHECK(p->current()->session_token == "token2");
  auto st = p->status();
  CHECK(st.refreshes == 1);
  CHECK(st.refresh_failures == 0);
  CHECK(st.source == "test");
  REQUIRE(st.expires_at);
  CHECK(*st.expires_at == clock.wall_now() + 10s);
  // Three more cycles: one refresh each.
  for (int i = 0; i < 3; ++i) {
    clock.advance(5s);
    p->refresh_due();
  }
  CHECK(p->status().refreshes == 4);
  CHECK(p->current()->access_key_id == "ASIA5");
}

TEST_CASE("a failing refresh keeps the old credentials until they expire, then kAccessDenied",
          "[credentials]") {
  FakeClock clock;
  Issuer issuer{clock, 20s};
  auto p = make(issuer, clock);
  const auto expiry = *p->status().expires_at;
  issuer.failing = true;
  clock.advance(10s);  // due
  auto next = p->refresh_due();
  CHECK(p->status().refresh_failures == 1);
  CHECK(p->status().last_error == "endpoint down");
  REQUIRE(next);
  CHECK(*next == clock.wall_now() + 1s);  // first backoff
  CHECK(p->current()->access_key_id == "ASIA1");
  clock.advance(1s);
  next = p->refresh_due();
  CHECK(*next == clock.wall_now() + 2s);  // doubled
  clock.advance(2s);
  next = p->refresh_due();
  CHECK(*next == clock.wall_now() + 3500ms);  // 4 s, capped at half the 7 s left
  CHECK(p->status().refresh_failures == 3);
  CHECK(p->current().is_ok());
  clock.set_wall(expiry - 1ms);
  CHECK(p->current()->access_key_id == "ASIA1");
  clock.set_wall(expiry);
  auto expired = p->current();
  REQUIRE_FALSE(expired.is_ok());
  CHECK(expired.code() == Errc::kAccessDenied);
  CHECK_THAT(expired.status().message(),
             Catch::Contains("expired at") && Catch::Contains("endpoint down"));
  // The endpoint comes back: the next due refresh recovers.
  issuer.failing = false;
  clock.advance(10min);
  p->refresh_due();
  REQUIRE(p->current().is_ok());
  CHECK(p->current()->access_key_id == "ASIA2");
  CHECK(p->status().last_error.empty());
}

TEST_CASE("a first fetch that fails or hands out expired credentials is an error",
          "[credentials]") {
  FakeClock clock;
  Issuer issuer{clock, 10s};
  issuer.failing = true;
  auto p = RefreshingCredentialProvider::create([&] { return issuer(); }, "test", "", clock,
                                                no_thread());
  CHECK(p.code() == Errc::kIo);
  Issuer stale{clock, -1s};
  auto q =
      RefreshingCredentialProvider::create([&] { return stale(); }, "test", "", clock, no_thread());
  CHECK(q.code() == Errc::kAccessDenied);
}

TEST_CASE("readers see whole credential sets while refreshes swap them", "[credentials]") {
  FakeClock clock;
  Issuer issuer{clock, 2s};
  auto p = make(issuer, clock);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<uint64_t> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      while (!stop) {
        auto c = p->current();
        ++reads;
        if (!c.is_ok() || c->empty() ||
            c->secret_access_key != "secret" + c->access_key_id.substr(4) ||
            c->session_token != "token" + c->access_key_id.substr(4)) {
          ++bad;
        }
      }
    });
  }
  for (int i = 0; i < 500; ++i) {
    // Interleave: wait until the readers have read since the last swap, then swap again.
    const uint64_t seen = reads;
    while (reads < seen + 4) std::this_thread::yield();
    clock.advance(1s);  // every step is due (half of 2 s)
    p->refresh_due();
  }
  stop = true;
  for (auto& t : readers) t.join();
  CHECK(bad == 0);
  CHECK(p->status().refreshes == 500);
  CHECK(reads >= 2000);
}

TEST_CASE("S3ObjectStore signs each request with the provider's current credentials",
          "[credentials]") {
  using warmfs::testing::ServerReply;
  using warmfs::testing::ServerRequest;
  std::mutex mu;
  std::vector<std::string> auth;  // Authorization header of each request
  std::vector<std::string> tokens;
  warmfs::testing::TestHttpServer server([&](const ServerRequest& req) {
    std::lock_guard lock(mu);
    auth.push_back(req.header("authorization"));
    tokens.push_back(req.header("x-amz-security-token"));
    ServerReply r;
    r.headers = {{"Content-Length", "5"},
                 {"ETag", "\"e\""},
                 {"Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"}};
    r.omit_body = true;
    return r;
  });
  FakeClock clock;
  Issuer issuer{clock, 10s};
  std::shared_ptr<RefreshingCredentialProvider> p = make(issuer, clock);
  warmfs::S3Config c = warmfs::testing::config_for(server.url());
  c.credentials = {};
  c.credential_provider = p;
  auto store = warmfs::testing::make_store(c, clock);
  for (int i = 0; i < 6; ++i) {
    REQUIRE(store->head("k").is_ok());
    clock.advance(5s);
    p->refresh_due();
  }
  {
    std::lock_guard lock(mu);
    REQUIRE(auth.size() == 6);
    for (size_t i = 0; i < auth.size(); ++i) {
      INFO(auth[i]);
      CHECK_THAT(auth[i], Catch::StartsWith("AWS4-HMAC-SHA256 Credential=ASIA" +
                                            std::to_string(i + 1) + "/"));
      CHECK(tokens[i] == "token" + std::to_string(i + 1));
    }
  }
  // The endpoint breaks; once the held set expires, requests fail at once, unsent.
  issuer.failing = true;
  clock.advance(5s);
  p->refresh_due();
  REQUIRE(store->head("k").is_ok());  // still valid
  clock.advance(5s);
  auto r = store->head("k");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.code() == Errc::kAccessDenied);
  CHECK_THAT(r.status().message(), Catch::Contains("expired"));
  std::lock_guard lock(mu);
  CHECK(auth.size() == 7);  // the refused one never reached the server
}

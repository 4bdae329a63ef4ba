#include "fuse/callback_guard.h"

#include <catch2/catch.hpp>
#include <new>
#include <stdexcept>
#include <vector>

using warmfs::guard_callback;
using warmfs::t_fuse_replied;

namespace {

// A fake request: the replies it received, as errnos (0: a successful reply).
struct FakeRequest {
  std::vector<int> replies;
  void reply_ok() {
    t_fuse_replied = true;  // what the adapter's reply helper does
    replies.push_back(0);
  }
  auto reply_error() {
    return [this](int err) { replies.push_back(err); };
  }
};

}  // namespace

TEST_CASE("callback guard: a callback that throws is answered once with EIO", "[fuse][guard]") {
  FakeRequest req;
  guard_callback(
      "lookup", [] { throw std::runtime_error("boom"); }, req.reply_error());
  REQUIRE(req.replies == std::vector<int>{EIO});
  // The next request on this thread is served as usual.
  FakeRequest next;
  guard_callback(
      "getattr", [&] { next.reply_ok(); }, next.reply_error());
  CHECK(next.replies == std::vector<int>{0});
}

TEST_CASE("callback guard: out of memory is ENOMEM; other throws are EIO", "[fuse][guard]") {
  FakeRequest oom;
  guard_callback(
      "read", [] { throw std::bad_alloc(); }, oom.reply_error());
  CHECK(oom.replies == std::vector<int>{ENOMEM});
  FakeRequest odd;
  guard_callback(
      "write", [] { throw 42; }, odd.reply_error());
  CHECK(odd.replies == std::vector<int>{EIO});
}

TEST_CASE("callback guard: a callback that replied and then threw is not answered again",
          "[fuse][guard]") {
  FakeRequest req;
  guard_callback(
      "open",
      [&] {
        req.reply_ok();
        throw std::runtime_error("after the reply");
      },
      req.reply_error());
  CHECK(req.replies == std::vector<int>{0});
}

TEST_CASE("callback guard: a callback that does not throw gets only its own reply",
          "[fuse][guard]") {
  FakeRequest req;
  guard_callback(
      "statfs", [&] { req.reply_ok(); }, req.reply_error());
  CHECK(req.replies == std::vector<int>{0});
}

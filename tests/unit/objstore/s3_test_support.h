// What the S3ObjectStore tests share: test credentials and a store aimed at a local test server.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "common/clock.h"
#include "objstore/s3_store.h"

namespace warmfs::testing {

inline constexpr const char* kKeyId = "AKIDTESTKEY000000001";
inline constexpr const char* kSecret = "TESTSECRETdoNotLeak/abcdefghijklmnop";

// Path-style, signed with the test keys, a fixed jitter seed and a short connect timeout.
inline S3Config config_for(const std::string& endpoint) {
  S3Config c;
  c.endpoint = endpoint;
  c.bucket = "bkt";
  c.path_style = true;
  c.credentials = {kKeyId, kSecret, ""};
  c.jitter_seed = 42;
  c.http.connect_timeout = std::chrono::milliseconds(1000);
  return c;
}

inline std::unique_ptr<S3ObjectStore> make_store(const S3Config& c, Clock& clock) {
  auto s = S3ObjectStore::create(c, clock);
  REQUIRE(s.is_ok());
  return std::move(s).value();
}

}  // namespace warmfs::testing

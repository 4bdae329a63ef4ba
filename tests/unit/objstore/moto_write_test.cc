// S3ObjectStore writes against a real S3 clone (moto_server with authentication), run by the
// integration suite (tests/integration/test_objstore_moto.py): it starts moto, makes the
// bucket, runs this test ("[moto]", hidden from the plain unit run, which has no server) with
// WARMFS_MOTO_* set, and checks with boto3 what it left: every object's SHA-256 against the
// manifest this test writes, deleted keys gone and no multipart upload open.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "objstore/checksums.h"
#include "objstore/s3_store.h"

using warmfs::CompletedPart;
using warmfs::Errc;
using warmfs::PutOptions;
using warmfs::S3Config;
using warmfs::S3ObjectStore;
namespace s3 = warmfs::s3;

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// Deterministic bytes that differ per seed and per position (no repeating 5 MiB blocks).
std::vector<std::byte> pattern(size_t n, uint64_t seed) {
  std::vector<std::byte> out(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<std::byte>(x);
  }
  return out;
}

}  // namespace

TEST_CASE("writes against moto_server", "[.][moto]") {
  const std::string endpoint = env_or("WARMFS_MOTO_ENDPOINT", "");
  if (endpoint.empty())
    FAIL("WARMFS_MOTO_ENDPOINT is not set: run tests/integration/test_objstore_moto.py");
  S3Config cfg;
  cfg.endpoint = endpoint;
  cfg.bucket = env_or("WARMFS_MOTO_BUCKET", "warmfs-moto");
  cfg.path_style = true;
  cfg.credentials = {env_or("WARMFS_MOTO_KEY", "testing"), env_or("WARMFS_MOTO_SECRET", "testing"),
                     ""};
  cfg.multipart_copy_threshold = 12ull << 20;  // the 15 MiB object is copied in parts
  cfg.multipart_copy_part_size = 5ull << 20;
  auto made = S3ObjectStore::create(cfg, warmfs::SystemClock::instance());
  INFO(made.status().message());
  REQUIRE(made.is_ok());
  S3ObjectStore& store = **made;
  std::ofstream manifest(env_or("WARMFS_MOTO_MANIFEST", "/tmp/warmfs-moto-manifest.txt"));
  auto record = [&](const std::string& key, std::span<const std::byte> bytes) {
    manifest << key << ' ' << bytes.size() << ' ' << s3::sha256_hex(bytes) << '\n';
  };

  // PutObject with Content-MD5 and CRC32C; read back through get_range.
  const auto small = pattern((1 << 20) + 17, 1);
  PutOptions checked;
  checked.checksum_crc32c = env_or("WARMFS_MOTO_CRC32C", "1") == "1";
  auto put = store.put("put/small.bin", small, checked);
  INFO(put.status().message());
  REQUIRE(put.is_ok());
  CHECK(put->etag == s3::md5_hex(small));
  record("put/small.bin", small);
  std::vector<std::byte> back(small.size());
  auto n = store.get_range("put/small.bin", 0, back, put->etag);
  INFO(n.status().message());
  REQUIRE(n.is_ok());
  CHECK(*n == small.size());
  CHECK(back == small);
  auto empty = store.put("put/empty.bin", {}, PutOptions{});
  INFO(empty.status().message());
  REQUIRE(empty.is_ok());
  record("put/empty.bin", {});

  // Multipart: three 5 MiB parts and a tail, uploaded out of order.
  const auto big = pattern((15ull << 20) + 123457, 2);
  auto id = store.create_multipart("mpu/big.bin");
  INFO(id.status().message());
  REQUIRE(id.is_ok());
  auto open = store.list_multipart_uploads("mpu/");
  INFO(open.status().message());
  REQUIRE(open.is_ok());
  REQUIRE(open->size() == 1);
  CHECK((*open)[0].upload_id == *id);
  std::vector<CompletedPart> parts(4);
  for (int p : {3, 1, 4, 2}) {
    const size_t off = size_t(p - 1) * (5 << 20);
    const size_t len = std::min<size_t>(5 << 20, big.size() - off);
    auto part = store.upload_part("mpu/big.bin", *id, p, std::span(big).subspan(off, len));
    INFO(part.status().message());
    REQUIRE(part.is_ok());
    parts[p - 1] = *part;
  }
  auto done = store.complete_multipart("mpu/big.bin", *id, parts);
  INFO(done.status().message());
  REQUIRE(done.is_ok());
  std::vector<std::string> etags;
  for (const auto& p : parts) etags.push_back(p.etag);
  CHECK(done->etag == s3::multipart_etag(etags));
  CHECK(done->size == big.size());
  CHECK(store.head("mpu/big.bin")->size == big.size());
  record("mpu/big.bin", big);

  // A second upload, aborted: it must not be listed afterwards.
  auto aborted = store.create_multipart("mpu/aborted.bin");
  INFO(aborted.status().message());
  REQUIRE(aborted.is_ok());
  REQUIRE(store.upload_part("mpu/aborted.bin", *aborted, 1, small).is_ok());
  REQUIRE(store.abort_multipart("mpu/aborted.bin", *aborted).is_ok());
  auto after = store.list_multipart_uploads("");
  INFO(after.status().message());
  REQUIRE(after.is_ok());
  CHECK(after->empty());
  // (No Complete of the aborted upload: moto answers it with a 500 crash, S3 with 404.)

  // Copies: one CopyObject, and one part by part (above the 12 MiB threshold), keys with
  // characters that need encoding in x-amz-copy-source.
  auto c1 = store.copy("put/small.bin", "copy/small copy+1.bin", put->etag);
  INFO(c1.status().message());
  REQUIRE(c1.is_ok());
  CHECK(c1->size == small.size());
  record("copy/small copy+1.bin", small);
  auto c2 = store.copy("mpu/big.bin", "copy/big multipart.bin", "");
  INFO(c2.status().message());
  REQUIRE(c2.is_ok());
  CHECK(c2->size == big.size());
  CHECK(c2->etag.ends_with("-4"));
  record("copy/big multipart.bin", big);
  CHECK(store.copy("put/small.bin", "copy/never.bin", "0000").code() == Errc::kPreconditionFailed);
  CHECK(store.copy("put/absent.bin", "copy/never.bin", "").code() == Errc::kNotFound);

  // Deletes: single, batch (with an absent key), and an absent key alone.
  for (const char* k : {"del/a", "del/b", "del/c & <d>"}) {
    REQUIRE(store.put(k, small, PutOptions{}).is_ok());
  }
  CHECK(store.remove("del/a").is_ok());
  std::vector<std::string> batch = {"del/b", "del/c & <d>", "del/absent"};
  auto failed = store.remove_many(batch);
  INFO(failed.status().message());
  REQUIRE(failed.is_ok());
  CHECK(failed->empty());
  CHECK(store.remove("del/never-existed").is_ok());
  for (const char* k : {"del/a", "del/b", "del/c & <d>"})
    CHECK(store.head(k).code() == Errc::kNotFound);

  auto c = store.counters();
  CHECK(c.errors == 0);
  CHECK(c.retries == 0);
  WARN(fmt::format("put {} multipart {} copy {} delete {} bytes_written {}", c.put_requests,
                   c.multipart_requests, c.copy_requests, c.delete_requests, c.bytes_written));
}

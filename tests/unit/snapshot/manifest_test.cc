#include "snapshot/manifest.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "support/temp_dir.h"

using namespace warmfs;

namespace {

Manifest sample(bool versions) {
  ManifestBuilder b("bkt", "data/", versions, 1700000000);
  // Out of order, with a duplicate (the last one wins) and every kind of ETag.
  REQUIRE(b.add("train/b.jpg", 20, 1700000002, "0123456789abcdef0123456789abcdef", "v2").is_ok());
  REQUIRE(
      b.add("train/a.jpg", 10, 1700000001, "0123456789abcdef0123456789abcdef-12", "v1").is_ok());
  REQUIRE(b.add("val/x", 0, 1600000000, "NOT-HEX-ETAG", "").is_ok());
  REQUIRE(b.add("train/a.jpg", 11, 1700000003, "ABCDEF0123456789ABCDEF0123456789", "v3").is_ok());
  REQUIRE(b.add("z", 1ull << 40, -5, "", "v4").is_ok());
  return std::move(b).finish();
}

}  // namespace

TEST_CASE("a manifest is sorted, keeps the last of a key, and finds keys", "[snapshot]") {
  Manifest m = sample(true);
  REQUIRE(m.size() == 4);
  CHECK(m.key(0) == "train/a.jpg");
  CHECK(m.key(1) == "train/b.jpg");
  CHECK(m.key(2) == "val/x");
  CHECK(m.key(3) == "z");
  CHECK(m.object_size(0) == 11);
  CHECK(m.etag(0) == "ABCDEF0123456789ABCDEF0123456789");
  CHECK(m.version_id(0) == "v3");
  CHECK(m.etag(1) == "0123456789abcdef0123456789abcdef");
  CHECK(m.etag(2) == "NOT-HEX-ETAG");
  CHECK(m.etag(3).empty());
  CHECK(m.mtime_sec(3) == -5);
  CHECK(m.find("val/x") == std::optional<size_t>(2));
  CHECK_FALSE(m.find("val/").has_value());
  CHECK(m.lower_bound("train/b") == 1);
  CHECK(m.lower_bound("zz") == 4);
}

TEST_CASE("a manifest survives encode and decode exactly", "[snapshot]") {
  for (bool versions : {false, true}) {
    Manifest m = sample(versions);
    auto back = decode_manifest(encode_manifest(m));
    REQUIRE(back.is_ok());
    CHECK(back->bucket() == "bkt");
    CHECK(back->prefix() == "data/");
    CHECK(back->created_sec() == 1700000000);
    CHECK(back->has_versions() == versions);
    REQUIRE(back->size() == m.size());
    for (size_t i = 0; i < m.size(); ++i) {
      CHECK(back->key(i) == m.key(i));
      CHECK(back->object_size(i) == m.object_size(i));
      CHECK(back->mtime_sec(i) == m.mtime_sec(i));
      CHECK(back->etag(i) == m.etag(i));
      CHECK(back->version_id(i) == (versions ? m.version_id(i) : ""));
    }
  }
}

TEST_CASE("a manifest of many blocks round-trips through a file", "[snapshot]") {
  ManifestBuilder b("bkt", "", false, 1);
  const size_t n = 200'000;  // several blocks of 65,536
  for (size_t i = 0; i < n; ++i) {
    REQUIRE(b.add(fmt::format("d{:03}/f{:07}.bin", i % 997, i), i, 1000 + i % 7,
                  fmt::format("{:032x}", i * 2654435761u))
                .is_ok());
  }
  Manifest m = std::move(b).finish();
  REQUIRE(m.size() == n);
  testing::TempDir dir;
  const std::string path = dir.path + "/snap.wfs";
  REQUIRE(write_manifest_file(m, path).is_ok());
  auto back = read_manifest_file(path);
  REQUIRE(back.is_ok());
  REQUIRE(back->size() == n);
  for (size_t i = 0; i < n; i += 997) {
    CHECK(back->key(i) == m.key(i));
    CHECK(back->etag(i) == m.etag(i));
    CHECK(back->object_size(i) == m.object_size(i));
  }
  auto i = back->find("d005/f0000005.bin");
  REQUIRE(i.has_value());
  CHECK(back->object_size(*i) == 5);
}

TEST_CASE("a damaged manifest is refused, never misread", "[snapshot]") {
  const std::string good = encode_manifest(sample(false));
  CHECK(decode_manifest("").code() == Errc::kCorrupt);
  CHECK(decode_manifest("WFSNAPSX").code() == Errc::kCorrupt);
  // Cut anywhere: refused.
  for (size_t cut = 0; cut < good.size(); cut += 7) {
    CHECK_FALSE(decode_manifest(std::string_view(good).substr(0, cut)).is_ok());
  }
  // A flipped bit in the compressed body fails the frame's checksum (or its decoding).
  std::string flipped = good;
  flipped[flipped.size() - 6] ^= 0x10;
  CHECK(decode_manifest(flipped).code() == Errc::kCorrupt);
  // A newer format is named as such.
  std::string newer = good;
  newer[8] = 3;
  CHECK(decode_manifest(newer).code() == Errc::kNotSupported);
}

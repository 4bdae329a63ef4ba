#include "cli/snapshot_from_index.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>

#include "cache/kv_db.h"
#include "meta/listing_index.h"
#include "support/temp_dir.h"

using namespace warmfs;
using namespace warmfs::testing;
using warmfs::cli::IndexSnapshotSource;
using warmfs::cli::snapshot_from_index;

namespace {

constexpr int64_t kNowMs = 1'700'000'000'000;
constexpr char kEtag[] = "\"0123456789abcdef0123456789abcdef\"";

DirEntry file(std::string name, uint64_t size) {
  return DirEntry{std::move(name), false, size, 1'600'000'000, kEtag};
}
DirEntry dir(std::string name) { return DirEntry{std::move(name), true, 0, 0, ""}; }

// 100 directories of 1,000 files, a file at the root and an empty directory: 100,002 keys.
void fill(ListingIndex& index, int64_t listed_at_ms) {
  std::vector<DirEntry> root;
  for (int d = 0; d < 100; ++d) root.push_back(dir(fmt::format("d{:02d}", d)));
  root.push_back(dir("empty"));
  root.push_back(file("top.txt", 3));
  index.put("", root, listed_at_ms);
  index.put("empty", {}, listed_at_ms);
  for (int d = 0; d < 100; ++d) {
    std::vector<DirEntry> files;
    for (int f = 0; f < 1000; ++f) files.push_back(file(fmt::format("f{:04d}", f), f));
    index.put(fmt::format("d{:02d}", d), files, listed_at_ms);
  }
}

}  // namespace

TEST_CASE("snapshot from the listing index: every key, a marker for an empty directory",
          "[cli][snapshot_index]") {
  TempDir tmp;
  auto writer = KvDb::open(tmp.path + "/listings");  // the mount's, open throughout
  REQUIRE(writer.is_ok());
  ListingIndex index(**writer, "http://s3", "bkt", "pre/");
  fill(index, kNowMs - 1000);
  IndexSnapshotSource src{tmp.path, 60'000, "http://s3", "bkt", "pre/"};
  std::string why;

  const auto started = std::chrono::steady_clock::now();
  auto m = snapshot_from_index(src, kNowMs, kNowMs / 1000, &why);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  REQUIRE(m.is_ok());
  REQUIRE(m->has_value());
  std::fprintf(stderr, "snapshot from the listing index: %zu keys in %.3f s\n", (*m)->size(), secs);
  const Manifest& man = **m;
  CHECK(man.bucket() == "bkt");
  CHECK(man.prefix() == "pre/");
  CHECK_FALSE(man.has_versions());
  REQUIRE(man.size() == 100'002);
  auto f = man.find("d42/f0417");
  REQUIRE(f);
  CHECK(man.object_size(*f) == 417);
  CHECK(man.mtime_sec(*f) == 1'600'000'000);
  CHECK(man.etag(*f) == kEtag);
  auto marker = man.find("empty/");
  REQUIRE(marker);
  CHECK(man.object_size(*marker) == 0);
  CHECK(man.etag(*marker) == "\"d41d8cd98f00b204e9800998ecf8427e\"");
  CHECK(man.find("top.txt"));
  CHECK_FALSE(man.find("d42/"));  // no marker for a directory that is not empty

  SECTION("another mount's prefix is not there") {
    src.prefix = "other/";
    auto none = snapshot_from_index(src, kNowMs, 0, &why);
    REQUIRE(none.is_ok());
    CHECK_FALSE(none->has_value());
  }
  SECTION("a directory missing: none") {
    index.erase("d07");
    auto none = snapshot_from_index(src, kNowMs, 0, &why);
    REQUIRE(none.is_ok());
    CHECK_FALSE(none->has_value());
    CHECK(why.find("d07") != std::string::npos);
  }
  SECTION("a directory listed a TTL ago: none") {
    index.put("d99", {file("x", 1)}, kNowMs - 60'000);
    auto none = snapshot_from_index(src, kNowMs, 0, &why);
    REQUIRE(none.is_ok());
    CHECK_FALSE(none->has_value());
    CHECK(why.find("d99") != std::string::npos);
  }
}

TEST_CASE("snapshot from the listing index: no database, no snapshot", "[cli][snapshot_index]") {
  TempDir tmp;
  IndexSnapshotSource src{tmp.path, 60'000, "http://s3", "bkt", ""};
  std::string why;
  auto none = snapshot_from_index(src, kNowMs, 0, &why);
  REQUIRE(none.is_ok());
  CHECK_FALSE(none->has_value());
  CHECK(why.find("no listing index") != std::string::npos);
}

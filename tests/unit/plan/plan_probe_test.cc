#include "plan/plan_probe.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "common/sizes.h"
#include "support/memory_object_store.h"
#include "support/temp_dir.h"

using namespace warmfs;
using warmfs::plan::ProbeObject;

TEST_CASE("plan probe: a burst of GETs of the dataset's objects", "[plan]") {
  MemoryObjectStore store;
  std::vector<ProbeObject> objects;
  for (int i = 0; i < 10; ++i) {
    const std::string key = "ds/f" + std::to_string(i);
    store.put_object(key, std::string(100 * 1024, 'x'));
    objects.push_back(ProbeObject{key, 100 * 1024});
  }
  auto p = plan::probe_bucket(store, objects, 4, 0.05);
  REQUIRE(p.is_ok());
  CHECK(p->inflight == 4);
  CHECK(p->requests >= 4);
  CHECK(p->bytes == p->requests * 100 * 1024);  // whole objects, under max_request_bytes
  CHECK(p->requests_per_sec > 0);
  CHECK(p->bytes_per_sec == Approx(p->requests_per_sec * 100 * 1024));
  CHECK(p->first_byte_sec > 0);
}

TEST_CASE("plan probe: a GET that fails fails the probe", "[plan]") {
  MemoryObjectStore store;
  auto p = plan::probe_bucket(store, {ProbeObject{"missing", 1000}}, 2, 0.05);
  REQUIRE_FALSE(p.is_ok());
  CHECK(p.code() == Errc::kNotFound);
  CHECK_FALSE(plan::probe_bucket(store, {}, 2, 0.05).is_ok());
}

TEST_CASE("plan probe: the disk is written, read and cleaned up", "[plan]") {
  warmfs::testing::TempDir dir("warmfs-plan-probe");
  const std::string where = dir.path + "/made/here";
  auto d = plan::probe_disk(where, 4 * kMiB, 64 * 1024 + 32);
  REQUIRE(d.is_ok());
  CHECK(d->bytes == 4 * kMiB);
  CHECK(d->read_block_bytes == 68 * 1024);  // a 64 KiB chunk's record, rounded up to 4 KiB
  CHECK(d->write_bytes_per_sec > 0);
  CHECK(d->read_bytes_per_sec > 0);
  CHECK(std::filesystem::is_empty(where));  // the probe's file is gone
  auto bad = plan::probe_disk("/proc/warmfs-plan-nowhere", 4 * kMiB, kMiB);
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("/proc/warmfs-plan-nowhere"));
}

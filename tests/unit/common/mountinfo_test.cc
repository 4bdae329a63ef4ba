#include "common/mountinfo.h"

#include <catch2/catch.hpp>

namespace warmfs {

constexpr const char* kMountinfo =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "40 22 0:45 / /data rw,nosuid,nodev shared:20 - fuse.warmfs s3://datasets/ rw,user_id=0\n"
    "41 22 0:46 / /mnt/with\\040space rw - fuse.warmfs s3://b/a\\040b/ rw\n"
    "42 40 0:47 / /data rw master:3 - fuse.warmfs s3://other/ rw\n"
    "garbage line\n"
    "43 22 0:48 / /no/separator rw shared:9 tmpfs tmpfs rw\n";

TEST_CASE("mountinfo: devices, types, sources and escaped mount points", "[mountinfo]") {
  const auto mounts = parse_mountinfo(kMountinfo);
  REQUIRE(mounts.size() == 4);
  CHECK(mounts[0].mountpoint == "/");
  CHECK(mounts[0].fstype == "ext4");
  CHECK(mounts[1].device == "0:45");
  CHECK(mounts[1].source == "s3://datasets/");
  CHECK(mounts[2].mountpoint == "/mnt/with space");
  CHECK(mounts[2].source == "s3://b/a b/");
}

TEST_CASE("mountinfo: the top of a stack of mounts at one path", "[mountinfo]") {
  const auto mounts = parse_mountinfo(kMountinfo);
  auto top = top_mount_at(mounts, "/data");
  REQUIRE(top.has_value());
  CHECK(top->device == "0:47");
  CHECK(top->source == "s3://other/");
  CHECK(top_mount_at(mounts, "/mnt/with space")->fstype == "fuse.warmfs");
  CHECK_FALSE(top_mount_at(mounts, "/mnt/with\\040space").has_value());
  CHECK_FALSE(top_mount_at(mounts, "/nowhere").has_value());
}

TEST_CASE("mountinfo: this process's own table has its root", "[mountinfo]") {
  CHECK(top_mount_at(read_mountinfo(), "/").has_value());
}

}  // namespace warmfs

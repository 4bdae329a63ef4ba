// Reading and writing the attributes objects carry in user metadata (s3fs-fuse and rclone).
#include "meta/object_attrs.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>

namespace warmfs {

TEST_CASE("object attrs: s3fs's decimal modes and rclone's octal ones", "[meta][attrs]") {
  CHECK(parse_mode("33188") == (S_IFREG | 0644));   // s3fs, a file
  CHECK(parse_mode("41471") == (S_IFLNK | 0777));   // s3fs, a symlink
  CHECK(parse_mode("488") == 0750u);                // s3fs, a directory's marker
  CHECK(parse_mode("100604") == (S_IFREG | 0604));  // rclone --metadata
  CHECK(parse_mode("40755") == (S_IFDIR | 0755));
  CHECK(parse_mode("120777") == (S_IFLNK | 0777));
  CHECK_FALSE(parse_mode(""));
  CHECK_FALSE(parse_mode("-1"));
  CHECK_FALSE(parse_mode("rwxr-xr-x"));
  CHECK_FALSE(parse_mode("999999999999"));
}

TEST_CASE("object attrs: times in seconds with an optional fraction", "[meta][attrs]") {
  CHECK(parse_time("1600000000") == Timespec{1600000000, 0});
  CHECK(parse_time("1600000000.250000000") == Timespec{1600000000, 250000000});
  CHECK(parse_time("1500000000.123456716") == Timespec{1500000000, 123456716});
  CHECK(parse_time("1600000000.5") == Timespec{1600000000, 500000000});
  CHECK_FALSE(parse_time("2020-09-13T12:26:40Z"));
  CHECK_FALSE(parse_time("1600000000."));
  CHECK_FALSE(parse_time("1.0000000001"));
  CHECK(format_time({1600000000, 0}) == "1600000000");
  CHECK(format_time({1600000000, 250000000}) == "1600000000.250000000");
}

TEST_CASE("object attrs: round trip through metadata, other entries kept", "[meta][attrs]") {
  UserMetadata m{{"btime", "1"}, {"md5chksum", "abc"}, {"mode", "junk"}};
  ObjectAttrs a;
  a.mode = S_IFREG | 0640;
  a.uid = 1234;
  a.gid = 5678;
  a.mtime = Timespec{1600000000, 250000000};
  a.atime = Timespec{1700000000, 0};
  attrs_to_metadata(a, m);
  CHECK(m.at("mode") == "33184");
  CHECK(m.at("uid") == "1234");
  CHECK(m.at("gid") == "5678");
  CHECK(m.at("mtime") == "1600000000.250000000");
  CHECK(m.at("atime") == "1700000000");
  CHECK(m.count("ctime") == 0);
  CHECK(m.at("md5chksum") == "abc");
  CHECK(m.at("btime") == "1");
  CHECK(attrs_from_metadata(m) == a);
  // What does not parse shows as unset (the mount's default), never as garbage.
  ObjectAttrs bad = attrs_from_metadata({{"mode", "x"}, {"uid", "-3"}, {"mtime", "soon"}});
  CHECK(bad == ObjectAttrs{});
  CHECK(attrs_from_metadata({{"mode", "41471"}}).is_symlink());
}

}  // namespace warmfs

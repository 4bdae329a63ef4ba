#include "cli/mount_options.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using warmfs::cli::IdLookups;
using warmfs::cli::is_mount_helper_name;
using warmfs::cli::MountHelperCall;
using warmfs::cli::split_mount_options;
using warmfs::cli::translate_mount_helper_args;
using Argv = std::vector<std::string>;

namespace {

IdLookups fake_ids() {
  IdLookups l;
  l.user = [](const std::string& n) -> std::optional<int64_t> {
    if (n == "alice") return 1001;
    return std::nullopt;
  };
  l.group = [](const std::string& n) -> std::optional<int64_t> {
    if (n == "ml") return 2002;
    return std::nullopt;
  };
  return l;
}

MountHelperCall ok(const Argv& args) {
  auto r = translate_mount_helper_args(args, fake_ids());
  INFO((r.is_ok() ? std::string() : r.status().message()));
  REQUIRE(r.is_ok());
  return *r;
}

std::string error_of(const Argv& args) {
  auto r = translate_mount_helper_args(args, fake_ids());
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.code() == warmfs::Errc::kInvalidArgument);
  return r.status().message();
}

const Argv kHead = {"warmfs", "mount", "s3://b/p", "/data"};

Argv with_head(const Argv& flags) {
  Argv v = kHead;
  v.insert(v.end(), flags.begin(), flags.end());
  return v;
}

}  // namespace

TEST_CASE("mount helper: recognised by the name mount(8) runs it under", "[mount_options]") {
  CHECK(is_mount_helper_name("/sbin/mount.warmfs"));
  CHECK(is_mount_helper_name("/sbin/mount.fuse.warmfs"));
  CHECK(is_mount_helper_name("mount.warmfs"));
  CHECK_FALSE(is_mount_helper_name("/usr/bin/warmfs"));
  CHECK_FALSE(is_mount_helper_name("warmfs"));
  CHECK_FALSE(is_mount_helper_name("/opt/mount.d/warmfs"));
}

TEST_CASE("mount helper: the fstab line of the docs", "[mount_options]") {
  auto c = ok({"s3://bucket/prefix", "/data", "-o",
               "rw,_netdev,nofail,endpoint=http://10.0.0.5:9000,cache-dir=/nvme/warmfs,"
               "memory-cache-size=8G,allow_other"});
  CHECK(c.argv == Argv{"warmfs", "mount", "s3://bucket/prefix", "/data", "--endpoint",
                       "http://10.0.0.5:9000", "--cache-dir", "/nvme/warmfs", "--memory-cache-size",
                       "8G", "--allow-other"});
  CHECK_FALSE(c.fake);
  CHECK_FALSE(c.verbose);
  CHECK(c.env.empty());
  CHECK(c.warnings.empty());
}

TEST_CASE("mount helper: every long flag of warmfs mount is an option", "[mount_options]") {
  auto c = ok({"s3://b/p", "/data", "-o",
               "endpoint=E,region=R,profile=P,no-sign-request,path-style,memory-cache-size=1G,"
               "metadata-ttl=30,read-only,allow-other,uid=5,gid=6,file-mode=0640,dir-mode=0750,"
               "staging-dir=/s,upload-threads=8,log-level=debug,log-file=/l,foreground,"
               "cache-dir=/c,cache-size=100G,cache-ttl=1h,prefetch=a,token-file=/t,"
               "cache-server=http://c1:7070,insecure-no-token,cache-server-ca=/ca"});
  CHECK(c.argv == with_head({"--endpoint",
                             "E",
                             "--region",
                             "R",
                             "--profile",
                             "P",
                             "--no-sign-request",
                             "--path-style",
                             "--memory-cache-size",
                             "1G",
                             "--metadata-ttl",
                             "30",
                             "--allow-other",
                             "--uid",
                             "5",
                             "--gid",
                             "6",
                             "--file-mode",
                             "0640",
                             "--dir-mode",
                             "0750",
                             "--staging-dir",
                             "/s",
                             "--upload-threads",
                             "8",
                             "--log-level",
                             "debug",
                             "--log-file",
                             "/l",
                             "--foreground",
                             "--cache-dir",
                             "/c",
                             "--cache-size",
                             "100G",
                             "--cache-ttl",
                             "1h",
                             "--prefetch",
                             "a",
                             "--token-file",
                             "/t",
                             "--cache-server",
                             "http://c1:7070",
                             "--insecure-no-token",
                             "--cache-server-ca",
                             "/ca",
                             "--read-only"}));
}

TEST_CASE("mount helper: _ and - spellings are the same option", "[mount_options]") {
  CHECK(ok({"s3://b/p", "/data", "-o", "allow_other,cache_dir=/c,no_sign_request"}).argv ==
        with_head({"--allow-other", "--cache-dir", "/c", "--no-sign-request"}));
}

TEST_CASE("mount helper: ro and rw, the last one wins", "[mount_options]") {
  CHECK(ok({"s3://b/p", "/data", "-o", "ro"}).argv == with_head({"--read-only"}));
  CHECK(ok({"s3://b/p", "/data", "-o", "ro,rw"}).argv == with_head({}));
  CHECK(ok({"s3://b/p", "/data", "-o", "rw,ro"}).argv == with_head({"--read-only"}));
  CHECK(ok({"s3://b/p", "/data", "-o", "read_only"}).argv == with_head({"--read-only"}));
  // fstab's options, then mount -o ro on the command line (two -o's, or one merged string).
  CHECK(ok({"s3://b/p", "/data", "-o", "rw,endpoint=E", "-o", "ro"}).argv ==
        with_head({"--endpoint", "E", "--read-only"}));
  CHECK(ok({"s3://b/p", "/data"}).argv == kHead);
}

TEST_CASE("mount helper: what concerns mount(8), systemd or FUSE only is dropped",
          "[mount_options]") {
  auto c = ok({"s3://b/p", "/data", "-o",
               "defaults,auto,noauto,_netdev,nofail,user,nouser,users,owner,group,suid,nosuid,"
               "dev,nodev,exec,noexec,atime,noatime,relatime,norelatime,strictatime,"
               "nostrictatime,lazytime,nolazytime,diratime,nodiratime,async,default_permissions,"
               "x-systemd.automount,x-systemd.requires=network-online.target,"
               "x-systemd.mount-timeout=90,X-mount.mkdir,x-gvfs-show,comment=systemd.automount"});
  CHECK(c.argv == kHead);
  CHECK(c.warnings.empty());
}

TEST_CASE("mount helper: uid and gid take numbers or names", "[mount_options]") {
  CHECK(ok({"s3://b/p", "/data", "-o", "uid=1000,gid=100"}).argv ==
        with_head({"--uid", "1000", "--gid", "100"}));
  CHECK(ok({"s3://b/p", "/data", "-o", "uid=alice,gid=ml"}).argv ==
        with_head({"--uid", "1001", "--gid", "2002"}));
  CHECK(error_of({"s3://b/p", "/data", "-o", "uid=nobody-here"}) ==
        "uid=nobody-here: no such user");
  CHECK(error_of({"s3://b/p", "/data", "-o", "gid=nogroup-here"}) ==
        "gid=nogroup-here: no such group");
}

TEST_CASE("mount helper: a repeated value keeps the last; lists collect", "[mount_options]") {
  CHECK(ok({"s3://b/p", "/data", "-o", "endpoint=A,cache-dir=/c", "-o", "endpoint=B"}).argv ==
        with_head({"--endpoint", "B", "--cache-dir", "/c"}));
  CHECK(ok({"s3://b/p", "/data", "-o", "prefetch=a,prefetch=b/c"}).argv ==
        with_head({"--prefetch", "a", "--prefetch", "b/c"}));
  // A quoted value keeps its commas: warmfs mount splits --prefetch at them.
  CHECK(ok({"s3://b/p", "/data", "-o", "prefetch=\"a,b\",allow_other"}).argv ==
        with_head({"--prefetch", "a,b", "--allow-other"}));
  CHECK(ok({"s3://b/p", "/data", "-o", "allow_other,allow_other"}).argv ==
        with_head({"--allow-other"}));
}

TEST_CASE("mount helper: an unknown option is a one-line usage error", "[mount_options]") {
  CHECK(error_of({"s3://b/p", "/data", "-o", "ro,bogus=1"}) ==
        "unknown option 'bogus' (see mount.warmfs(8))");
  CHECK(error_of({"s3://b/p", "/data", "-o", "sync"}) ==
        "unknown option 'sync' (see mount.warmfs(8))");
  CHECK(error_of({"s3://b/p", "/data", "-o", "allow-other=yes"}) ==
        "option 'allow-other' takes no value");
  CHECK(error_of({"s3://b/p", "/data", "-o", "ro=1"}) == "option 'ro' takes no value");
  CHECK(error_of({"s3://b/p", "/data", "-o", "endpoint"}) ==
        "option 'endpoint' needs a value (endpoint=...)");
  CHECK(error_of({"s3://b/p", "/data", "-o", "cache_dir="}) ==
        "option 'cache_dir' needs a value (cache-dir=...)");
}

TEST_CASE("mount helper: -s drops unknown options with a warning", "[mount_options]") {
  auto c = ok({"s3://b/p", "/data", "-s", "-o", "bogus=1,ro"});
  CHECK(c.argv == with_head({"--read-only"}));
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0] == "ignoring unknown option 'bogus=1' (-s)");
  // Still an error: a known option used wrongly.
  CHECK(error_of({"s3://b/p", "/data", "-s", "-o", "endpoint"}) ==
        "option 'endpoint' needs a value (endpoint=...)");
}

TEST_CASE("mount helper: mount(8)'s calling convention", "[mount_options]") {
  auto c = ok({"s3://b/p", "/data", "-sfnv", "-oro"});
  CHECK(c.fake);
  CHECK(c.verbose);
  CHECK(c.argv == with_head({"--read-only"}));
  // -t comes with mount.fuse's convention: the type must be ours.
  CHECK(ok({"s3://b/p", "/data", "-o", "ro", "-t", "fuse.warmfs"}).argv ==
        with_head({"--read-only"}));
  CHECK(error_of({"s3://b/p", "/data", "-t", "fuse.sshfs"}) ==
        "type 'fuse.sshfs' is not warmfs or fuse.warmfs");
  CHECK(error_of({"s3://b/p", "/data", "-N", "/proc/1/ns/mnt"}) ==
        "-N (mounting in another namespace) is not supported");
  CHECK(error_of({"s3://b/p", "/data", "-x"}) == "unknown flag -x");
  CHECK(error_of({"s3://b/p", "/data", "-o"}) == "-o needs a value");
  CHECK(error_of({"s3://b/p"}).starts_with("usage: mount.warmfs"));
  CHECK(error_of({"s3://b/p", "/data", "/extra"}).starts_with("usage: mount.warmfs"));
  // Found by tests/fuzz/mount_options_fuzz.cc: empty fields of an fstab line or a script.
  CHECK(error_of({"s3://b/p", ""}).starts_with("mount.warmfs: the source and the mount point"));
  CHECK(error_of({"", "/data"}).starts_with("mount.warmfs: the source and the mount point"));
  CHECK(error_of({"warmfs#", "/data"}).starts_with("mount.warmfs: the source and the mount point"));
  // fuse's "warmfs#SOURCE" form.
  CHECK(ok({"warmfs#s3://b/p", "/data"}).argv == kHead);
}

TEST_CASE("mount helper: credentials-file names the credentials for a boot mount",
          "[mount_options]") {
  auto c = ok({"s3://b/p", "/data", "-o", "credentials_file=/etc/warmfs/aws,ro"});
  CHECK(c.argv == with_head({"--read-only"}));
  REQUIRE(c.env.size() == 1);
  CHECK(c.env[0].first == "AWS_SHARED_CREDENTIALS_FILE");
  CHECK(c.env[0].second == "/etc/warmfs/aws");
}

TEST_CASE("mount helper: split_mount_options", "[mount_options]") {
  CHECK(split_mount_options("a,b=c,,d") == Argv{"a", "b=c", "", "d"});
  CHECK(split_mount_options("p=\"x,y\",q") == Argv{"p=x,y", "q"});
  CHECK(split_mount_options("") == Argv{""});
}

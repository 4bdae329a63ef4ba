// mount(8)'s helper for warmfs: how `mount /data` with an fstab line such as
//
//   s3://BUCKET[/PREFIX]  /data  warmfs  _netdev,nofail,endpoint=URL,cache-dir=/nvme/warmfs  0 0
//
// becomes `warmfs mount s3://BUCKET[/PREFIX] /data --endpoint URL --cache-dir /nvme/warmfs`.
//
// mount(8) runs /sbin/mount.TYPE (type `warmfs`) or /sbin/mount.fuse.warmfs (type
// `fuse.warmfs`), both links to the warmfs binary, as
//
//   mount.warmfs SOURCE DIR [-s] [-f] [-n] [-v] [-o OPTIONS] [-t TYPE] [-N NAMESPACE]
//
// This file holds the translation only: a pure function from that argument list to the argv of
// `warmfs mount` (no environment, no system calls; user and group names are resolved through
// the lookups passed in), so every option is unit-tested. mount_helper.cc runs it.
//
// Options: every long flag of `warmfs mount` is an option, `name=value` or `name` for a switch,
// spelled with `-` or `_` (cache-dir, cache_dir); --prefetch and --cache-server take one value
// per option, repeated (prefetch=a,prefetch=b) or quoted ("prefetch=a,b"). mount(8)'s own
// options: `ro`/`rw` (last wins) are --read-only or not; `uid=`/`gid=` take a number or a name;
// what concerns only mount(8) or systemd (defaults, auto, noauto, _netdev, nofail, user,
// nouser, users, owner, group, comment=, x-*) and what FUSE already does or warmfs has no use
// for (nosuid, nodev, suid, dev, exec, noexec, the atime family, async, default_permissions)
// is accepted and dropped. Anything else is an error, or with -s (sloppy) a warning.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "warmfs/result.h"

namespace warmfs::cli {

// True when argv[0]'s file name is mount.warmfs or mount.fuse.warmfs (or any mount.*): the
// binary was started by mount(8) as its helper.
bool is_mount_helper_name(std::string_view argv0);

// Name and group lookups for uid=NAME and gid=NAME; nullopt: no such user or group.
struct IdLookups {
  std::function<std::optional<int64_t>(const std::string&)> user;
  std::function<std::optional<int64_t>(const std::string&)> group;
};

struct MountHelperCall {
  std::vector<std::string> argv;  // "warmfs", "mount", SOURCE, DIR, flags...
  // Variables to set for `warmfs mount` (credentials-file=F: AWS_SHARED_CREDENTIALS_FILE).
  std::vector<std::pair<std::string, std::string>> env;
  bool fake = false;                  // -f: say what would run, mount nothing
  bool verbose = false;               // -v: print the command before running it
  std::vector<std::string> warnings;  // with -s: the options dropped as unknown
};

// Translates the helper's arguments (argv[1..]) into a `warmfs mount` call. A usage error
// (an unknown option, a switch given a value, a missing value, a missing SOURCE or DIR) is
// Errc::kInvalidArgument with a one-line message.
Result<MountHelperCall> translate_mount_helper_args(const std::vector<std::string>& args,
                                                    const IdLookups& lookups);

// Splits a mount option string at commas outside double quotes; the quotes of a quoted value
// are removed (`prefetch="a,b"` is one option `prefetch=a,b`).
std::vector<std::string> split_mount_options(std::string_view options);

// The helper: translates argv, then runs this binary as `warmfs mount ...` (exec), which
// daemonises and returns once the mount answers. Returns an exit status only on failure
// (2: usage) or with -f.
int run_mount_helper(int argc, char** argv);

}  // namespace warmfs::cli

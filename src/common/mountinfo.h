// /proc/self/mountinfo, read without a FUSE request (so a hung mount cannot hang the reader):
// which mount sits at a path, its device number and its type. One parser for the mount
// command (is a warmfs mount already there?) and the FUSE session (the device whose kernel
// read-ahead it raises).
//
// Pure apart from read_mountinfo(); thread safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warmfs {

struct MountInfoEntry {
  std::string device;      // "major:minor"
  std::string mountpoint;  // with the kernel's octal escapes (\040 for a space) decoded
  std::string fstype;      // e.g. "fuse.warmfs", "ext4"
  std::string source;      // e.g. "s3://bucket/prefix/"
};

// The entries of mountinfo text (proc(5)): fields 3 and 5, then after the "-" separator the
// type and source. Malformed lines are skipped.
std::vector<MountInfoEntry> parse_mountinfo(std::string_view text);

// /proc/self/mountinfo, parsed; empty if it cannot be read.
std::vector<MountInfoEntry> read_mountinfo();

// The mount on top at path (the last entry for it: later mounts stack over earlier ones).
std::optional<MountInfoEntry> top_mount_at(const std::vector<MountInfoEntry>& mounts,
                                           std::string_view path);

}  // namespace warmfs

// ObjectAttrs: the POSIX attributes an object carries in its user metadata.
//
// warmfs keeps mode, owner and times where s3fs-fuse and rclone keep them, so an object
// written by one of the three looks the same through the others (docs/posix.md):
//   x-amz-meta-mode   st_mode in decimal, file type bits included ("33188" is 0100644); s3fs
//                     writes it so. rclone writes octal ("100644"); a value that is no valid
//                     mode in decimal but is one in octal is read as octal.
//   x-amz-meta-uid, x-amz-meta-gid   decimal.
//   x-amz-meta-mtime, -ctime, -atime   seconds since the epoch, with an optional fraction
//                     ("1600000000" or "1600000000.250000000"), as s3fs and rclone write them.
//   x-amz-meta-rdev   a device node's number, decimal.
// A symlink is an object whose mode has S_IFLNK and whose body is the target (s3fs's layout);
// a FIFO, socket or device node an empty object whose mode has its type.
// Values that do not parse are ignored (the mount's defaults show instead).
//
// Plain functions and values; no state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "objstore/object_store.h"

namespace warmfs {

struct Timespec {
  int64_t sec = 0;
  uint32_t nsec = 0;
  bool operator==(const Timespec&) const = default;
};

struct ObjectAttrs {
  std::optional<uint32_t> mode;  // st_mode as stored: type bits (when present) and permissions
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<Timespec> mtime;
  std::optional<Timespec> ctime;
  std::optional<Timespec> atime;  // as set by utimens (reads do not change it)
  std::optional<uint64_t> rdev;   // device number of a device node (x-amz-meta-rdev)
  bool operator==(const ObjectAttrs&) const = default;
  // True when the stored mode says symlink.
  bool is_symlink() const;
};

// Content-Type warmfs gives the objects it makes: s3fs's for directory markers, and
// binary/octet-stream for files and symlinks.
inline constexpr const char* kDirContentType = "application/x-directory";
inline constexpr const char* kFileContentType = "application/octet-stream";

std::optional<uint32_t> parse_mode(std::string_view text);
std::optional<Timespec> parse_time(std::string_view text);
// "1600000000" when nsec is 0, else "1600000000.250000000".
std::string format_time(const Timespec& t);

// The attributes in metadata (absent or bad values stay unset).
ObjectAttrs attrs_from_metadata(const UserMetadata& metadata);
// The names attrs_to_metadata() owns.
inline constexpr const char* kAttrMetadataNames[] = {"mode",  "uid",   "gid", "mtime",
                                                     "ctime", "atime", "rdev"};
// Writes the set attributes into metadata (kAttrMetadataNames), leaving other
// entries as they are.
void attrs_to_metadata(const ObjectAttrs& attrs, UserMetadata& metadata);

}  // namespace warmfs

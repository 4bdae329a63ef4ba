#include "meta/object_attrs.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <charconv>

namespace warmfs {
namespace {

std::optional<uint64_t> parse_uint(std::string_view text, int base) {
  uint64_t v = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

bool valid_mode(uint64_t m) {
  if (m > 0177777) return false;
  switch (m & S_IFMT) {
    case 0:  // permissions only (s3fs writes directory modes so)
    case S_IFREG:
    case S_IFDIR:
    case S_IFLNK:
    case S_IFIFO:
    case S_IFSOCK:
    case S_IFCHR:
    case S_IFBLK:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool ObjectAttrs::is_symlink() const { return mode && (*mode & S_IFMT) == S_IFLNK; }

std::optional<uint32_t> parse_mode(std::string_view text) {
  if (auto d = parse_uint(text, 10); d && valid_mode(*d)) return static_cast<uint32_t>(*d);
  // rclone's octal, e.g. "100644" (in decimal that would be no valid mode).
  if (auto o = parse_uint(text, 8); o && valid_mode(*o) && (*o & S_IFMT) != 0) {
    return static_cast<uint32_t>(*o);
  }
  return std::nullopt;
}

std::optional<Timespec> parse_time(std::string_view text) {
  const size_t dot = text.find('.');
  auto sec = parse_uint(text.substr(0, dot), 10);
  if (!sec || *sec > (uint64_t{1} << 40)) return std::nullopt;
  Timespec t{static_cast<int64_t>(*sec), 0};
  if (dot != std::string_view::npos) {
    std::string_view frac = text.substr(dot + 1);
    if (frac.empty() || frac.size() > 9 || !parse_uint(frac, 10)) return std::nullopt;
    uint64_t ns = *parse_uint(frac, 10);
    for (size_t i = frac.size(); i < 9; ++i) ns *= 10;
    t.nsec = static_cast<uint32_t>(ns);
  }
  return t;
}

std::string format_time(const Timespec& t) {
  if (t.nsec == 0) return std::to_string(t.sec);
  return fmt::format("{}.{:09d}", t.sec, t.nsec);
}

ObjectAttrs attrs_from_metadata(const UserMetadata& metadata) {
  ObjectAttrs a;
  auto get = [&metadata](const char* name) -> std::optional<std::string_view> {
    auto it = metadata.find(name);
    if (it == metadata.end()) return std::nullopt;
    return std::string_view(it->second);
  };
  if (auto v = get("mode")) a.mode = parse_mode(*v);
  auto id = [](std::string_view v) -> std::optional<uint32_t> {
    auto n = parse_uint(v, 10);
    if (!n || *n > 0xffffffffull) return std::nullopt;
    return static_cast<uint32_t>(*n);
  };
  if (auto v = get("uid")) a.uid = id(*v);
  if (auto v = get("gid")) a.gid = id(*v);
  if (auto v = get("mtime")) a.mtime = parse_time(*v);
  if (auto v = get("ctime")) a.ctime = parse_time(*v);
  if (auto v = get("atime")) a.atime = parse_time(*v);
  if (auto v = get("rdev")) a.rdev = parse_uint(*v, 10);
  return a;
}

void attrs_to_metadata(const ObjectAttrs& attrs, UserMetadata& metadata) {
  if (attrs.mode) metadata["mode"] = std::to_string(*attrs.mode);
  if (attrs.uid) metadata["uid"] = std::to_string(*attrs.uid);
  if (attrs.gid) metadata["gid"] = std::to_string(*attrs.gid);
  if (attrs.mtime) metadata["mtime"] = format_time(*attrs.mtime);
  if (attrs.ctime) metadata["ctime"] = format_time(*attrs.ctime);
  if (attrs.atime) metadata["atime"] = format_time(*attrs.atime);
  if (attrs.rdev) metadata["rdev"] = std::to_string(*attrs.rdev);
}

}  // namespace warmfs

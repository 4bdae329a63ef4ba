#include "snapshot/stored_snapshot.h"

#include <fmt/format.h>

#include <cstddef>
#include <vector>

#include "common/reserved_names.h"

namespace warmfs {

bool is_snapshot_name(std::string_view name) {
  if (name.empty() || name.size() > 128 || name == "." || name == "..") return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string stored_snapshot_key(std::string_view prefix, std::string_view name) {
  return fmt::format("{}{}/snapshots/{}", prefix, kReservedDirName, name);
}

Status store_snapshot(ObjectStore& store, const Manifest& m, std::string_view name) {
  if (!is_snapshot_name(name)) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("'{}' is not a snapshot name (1 to 128 of A-Z a-z 0-9 . _ -)", name));
  }
  const std::string bytes = encode_manifest(m);
  PutOptions o;
  o.content_type = "application/octet-stream";
  auto put = store.put(stored_snapshot_key(m.prefix(), name),
                       std::as_bytes(std::span(bytes.data(), bytes.size())), o);
  if (!put.is_ok()) return put.status();
  return Status::ok();
}

Result<Manifest> load_stored_snapshot(ObjectStore& store, std::string_view prefix,
                                      std::string_view name) {
  if (!is_snapshot_name(name)) {
    return Status(Errc::kInvalidArgument, fmt::format("'{}' is not a snapshot name", name));
  }
  const std::string key = stored_snapshot_key(prefix, name);
  auto info = store.head(key);
  if (!info.is_ok()) {
    if (info.code() == Errc::kNotFound) {
      return Status(Errc::kNotFound, fmt::format("no snapshot named '{}' ({} has no {})", name,
                                                 store.describe(), key));
    }
    return info.status();
  }
  std::string bytes(info->size, '\0');
  auto got = store.get_range(key, 0, std::as_writable_bytes(std::span(bytes.data(), bytes.size())),
                             info->etag);
  if (!got.is_ok()) return got.status();
  bytes.resize(*got);
  auto m = decode_manifest(bytes);
  if (!m.is_ok()) return Status(m.code(), fmt::format("{}: {}", key, m.status().message()));
  if (m->prefix() != prefix) {
    return Status(Errc::kCorrupt, fmt::format("{} is a snapshot of prefix '{}'", key, m->prefix()));
  }
  return m;
}

}  // namespace warmfs

#include "snapshot/snapshot_store.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/log.h"

namespace warmfs {

SnapshotStore::SnapshotStore(ObjectStore& inner, std::shared_ptr<const Manifest> manifest,
                             bool pin_versions)
    : inner_(inner), manifest_(std::move(manifest)), pin_versions_(pin_versions) {}

std::optional<size_t> SnapshotStore::find(std::string_view key) const {
  const std::string& p = manifest_->prefix();
  if (key.size() < p.size() || key.compare(0, p.size(), p) != 0) return std::nullopt;
  return manifest_->find(key.substr(p.size()));
}

ObjectInfo SnapshotStore::info_of(size_t i) const {
  ObjectInfo o;
  o.key = manifest_->prefix() + std::string(manifest_->key(i));
  o.size = manifest_->object_size(i);
  o.etag = manifest_->etag(i);
  o.mtime_sec = manifest_->mtime_sec(i);
  o.version_id = manifest_->version_id(i);
  return o;
}

std::string SnapshotStore::bytes_key_of(size_t i) const {
  const std::string_view loc = manifest_->location(i);
  return manifest_->prefix() + std::string(loc.empty() ? manifest_->key(i) : loc);
}

Result<std::string> SnapshotStore::bytes_key(std::string_view key) const {
  const auto i = find(key);
  if (!i) return Status(Errc::kNotFound, fmt::format("{} is not in the snapshot", key));
  return bytes_key_of(*i);
}

Result<ObjectInfo> SnapshotStore::head(std::string_view key) {
  const auto i = find(key);
  if (!i) return Status(Errc::kNotFound, fmt::format("{} is not in the snapshot", key));
  return info_of(*i);
}

Result<size_t> SnapshotStore::get_range(std::string_view key, uint64_t offset,
                                        std::span<std::byte> out, std::string_view if_match) {
  return get_range_progress(key, offset, out, if_match, nullptr, nullptr);
}

Result<size_t> SnapshotStore::get_range_progress(std::string_view key, uint64_t offset,
                                                 std::span<std::byte> out,
                                                 std::string_view if_match,
                                                 const std::function<void(size_t)>& progress,
                                                 const RangeBytesSeen& seen) {
  const auto i = find(key);
  if (!i) return Status(Errc::kNotFound, fmt::format("{} is not in the snapshot", key));
  const std::string etag = manifest_->etag(*i);
  // The caller's ETag came from this manifest (head, list); anything else is not this
  // snapshot's object.
  if (!if_match.empty() && if_match != etag) {
    return Status(Errc::kPreconditionFailed,
                  fmt::format("{}: ETag {} is not the snapshot's {}", key, if_match, etag));
  }
  Result<size_t> r = Status(Errc::kInternal, "unreached");
  const std::string version = pin_versions_ ? manifest_->version_id(*i) : std::string();
  const std::string at = bytes_key_of(*i);
  if (!version.empty()) {
    r = inner_.get_range_version(at, version, offset, out, progress, seen);
  } else {
    r = inner_.get_range_progress(at, offset, out, etag, progress, seen);
  }
  if (!r.is_ok() && (r.code() == Errc::kPreconditionFailed || r.code() == Errc::kNotFound)) {
    return stale(key, *i, r.status());
  }
  return r;
}

Status SnapshotStore::stale(std::string_view key, size_t i, const Status& st) {
  const bool pinned_by_version = pin_versions_ && !manifest_->version_id(i).empty();
  std::string msg = pinned_by_version
                        ? fmt::format("{}: version {} of the snapshot is gone from the bucket ({})",
                                      key, manifest_->version_id(i), st.message())
                        : fmt::format("{} changed since the snapshot (its ETag was {}): {}", key,
                                      manifest_->etag(i), st.message());
  bool first = false;
  {
    std::lock_guard lock(logged_mu_);
    first = logged_.emplace(key).second;
  }
  if (first) log::warn("snapshot: {}; reads of it fail with ESTALE", msg);
  return Status(Errc::kPreconditionFailed, std::move(msg));
}

ListStart list_start(std::string_view mp, std::string_view start_after) {
  if (start_after.empty()) return {};
  if (start_after.substr(0, mp.size()) == mp) {
    return {ListStart::Kind::kAfter, std::string(start_after.substr(mp.size()))};
  }
  return {start_after < mp ? ListStart::Kind::kAll : ListStart::Kind::kNone, {}};
}

Result<ListPage> SnapshotStore::list(const ListRequest& request) {
  if (!request.delimiter.empty() && request.delimiter != "/") {
    return Status(Errc::kNotSupported, "a snapshot lists with delimiter '/' only");
  }
  const Manifest& m = *manifest_;
  const std::string& mp = m.prefix();
  ListPage page;
  const ListStart start =
      request.continuation_token.empty() ? list_start(mp, request.start_after) : ListStart{};
  if (start.kind == ListStart::Kind::kNone) return page;
  std::string rel;  // request prefix relative to the manifest's
  if (request.prefix.compare(0, mp.size(), mp) == 0 && request.prefix.size() >= mp.size()) {
    rel = request.prefix.substr(mp.size());
  } else if (mp.compare(0, request.prefix.size(), request.prefix) == 0) {
    // Above the manifest's prefix: only the prefix itself is there.
    if (m.size() == 0) return page;
    if (request.delimiter.empty()) {
      rel.clear();  // everything below; keys come back whole
    } else {
      const size_t d = mp.find('/', request.prefix.size());
      if (request.continuation_token.empty()) page.common_prefixes.push_back(mp.substr(0, d + 1));
      return page;
    }
  } else {
    return page;
  }
  const size_t max_keys = static_cast<size_t>(std::clamp(request.max_keys, 1, 1000));
  // Token: 'K' + the last key returned, or 'P' + the last common prefix returned (both
  // relative to the manifest's prefix).
  const std::string& token = request.continuation_token;
  size_t i = 0;
  if (token.empty()) {
    i = m.lower_bound(rel);
    if (start.kind == ListStart::Kind::kAfter) {
      size_t j = m.lower_bound(start.rel);
      if (j < m.size() && m.key(j) == start.rel) ++j;
      i = std::max(i, j);
    }
  } else if (token[0] == 'K') {
    i = m.lower_bound(token.substr(1));
    if (i < m.size() && m.key(i) == std::string_view(token).substr(1)) ++i;
  } else if (token[0] == 'P' && token.size() > 1) {
    std::string next = token.substr(1);
    next.back() = static_cast<char>(next.back() + 1);  // past every key below the prefix
    i = m.lower_bound(next);
  } else {
    return Status(Errc::kInvalidArgument, "malformed continuation token");
  }
  std::string last;
  bool last_is_prefix = false;
  const bool delimit = !request.delimiter.empty();
  while (i < m.size()) {
    const std::string_view k = m.key(i);
    if (k.compare(0, rel.size(), rel) != 0) break;  // sorted: past the prefix
    if (page.objects.size() + page.common_prefixes.size() == max_keys) {
      page.truncated = true;
      break;
    }
    const size_t d = delimit ? k.find('/', rel.size()) : std::string_view::npos;
    if (d != std::string_view::npos) {
      last.assign(k.substr(0, d + 1));
      last_is_prefix = true;
      page.common_prefixes.push_back(mp + last);
      std::string next = last;
      next.back() = static_cast<char>('/' + 1);
      i = m.lower_bound(next);
      continue;
    }
    page.objects.push_back(info_of(i));
    last.assign(k);
    last_is_prefix = false;
    ++i;
  }
  if (page.truncated) page.next_token = (last_is_prefix ? "P" : "K") + last;
  return page;
}

Status SnapshotStore::read_only(std::string_view what) const {
  return Status(Errc::kReadOnly, fmt::format("{}: a snapshot mount is read-only", what));
}

Result<ObjectInfo> SnapshotStore::put(std::string_view key, std::span<const std::byte>,
                                      const PutOptions&) {
  return read_only(key);
}
Result<std::string> SnapshotStore::create_multipart(std::string_view key, const ObjectHeaders&) {
  return read_only(key);
}
Result<CompletedPart> SnapshotStore::upload_part(std::string_view key, std::string_view, int,
                                                 std::span<const std::byte>) {
  return read_only(key);
}
Result<CompletedPart> SnapshotStore::upload_part_copy(std::string_view key, std::string_view, int,
                                                      std::string_view, uint64_t, uint64_t,
                                                      std::string_view) {
  return read_only(key);
}
Result<ObjectInfo> SnapshotStore::complete_multipart(std::string_view key, std::string_view,
                                                     std::span<const CompletedPart>) {
  return read_only(key);
}
Status SnapshotStore::abort_multipart(std::string_view key, std::string_view) {
  return read_only(key);
}
Result<std::vector<MultipartUpload>> SnapshotStore::list_multipart_uploads(std::string_view) {
  return std::vector<MultipartUpload>{};
}
Result<ObjectInfo> SnapshotStore::copy(std::string_view, std::string_view dst_key,
                                       std::string_view) {
  return read_only(dst_key);
}
Result<ObjectInfo> SnapshotStore::replace_metadata(std::string_view key, const ObjectInfo&,
                                                   const ObjectHeaders&) {
  return read_only(key);
}
Status SnapshotStore::remove(std::string_view key) { return read_only(key); }
Result<std::vector<DeleteError>> SnapshotStore::remove_many(std::span<const std::string>) {
  return read_only("delete");
}

}  // namespace warmfs

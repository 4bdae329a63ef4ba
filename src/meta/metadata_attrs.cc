// The attribute half of Metadata: what objects' user metadata says (object_attrs.h), read
// with HEADs and kept by path, and the changes this mount makes to it.
#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>

#include "common/log.h"
#include "meta/metadata.h"

namespace warmfs {
std::string Metadata::known_key(const std::string& path, bool is_dir) {
  return is_dir ? path + "/" : path;
}

bool Metadata::known_fresh_locked(const std::string& path, const DirEntry& e) const {
  auto it = known_.find(known_key(path, e.is_dir));
  if (it == known_.end()) return false;
  if (e.is_dir) return true;  // a marker's attributes change only through a mount
  const Known& k = it->second;
  return k.etag == e.etag && k.last_modified == e.mtime_sec;
}

void Metadata::bound_known_locked() {
  if (known_.size() < std::max(options_.max_known, known_sweep_at_)) return;
  // A bound, not a policy: what a live node needs stays (its changes may not be uploaded).
  ++cache_sweeps_;
  for (auto it = known_.begin(); it != known_.end();) {
    std::string path = it->first;
    if (!path.empty() && path.back() == '/') path.pop_back();
    it = node_at_locked(path) != nullptr ? std::next(it) : known_.erase(it);
  }
  // When most of it is needed (a tree whose every file the kernel holds), passing again at
  // the next entry would make a walk quadratic.
  known_sweep_at_ = 2 * known_.size();
}

const ObjectAttrs& Metadata::Known::attrs_or_none() const {
  static const ObjectAttrs none;
  return attrs ? *attrs : none;
}

std::shared_ptr<const ObjectAttrs> Metadata::shared_attrs_locked(const ObjectAttrs& attrs) {
  if (attrs == ObjectAttrs{}) return nullptr;
  if (!last_attrs_ || *last_attrs_ != attrs)
    last_attrs_ = std::make_shared<const ObjectAttrs>(attrs);
  return last_attrs_;
}

std::shared_ptr<const Metadata::StoredHeaders> Metadata::make_stored(const ObjectHeaders& headers) {
  StoredHeaders s{headers, attrs_from_metadata(headers.metadata)};
  // The attributes are kept parsed, not again as text: headers_for() writes them back.
  for (const char* name : kAttrMetadataNames) s.headers.metadata.erase(name);
  return std::make_shared<const StoredHeaders>(std::move(s));
}

std::shared_ptr<const ObjectAttrs> Metadata::attrs_in(
    const std::shared_ptr<const StoredHeaders>& stored) {
  if (!stored || stored->attrs == ObjectAttrs{}) return nullptr;
  return std::shared_ptr<const ObjectAttrs>(stored, &stored->attrs);  // shares its allocation
}

std::shared_ptr<const Metadata::StoredHeaders> Metadata::shared_headers_locked(
    const std::string& content_type, const UserMetadata& metadata) {
  auto made = make_stored(ObjectHeaders{content_type, metadata});
  const auto& last = last_headers_;
  if (last && last->headers.content_type == made->headers.content_type &&
      last->headers.metadata == made->headers.metadata && last->attrs == made->attrs) {
    return last_headers_;
  }
  last_headers_ = std::move(made);
  return last_headers_;
}

void Metadata::record_head_locked(const std::string& path, const ObjectInfo& info) {
  bound_known_locked();
  Known& k = known_[known_key(path, false)];
  if (k.etag != info.etag || k.last_modified != info.mtime_sec) k.link_target.reset();
  k.etag = info.etag;
  k.last_modified = info.mtime_sec;
  k.stored = shared_headers_locked(info.content_type, info.metadata);
  k.attrs = attrs_in(k.stored);
}

void Metadata::ensure_root_known() {
  // The mount's root is the prefix's own "prefix/" marker (a bucket's root has none).
  if (!options_.object_attrs || options_.prefix.empty()) return;
  DirEntry root{"", true, 0, options_.dir_mtime_sec, ""};
  ensure_known("", root);
}

void Metadata::ensure_known(const std::string& path, DirEntry& e) {
  if (!options_.object_attrs || (path.empty() && (!e.is_dir || options_.prefix.empty()))) return;
  {
    std::lock_guard lock(mu_);
    if (known_fresh_locked(path, e)) return;
  }
  if (e.is_dir) {
    // s3fs keeps a directory's mode on its "dir/" marker; an implicit directory has none.
    auto head = store_.head(dir_key(path));
    if (!head.is_ok() && head.code() != Errc::kNotFound) {
      log::debug("HEAD of marker {:?} failed: {}", dir_key(path), head.status().to_string());
      return;
    }
    std::lock_guard lock(mu_);
    bound_known_locked();
    Known& k = known_[known_key(path, true)];
    if (head.is_ok()) {
      k.stored = shared_headers_locked(head->content_type, head->metadata);
      k.attrs = attrs_in(k.stored);
    } else {
      k = Known{};
    }
    return;
  }
  auto head = store_.head(file_key(path));
  if (!head.is_ok()) {
    log::debug("HEAD of {:?} failed: {}", file_key(path), head.status().to_string());
    return;
  }
  std::lock_guard lock(mu_);
  record_head_locked(path, *head);
  // The HEAD is newer than the listing.
  e.size = head->size;
  e.etag = head->etag;
  e.mtime_sec = head->mtime_sec;
}

void Metadata::fetch_attrs(const std::string& dir_path, const DirListing& listing) {
  if (!options_.object_attrs) return;
  std::vector<std::pair<std::string, DirEntry>> missing;
  {
    std::lock_guard lock(mu_);
    for (const DirEntry& e : listing.entries) {
      std::string path = child_path(dir_path, e.name);
      if (e.etag.empty() && !e.is_dir) continue;  // created here, not uploaded yet
      if (!known_fresh_locked(path, e)) missing.emplace_back(std::move(path), e);
    }
  }
  if (missing.empty()) return;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < missing.size(); i = next++) {
      ensure_known(missing[i].first, missing[i].second);
    }
  };
  const size_t n = std::min<size_t>(kAttrHeadThreads, missing.size());
  std::vector<std::thread> threads;
  threads.reserve(n - 1);
  try {
    for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
  } catch (const std::system_error& e) {
    // No thread to be had (a process limit): the threads there are, and this one, do it all.
    log::warn("HEADs of {:?} with {} threads: {}", dir_path, threads.size() + 1, e.what());
  }
  work();
  for (auto& t : threads) t.join();
}

Result<NodeAttr> Metadata::add_object(uint64_t parent, std::string_view name,
                                      const ObjectInfo& info, const ObjectHeaders& headers) {
  std::string path;
  {
    std::lock_guard lock(mu_);
    WARMFS_ASSIGN_OR_RETURN(path, child_path_locked(parent, name));
    bound_known_locked();
    auto stored = make_stored(headers);
    known_[known_key(path, false)] =
        Known{info.etag, info.mtime_sec, attrs_in(stored), stored, nullptr};
    DirEntry e{std::string(name), false, info.size, info.mtime_sec, info.etag};
    edit_listing_locked(std::string(dir_name(path)), name, &e);
    touch_dir_locked(dir_name(path));
  }
  DirEntry e{std::string(name), false, info.size, info.mtime_sec, info.etag};
  return upsert_node(parent, path, e, clock_.now());
}

void Metadata::set_attrs(uint64_t ino, const ObjectAttrs& attrs) {
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(ino);
  if (node == nullptr) return;
  const Node& n = *node;
  bound_known_locked();
  auto [kit, inserted] = known_.try_emplace(known_key(path_locked(n), n.is_dir));
  if (inserted && !n.is_dir) {
    kit->second.etag = n.etag;
    kit->second.last_modified = n.mtime_sec;
  }
  kit->second.attrs = shared_attrs_locked(attrs);
}

void Metadata::attrs_stored(uint64_t ino, const ObjectInfo& info, const ObjectHeaders& headers) {
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(ino);
  if (node == nullptr) return;
  Node& n = *node;
  Known& k = known_[known_key(path_locked(n), n.is_dir)];
  k.stored = make_stored(headers);
  k.attrs = attrs_in(k.stored);
  if (n.is_dir) {
    // Times set now (utimens: rsync -a sets a directory's after filling it) win over the
    // changes made in it before, however old the times set are; a later change wins again.
    if (k.attrs && k.attrs->mtime) n.mtime_sec = 0;
    return;
  }
  k.etag = info.etag;
  k.last_modified = info.mtime_sec;
  n.etag = info.etag;
  n.mtime_sec = info.mtime_sec;
  n.validated_at = clock_.now();
  if (!indexed_locked(n)) return;
  DirEntry e{n.name, false, n.size, n.mtime_sec, n.etag};
  edit_listing_locked(std::string(dir_name(path_locked(n))), e.name, &e);
}

void Metadata::content_changed(uint64_t ino) {
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(ino);
  if (node == nullptr || node->is_dir) return;
  auto kit = known_.find(known_key(path_locked(*node), false));
  if (kit == known_.end() || !kit->second.attrs) return;
  ObjectAttrs a = *kit->second.attrs;
  a.mtime.reset();
  a.ctime.reset();
  kit->second.attrs = shared_attrs_locked(a);
}

ObjectHeaders Metadata::headers_for(uint64_t ino) {
  std::lock_guard lock(mu_);
  ObjectHeaders h;
  Node* node = nodes_.find(ino);
  if (node == nullptr) return h;
  auto kit = known_.find(known_key(path_locked(*node), node->is_dir));
  if (kit == known_.end()) return h;
  if (kit->second.stored) h = kit->second.stored->headers;
  for (const char* name : kAttrMetadataNames) h.metadata.erase(name);
  attrs_to_metadata(kit->second.attrs_or_none(), h.metadata);
  return h;
}

Result<ObjectInfo> Metadata::object_of(uint64_t ino) {
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(ino);
  if (node == nullptr) return Status(Errc::kNotFound, "unknown inode");
  const Node& n = *node;
  ObjectInfo info;
  const std::string path = path_locked(n);
  info.key = n.is_dir ? dir_key(path) : file_key(path);
  info.size = n.is_dir ? 0 : n.size;
  info.etag = n.etag.str();
  info.mtime_sec = n.mtime_sec;
  return info;
}

std::optional<std::string> Metadata::link_target(uint64_t ino) {
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(ino);
  if (node == nullptr) return std::nullopt;
  auto kit = known_.find(known_key(path_locked(*node), false));
  if (kit == known_.end()) return std::nullopt;
  if (!kit->second.link_target) return std::nullopt;
  return *kit->second.link_target;
}

void Metadata::set_link_target(uint64_t ino, std::string target) {
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(ino);
  if (node == nullptr) return;
  auto kit = known_.find(known_key(path_locked(*node), false));
  if (kit != known_.end()) {
    kit->second.link_target = std::make_unique<const std::string>(std::move(target));
  }
}

}  // namespace warmfs

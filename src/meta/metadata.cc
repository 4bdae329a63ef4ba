#include "meta/metadata.h"

#include <algorithm>

#include "common/log.h"

namespace warmfs {

bool is_valid_name(std::string_view name) {
  if (name.empty() || name == "." || name == ".." || name.size() > kMaxNameBytes) return false;
  return name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

const DirEntry* DirListing::find(std::string_view name) const {
  auto it = std::lower_bound(entries.begin(), entries.end(), name,
                             [](const DirEntry& e, std::string_view n) { return e.name < n; });
  if (it == entries.end() || it->name != name) return nullptr;
  return &*it;
}

Metadata::Metadata(ObjectStore& store, Clock& clock, MetaOptions options)
    : store_(store), clock_(clock), options_(std::move(options)) {
  Node root;
  root.ino = kRootIno;
  root.parent = kRootIno;
  root.is_dir = true;
  root.nlookup = 1;
  root.validated_at = clock_.now();
  nodes_.emplace(kRootIno, root);
  ino_by_path_.emplace("", kRootIno);
}

std::string Metadata::child_path(std::string_view parent, std::string_view name) {
  if (parent.empty()) return std::string(name);
  std::string p;
  p.reserve(parent.size() + 1 + name.size());
  p.append(parent).append("/").append(name);
  return p;
}

std::string Metadata::dir_key(std::string_view path) const {
  if (path.empty()) return options_.prefix;
  return options_.prefix + std::string(path) + "/";
}

bool Metadata::fresh(std::chrono::steady_clock::time_point t) const {
  return clock_.now() - t < options_.ttl;
}

NodeAttr Metadata::attr_of(const Node& n, int64_t dir_mtime) {
  NodeAttr a;
  a.ino = n.ino;
  a.is_dir = n.is_dir;
  a.size = n.is_dir ? 0 : n.size;
  a.mtime_sec = n.is_dir ? dir_mtime : n.mtime_sec;
  a.etag = n.etag;
  return a;
}

Result<DirListingPtr> Metadata::fetch_listing(const std::string& dir_path, int max_pages) {
  const std::string prefix = dir_key(dir_path);
  auto listing = std::make_shared<DirListing>();
  listing->listed_at = clock_.now();
  uint64_t skipped = 0;
  ListRequest req;
  req.prefix = prefix;
  req.delimiter = "/";
  // A directory may hold a file "x" and a prefix "x/"; the directory wins.
  std::unordered_map<std::string, size_t> index;
  auto add = [&](DirEntry e) {
    auto [it, inserted] = index.emplace(e.name, listing->entries.size());
    if (inserted) {
      listing->entries.push_back(std::move(e));
    } else if (e.is_dir) {
      listing->entries[it->second] = std::move(e);
    }
  };
  int pages = 0;
  do {
    if (max_pages > 0 && pages++ == max_pages) {
      return Status(Errc::kNotSupported, "directory has more than " + std::to_string(max_pages) + " pages");
    }
    WARMFS_ASSIGN_OR_RETURN(ListPage page, store_.list(req));
    for (auto& obj : page.objects) {
      std::string_view rest = std::string_view(obj.key).substr(prefix.size());
      if (rest.empty()) continue;  // the directory's own "dir/" marker
      if (!is_valid_name(rest)) {
        ++skipped;
        log::info("skipping key {:?}: {:?} is not a valid file name", obj.key, std::string(rest));
        continue;
      }
      add(DirEntry{std::string(rest), false, obj.size, obj.mtime_sec, obj.etag});
    }
    for (auto& cp : page.common_prefixes) {
      std::string_view rest = std::string_view(cp).substr(prefix.size());
      if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
      if (!is_valid_name(rest)) {
        ++skipped;
        log::info("skipping prefix {:?}: {:?} is not a valid directory name", cp, std::string(rest));
        continue;
      }
      add(DirEntry{std::string(rest), true, 0, options_.dir_mtime_sec, ""});
    }
    if (page.truncated && page.next_token.empty()) {
      return Status(Errc::kCorrupt, "ListObjectsV2 truncated without a continuation token");
    }
    req.continuation_token = page.next_token;
    if (!page.truncated) break;
  } while (true);
  std::sort(listing->entries.begin(), listing->entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });

  std::lock_guard lock(mu_);
  skipped_keys_ += skipped;
  // Keep the cache from growing without bound: drop stale listings now and then.
  if (listings_.size() > 4096) {
    for (auto it = listings_.begin(); it != listings_.end();) {
      it = fresh(it->second.listing->listed_at) ? std::next(it) : listings_.erase(it);
    }
  }
  listings_[dir_path] = CachedListing{listing};
  return DirListingPtr(listing);
}

Result<DirEntry> Metadata::probe(const std::string& path, std::string_view name) {
  // One HEAD answers for a file. Only when there is no such object does a one-key LIST ask
  // whether the path is a directory. (A key that is both a file and a prefix shows as a
  // directory in listings; a lookup outside a cached listing finds the file.)
  auto head = store_.head(file_key(path));
  if (head.is_ok()) return DirEntry{std::string(name), false, head->size, head->mtime_sec, head->etag};
  if (head.code() != Errc::kNotFound) return std::move(head).take_status();
  ListRequest req{dir_key(path), "/", "", 1};
  WARMFS_ASSIGN_OR_RETURN(ListPage page, store_.list(req));
  if (page.objects.empty() && page.common_prefixes.empty()) {
    return Status(Errc::kNotFound, "no such file or directory: " + path);
  }
  return DirEntry{std::string(name), true, 0, options_.dir_mtime_sec, ""};
}

bool Metadata::should_list(const std::string& dir_path) {
  std::lock_guard lock(mu_);
  if (probes_.size() > 4096) probes_.clear();  // a bound, not a policy: counts restart
  DirProbes& p = probes_[dir_path];
  const auto now = clock_.now();
  if (now < p.too_large_until) return false;
  if (now - p.window_start >= options_.ttl) {
    p.window_start = now;
    p.count = 0;
  }
  return ++p.count > kAutoListAfterProbes;
}

NodeAttr Metadata::upsert_node(uint64_t parent, const std::string& path, const DirEntry& e,
                               std::chrono::steady_clock::time_point seen_at) {
  std::lock_guard lock(mu_);
  auto it = ino_by_path_.find(path);
  Node* n = nullptr;
  if (it != ino_by_path_.end()) {
    n = &nodes_.at(it->second);
    if (n->is_dir != e.is_dir) {
      // The path changed kind in the bucket: give it a new inode so the kernel does not
      // mix the two.
      ino_by_path_.erase(it);
      n = nullptr;
    }
  }
  if (n == nullptr) {
    Node fresh_node;
    fresh_node.ino = next_ino_++;
    fresh_node.parent = parent;
    fresh_node.path = path;
    auto [nit, _] = nodes_.emplace(fresh_node.ino, std::move(fresh_node));
    ino_by_path_[path] = nit->first;
    n = &nit->second;
  }
  n->is_dir = e.is_dir;
  n->size = e.size;
  n->mtime_sec = e.mtime_sec;
  n->etag = e.etag;
  n->validated_at = seen_at;
  ++n->nlookup;
  return attr_of(*n, options_.dir_mtime_sec);
}

Result<NodeAttr> Metadata::lookup(uint64_t parent, std::string_view name) {
  if (!is_valid_name(name)) return Status(Errc::kNotFound, "invalid name");
  std::string path;
  std::string parent_path;
  DirListingPtr listing;
  {
    std::lock_guard lock(mu_);
    auto pit = nodes_.find(parent);
    if (pit == nodes_.end()) return Status(Errc::kNotFound, "unknown parent inode");
    if (!pit->second.is_dir) return Status(Errc::kInvalidArgument, "parent is not a directory");
    parent_path = pit->second.path;
    path = child_path(parent_path, name);
    auto lit = listings_.find(pit->second.path);
    if (lit != listings_.end() && fresh(lit->second.listing->listed_at)) {
      listing = lit->second.listing;
      ++listing_cache_hits_;
    }
  }
  if (listing) {
    const DirEntry* e = listing->find(name);
    if (e == nullptr) return Status(Errc::kNotFound, "no such file or directory: " + path);
    return upsert_node(parent, path, *e, listing->listed_at);
  }
  if (should_list(parent_path)) {
    // Several files of this directory were opened by name: one LIST now answers the rest.
    auto listed = fetch_listing(parent_path, kAutoListMaxPages);
    if (listed.is_ok()) {
      const DirEntry* e = (*listed)->find(name);
      if (e == nullptr) return Status(Errc::kNotFound, "no such file or directory: " + path);
      return upsert_node(parent, path, *e, (*listed)->listed_at);
    }
    std::lock_guard lock(mu_);
    probes_[parent_path].too_large_until = clock_.now() + options_.ttl;
  }
  const auto asked_at = clock_.now();
  WARMFS_ASSIGN_OR_RETURN(DirEntry e, probe(path, name));
  return upsert_node(parent, path, e, asked_at);
}

void Metadata::forget(uint64_t ino, uint64_t n) {
  if (ino == kRootIno) return;
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  Node& node = it->second;
  node.nlookup = n >= node.nlookup ? 0 : node.nlookup - n;
  if (node.nlookup > 0) return;
  auto pit = ino_by_path_.find(node.path);
  if (pit != ino_by_path_.end() && pit->second == ino) ino_by_path_.erase(pit);
  nodes_.erase(it);
}

Result<NodeAttr> Metadata::getattr(uint64_t ino) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return Status(Errc::kNotFound, "unknown inode");
  return attr_of(it->second, options_.dir_mtime_sec);
}

Result<NodeAttr> Metadata::revalidate_file(uint64_t ino) {
  std::string path;
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(ino);
    if (it == nodes_.end()) return Status(Errc::kNotFound, "unknown inode");
    if (it->second.is_dir || fresh(it->second.validated_at)) {
      return attr_of(it->second, options_.dir_mtime_sec);
    }
    path = it->second.path;
  }
  WARMFS_ASSIGN_OR_RETURN(ObjectInfo info, store_.head(file_key(path)));
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return Status(Errc::kNotFound, "inode forgotten during open");
  Node& n = it->second;
  if (n.etag != info.etag) {
    log::info("{} changed in the bucket (ETag {} -> {})", file_key(path), n.etag, info.etag);
  }
  n.size = info.size;
  n.etag = info.etag;
  n.mtime_sec = info.mtime_sec;
  n.validated_at = clock_.now();
  return attr_of(n, options_.dir_mtime_sec);
}

Result<DirListingPtr> Metadata::list(uint64_t dir_ino) {
  std::string path;
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(dir_ino);
    if (it == nodes_.end()) return Status(Errc::kNotFound, "unknown inode");
    if (!it->second.is_dir) return Status(Errc::kInvalidArgument, "not a directory");
    path = it->second.path;
    auto lit = listings_.find(path);
    if (lit != listings_.end() && fresh(lit->second.listing->listed_at)) {
      ++listing_cache_hits_;
      return lit->second.listing;
    }
  }
  return fetch_listing(path);
}

uint64_t Metadata::parent_of(uint64_t ino) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? kRootIno : it->second.parent;
}

Result<std::string> Metadata::key_of(uint64_t ino) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return Status(Errc::kNotFound, "unknown inode");
  return it->second.is_dir ? dir_key(it->second.path) : file_key(it->second.path);
}

MetaCounters Metadata::counters() const {
  std::lock_guard lock(mu_);
  return MetaCounters{nodes_.size(), listing_cache_hits_, skipped_keys_};
}

}  // namespace warmfs

#include "meta/metadata.h"

#include <algorithm>

#include "common/log.h"
#include "common/reserved_names.h"
#include "meta/dir_stream.h"
#include "meta/listing_index.h"
#include "meta/listing_pages.h"

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
  Node& root = nodes_.create_with_ino(kRootIno);
  root.parent = nodes_.id(root);  // the one node that is its own parent (not its own child)
  root.is_dir = true;
  root.set_lookups(1);
  root.validated_at = clock_.now();
  nodes_.index(root);
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

NodeAttr Metadata::attr_of(const Node& n) const {
  NodeAttr a;
  a.ino = n.ino;
  a.is_dir = n.is_dir;
  a.size = n.is_dir ? 0 : n.size;
  a.mtime_sec = n.is_dir ? options_.dir_mtime_sec : n.mtime_sec;
  a.etag = n.etag.str();
  if (n.ino != kRootIno) {
    a.unlinked = !indexed_locked(n);
  }
  // (Building the path costs a walk up the tree: not when nothing is known, as with
  // attributes off.)
  if (!known_.empty()) {
    if (auto it = known_.find(known_key(path_locked(n), n.is_dir)); it != known_.end()) {
      a.attrs = it->second.attrs_or_none();
    }
  }
  if (n.is_dir && n.mtime_sec != 0) {
    // Entries changed through this mount since: that is its mtime and ctime.
    a.mtime_sec = n.mtime_sec;
    if (a.attrs.mtime && a.attrs.mtime->sec < n.mtime_sec) a.attrs.mtime.reset();
    if (a.attrs.ctime && a.attrs.ctime->sec < n.mtime_sec) a.attrs.ctime.reset();
  }
  return a;
}

void Metadata::touch_dir_locked(std::string_view dir_path) {
  Node* n = node_at_locked(dir_path);
  if (n == nullptr) return;
  n->mtime_sec = std::chrono::system_clock::to_time_t(clock_.wall_now());
}

Result<DirListingPtr> Metadata::fetch_listing(const std::string& dir_path, int max_pages) {
  auto listing = std::make_shared<DirListing>();
  listing->listed_at = clock_.now();
  const auto listed_at_wall = clock_.wall_now();
  uint64_t edits = 0;
  if (index_) {
    std::lock_guard lock(mu_);
    edits = index_edits_;
  }
  ListingPages pages(dir_key(dir_path), dir_path.empty(), options_.dir_mtime_sec);
  for (int n = 0; !pages.complete(); ++n) {
    if (max_pages > 0 && n == max_pages) {
      return Status(Errc::kNotSupported,
                    "directory has more than " + std::to_string(max_pages) + " pages");
    }
    WARMFS_ASSIGN_OR_RETURN(ListPage page, store_.list(pages.next_request()));
    WARMFS_RETURN_IF_ERROR(pages.add(std::move(page)));
  }
  const uint64_t skipped = pages.skipped();
  listing->entries = std::move(pages).take_sorted();
  return install_listed(dir_path, listing, edits, listed_at_wall, skipped, nullptr);
}

DirListingPtr Metadata::install_listed(const std::string& dir_path,
                                       const std::shared_ptr<DirListing>& listing, uint64_t edits,
                                       std::chrono::system_clock::time_point listed_at_wall,
                                       uint64_t skipped, const DirStream* stream) {
  listing->entries.shrink_to_fit();  // kept for the TTL: no spare capacity
  std::string encoded;
  if (index_) {
    encoded = encode_listing(
        listing->entries,
        std::chrono::duration_cast<std::chrono::milliseconds>(listed_at_wall.time_since_epoch())
            .count());
  }
  std::lock_guard lock(mu_);
  skipped_keys_ += skipped;
  // A stream this mount's changes outdated (drop_stream_locked) is not cached.
  if (stream != nullptr && stream->outdated_) return listing;
  if (index_) index_listing_locked(dir_path, edits, encoded);
  install_listing_locked(dir_path, listing);
  // Lookups go to the cached listing from now on.
  if (stream != nullptr) drop_stream_locked(dir_path);
  return listing;
}

void Metadata::drop_stream_locked(const std::string& dir_path) {
  auto it = streams_.find(dir_path);
  if (it == streams_.end()) return;
  if (auto held = it->second.lock()) held->outdated_ = true;
  streams_.erase(it);
}

Result<DirEntry> Metadata::probe(const std::string& path, std::string_view name) {
  // One HEAD answers for a file. Only when there is no such object does a one-key LIST ask
  // whether the path is a directory. (A key that is both a file and a prefix shows as a
  // directory in listings; a lookup outside a cached listing finds the file.)
  auto head = store_.head(file_key(path));
  if (head.is_ok()) {
    std::lock_guard lock(mu_);
    record_head_locked(path, *head);
    return DirEntry{std::string(name), false, head->size, head->mtime_sec, head->etag};
  }
  if (head.code() != Errc::kNotFound) return std::move(head).take_status();
  ListRequest req{dir_key(path), "/", "", 1};
  WARMFS_ASSIGN_OR_RETURN(ListPage page, store_.list(req));
  if (page.objects.empty() && page.common_prefixes.empty()) {
    return Status(Errc::kNotFound, "no such file or directory: " + path);
  }
  return DirEntry{std::string(name), true, 0, options_.dir_mtime_sec, ""};
}

int Metadata::pages_to_list(const std::string& dir_path) {
  std::lock_guard lock(mu_);
  if (probes_.size() > 4096) probes_.clear();  // a bound, not a policy: counts restart
  DirProbes& p = probes_[dir_path];
  const auto now = clock_.now();
  if (now < p.no_list_until) return 0;
  if (now - p.window_start >= options_.ttl) {
    p.window_start = now;
    p.count = 0;
  }
  ++p.count;
  if (p.count == 1) return 1;
  return p.count > kAutoListAfterProbes ? kAutoListMaxPages : 0;
}

Metadata::Node& Metadata::new_node_locked(uint64_t parent, const std::string& path) {
  const uint64_t parent_id = parent_id_locked(parent);
  Node& n = nodes_.create();
  n.name = base_name(path);
  nodes_.set_parent(n, parent_id);
  nodes_.index(n);
  return n;
}

std::string Metadata::path_locked(const Node& n) const {
  // The names from n up to the root, then joined from the root down.
  std::string_view names[64];
  std::vector<std::string_view> more;  // past 64 levels
  size_t count = 0;
  size_t bytes = 0;
  auto push = [&](std::string_view name) {
    if (count < std::size(names)) {
      names[count] = name;
    } else {
      more.push_back(name);
    }
    ++count;
    bytes += name.size() + 1;
  };
  for (const Node* p = &n; p->ino != kRootIno;) {
    push(p->name);
    const Node* up = nodes_.find_id(p->parent);
    if (up == nullptr) {
      // A parent stays while a node below it does (NodeTable::release), so this is a bug;
      // a path below the reserved name matches no object rather than another one's.
      log::error("metadata: node {} lost its parent", n.ino);
      push(kReservedDirName);
      break;
    }
    p = up;
  }
  std::string path;
  path.reserve(bytes);
  for (size_t i = count; i-- > 0;) {
    path.append(i < std::size(names) ? names[i] : more[i - std::size(names)]);
    if (i > 0) path.push_back('/');
  }
  return path;
}

uint64_t Metadata::parent_id_locked(uint64_t parent) const {
  const Node* p = nodes_.find(parent);
  return p == nullptr ? parent : nodes_.id(*p);
}

uint64_t Metadata::parent_ino_locked(const Node& n) const {
  const Node* p = nodes_.find_id(n.parent);
  return p == nullptr ? kRootIno : p->ino;
}

Metadata::Node* Metadata::node_at_locked(std::string_view path) const {
  Node* n = const_cast<Node*>(nodes_.find(kRootIno));
  while (n != nullptr && !path.empty()) {
    const size_t slash = path.find('/');
    n = nodes_.at(nodes_.id(*n), path.substr(0, slash));
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  return n;
}

bool Metadata::indexed_locked(const Node& n) const { return nodes_.indexed(n); }

void Metadata::index_node_locked(Node& n) { nodes_.index(n); }

void Metadata::unindex_node_locked(const Node& n) { nodes_.unindex(n); }

NodeAttr Metadata::upsert_node(uint64_t parent, const std::string& path, const DirEntry& e,
                               std::chrono::steady_clock::time_point seen_at) {
  std::lock_guard lock(mu_);
  Node* n = node_at_locked(path);
  if (n != nullptr && n->is_dir != e.is_dir) {
    // The path changed kind in the bucket: give it a new inode so the kernel does not mix
    // the two.
    unindex_node_locked(*n);
    n = nullptr;
  }
  if (n == nullptr) n = &new_node_locked(parent, path);
  n->is_dir = e.is_dir;
  n->size = e.size;
  if (!e.is_dir) n->mtime_sec = e.mtime_sec;  // a directory's: when this mount changed it
  n->etag = e.etag;
  n->validated_at = seen_at;
  n->add_lookup();
  return attr_of(*n);
}

Result<NodeAttr> Metadata::lookup(uint64_t parent, std::string_view name) {
  if (name.size() > kMaxNameBytes) return Status(Errc::kNameTooLong, "name over 255 bytes");
  if (!is_valid_name(name)) return Status(Errc::kNotFound, "invalid name");
  if (parent == kRootIno && name == kReservedDirName) return Status(Errc::kNotFound, "reserved");
  std::string path;
  std::string parent_path;
  DirListingPtr listing;
  std::shared_ptr<DirStream> stream;  // a DirStream reading parent now, if any
  bool unlisted = false;              // no listing of parent, fresh or not
  {
    std::lock_guard lock(mu_);
    Node* parent_node = nodes_.find(parent);
    if (parent_node == nullptr) return Status(Errc::kNotFound, "unknown parent inode");
    if (!parent_node->is_dir) return Status(Errc::kInvalidArgument, "parent is not a directory");
    parent_path = path_locked(*parent_node);
    path = child_path(parent_path, name);
    if (Node* n = node_at_locked(path); n != nullptr && n->local) {
      n->add_lookup();
      return attr_of(*n);
    }
    auto lit = listings_.find(parent_path);
    if (lit != listings_.end() && fresh(lit->second.listing->listed_at)) {
      listing = lit->second.listing;
      ++listing_cache_hits_;
    }
    unlisted = lit == listings_.end();
    if (!listing && !streams_.empty()) {
      if (auto sit = streams_.find(parent_path); sit != streams_.end()) {
        stream = sit->second.lock();
      }
    }
  }
  if (unlisted && index_) listing = listing_from_index(parent_path);
  if (listing) {
    const DirEntry* e = listing->find(name);
    if (e == nullptr) return Status(Errc::kNotFound, "no such file or directory: " + path);
    DirEntry entry = *e;
    ensure_known(path, entry);
    return upsert_node(parent, path, entry, listing->said_at.value_or(listing->listed_at));
  }
  // A directory read page by page for a readdir now: the pages read may answer.
  if (StreamAnswer a = stream_answer(stream.get(), name); a.known) {
    if (!a.entry) return Status(Errc::kNotFound, "no such file or directory: " + path);
    ensure_known(path, *a.entry);
    return upsert_node(parent, path, *a.entry, a.listed_at);
  }
  if (const int pages = pages_to_list(parent_path); pages > 0) {
    // The first lookup in a directory lists it if one page holds it; after several lookups
    // by name, a listing of up to kAutoListMaxPages answers the rest.
    auto listed = fetch_listing(parent_path, pages);
    if (listed.is_ok()) {
      const DirEntry* e = (*listed)->find(name);
      if (e == nullptr) return Status(Errc::kNotFound, "no such file or directory: " + path);
      DirEntry entry = *e;
      ensure_known(path, entry);
      return upsert_node(parent, path, entry, (*listed)->listed_at);
    }
    // More than one page: probe now, and list it whole if several lookups follow. Too large
    // for that, or not listable at all (a failure of any kind): probe until the TTL is over.
    if (listed.code() != Errc::kNotSupported || pages == kAutoListMaxPages) {
      std::lock_guard lock(mu_);
      probes_[parent_path].no_list_until = clock_.now() + options_.ttl;
    }
  }
  const auto asked_at = clock_.now();
  WARMFS_ASSIGN_OR_RETURN(DirEntry e, probe(path, name));
  ensure_known(path, e);  // a file's HEAD has recorded them already
  return upsert_node(parent, path, e, asked_at);
}

std::string_view Metadata::base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view Metadata::dir_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

Result<std::string> Metadata::child_path_locked(uint64_t parent, std::string_view name) const {
  if (name.size() > kMaxNameBytes) return Status(Errc::kNameTooLong, "name over 255 bytes");
  if (!is_valid_name(name)) return Status(Errc::kInvalidArgument, "invalid name");
  const Node* parent_node = nodes_.find(parent);
  if (parent_node == nullptr) return Status(Errc::kNotFound, "unknown parent inode");
  if (!parent_node->is_dir) return Status(Errc::kNotDirectory, "parent is not a directory");
  return child_path(path_locked(*parent_node), name);
}

void Metadata::edit_listing_locked(const std::string& dir_path, std::string_view name,
                                   const DirEntry* entry) {
  unindex_locked(dir_path);
  drop_stream_locked(dir_path);
  auto lit = listings_.find(dir_path);
  if (lit == listings_.end()) return;
  const DirListing& old = *lit->second.listing;
  const auto& v = old.entries;
  auto it = std::lower_bound(v.begin(), v.end(), name,
                             [](const DirEntry& a, std::string_view b) { return a.name < b; });
  const bool found = it != v.end() && it->name == name;
  // Built at its size (a copy and an insert would double the vector's capacity).
  auto edited = std::make_shared<DirListing>();
  edited->listed_at = old.listed_at;
  edited->said_at = old.said_at;
  auto& out = edited->entries;
  out.reserve(v.size() - (found ? 1 : 0) + (entry != nullptr ? 1 : 0));
  out.insert(out.end(), v.begin(), it);
  if (entry != nullptr) out.push_back(*entry);
  out.insert(out.end(), found ? it + 1 : it, v.end());
  lit->second.listing = std::move(edited);
}

Result<NodeAttr> Metadata::peek(uint64_t parent, std::string_view name) {
  WARMFS_ASSIGN_OR_RETURN(NodeAttr a, lookup(parent, name));
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(a.ino);
  // Drop the reference lookup() counted, but keep the node: the caller is about to use it.
  if (node != nullptr) node->forget_lookups(1);
  return a;
}

Result<std::string> Metadata::child_key(uint64_t parent, std::string_view name, bool is_dir) {
  std::lock_guard lock(mu_);
  WARMFS_ASSIGN_OR_RETURN(std::string path, child_path_locked(parent, name));
  return is_dir ? dir_key(path) : file_key(path);
}

Result<NodeAttr> Metadata::add_local_file(uint64_t parent, std::string_view name, int64_t mtime_sec,
                                          const ObjectAttrs& attrs) {
  std::lock_guard lock(mu_);
  WARMFS_ASSIGN_OR_RETURN(std::string path, child_path_locked(parent, name));
  bound_known_locked();
  known_[known_key(path, false)] = Known{"", 0, shared_attrs_locked(attrs), nullptr, nullptr};
  Node* n = node_at_locked(path);
  if (n != nullptr && n->is_dir) n = nullptr;
  if (n == nullptr) n = &new_node_locked(parent, path);
  n->is_dir = false;
  n->size = 0;
  n->etag = Etag();
  n->mtime_sec = mtime_sec;
  n->validated_at = clock_.now();
  n->local = true;
  n->add_lookup();
  local_inos_[n->ino] = true;
  touch_dir_locked(dir_name(path));
  DirEntry e{std::string(name), false, 0, mtime_sec, ""};
  edit_listing_locked(std::string(dir_name(path)), name, &e);
  return attr_of(*n);
}

Result<NodeAttr> Metadata::add_dir(uint64_t parent, std::string_view name, const ObjectAttrs& attrs,
                                   const ObjectHeaders& headers) {
  std::string path;
  {
    std::lock_guard lock(mu_);
    WARMFS_ASSIGN_OR_RETURN(path, child_path_locked(parent, name));
    bound_known_locked();
    known_[known_key(path, true)] =
        Known{"", 0, shared_attrs_locked(attrs), make_stored(headers), nullptr};
    DirEntry e{std::string(name), true, 0, options_.dir_mtime_sec, ""};
    edit_listing_locked(std::string(dir_name(path)), name, &e);
    touch_dir_locked(dir_name(path));
    // A new directory is empty: no need to list it.
    unindex_locked(path, true);
    auto empty = std::make_shared<DirListing>();
    empty->listed_at = clock_.now();
    listings_[path] = CachedListing{empty};
  }
  DirEntry e{std::string(name), true, 0, options_.dir_mtime_sec, ""};
  return upsert_node(parent, path, e, clock_.now());
}

void Metadata::file_changed(uint64_t ino, uint64_t size, const std::string& etag,
                            int64_t mtime_sec) {
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(ino);
  if (node == nullptr) return;
  Node& n = *node;
  n.size = size;
  n.etag = etag;
  n.mtime_sec = mtime_sec;
  n.validated_at = clock_.now();
  n.local = false;
  local_inos_.erase(ino);
  if (!indexed_locked(n)) return;  // unlinked meanwhile
  const std::string path = path_locked(n);
  // The upload carried the attributes (headers_for()): they belong to the new version.
  Known& k = known_[known_key(path, false)];
  k.etag = etag;
  k.last_modified = mtime_sec;
  DirEntry e{n.name, false, size, mtime_sec, etag};
  edit_listing_locked(std::string(dir_name(path)), e.name, &e);
}

void Metadata::local_abandoned(uint64_t ino) {
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(ino);
  if (node == nullptr || !node->local) return;
  Node& n = *node;
  n.local = false;
  local_inos_.erase(ino);
  if (!indexed_locked(n)) return;
  unindex_node_locked(n);
  edit_listing_locked(std::string(dir_name(path_locked(n))), n.name, nullptr);
}

void Metadata::removed(uint64_t parent, std::string_view name) {
  std::lock_guard lock(mu_);
  auto path = child_path_locked(parent, name);
  if (!path.is_ok()) return;
  if (Node* n = node_at_locked(*path); n != nullptr) {
    local_inos_.erase(n->ino);
    n->local = false;
    unindex_node_locked(*n);  // the node itself lives until the kernel forgets it
  }
  known_.erase(known_key(*path, false));
  known_.erase(known_key(*path, true));
  touch_dir_locked(dir_name(*path));
  listings_.erase(*path);
  unindex_locked(*path, true);
  edit_listing_locked(std::string(dir_name(*path)), name, nullptr);
}

void Metadata::forget_listing(uint64_t dir_ino) {
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(dir_ino);
  if (node == nullptr || !node->is_dir) return;
  const std::string path = path_locked(*node);
  listings_.erase(path);
  unindex_locked(path);
  drop_stream_locked(path);
}

void Metadata::renamed(uint64_t parent, std::string_view name, uint64_t new_parent,
                       std::string_view new_name) {
  std::lock_guard lock(mu_);
  auto from = child_path_locked(parent, name);
  auto to = child_path_locked(new_parent, new_name);
  if (!from.is_ok() || !to.is_ok()) return;
  if (Node* dst = node_at_locked(*to); dst != nullptr) {
    local_inos_.erase(dst->ino);
    unindex_node_locked(*dst);
  }
  Node* src = node_at_locked(*from);
  if (src == nullptr) return;
  Node& n = *src;
  unindex_node_locked(n);
  n.name = new_name;
  nodes_.set_parent(n, parent_id_locked(new_parent));
  index_node_locked(n);
  // The attributes go with the object (a copy keeps its metadata); below a directory too.
  known_.erase(known_key(*to, false));
  known_.erase(known_key(*to, true));
  if (auto kit = known_.find(known_key(*from, n.is_dir)); kit != known_.end()) {
    Known moved = std::move(kit->second);
    known_.erase(kit);
    known_[known_key(*to, n.is_dir)] = std::move(moved);
  }
  if (n.is_dir) {
    const std::string old_prefix = *from + "/";
    std::vector<std::pair<std::string, Known>> below;
    for (auto kit = known_.begin(); kit != known_.end();) {
      if (kit->first.rfind(old_prefix, 0) == 0) {
        below.emplace_back(*to + "/" + kit->first.substr(old_prefix.size()),
                           std::move(kit->second));
        kit = known_.erase(kit);
      } else {
        ++kit;
      }
    }
    for (auto& [k, v] : below) known_[k] = std::move(v);
  }
  DirEntry e{std::string(new_name), n.is_dir, n.is_dir ? 0 : n.size, n.mtime_sec, n.etag};
  if (n.is_dir) {
    // Every node below moves with it, as they name it and not its path (unlinked ones too,
    // still held by the kernel); listings below are dropped (listed again when asked).
    const std::string old_prefix = *from + "/";
    unindex_locked(*from, true);
    unindex_locked(*to, true);
    for (auto lit = listings_.begin(); lit != listings_.end();) {
      const bool below = lit->first == *from || lit->first.rfind(old_prefix, 0) == 0 ||
                         lit->first == *to || lit->first.rfind(*to + "/", 0) == 0;
      lit = below ? listings_.erase(lit) : std::next(lit);
    }
  }
  edit_listing_locked(std::string(dir_name(*from)), name, nullptr);
  edit_listing_locked(std::string(dir_name(*to)), new_name, &e);
  touch_dir_locked(dir_name(*from));
  touch_dir_locked(dir_name(*to));
}

bool Metadata::following_entries(uint64_t ino, size_t count, uint64_t* parent, size_t* index,
                                 std::vector<DirEntry>* out) const {
  std::lock_guard lock(mu_);
  const Node* node = nodes_.find(ino);
  if (node == nullptr || node->is_dir) return false;
  const std::string path = path_locked(*node);
  auto lit = listings_.find(std::string(dir_name(path)));
  if (lit == listings_.end() || !fresh(lit->second.listing->listed_at)) return false;
  if (lit->second.listing->said_at) return false;  // older than the TTL: not worth warming
  const auto& entries = lit->second.listing->entries;
  const std::string_view name = node->name;
  auto e = std::lower_bound(entries.begin(), entries.end(), name,
                            [](const DirEntry& a, std::string_view b) { return a.name < b; });
  if (e == entries.end() || e->name != name) return false;
  *parent = parent_ino_locked(*node);
  *index = static_cast<size_t>(e - entries.begin());
  out->assign(e + 1,
              e + 1 + static_cast<ptrdiff_t>(std::min<size_t>(count, entries.end() - e - 1)));
  return true;
}

bool Metadata::has_local_children(uint64_t dir_ino) const {
  std::lock_guard lock(mu_);
  const Node* node = nodes_.find(dir_ino);
  return node != nullptr && has_local_children_locked(path_locked(*node));
}

bool Metadata::has_local_children_locked(std::string_view dir_path) const {
  for (const auto& [ino, _] : local_inos_) {
    const Node* n = nodes_.find(ino);
    if (n != nullptr && dir_name(path_locked(*n)) == dir_path) return true;
  }
  return false;
}

Status Metadata::adopt_ino(uint64_t from, uint64_t to, uint64_t nlookup) {
  std::lock_guard lock(mu_);
  Node* n = nodes_.find(from);
  if (n == nullptr) return Status(Errc::kNotFound, "unknown inode");
  if (from != to) {
    if (!nodes_.renumber(*n, to)) return Status(Errc::kExists, "inode number in use");
    if (local_inos_.erase(from) != 0) local_inos_[to] = true;
    // Its children name it by its id(), which stays: none of them changes.
  }
  n->set_lookups(nlookup);
  return Status::ok();
}

void Metadata::forget(uint64_t ino, uint64_t n) {
  if (ino == kRootIno) return;
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(ino);
  if (node == nullptr) return;
  if (!node->forget_lookups(n)) return;
  local_inos_.erase(ino);
  nodes_.release(*node);  // and out of the name index
}

Result<NodeAttr> Metadata::getattr(uint64_t ino) {
  if (ino == kRootIno) ensure_root_known();  // one HEAD per mount, at the first
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(ino);
  if (node == nullptr) return Status(Errc::kNotFound, "unknown inode");
  return attr_of(*node);
}

Result<NodeAttr> Metadata::revalidate_file(uint64_t ino) {
  std::string path;
  {
    std::lock_guard lock(mu_);
    Node* node = nodes_.find(ino);
    if (node == nullptr) return Status(Errc::kNotFound, "unknown inode");
    if (node->is_dir || node->local || fresh(node->validated_at)) {
      return attr_of(*node);
    }
    path = path_locked(*node);
  }
  WARMFS_ASSIGN_OR_RETURN(ObjectInfo info, store_.head(file_key(path)));
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(ino);
  if (node == nullptr) return Status(Errc::kNotFound, "inode forgotten during open");
  if (path_locked(*node) == path) record_head_locked(path, info);
  Node& n = *node;
  if (n.etag != info.etag) {
    log::info("{} changed in the bucket (ETag {} -> {})", file_key(path), n.etag.str(), info.etag);
  }
  n.size = info.size;
  n.etag = info.etag;
  n.mtime_sec = info.mtime_sec;
  n.validated_at = clock_.now();
  return attr_of(n);
}

Result<std::string> Metadata::cached_listing_locked(uint64_t dir_ino, DirListingPtr* listing,
                                                    bool* unlisted) {
  Node* node = nodes_.find(dir_ino);
  if (node == nullptr) return Status(Errc::kNotFound, "unknown inode");
  if (!node->is_dir) return Status(Errc::kInvalidArgument, "not a directory");
  std::string path = path_locked(*node);
  auto lit = listings_.find(path);
  if (lit != listings_.end() && fresh(lit->second.listing->listed_at)) {
    ++listing_cache_hits_;
    *listing = lit->second.listing;
  }
  *unlisted = lit == listings_.end();
  return path;
}

Result<DirListingPtr> Metadata::list(uint64_t dir_ino) {
  std::string path;
  DirListingPtr listing;
  bool unlisted = false;
  {
    std::lock_guard lock(mu_);
    WARMFS_ASSIGN_OR_RETURN(path, cached_listing_locked(dir_ino, &listing, &unlisted));
  }
  if (unlisted && index_) listing = listing_from_index(path);
  if (!listing) {
    WARMFS_ASSIGN_OR_RETURN(listing, fetch_listing(path));
  }
  // A listing is usually read whole with attributes (readdirplus): one round of HEADs, in
  // parallel, instead of one per entry as the kernel looks them up.
  fetch_attrs(path, *listing);
  return listing;
}

uint64_t Metadata::parent_of(uint64_t ino) const {
  std::lock_guard lock(mu_);
  const Node* node = nodes_.find(ino);
  return node == nullptr ? kRootIno : parent_ino_locked(*node);
}

Result<std::string> Metadata::key_of(uint64_t ino) {
  std::lock_guard lock(mu_);
  Node* node = nodes_.find(ino);
  if (node == nullptr) return Status(Errc::kNotFound, "unknown inode");
  const std::string path = path_locked(*node);
  return node->is_dir ? dir_key(path) : file_key(path);
}

MetaCounters Metadata::counters() const {
  std::lock_guard lock(mu_);
  return MetaCounters{nodes_.size(),       listing_cache_hits_,      skipped_keys_,
                      listing_index_hits_, listing_index_refreshes_, cache_sweeps_};
}

}  // namespace warmfs

// Metadata: the namespace a bucket presents as a tree of directories and files.
//
// Keys map to paths below the mount's prefix; "/"-separated prefixes are directories, both
// implicit ones and "dir/" marker objects. Every path seen gets an inode number that is
// never reused during the mount; the kernel's lookup counts are tracked and a node is
// dropped when the kernel forgets it.
//
// Directory listings come from ListObjectsV2 with a delimiter, paged, and are cached for
// the metadata TTL; lookups inside a freshly listed directory are answered from the listing
// (so `ls -lR` costs LIST requests only, never a HEAD per file). A lookup that no listing
// answers (see below) probes: a HEAD, then, if there is no such object, a one-key LIST for a
// directory. Keys that cannot be names (empty segments, ".", "..", names over 255 bytes) are
// skipped with a log line. Where a key is both a file and a directory prefix, listings show
// the directory; a probe finds the file. The root's reserved folder (common/reserved_names.h:
// stored snapshots) is not shown.
//
// The first lookup by name in a directory with no cached listing lists it, if one page (1,000
// entries) holds it: then that lookup and the ones after it cost one LIST in all (`ls -lR`
// of a tree costs LIST requests only, from its root down). In a larger directory, files
// opened by name (a loader with an index of paths) cost a HEAD each, until several come
// from it within the TTL: then it is listed once (if it has at most 10,000 entries) and the
// rest are answered from the listing.
//
// Attributes (object_attrs.h): mode, owner and times an object carries in its user metadata
// (x-amz-meta-mode, -uid, -gid, -mtime, -ctime, as s3fs-fuse and rclone write them). A listing
// does not carry user metadata, so with MetaOptions::object_attrs a file's first lookup costs
// a HEAD (a directory's, a HEAD of its "dir/" marker); list() HEADs the entries of a directory
// it lists for the first time in parallel (kAttrHeadThreads at a time), so `ls -l` waits for
// one round of them, not one per file. What a HEAD said is kept by path, for the version
// (ETag and Last-Modified) it was said of, beyond the TTL and the kernel's forgets: listing
// again later costs LIST requests only. Changes this mount makes are kept the same way.
//
// With a listing index (set_listing_index(): --cache-dir, meta/listing_index.h), every listing
// from the bucket is kept there too, and a directory this mount has no listing of is read
// from it before the bucket is asked: a listing younger than the TTL is used as if listed
// then; an older one is used at once (lookups and readdir answered from it, for the TTL) and
// listed again in the background (stale-while-revalidate), so the mount reflects the bucket
// within the TTL. Files from an older indexed listing are not trusted for open() (a HEAD
// revalidates them, as after the TTL). What this mount changes in a directory drops its
// entry (the next mount lists it again).
//
// Thread safe: one mutex guards the inode table, the listing cache and the attributes;
// object-store requests are made without holding it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/thread_pool.h"
#include "meta/etag.h"
#include "meta/node_table.h"
#include "meta/object_attrs.h"
#include "objstore/object_store.h"
#include "warmfs/result.h"

namespace warmfs {

inline constexpr uint64_t kRootIno = 1;
inline constexpr size_t kMaxNameBytes = 255;

struct MetaOptions {
  // Key prefix the mount shows as its root: "" or "sub/dir/" (always ends in '/').
  std::string prefix;
  // How long listings and attributes are trusted before asking the bucket again.
  std::chrono::milliseconds ttl{60'000};
  // mtime reported for directories (they have none in S3): the mount time.
  int64_t dir_mtime_sec = 0;
  // Read the attributes objects carry (a HEAD per object on its first lookup). Off: listings
  // answer lookups alone and objects show the mount's defaults and Last-Modified, unless this
  // mount set their attributes.
  bool object_attrs = true;
  // Bounds of the caches of listings and of what objects' HEADs said: past one, entries no
  // longer needed (stale listings, attributes of paths without a node) are dropped. What is
  // still needed stays, and the next pass comes when the cache has doubled from what stayed,
  // so passes cost O(1) per entry added however many are needed.
  size_t max_listings = 4096;
  size_t max_known = size_t{1} << 18;
};

// Attributes of one node, as the filesystem reports them.
struct NodeAttr {
  uint64_t ino = 0;
  bool is_dir = false;
  uint64_t size = 0;
  int64_t mtime_sec = 0;  // Last-Modified (files), or when written here
  std::string etag;       // files only
  ObjectAttrs attrs;      // what the object's metadata (or this mount) says; unset: defaults
  bool unlinked = false;  // removed (or replaced) while the kernel still holds it
};

// A listing holds one per entry, so its fields are in an order that spends no padding; the
// constructor takes them in the order they are usually written.
struct DirEntry {
  DirEntry() = default;
  DirEntry(Name name_, bool is_dir_ = false, uint64_t size_ = 0, int64_t mtime_sec_ = 0,
           Etag etag_ = {})
      : name(std::move(name_)),
        size(size_),
        mtime_sec(mtime_sec_),
        etag(std::move(etag_)),
        is_dir(is_dir_) {}

  Name name;
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  Etag etag;  // files only
  bool is_dir = false;
};

// One directory's entries, sorted by name, as listed at one moment.
struct DirListing {
  std::vector<DirEntry> entries;
  std::chrono::steady_clock::time_point listed_at;
  // When the bucket said so, if before listed_at (a listing from the index, older than the
  // TTL, served while it is listed again): what nodes made from it are validated at.
  std::optional<std::chrono::steady_clock::time_point> said_at;
  const DirEntry* find(std::string_view name) const;
};
using DirListingPtr = std::shared_ptr<const DirListing>;

struct MetaCounters {
  uint64_t nodes = 0;
  uint64_t listing_cache_hits = 0;
  uint64_t skipped_keys = 0;
  uint64_t listing_index_hits = 0;       // directories read from the listing index
  uint64_t listing_index_refreshes = 0;  // of those, listed again in the background
  uint64_t cache_sweeps = 0;             // passes over the listings or attributes to bound them
};

// True if `name` can be a path component: not empty, ".", "..", no '/', at most 255 bytes.
bool is_valid_name(std::string_view name);

class ListingIndex;
class DirStream;
class OpenDir;
using OpenDirPtr = std::shared_ptr<const OpenDir>;

class Metadata {
 public:
  Metadata(ObjectStore& store, Clock& clock, MetaOptions options);
  ~Metadata();

  // Keeps listings in index too, and reads them from it (see above). Before any other call;
  // index outlives this.
  void set_listing_index(ListingIndex* index);

  // Finds `name` in directory `parent` and counts one kernel reference to it.
  // kNotFound when absent; kInvalidArgument for names that cannot exist.
  Result<NodeAttr> lookup(uint64_t parent, std::string_view name);
  // For a restarted daemon (fuse/handover.h): the node `from`, just looked up, takes the
  // number `to` the kernel still holds for its path, with the kernel's lookup count; numbers
  // handed out later are above it. kExists if `to` is another node's.
  Status adopt_ino(uint64_t from, uint64_t to, uint64_t nlookup);
  // Drops n kernel references; the node is forgotten at zero (the root never is).
  void forget(uint64_t ino, uint64_t n);
  // Attributes of a known node, as last seen (revalidated only when older than the TTL).
  Result<NodeAttr> getattr(uint64_t ino);
  // Attributes of a file for open(): revalidated with a HEAD when older than the TTL, so an
  // open after the TTL sees a replaced object. kNotFound if it has gone.
  Result<NodeAttr> revalidate_file(uint64_t ino);
  // The entries of a directory, from the cache when fresh.
  Result<DirListingPtr> list(uint64_t dir_ino);
  // The directory for readdir (dir_stream.h): the cached listing when fresh, else its first
  // page now and the rest as readdir reaches it.
  Result<OpenDirPtr> open_dir(uint64_t dir_ino);
  // Inode of a node's parent directory (the root is its own parent).
  uint64_t parent_of(uint64_t ino) const;
  // Full object key of a node.
  Result<std::string> key_of(uint64_t ino);

  // ---- Changes this mount makes (the write path) ----------------------------------------
  // Each is applied to the node table and to cached listings in place, once the bucket has
  // the change (or, for a file not uploaded yet, at once), so lookups and listings show it
  // without asking the bucket.

  // As lookup(), without counting a kernel reference (for the filesystem's own checks).
  Result<NodeAttr> peek(uint64_t parent, std::string_view name);
  // Key a child of parent would have: "prefix/a/b", or "prefix/a/b/" for a directory.
  Result<std::string> child_key(uint64_t parent, std::string_view name, bool is_dir);
  // A file created here, not in the bucket yet (its first upload is to come): lookups and
  // listings show it with size 0 until file_changed(). Counts a kernel reference.
  Result<NodeAttr> add_local_file(uint64_t parent, std::string_view name, int64_t mtime_sec,
                                  const ObjectAttrs& attrs = {});
  // A directory created here (its marker is in the bucket, with headers). Counts a kernel
  // reference.
  Result<NodeAttr> add_dir(uint64_t parent, std::string_view name, const ObjectAttrs& attrs = {},
                           const ObjectHeaders& headers = {});
  // An object put here whole (a symlink): info and headers as the bucket now has them.
  // Counts a kernel reference.
  Result<NodeAttr> add_object(uint64_t parent, std::string_view name, const ObjectInfo& info,
                              const ObjectHeaders& headers);

  // ---- Attributes (object_attrs.h) ---------------------------------------------------------
  // The attributes of a node for the next upload of it (a file being written): the change is
  // not in the bucket yet. Replaces what was set.
  void set_attrs(uint64_t ino, const ObjectAttrs& attrs);
  // The bucket now has the node's object with these headers (after a server-side copy that
  // replaced them, or a marker put): info gives its new ETag and Last-Modified.
  void attrs_stored(uint64_t ino, const ObjectInfo& info, const ObjectHeaders& headers);
  // The file's bytes changed here (a write, a truncate): its mtime and ctime are the change's
  // from now on, not any set earlier.
  void content_changed(uint64_t ino);
  // What the next write of the node's object carries: the Content-Type and user metadata it
  // has in the bucket (other tools' entries kept), with the attributes written over.
  ObjectHeaders headers_for(uint64_t ino);
  // The node's object as last seen (for a copy onto itself): key, size, ETag.
  Result<ObjectInfo> object_of(uint64_t ino);
  // A symlink's target, once read (empty optional: not read yet).
  std::optional<std::string> link_target(uint64_t ino);
  void set_link_target(uint64_t ino, std::string target);
  // The bucket now holds this version of the file (after an upload).
  void file_changed(uint64_t ino, uint64_t size, const std::string& etag, int64_t mtime_sec);
  // A file created here whose first upload was given up leaves the namespace (the bucket
  // never had it); its node stays for the kernel's references. No-op for other files.
  void local_abandoned(uint64_t ino);
  // The entry is gone from the bucket (unlink, rmdir).
  void removed(uint64_t parent, std::string_view name);
  // The bucket may have changed in the directory in ways this mount did not follow (a failed
  // rename's copies stayed): its cached listing goes, and the next lookup or readdir lists it.
  void forget_listing(uint64_t dir_ino);
  // The entry moved (rename): its node, and for a directory every node below, take the new
  // path; a node at the destination is replaced.
  void renamed(uint64_t parent, std::string_view name, uint64_t new_parent,
               std::string_view new_name);
  // For a file whose parent has a fresh cached listing: its index there, and up to `count`
  // entries after it. False when there is no fresh listing (or the file is not in it), or
  // the listing is an indexed one older than the TTL, served while it is listed again.
  bool following_entries(uint64_t ino, size_t count, uint64_t* parent, size_t* index,
                         std::vector<DirEntry>* out) const;
  // True if the directory holds files created here and not uploaded yet.
  bool has_local_children(uint64_t dir_ino) const;

  MetaCounters counters() const;
  const MetaOptions& options() const { return options_; }

 private:
  friend class DirStream;

  using Node = MetaNode;  // node_table.h
  struct CachedListing {
    DirListingPtr listing;
  };
  // Attributes of one path (a directory's as "path/"), for the version they were read of.
  // An object's headers and the attributes they say (attrs_from_metadata), in one allocation;
  // the headers without the attributes' own names (kAttrMetadataNames), kept only parsed.
  struct StoredHeaders {
    ObjectHeaders headers;
    ObjectAttrs attrs;
  };
  static std::shared_ptr<const StoredHeaders> make_stored(const ObjectHeaders& headers);
  // The attributes stored headers say, pointing into them; null when they say none.
  static std::shared_ptr<const ObjectAttrs> attrs_in(
      const std::shared_ptr<const StoredHeaders>& stored);
  struct Known {
    Etag etag;                  // files: the version (with last_modified) they belong to
    int64_t last_modified = 0;  // files: Last-Modified of that version
    // What the object's metadata (or this mount) sets; null when nothing is, as for most
    // objects of a dataset. Read from the headers: it points into `stored` (no copy of its
    // own); set here: equal ones in a row share one copy (shared_attrs_locked()).
    std::shared_ptr<const ObjectAttrs> attrs;
    // Headers as the bucket has them (null: none known, or no marker for a directory).
    std::shared_ptr<const StoredHeaders> stored;
    // Symlinks, once read (a pointer: one per path known, and most are not symlinks).
    std::unique_ptr<const std::string> link_target;
    const ObjectAttrs& attrs_or_none() const;
  };
  static constexpr unsigned kAttrHeadThreads = 16;  // HEADs at once when listing
  struct DirProbes {
    std::chrono::steady_clock::time_point window_start{};
    uint32_t count = 0;
    // A directory too large to list on the side (over kAutoListMaxPages), or whose listing
    // failed, is not listed for a lookup again until then.
    std::chrono::steady_clock::time_point no_list_until{};
  };
  // After this many lookups by name in one directory within the TTL, the next one lists it.
  static constexpr uint32_t kAutoListAfterProbes = 4;
  // ... unless it has more than this many pages (10,000 entries): then HEADs stay cheaper.
  static constexpr int kAutoListMaxPages = 10;

  // Path of a child: "a" + "b" -> "a/b".
  static std::string child_path(std::string_view parent, std::string_view name);
  std::string file_key(std::string_view path) const { return options_.prefix + std::string(path); }
  std::string dir_key(std::string_view path) const;
  bool fresh(std::chrono::steady_clock::time_point t) const;

  // A directory's path, and its cached listing if fresh (*listing; else left null);
  // *unlisted: there is none, fresh or not. mu_ held.
  Result<std::string> cached_listing_locked(uint64_t dir_ino, DirListingPtr* listing,
                                            bool* unlisted);
  // Lists a directory, all pages, or fails with kNotSupported past max_pages (0: no limit).
  Result<DirListingPtr> fetch_listing(const std::string& dir_path, int max_pages = 0);
  // Caches a whole listing from the bucket (and keeps it in the index), begun when the index
  // had seen `edits` changes; stream: the DirStream it came from, whose lookups it now
  // answers. Locks mu_.
  DirListingPtr install_listed(const std::string& dir_path,
                               const std::shared_ptr<DirListing>& listing, uint64_t edits,
                               std::chrono::system_clock::time_point listed_at_wall,
                               uint64_t skipped, const DirStream* stream);
  // What a directory's DirStream (null: none runs) says of name: known (found: entry, or
  // absent) or not.
  struct StreamAnswer {
    bool known = false;
    std::optional<DirEntry> entry;
    std::chrono::steady_clock::time_point listed_at{};
  };
  static StreamAnswer stream_answer(const DirStream* stream, std::string_view name);
  // has_local_children() of a directory's path; mu_ held.
  bool has_local_children_locked(std::string_view dir_path) const;
  // This mount changed dir_path: a DirStream of it stops answering lookups and will not be
  // cached (dir_stream.h); mu_ held.
  void drop_stream_locked(const std::string& dir_path);
  // Counts a lookup by name in dir_path that no listing answered, and says how many pages
  // of the directory to list instead of probing: 1 for the first lookup within the TTL (a
  // directory that fits one page is then known whole, for the price of one request),
  // kAutoListMaxPages once enough lookups came that listing is cheaper than a HEAD per file,
  // 0 otherwise (probe).
  int pages_to_list(const std::string& dir_path);
  // Asks the bucket what `path` is: a file (HEAD) or a directory (one-key LIST).
  Result<DirEntry> probe(const std::string& path, std::string_view name);
  // Inserts or refreshes the node for path and counts a reference. Locks mu_.
  // seen_at is when the bucket said so (a listing's time, or now).
  NodeAttr upsert_node(uint64_t parent, const std::string& path, const DirEntry& e,
                       std::chrono::steady_clock::time_point seen_at);
  NodeAttr attr_of(const Node& n) const;  // mu_ held
  // Key of known_ for a node's path.
  static std::string known_key(const std::string& path, bool is_dir);
  // True if known_ holds attributes of this entry's version; mu_ held.
  bool known_fresh_locked(const std::string& path, const DirEntry& e) const;
  // Makes sure known_ has the attributes of path's entry e (a HEAD if not, when
  // object_attrs); e is updated if the HEAD finds a newer version. Locks mu_.
  void ensure_known(const std::string& path, DirEntry& e);
  // The same for the mount's root: the attributes on the prefix's own marker. Locks mu_.
  void ensure_root_known();
  // HEADs what of a listing known_ lacks, kAttrHeadThreads at a time.
  void fetch_attrs(const std::string& dir_path, const DirListing& listing);
  // Headers equal to the ones recorded last share their copy (the objects of a tree mostly
  // carry the same: one allocation, not one per object); mu_ held.
  // Null for attributes that set nothing; the last copy made when equal to it.
  std::shared_ptr<const ObjectAttrs> shared_attrs_locked(const ObjectAttrs& attrs);
  std::shared_ptr<const StoredHeaders> shared_headers_locked(const std::string& content_type,
                                                             const UserMetadata& metadata);
  // Records what a HEAD of a file said; mu_ held.
  void record_head_locked(const std::string& path, const ObjectInfo& info);
  void bound_known_locked();
  // A node with a new inode number for path, indexed by path; mu_ held.
  Node& new_node_locked(uint64_t parent, const std::string& path);
  // What a node keeps of its parent, numbered `parent` by the kernel: the parent's id()
  // (kept when the parent is renumbered). And back: a node's parent's number (the root's if
  // the parent is gone). mu_ held.
  uint64_t parent_id_locked(uint64_t parent) const;
  uint64_t parent_ino_locked(const Node& n) const;
  // A node's path: its name and its parents' up to the root ("" for the root); mu_ held.
  std::string path_locked(const Node& n) const;
  // The node indexed at path, found name by name from the root (null: none); mu_ held.
  Node* node_at_locked(std::string_view path) const;
  // True if n is the node indexed at its name in its parent (not unlinked, nor replaced);
  // mu_ held.
  bool indexed_locked(const Node& n) const;
  // Makes n the node indexed at its name in its parent, in place of any other; mu_ held.
  void index_node_locked(Node& n);
  // Drops n from the name index, if it is the node indexed there; mu_ held.
  void unindex_node_locked(const Node& n);
  // Path of a child of a known directory; mu_ held.
  Result<std::string> child_path_locked(uint64_t parent, std::string_view name) const;
  // Replaces (or adds, or with remove drops) name's entry in dir_path's cached listing, if
  // there is one; mu_ held.
  void edit_listing_locked(const std::string& dir_path, std::string_view name,
                           const DirEntry* entry);
  // This mount changed the entries of dir_path: its mtime and ctime are now (kept in memory
  // only: a directory has no object to change); mu_ held.
  void touch_dir_locked(std::string_view dir_path);
  static std::string_view base_name(std::string_view path);
  static std::string_view dir_name(std::string_view path);

  // ---- The listing index (metadata_index.cc) -------------------------------------------
  // Caches listing for dir_path, with the files created here and not uploaded yet; mu_ held.
  void install_listing_locked(const std::string& dir_path,
                              const std::shared_ptr<DirListing>& listing);
  // The listing of a directory this mount has none of, from the index (installed, and
  // listed again in the background if older than the TTL); null if the index has none.
  DirListingPtr listing_from_index(const std::string& dir_path);
  // Keeps a listing from the bucket in the index, unless this mount changed a directory
  // since edits was read (it may be older than the change); mu_ held.
  void index_listing_locked(const std::string& dir_path, uint64_t edits,
                            const std::string& encoded);
  // This mount changed dir_path (tree: and what is below it): its index entry goes; mu_ held.
  void unindex_locked(const std::string& dir_path, bool tree = false);
  void refresh_in_background(const std::string& dir_path);

  ObjectStore& store_;
  Clock& clock_;
  const MetaOptions options_;

  mutable std::mutex mu_;  // protects everything below
  // Nodes by number and by (parent, name): the node each name in a directory names now (an
  // unlinked or replaced one, still held by the kernel, is found by number only). A node's
  // parent and name change only while it is out of the name index.
  NodeTable nodes_;
  std::unordered_map<std::string, CachedListing> listings_;  // by directory path
  // Directories read page by page now (open_dir), by path; gone when complete or closed.
  std::unordered_map<std::string, std::weak_ptr<DirStream>> streams_;
  std::unordered_map<std::string, DirProbes> probes_;  // by directory path
  std::unordered_map<std::string, Known> known_;       // by known_key()
  // Sizes of listings_ and known_ past which the next pass drops what is not needed
  // (MetaOptions::max_listings, max_known; twice what the last pass kept, if more).
  size_t listings_sweep_at_ = 0;
  size_t known_sweep_at_ = 0;
  uint64_t cache_sweeps_ = 0;
  std::shared_ptr<const StoredHeaders> last_headers_;  // shared_headers_locked()
  std::shared_ptr<const ObjectAttrs> last_attrs_;      // shared_attrs_locked()
  std::unordered_map<uint64_t, bool> local_inos_;      // nodes with local = true
  uint64_t listing_cache_hits_ = 0;
  uint64_t skipped_keys_ = 0;
  ListingIndex* index_ = nullptr;
  uint64_t index_edits_ = 0;                    // changes that dropped index entries
  std::unordered_set<std::string> refreshing_;  // directories listed in the background now
  uint64_t listing_index_hits_ = 0;
  uint64_t listing_index_refreshes_ = 0;

  std::atomic<bool> stopping_{false};  // set by the destructor: queued refreshes do nothing
  // Background listings of stale indexed directories (with an index only). Last: its
  // threads stop before the rest goes.
  std::unique_ptr<ThreadPool> refresher_;
};

}  // namespace warmfs

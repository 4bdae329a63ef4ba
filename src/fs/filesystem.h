// Filesystem: the kernel-free core of warmfs.
//
// It answers the filesystem operations (lookup, getattr, readdir, open, read, release,
// statfs, getxattr) in terms of inodes and handles, with errors as Status values; the FUSE
// adapter only unpacks requests, calls these and replies. Everything below it is injected
// (metadata, the read path, caches, the object store), so tests drive it with an in-memory
// store and no kernel.
//
// Open files pin an object version (its ETag): every read of one handle comes from that
// version or fails. keep_cache tells the kernel it may keep its page cache for an inode
// because the ETag is unchanged since the previous open.
//
// Writes (with an Uploader; without one the mount is read-only and every write answers
// EROFS): a file opened for writing gets a StagedObject (upload/staged_object.h), shared by
// all handles of the inode, holding a staged copy on local disk. flush() (fsync, and close)
// returns only once the bucket holds every byte; reads of the inode see the staged bytes.
// Namespace changes (mkdir, unlink, rmdir, rename, symlink) are made in the bucket before
// they are answered. Attributes (chmod, chown, utimens) are kept in the object's user metadata
// (meta/object_attrs.h): a file being written carries them in its upload; any other object
// gets them by a server-side copy onto itself. docs/posix.md lists what is supported and how.
//
// Loaders announce the order of an epoch by writing it to the control file
// MOUNT/.warmfs/order (fs/order_file.h; the core serves the hidden directory itself, lists it
// nowhere and sends nothing of it to the bucket); the order prefetcher
// (readahead/order_prefetch.h) then fetches ahead of the readers in that order, and the
// epoch log (fs/epochs.h) keeps the four numbers of each epoch. control_file.cc.
//
// Statistics are exposed as JSON through the extended attribute "user.warmfs.stats" of the
// mount's root, so `warmfs stats MOUNTPOINT` needs no socket or pid file.
//
// Thread safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/block_cache.h"
#include "common/clock.h"
#include "common/histogram.h"
#include "fs/epochs.h"
#include "meta/dir_stream.h"
#include "meta/metadata.h"
#include "objstore/object_store.h"
#include "readahead/order_prefetch.h"
#include "readahead/read_path.h"
#include "upload/staged_object.h"
#include "warmfs/result.h"

namespace warmfs {

inline constexpr const char* kStatsXattr = "user.warmfs.stats";
inline constexpr const char* kPidXattr = "user.warmfs.pid";

// The control directory at the mount's root and its order file (docs/loaders.md). Their inode
// numbers are far above any the metadata hands out.
inline constexpr std::string_view kControlDirName = ".warmfs";
inline constexpr std::string_view kOrderFileName = "order";
inline constexpr uint64_t kControlDirIno = (1ull << 62) | 1;
inline constexpr uint64_t kOrderFileIno = (1ull << 62) | 2;
inline bool is_control_ino(uint64_t ino) { return ino == kControlDirIno || ino == kOrderFileIno; }

struct FsOptions {
  std::string bucket;
  std::string prefix;  // "" or ending in '/'
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t file_mode = 0644;
  uint32_t dir_mode = 0755;
  bool read_only = true;  // also when there is no Uploader
  // Stats of parts the core does not know (the cache-server tier, the credentials): each
  // returns a JSON object whose members stats_json() adds at the top level, in order (a
  // later part's member replaces an earlier one of the same name). Must be cheap and thread
  // safe; a malformed answer is ignored.
  std::vector<std::function<std::string()>> extra_stats;
  // Prefetch in the order loaders publish (readahead/order_prefetch.h).
  OrderOptions order;
  // Length of an epoch while no order is running (fs/epochs.h).
  std::chrono::seconds epoch_interval{60};
};

// Read calls as the core answered them, for metrics (the same counters stats_json() shows).
struct FsReadCounters {
  uint64_t reads = 0;  // read calls, counted as they start
  uint64_t bytes = 0;  // bytes returned
  uint64_t errors = 0;
  uint64_t opens = 0;
  uint64_t wait_ns = 0;  // time readers spent inside finished read calls, summed
};

struct Attr {
  uint64_t ino = 0;
  bool is_dir = false;
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  uint32_t mtime_nsec = 0;
  int64_t ctime_sec = 0;  // the last attribute change kept, else the mtime
  uint32_t ctime_nsec = 0;
  int64_t atime_sec = 0;  // as utimens set it, else the mtime
  uint32_t atime_nsec = 0;
  uint32_t mode = 0;  // including S_IFDIR / S_IFREG / S_IFLNK
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 1;
  uint64_t rdev = 0;  // device nodes
};

// What was written to a handle of the order file, taken when it is closed.
struct ControlWrite {
  std::mutex mu;  // protects the fields below
  std::string bytes;
  bool dirty = false;  // written since last taken
};

// One open file: the version it reads and its read-ahead state; for a file being written,
// the inode's write state.
//
// Thread safe: the kernel may read through one handle from several threads at once. The
// version and its reader are one Source, replaced whole when the file moves (a rename by this
// mount); a read takes the Source once and uses it throughout.
class FileHandle {
 public:
  struct Source {
    ObjectVersion version;
    std::unique_ptr<Reader> reader;
  };
  FileHandle(uint64_t ino, ObjectVersion version, std::unique_ptr<Reader> reader)
      : ino_(ino),
        source_(std::make_shared<Source>(Source{std::move(version), std::move(reader)})) {}
  uint64_t ino() const { return ino_; }
  std::shared_ptr<Source> source() const {
    std::lock_guard lock(mu_);
    return source_;
  }
  ObjectVersion version() const { return source()->version; }
  // The inode's write state when it has one (opened for writing, or while written).
  const std::shared_ptr<StagedObject>& staged() const { return staged_; }
  bool writable() const { return writable_; }
  // A handle of the order file (.warmfs/order).
  bool control() const { return control_ != nullptr; }

 private:
  friend class Filesystem;
  // The object moved: reads go to its new key from now on.
  void follow(ObjectVersion version, std::unique_ptr<Reader> reader) {
    auto moved = std::make_shared<Source>(Source{std::move(version), std::move(reader)});
    std::lock_guard lock(mu_);
    source_ = std::move(moved);
  }

  std::shared_ptr<ControlWrite> control_;
  uint64_t ino_;
  mutable std::mutex mu_;  // protects source_
  std::shared_ptr<Source> source_;
  std::shared_ptr<StagedObject> staged_;
  bool writable_ = false;
};

struct OpenResult {
  std::unique_ptr<FileHandle> handle;
  bool keep_cache = false;  // the kernel may keep cached pages: same ETag as last open
};

struct CreateResult {
  Attr attr;
  OpenResult open;
};

// What setattr changes; unset fields stay.
struct SetAttrRequest {
  std::optional<uint64_t> size;
  std::optional<Timespec> mtime;
  std::optional<Timespec> atime;
  std::optional<uint32_t> mode;  // permission bits (chmod); the file type stays
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
};

// What a node made through the mount carries: the caller's mode (umask applied) and owner.
struct NewNodeAttrs {
  uint32_t mode = 0;  // permission bits
  uint32_t uid = 0;
  uint32_t gid = 0;
};

struct StatfsResult {
  uint64_t block_size = 4096;
  uint64_t blocks = 0;
  uint64_t blocks_free = 0;
  uint64_t files = 0;
  uint64_t files_free = 0;
  uint32_t name_max = kMaxNameBytes;
};

class Filesystem {
 public:
  // memory_cache and disk_cache (null without an SSD tier) are the read path's tiers, named
  // here for their counters.
  // uploader: null for a read-only mount.
  Filesystem(Metadata& meta, ReadPath& read_path, BlockCache& memory_cache, BlockCache* disk_cache,
             ObjectStore& store, Clock& clock, FsOptions options, Uploader* uploader = nullptr);
  // Uploads what is still dirty (the mount is going away), then stops.
  ~Filesystem();

  Result<Attr> lookup(uint64_t parent, std::string_view name);
  void forget(uint64_t ino, uint64_t nlookup);
  // A restarted daemon (fuse/handover.h) makes `ino`, a number the kernel holds from the
  // daemon before it, name parent/name again, with the kernel's lookup count.
  Status adopt(uint64_t ino, uint64_t parent, std::string_view name, uint64_t nlookup);
  Result<Attr> getattr(uint64_t ino);

  // A directory's entries for readdir: as listed at opendir, or, for a large directory not
  // cached, read page by page as readdir reaches them (meta/dir_stream.h).
  Result<OpenDirPtr> opendir(uint64_t ino);
  // Inode of a directory's parent, for "..".
  uint64_t parent_of(uint64_t ino) const {
    return is_control_ino(ino) ? (ino == kOrderFileIno ? kControlDirIno : kRootIno)
                               : meta_.parent_of(ino);
  }

  Result<OpenResult> open(uint64_t ino, int flags);
  // Reads into out; returns bytes read (short only at EOF).
  Result<size_t> read(FileHandle& handle, uint64_t offset, std::span<std::byte> out);
  // As read(), but returns the chunk pieces holding the bytes instead of copying them.
  Result<size_t> read_slices(FileHandle& handle, uint64_t offset, uint64_t length,
                             std::vector<ChunkSlice>& out);

  StatfsResult statfs() const;
  // Value of an extended attribute; kNotFound (ENODATA) for names warmfs does not have.
  Result<std::string> getxattr(uint64_t ino, std::string_view name);

  // ---- Writes (docs/posix.md) --------------------------------------------------------------
  // kReadOnly on a read-only mount.
  Status check_writable() const;
  // attrs: kept in the object's metadata; without them, the object carries none (the mount's
  // defaults show).
  Result<CreateResult> create(uint64_t parent, std::string_view name, int flags,
                              const std::optional<NewNodeAttrs>& attrs = std::nullopt);
  // Writes data at offset into the handle's staged copy; returns data.size().
  Result<size_t> write(FileHandle& handle, uint64_t offset, std::span<const std::byte> data);
  // fsync() and close(): ok only once the bucket holds every byte written through the inode.
  // EIO (ENOSPC where that is the cause) otherwise; the staged copy stays for a retry.
  Status flush(FileHandle& handle);
  // fsync(): as flush(), through any handle of the file, read-only ones too (POSIX: fsync
  // makes the file's data durable, whoever wrote it).
  Status fsync(FileHandle& handle);
  // The handle's last close: uploads what no flush did, then lets go of the write state.
  void release(std::unique_ptr<FileHandle> handle);
  // truncate, utimens, chmod/chown. handle: the open file (ftruncate), or null.
  Result<Attr> setattr(uint64_t ino, const SetAttrRequest& request, FileHandle* handle);
  Result<Attr> mkdir(uint64_t parent, std::string_view name,
                     const std::optional<NewNodeAttrs>& attrs = std::nullopt);
  // A symlink: one PutObject of the target as the body, S_IFLNK in x-amz-meta-mode.
  Result<Attr> symlink(uint64_t parent, std::string_view name, std::string_view target,
                       const NewNodeAttrs& attrs);
  // A FIFO, socket or device node (type: S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK): one PutObject
  // of an empty object with the type in x-amz-meta-mode (and x-amz-meta-rdev), as s3fs does.
  // The kernel serves them; warmfs only keeps them. A regular file: create() then close.
  Result<Attr> mknod(uint64_t parent, std::string_view name, uint32_t type, uint64_t rdev,
                     const NewNodeAttrs& attrs);
  // A symlink's target (a GET of its body the first time). kInvalidArgument if not a symlink.
  Result<std::string> readlink(uint64_t ino);
  Status unlink(uint64_t parent, std::string_view name);
  Status rmdir(uint64_t parent, std::string_view name);
  // flags: 0 or RENAME_NOREPLACE (RENAME_EXCHANGE is not supported: EINVAL).
  Status rename(uint64_t parent, std::string_view name, uint64_t new_parent,
                std::string_view new_name, unsigned flags);
  // Uploads every dirty file (unmount); returns how many failed.
  size_t flush_all();

  // Counters since the mount, as the JSON `warmfs stats --json` prints.
  std::string stats_json() const;
  FsReadCounters read_counters() const;
  // Duration of each finished read call, in whole microseconds.
  const Histogram& read_latency_us() const { return read_latency_us_; }
  Attr attr_from(const NodeAttr& n) const;

  // ---- Orders and epochs (control_file.cc) -------------------------------------------------
  // Makes `entries` the order to prefetch in (what closing the order file does); its number.
  uint64_t publish_order(std::vector<OrderEntry> entries);
  // The order file's ioctl channel (warmfs/control_ioctl.h), for mounts the kernel holds
  // read-only: appends to the handle's order text, then publishes it as a close after
  // writing would. kInvalidArgument for a handle of another file.
  Status order_append(FileHandle& handle, std::span<const std::byte> data);
  Status order_publish(FileHandle& handle);
  OrderCounters order_counters() const;
  // The epochs kept, oldest first; the running one ends now.
  std::vector<Epoch> epochs() const;

 private:
  // The control directory: answers for its inodes, or nullopt for any other.
  std::optional<Result<Attr>> control_lookup(uint64_t parent, std::string_view name);
  Attr control_attr(uint64_t ino) const;
  DirListingPtr control_listing() const;
  Result<OpenResult> open_control(int flags);
  Result<size_t> write_control(FileHandle& handle, uint64_t offset,
                               std::span<const std::byte> data);
  Status flush_control(FileHandle& handle);
  // kNotPermitted for a namespace change of the control directory or in it.
  Status refuse_control(uint64_t parent, std::string_view name) const;
  // The version an order entry's path names (the resolver of order_).
  Result<ObjectVersion> resolve_order_path(const std::string& path);
  EpochCounters epoch_counters() const;
  // Rolls the epochs when due (before an open or a read counts).
  void epoch_tick();
  // Around every read: the order learns what was read, the epochs roll when due.
  void order_read_started(std::string_view key, uint64_t offset, uint64_t length);
  void order_read_finished(std::string_view key, uint64_t offset, uint64_t length);

  Metadata& meta_;
  ReadPath& read_path_;
  BlockCache& memory_cache_;
  BlockCache* const disk_cache_;
  ObjectStore& store_;
  Clock& clock_;
  const FsOptions options_;
  const std::chrono::steady_clock::time_point started_;

  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> read_requests_{0};
  std::atomic<uint64_t> read_errors_{0};
  std::atomic<uint64_t> opens_{0};
  std::atomic<uint64_t> read_wait_ns_{0};
  Histogram read_latency_us_;

  // The write state of an inode, and how many handles hold it.
  struct WriteEntry {
    std::shared_ptr<StagedObject> object;
    uint32_t handles = 0;
    // A clean staged copy is kept a little after the last close: the checkpoint pattern
    // renames right after closing, and the rename's copy is cached from it.
    std::chrono::steady_clock::time_point keep_until{};
  };
  static constexpr std::chrono::seconds kKeepStagedAfterClose{30};
  // The inode's write state, made if needed, counting one more holder.
  std::shared_ptr<StagedObject> hold_staged(uint64_t ino, const std::string& key);
  std::shared_ptr<StagedObject> find_staged(uint64_t ino);
  // As find_staged(), but null for a clean copy kept past its time.
  std::shared_ptr<StagedObject> find_live_staged(uint64_t ino);
  // One holder less; drops the write state when nothing holds it and it is clean.
  void unhold_staged(uint64_t ino);
  // Drops the write state of inodes nothing holds, that are clean and past keep_until.
  void sweep_staged();
  // Stages the object's current bytes (read through the caches) if not staged yet.
  Status ensure_staged(StagedObject& obj, const ObjectVersion& version);
  // After a successful upload or copy: the namespace and the caches learn the new version.
  void committed(uint64_t ino, const std::shared_ptr<StagedObject>& obj, const ObjectInfo& info);
  Status do_flush(uint64_t ino, const std::shared_ptr<StagedObject>& obj);
  // After an upload nobody can retry failed: unless a handle holds obj, the file goes back to
  // what the bucket holds (a file never uploaded leaves the namespace).
  void abandon_unheld(uint64_t ino, const std::shared_ptr<StagedObject>& obj);
  // A read found the handle's object gone: if this mount moved it (a rename of the file or of
  // a directory above it), the handle follows it to its new key. kNotFound if it did not
  // move; the error of the HEAD of the new key if that failed.
  Status follow_move(FileHandle& handle);
  // ensure_staged() from the version the handle reads, following a move (follow_move).
  Status stage_through(FileHandle& handle, StagedObject& obj);
  Status rename_dir(const std::string& from_key, const std::string& to_key, bool to_exists);
  // A directory rename that failed: deletes the copies of the first `copied` keys whose
  // source is still in the bucket, so the failure changes nothing there (best effort).
  void take_back_copies(const std::vector<std::string>& keys, size_t copied,
                        const std::string& from_key, const std::string& to_key, bool to_exists,
                        bool sources_intact);
  // Puts a whole object made here (symlink, special file) with these attributes.
  Result<Attr> put_node(uint64_t parent, std::string_view name, std::string_view body,
                        const ObjectAttrs& attrs);
  // Keeps attrs for ino: in the next upload when it is being written, else by a copy of its
  // object (or a marker, for a directory without one) onto itself.
  Status store_attrs(uint64_t ino, const NodeAttr& current, const ObjectAttrs& attrs);
  void apply_staged(Attr& a, const NodeAttr& n);
  int64_t wall_sec() const;

  // Small files opened in a directory's listing order: the next ones are fetched ahead, so a
  // scan has more requests in flight than its reader threads (warm_following()).
  struct DirScan {
    size_t last_index = 0;
    size_t warmed_upto = 0;  // entries below this index have been warmed
    uint32_t streak = 0;     // opens in a row near the previous one
    bool seen = false;
  };
  static constexpr uint64_t kWarmFileMaxBytes = 1ull << 20;
  static constexpr size_t kWarmAhead = 128;
  void warm_following(uint64_t ino);
  std::mutex scan_mu_;                           // protects scans_
  std::unordered_map<uint64_t, DirScan> scans_;  // by directory inode
  std::atomic<uint64_t> warmed_files_{0};

  Uploader* const uploader_;
  // Lets write-through callbacks (on the uploader's threads) reach this object only while it
  // lives: the destructor clears fs under mu.
  struct Liveness {
    std::mutex mu;
    Filesystem* fs = nullptr;
  };
  std::shared_ptr<Liveness> liveness_ = std::make_shared<Liveness>();
  // Lock order: Liveness::mu, then writes_mu_ (sweep_staged runs under mu), then a
  // StagedObject's locks (dirty() and write_through_pending() are asked under writes_mu_).
  // scan_mu_ and open_mu_ are taken alone; none is held across a call into meta or the store.
  std::mutex writes_mu_;  // protects writes_
  std::unordered_map<uint64_t, WriteEntry> writes_;

  std::mutex open_mu_;  // protects last_open_etag_
  // ETag each inode had when last opened, to decide keep_cache.
  std::unordered_map<uint64_t, std::string> last_open_etag_;

  EpochLog epochs_;
  std::unique_ptr<OrderPrefetcher> order_;  // made and stopped by the constructor, destructor
};

}  // namespace warmfs

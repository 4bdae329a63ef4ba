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
// Statistics are exposed as JSON through the extended attribute "user.warmfs.stats" of the
// mount's root, so `warmfs stats MOUNTPOINT` needs no socket or pid file.
//
// Thread safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>

#include "cache/block_cache.h"
#include "common/clock.h"
#include "common/histogram.h"
#include "meta/metadata.h"
#include "objstore/object_store.h"
#include "readahead/read_path.h"
#include "warmfs/result.h"

namespace warmfs {

inline constexpr const char* kStatsXattr = "user.warmfs.stats";
inline constexpr const char* kPidXattr = "user.warmfs.pid";

struct FsOptions {
  std::string bucket;
  std::string prefix;  // "" or ending in '/'
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t file_mode = 0444;  // read-only until writes land
  uint32_t dir_mode = 0555;
  bool read_only = true;
};

struct Attr {
  uint64_t ino = 0;
  bool is_dir = false;
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  uint32_t mode = 0;   // including S_IFDIR / S_IFREG
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 1;
};

// One open file: the version it reads and its read-ahead state.
class FileHandle {
 public:
  FileHandle(uint64_t ino, ObjectVersion version, std::unique_ptr<Reader> reader)
      : ino_(ino), version_(std::move(version)), reader_(std::move(reader)) {}
  uint64_t ino() const { return ino_; }
  const ObjectVersion& version() const { return version_; }
  Reader& reader() { return *reader_; }

 private:
  uint64_t ino_;
  ObjectVersion version_;
  std::unique_ptr<Reader> reader_;
};

struct OpenResult {
  std::unique_ptr<FileHandle> handle;
  bool keep_cache = false;  // the kernel may keep cached pages: same ETag as last open
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
  Filesystem(Metadata& meta, ReadPath& read_path, BlockCache& memory_cache, BlockCache* disk_cache,
             ObjectStore& store, Clock& clock, FsOptions options);

  Result<Attr> lookup(uint64_t parent, std::string_view name);
  void forget(uint64_t ino, uint64_t nlookup);
  Result<Attr> getattr(uint64_t ino);

  // A directory's entries at the moment of opendir; readdir pages through this snapshot.
  Result<DirListingPtr> opendir(uint64_t ino);
  // Inode of a directory's parent, for "..".
  uint64_t parent_of(uint64_t ino) const { return meta_.parent_of(ino); }

  Result<OpenResult> open(uint64_t ino, int flags);
  // Reads into out; returns bytes read (short only at EOF).
  Result<size_t> read(FileHandle& handle, uint64_t offset, std::span<std::byte> out);
  // As read(), but returns the chunk pieces holding the bytes instead of copying them.
  Result<size_t> read_slices(FileHandle& handle, uint64_t offset, uint64_t length,
                             std::vector<ChunkSlice>& out);

  StatfsResult statfs() const;
  // Value of an extended attribute; kNotFound (ENODATA) for names warmfs does not have.
  Result<std::string> getxattr(uint64_t ino, std::string_view name);

  // Write-side operations refuse with kReadOnly until the write path lands.
  Status check_writable() const;

  // Counters since the mount, as the JSON `warmfs stats --json` prints.
  std::string stats_json() const;
  Attr attr_from(const NodeAttr& n) const;

 private:
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
  Histogram read_latency_us_;

  std::mutex open_mu_;  // protects last_open_etag_
  // ETag each inode had when last opened, to decide keep_cache.
  std::unordered_map<uint64_t, std::string> last_open_etag_;
};

}  // namespace warmfs

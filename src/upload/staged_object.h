// StagedObject and Uploader: files being written, staged on local disk and uploaded to the
// bucket, with durability at flush().
//
// A StagedObject is one object's write state while the mount writes it: a staged copy (a
// nameless file in the StagingArea holding the object's whole content), which part of it has
// changed, and the multipart upload that carries it to the bucket. It is shared by every open
// handle of the inode.
//
// Uploading. An object of at most single_put_max bytes goes in one PutObject with Content-MD5.
// A larger one goes as a multipart upload cut by PartPlan; each part is sent with Content-MD5
// (the store's upload_part), so the bucket verifies every byte. Parts are uploaded in the
// background as soon as the writer has moved past them (a sequential writer's full parts are
// in the bucket before it calls fsync, which then waits for the tail only). Every change bumps
// a generation counter of the parts it touches, before and after the bytes land; a part
// counts as uploaded only for the generation it was read at, so a write racing an upload
// makes the part upload again, never leaves a stale part in the object.
//
// Durability. flush() returns ok only after the bucket acknowledged the whole object:
// PutObject answered, or CompleteMultipartUpload answered 200 without an error in its body
// (the store turns that into a failure). On a failure the open multipart upload is aborted
// (no orphaned parts), the staged copy stays, and the next flush() starts the upload afresh.
// Nothing changes in the bucket until the upload completes: the object at the key is the old
// one, or none, until then.
//
// Write-through. After an upload, write_through() puts the staged bytes into the block cache
// under the new version's key and ETag (in the background), so reading back what was just
// written pulls nothing from the bucket; reads meanwhile are served from the staged copy.
//
// Memory: the staged bytes are on disk; an upload holds one part in memory per upload thread
// (8 MiB parts for objects up to 8 GiB; parts grow with the object, see PartPlan).
//
// Thread safe. Lock order: flush_mu_ before mu_; mu_ is never held across I/O or requests,
// nor across a caller's callback (write_through's on_done takes the filesystem's locks,
// which take mu_ again).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "cache/block_cache.h"
#include "common/clock.h"
#include "common/thread_pool.h"
#include "io/file_io.h"
#include "objstore/object_store.h"
#include "upload/part_plan.h"
#include "upload/staging.h"
#include "warmfs/result.h"

namespace warmfs {

struct UploaderOptions {
  std::string bucket;  // names the cache keys of write-through chunks
  PartPlan plan;
  // Objects up to this size are uploaded with one PutObject; larger ones in parts.
  uint64_t single_put_max = PartPlan::kDefaultBaseSize;
  // Parts (and PUTs) sent at once, for all files together.
  uint32_t threads = 4;
  uint64_t chunk_size = kDefaultChunkSize;
};

struct UploadCounters {
  uint64_t uploads_in_flight = 0;  // PutObjects and parts being sent right now
  uint64_t upload_failures = 0;    // flushes that failed: fsync or close reported an error
  uint64_t completed_uploads = 0;  // objects made durable
  uint64_t write_through_bytes = 0;
  uint64_t staged_objects = 0;  // objects with a staged copy right now
};

class StagedObject;

class Uploader {
 public:
  // write_through: the cache the written chunks go to (null: none). All must outlive this.
  Uploader(ObjectStore& store, StagingArea& staging, BlockCache* write_through, Clock& clock,
           UploaderOptions options);
  // Runs what is queued (uploads, write-through), then stops.
  ~Uploader();
  Uploader(const Uploader&) = delete;
  Uploader& operator=(const Uploader&) = delete;

  // Write state for the object at key, with no staged copy yet.
  std::shared_ptr<StagedObject> make(std::string key);
  UploadCounters counters() const;
  const UploaderOptions& options() const { return options_; }
  uint64_t staging_free_bytes() const { return staging_.free_bytes(); }

 private:
  friend class StagedObject;
  ObjectStore& store_;
  StagingArea& staging_;
  BlockCache* const write_through_;
  Clock& clock_;
  const UploaderOptions options_;
  std::atomic<uint64_t> in_flight_{0}, failures_{0}, completed_{0}, write_through_bytes_{0},
      staged_{0};
  ThreadPool parts_;  // part uploads
  ThreadPool fill_;   // write-through into the cache
};

class StagedObject : public std::enable_shared_from_this<StagedObject> {
 public:
  // Reads `out.size()` bytes of the object's current version at offset (short at its end).
  using Source = std::function<Result<size_t>(uint64_t offset, std::span<std::byte> out)>;

  StagedObject(Uploader& uploader, std::string key);
  ~StagedObject();
  StagedObject(const StagedObject&) = delete;
  StagedObject& operator=(const StagedObject&) = delete;

  // Makes the staged copy, if there is none yet: empty (a new or truncated file; this is a
  // change, so the next flush() uploads), or the current object's `size` bytes read through
  // source (not a change by itself).
  Status stage_empty();
  Status stage_from(uint64_t size, const Source& source);
  bool staged() const;

  // Changes to the staged copy. write() returns the bytes written: fewer than data.size()
  // when the staging disk filled part way (the rest then fails with kNoSpace).
  Result<size_t> write(uint64_t offset, std::span<const std::byte> data);
  Status truncate(uint64_t size);
  // Reads the staged copy (short only at its end). Requires staged().
  Result<size_t> read(uint64_t offset, std::span<std::byte> out);

  // Makes every change so far durable: returns the object as the bucket now holds it (its
  // ETag, size and mtime), or why not. Ok at once when nothing changed since the last flush.
  Result<ObjectInfo> flush();
  // True when changes were made that no flush() has made durable (false once discarded).
  bool dirty() const;
  // True when there are changes no flush() has even tried to upload yet.
  bool unattempted_changes() const;

  uint64_t size() const;
  int64_t mtime_sec() const;
  void set_mtime(int64_t mtime_sec);
  std::string key() const;
  // The object moved (a rename, after its bytes were copied there): uploads go to the new key.
  void set_key(std::string key);
  // What each upload carries besides the bytes (Content-Type, user metadata): asked at each
  // PutObject and CreateMultipartUpload, without any lock of this object held. None by default.
  void set_headers(std::function<ObjectHeaders()> headers);

  // Puts the staged copy into the write-through cache as `version` (in the background; a later
  // change or write_through() call stops it). on_done runs when it ends.
  void write_through(const ObjectInfo& version, std::function<void()> on_done);
  bool write_through_pending() const;

  // The file was deleted: stop, abort any open upload; flush() then uploads nothing.
  void discard();
  // The deletion failed: the object is written again as if discard() had not been called
  // (changes since the last upload are uploaded whole at the next flush()).
  void undiscard();

 private:
  struct Part {
    uint64_t gen = 0;        // bumped by every change to the part's bytes
    uint64_t clean_gen = 0;  // generation last uploaded
    uint64_t epoch = 0;      // upload that holds it (epoch_ at the time)
    bool inflight = false;
    std::string etag;
    uint64_t size = 0;
  };

  bool part_dirty(int n) const {
    return parts_[n - 1].epoch != epoch_ || parts_[n - 1].clean_gen != parts_[n - 1].gen;
  }
  // Bumps the generation of every part overlapping [begin, end); mu_ held.
  void bump_locked(uint64_t begin, uint64_t end);
  void ensure_parts_locked(int n);
  // Queues uploads of full parts a sequential writer has moved past; mu_ held.
  void schedule_background_locked();
  void submit_part_locked(int n);
  // Uploads part n (on the parts pool).
  void upload_part(int n);
  // Aborts the open multipart upload, if any, once no part is in flight; lock is on mu_.
  void abort_upload(std::unique_lock<std::mutex>& lock);
  Result<ObjectInfo> flush_single(std::unique_lock<std::mutex>& lock);
  Result<ObjectInfo> flush_multipart(std::unique_lock<std::mutex>& lock);
  Status read_full(uint64_t offset, std::span<std::byte> out) const;
  void fill(const ObjectInfo& version, uint64_t seq, uint64_t gen);
  int64_t now_sec() const;

  Uploader& up_;
  std::mutex flush_mu_;  // one flush at a time

  mutable std::mutex mu_;       // protects everything below
  std::condition_variable cv_;  // part uploads ending, upload creation ending
  std::string key_;
  std::function<ObjectHeaders()> headers_;
  io::UniqueFd fd_;
  bool staged_ = false;
  bool discarded_ = false;
  uint64_t size_ = 0;
  int64_t mtime_sec_ = 0;
  uint64_t gen_ = 0;            // bumped by every change
  uint64_t committed_gen_ = 0;  // the change the bucket holds
  uint64_t attempted_gen_ = 0;  // the change the last flush() tried to upload
  uint64_t high_water_ = 0;     // end of the furthest write
  std::vector<Part> parts_;
  int background_next_ = 1;  // first part the background has not looked at
  std::string upload_id_;
  uint64_t epoch_ = 1;       // bumped when an upload completes or is aborted
  bool creating_ = false;    // a CreateMultipartUpload is on its way
  bool completing_ = false;  // CompleteMultipartUpload is on its way: no new parts
  uint64_t inflight_ = 0;    // part uploads running
  uint64_t errors_ = 0;      // part uploads that failed, ever
  Status last_error_;
  uint64_t fill_seq_ = 0;
  bool fill_pending_ = false;
};

}  // namespace warmfs

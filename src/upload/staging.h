// StagingArea: the local directory where files being written are kept until they are in the
// bucket, and the journal of multipart uploads this mount has open.
//
// Staged files are made with O_TMPFILE (or created and unlinked at once where the filesystem
// lacks it): they have no name, so a crashed mount leaves nothing to clean up and nothing a
// later mount could mistake for data. Their bytes count against the staging filesystem, so
// files larger than RAM work; a full disk makes write() fail with ENOSPC.
//
// The journal is a file journal-<pid>-<stamp>.log, flock()ed while the mount runs, with one line
// per multipart upload started ("B <upload id> <hex key>") and ended ("E <upload id>"). A mount
// that dies with uploads open leaves them listed; the next StagingArea opened on the same
// directory finds the journal unlocked, aborts those uploads (so no orphaned parts keep
// costing storage) and removes it.
//
// Thread safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/file_io.h"
#include "objstore/object_store.h"
#include "warmfs/result.h"

namespace warmfs {

class StagingArea {
 public:
  // Creates dir (0700) if needed, recovers journals of dead mounts (aborting their uploads
  // through store) and starts this mount's journal.
  static Result<std::unique_ptr<StagingArea>> open(std::string dir, ObjectStore& store);
  ~StagingArea();
  StagingArea(const StagingArea&) = delete;
  StagingArea& operator=(const StagingArea&) = delete;

  // A new, empty, nameless file for one staged object.
  Result<io::UniqueFd> new_file();
  // Journal records of a multipart upload's start and end (complete or abort).
  void upload_started(std::string_view key, std::string_view upload_id);
  void upload_ended(std::string_view upload_id);

  // An abort of a multipart upload that failed (after the store's own retries): until an
  // abort succeeds the journal keeps the upload open, so a later mount aborts it if this one
  // cannot. retry_aborts() tries each again through store and returns how many are still not
  // done; the Uploader calls it after each upload that succeeds and when the mount ends.
  void abort_failed(std::string key, std::string upload_id);
  size_t retry_aborts(ObjectStore& store);
  size_t failed_aborts() const;

  const std::string& dir() const { return dir_; }
  // Bytes free on the staging filesystem (0 if it cannot be asked).
  uint64_t free_bytes() const;
  // Uploads of dead mounts this open() aborted.
  uint64_t recovered_uploads() const { return recovered_; }

 private:
  StagingArea(std::string dir, io::UniqueFd journal, std::string journal_path, uint64_t recovered)
      : dir_(std::move(dir)),
        journal_(std::move(journal)),
        journal_path_(std::move(journal_path)),
        recovered_(recovered) {}
  void append(const std::string& line);

  const std::string dir_;
  std::mutex mu_;  // serializes journal appends
  io::UniqueFd journal_;
  const std::string journal_path_;
  const uint64_t recovered_;
  mutable std::mutex aborts_mu_;  // protects failed_aborts_; never held across a request
  std::vector<std::pair<std::string, std::string>> failed_aborts_;  // (key, upload id)
};

}  // namespace warmfs

// BranchStore: an ObjectStore that shows a writable branch of a snapshot.
//
// It layers a BranchRecord (branch_record.h) over a SnapshotStore: names the branch never
// changed are the snapshot's, read pinned as a snapshot mount reads them; names it wrote are
// objects below the branch's data/ folder in the bucket; names it deleted are gone; a name
// renamed from an unchanged snapshot file points at the snapshot's entry (no byte copied).
// The snapshot, and every other branch of it, stay as they are: the branch writes only below
// PREFIX.warmfs/branches/NAME/.
//
// Every write is two steps: the bytes go to a new object data/WRITER/SEQ (a key never
// written before, so no write replaces bytes another name or mount refers to), then the
// record, rewritten whole, names it. A call returns only once the record is in the bucket, so
// what fsync() or close() reported durable is shown by any later mount. Concurrent changes
// share record writes (a record write takes every change made before it started). Objects no
// name refers to any more are deleted once a record without them is in the bucket.
//
// A snapshot of the branch (branch_manifest) reads the branch's data objects where they are: it
// pins the branch first (pin_branch), and a pinned branch deletes no data object.
//
// A branch opened for reading only reads its record again once it is older than
// BranchOptions::refresh_after, so it shows what the writer did since, within that time.
//
// One writer per branch: opening a branch for writing records this mount as its writer, and
// every record write carries If-Match of the record this mount last wrote. A mount of the
// same branch opened for writing later takes it over; the earlier mount's next change fails
// with kPreconditionFailed (ESTALE), and so does every one after it. Its bytes went to keys of
// its own, so they never replace the new writer's.
//
// Thread safe. Lock order: persist_mu_ before mu_; mu_ is never held across a request.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "objstore/object_store.h"
#include "snapshot/branch_record.h"
#include "snapshot/branch_sweep.h"
#include "snapshot/snapshot_store.h"

namespace warmfs {

struct BranchOptions {
  std::string name;      // the branch's name (is_snapshot_name)
  std::string snapshot;  // how the snapshot was named (recorded when the branch is created)
  // Take the branch over for writing (creating it if absent). Without it the branch must
  // exist, and writes fail with kReadOnly.
  bool writer = true;
  int64_t now_sec = 0;  // stamps the record when it is created or taken over
  // Not a writer: the record is read again (a HEAD, and a GET when it changed) once it is
  // older than this, so the mount follows the branch's writer as a mount follows its bucket.
  // Zero: never. clock is needed then; it must outlive the store.
  std::chrono::milliseconds refresh_after{0};
  Clock* clock = nullptr;
};

class BranchStore : public ObjectStore {
 public:
  // Reads (or, for a writer, creates) the branch of snapshot's manifest. inner is the bucket's
  // store, snapshot reads through it; both must outlive this store. kInvalidArgument for a
  // branch of another snapshot, bucket or prefix; kNotFound for a branch that does not exist
  // when not opened for writing.
  static Result<std::unique_ptr<BranchStore>> open(ObjectStore& inner, SnapshotStore& snapshot,
                                                   const BranchOptions& options);

  // The record as this mount has it (the last one written, plus changes being written).
  BranchRecord record() const;
  // True when the bucket's record was created by this open().
  bool created() const { return created_; }
  // For a writer: deletes the branch's orphaned data objects (branch_sweep.h) on a thread of
  // its own, once, and logs what it did. Destroying the store stops it between requests.
  void start_sweep();
  // What that sweep did; nullopt until it has ended.
  std::optional<BranchSweep> sweep_result() const;

  Result<ObjectInfo> head(std::string_view key) override;
  Result<size_t> get_range(std::string_view key, uint64_t offset, std::span<std::byte> out,
                           std::string_view if_match) override;
  using ObjectStore::get_range_progress;
  Result<size_t> get_range_progress(std::string_view key, uint64_t offset, std::span<std::byte> out,
                                    std::string_view if_match,
                                    const std::function<void(size_t)>& progress,
                                    const RangeBytesSeen& seen) override;
  // ListObjectsV2 over the snapshot and the branch's entries: delimiter "/" or none; the
  // token is this store's own; start_after as ListObjectsV2's.
  Result<ListPage> list(const ListRequest& request) override;

  Result<ObjectInfo> put(std::string_view key, std::span<const std::byte> body,
                         const PutOptions& options) override;
  Result<std::string> create_multipart(std::string_view key,
                                       const ObjectHeaders& headers = {}) override;
  Result<CompletedPart> upload_part(std::string_view key, std::string_view upload_id,
                                    int part_number, std::span<const std::byte> body) override;
  Result<CompletedPart> upload_part_copy(std::string_view key, std::string_view upload_id,
                                         int part_number, std::string_view src_key, uint64_t first,
                                         uint64_t last, std::string_view src_if_match) override;
  Result<ObjectInfo> complete_multipart(std::string_view key, std::string_view upload_id,
                                        std::span<const CompletedPart> parts) override;
  // An upload this mount does not know (one a dead mount's staging journal names) is looked
  // for among the uploads in progress below the branch's data folder, else aborted at key.
  Status abort_multipart(std::string_view key, std::string_view upload_id) override;
  // This mount's uploads under prefix, by the names they are for.
  Result<std::vector<MultipartUpload>> list_multipart_uploads(std::string_view prefix) override;
  // Records dst as src's bytes: a name of the snapshot's is pointed at, a name of the
  // branch's shares its data object. No byte is copied.
  Result<ObjectInfo> copy(std::string_view src_key, std::string_view dst_key,
                          std::string_view if_match_etag) override;
  Result<ObjectInfo> replace_metadata(std::string_view key, const ObjectInfo& current,
                                      const ObjectHeaders& headers) override;
  Status remove(std::string_view key) override;
  Result<std::vector<DeleteError>> remove_many(std::span<const std::string> keys) override;

  ObjectStoreCounters counters() const override { return inner_.counters(); }
  std::string describe() const override { return inner_.describe(); }

 private:
  // Where a name's bytes are: a key in the bucket (a data object, or the snapshot's key read
  // through the SnapshotStore), and what the name shows.
  struct Resolved {
    bool in_snapshot = false;  // read through snapshot_ (pinned), else inner_
    std::string key;           // full key: the snapshot's name, or the data object
    uint64_t size = 0;
    std::string etag;
    int64_t mtime_sec = 0;
    std::optional<BranchEntry> entry;  // what the branch records for it (copy() reuses it)
  };
  // One change: the name (relative to the prefix) gets entry, or, with none, goes away.
  struct Change {
    std::string rel;
    std::optional<BranchEntry> entry;
    // entry names a data object other names refer to (a copy): it must still be referred to.
    bool shares = false;
  };
  // What a change replaced (old) and what it left (set; none when it erased the name): a record
  // write that surely did not happen takes the change back.
  struct Undo {
    std::string rel;
    std::optional<BranchEntry> old;
    std::optional<BranchEntry> set;
  };

  BranchStore(ObjectStore& inner, SnapshotStore& snapshot, BranchRecord record,
              const BranchOptions& options);

  Result<std::string> rel_of(std::string_view key) const;
  std::optional<Resolved> resolve_locked(std::string_view rel) const;
  std::optional<Resolved> resolve(std::string_view rel) const;
  // The bucket's key holding r's bytes (a snapshot's entry may name another key than its own).
  Result<std::string> bytes_key(const Resolved& r) const;
  Status check_writable() const;
  std::string new_data_target();
  std::string data_key(std::string_view target) const;
  // Applies changes to the record, writes it, and deletes data objects no name refers to.
  Status commit(std::vector<Change> changes);
  // Writes the record if the one in the bucket lacks generation gen. When the write surely
  // failed (the bucket's record is still the one this mount last wrote), undo is taken back.
  Status persist(uint64_t gen, const std::vector<Undo>& undo);
  // After a record write of generation `generation` got an error (or a precondition failure
  // that may answer this mount's own retried write): what the bucket's record says of it.
  enum class Outcome { kWritten, kEarlierWritten, kNotWritten, kTakenOver, kUnknown };
  Outcome read_back(uint64_t generation);
  void take_back_locked(const std::vector<Undo>& undo);
  // True if the branch has a pin (or its pins cannot be listed).
  bool pinned();
  // Not a writer: reads the record again if refresh_after has passed since it was last read.
  void refresh_if_due();
  void ref_locked(const BranchEntry& e, int delta, std::vector<std::string>* garbage);
  Result<std::string> upload_key(std::string_view upload_id);
  ObjectInfo data_info(std::string_view key, const ObjectInfo& written) const;
  BranchEntry data_entry(std::string target, const ObjectInfo& written) const;

  ObjectStore& inner_;
  SnapshotStore& snapshot_;
  const Manifest& manifest_;
  const std::string prefix_;
  const std::string data_root_;
  const std::string record_key_;
  const std::string pins_root_;
  const bool writer_;
  bool created_ = false;
  const std::chrono::milliseconds refresh_after_;
  Clock* const clock_;

  std::mutex persist_mu_;                         // serializes record writes; protects record_etag_
  std::string record_etag_;                       // of the record this mount last wrote or read
  mutable std::mutex mu_;                         // protects everything below
  BranchRecord record_;                           // with changes not yet written
  uint64_t gen_ = 0;                              // bumped by each change
  uint64_t persisted_gen_ = 0;                    // the newest generation in the bucket
  uint64_t seq_ = 0;                              // numbers this mount's data objects
  Status fenced_ = Status::ok();                  // not ok once another mount took the branch over
  std::map<std::string, int, std::less<>> refs_;  // data target -> names referring to it
  // Uploads in progress: upload id -> (name, data key).
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> uploads_;
  std::optional<BranchSweep> sweep_;                 // what start_sweep() did, once ended
  std::chrono::steady_clock::time_point read_at_{};  // when the record was last read (not a writer)
  bool refreshing_ = false;                          // a caller is reading it again

  std::jthread sweeper_;  // last: stopped and joined before anything it uses goes
};

}  // namespace warmfs

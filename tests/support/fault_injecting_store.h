// FaultInjectingStore: wraps an ObjectStore to fail, slow, truncate and count its calls.
//
// Faults are programmed per operation (writes included: put, each multipart step, copy,
// remove): fail the next N calls with a Status, fail every call
// until cleared, delay each call (a real sleep, so concurrency is real), truncate the next N
// range GETs to a number of bytes (as a buggy server or proxy would; a correct store never
// does this, so it tests the caller's defences), and run a hook before each GET (to block on
// a latch and make races deterministic). Every call is logged when it starts (so a test sees
// requests in flight), and its outcome filled in when it ends.
//
// Thread safe: mu_ guards the fault program and the log; the inner store is called without
// holding it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "objstore/object_store.h"

namespace warmfs {

class FaultInjectingStore final : public ObjectStore {
 public:
  enum class Op {
    kHead,
    kGetRange,
    kList,
    kPut,
    kCreateMultipart,
    kUploadPart,
    kUploadPartCopy,
    kCompleteMultipart,
    kAbortMultipart,
    kListUploads,
    kCopy,
    kRemove,
    kRemoveMany,
  };
  static constexpr int kOpCount = int(Op::kRemoveMany) + 1;
  struct Call {
    Op op;
    std::string key;          // list, list uploads: the prefix; copy: the destination
    uint64_t offset = 0;      // get_range; upload_part(_copy): the part number
    uint64_t length = 0;      // get_range: bytes asked for; put, upload_part: bytes sent
    Errc result = Errc::kOk;  // kOk also while the call is running
    size_t bytes = 0;         // get_range: bytes returned
  };

  explicit FaultInjectingStore(ObjectStore& inner) : inner_(inner) {}

  // The next n calls of op fail with status, without reaching the inner store.
  void fail_next(Op op, int n, Status status);
  // Every call of op fails with status until clear_faults().
  void fail_always(Op op, Status status);
  // Sleeps d before each call of op (zero: none).
  void set_delay(Op op, std::chrono::microseconds d);
  // The next n range GETs return at most keep_bytes bytes.
  void truncate_next(int n, size_t keep_bytes);
  // Runs before each range GET, outside any lock of this store.
  void set_before_get(std::function<void(std::string_view key, uint64_t offset)> hook);
  // Removes every fault, delay and hook (the log stays).
  void clear_faults();

  std::vector<Call> calls() const;
  size_t call_count(Op op) const;
  // Range GETs of key (that reached the store or failed here); with offset, of that range.
  size_t get_count(std::string_view key) const;
  size_t get_count(std::string_view key, uint64_t offset) const;
  // Calls started and not yet returned.
  size_t in_flight() const;
  // Body bytes returned by successful range GETs.
  uint64_t bytes_returned() const;
  // Faults that acted so far (failed calls and cut-short GETs), whatever clear_calls() did.
  uint64_t injected_count() const;
  void clear_calls();

  Result<ObjectInfo> head(std::string_view key) override;
  Result<size_t> get_range(std::string_view key, uint64_t offset, std::span<std::byte> out,
                           std::string_view if_match) override;
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
  Status abort_multipart(std::string_view key, std::string_view upload_id) override;
  Result<std::vector<MultipartUpload>> list_multipart_uploads(std::string_view prefix) override;
  // Counted and faulted as a copy (Op::kCopy).
  Result<ObjectInfo> replace_metadata(std::string_view key, const ObjectInfo& current,
                                      const ObjectHeaders& headers) override;
  Result<ObjectInfo> copy(std::string_view src_key, std::string_view dst_key,
                          std::string_view if_match_etag) override;
  Status remove(std::string_view key) override;
  Result<std::vector<DeleteError>> remove_many(std::span<const std::string> keys) override;
  ObjectStoreCounters counters() const override { return inner_.counters(); }
  std::string describe() const override { return inner_.describe(); }

 private:
  struct Program {
    int fail_count = 0;
    Status fail_status;
    bool fail_forever = false;
    Status forever_status;
    std::chrono::microseconds delay{0};
  };
  // Applies the delay, then returns the injected failure for op, or ok.
  Status before(Op op);
  // Appends call to the log; returns its position for finish().
  size_t start(Call call);
  void finish(size_t pos, Errc result, size_t bytes = 0);
  // Logs call, applies op's faults, else runs f (the inner store's method).
  template <typename R, typename F>
  R pass(Call call, F&& f);

  ObjectStore& inner_;
  mutable std::mutex mu_;  // protects programs_, truncate_*, before_get_, calls_
  Program programs_[kOpCount];
  int truncate_count_ = 0;
  size_t truncate_keep_ = 0;
  std::function<void(std::string_view, uint64_t)> before_get_;
  std::vector<Call> calls_;
  size_t in_flight_ = 0;
  uint64_t injected_ = 0;
};

}  // namespace warmfs

#include "support/fault_injecting_store.h"

#include <algorithm>
#include <thread>

namespace warmfs {

void FaultInjectingStore::fail_next(Op op, int n, Status status) {
  std::lock_guard lock(mu_);
  programs_[int(op)].fail_count = n;
  programs_[int(op)].fail_status = std::move(status);
}

void FaultInjectingStore::fail_always(Op op, Status status) {
  std::lock_guard lock(mu_);
  programs_[int(op)].fail_forever = true;
  programs_[int(op)].forever_status = std::move(status);
}

void FaultInjectingStore::set_delay(Op op, std::chrono::microseconds d) {
  std::lock_guard lock(mu_);
  programs_[int(op)].delay = d;
}

void FaultInjectingStore::truncate_next(int n, size_t keep_bytes) {
  std::lock_guard lock(mu_);
  truncate_count_ = n;
  truncate_keep_ = keep_bytes;
}

void FaultInjectingStore::set_before_get(
    std::function<void(std::string_view key, uint64_t offset)> hook) {
  std::lock_guard lock(mu_);
  before_get_ = std::move(hook);
}

void FaultInjectingStore::clear_faults() {
  std::lock_guard lock(mu_);
  for (auto& p : programs_) p = Program{};
  truncate_count_ = 0;
  before_get_ = nullptr;
}

std::vector<FaultInjectingStore::Call> FaultInjectingStore::calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

size_t FaultInjectingStore::call_count(Op op) const {
  std::lock_guard lock(mu_);
  return std::count_if(calls_.begin(), calls_.end(), [&](const Call& c) { return c.op == op; });
}

size_t FaultInjectingStore::get_count(std::string_view key) const {
  std::lock_guard lock(mu_);
  return std::count_if(calls_.begin(), calls_.end(),
                       [&](const Call& c) { return c.op == Op::kGetRange && c.key == key; });
}

size_t FaultInjectingStore::get_count(std::string_view key, uint64_t offset) const {
  std::lock_guard lock(mu_);
  return std::count_if(calls_.begin(), calls_.end(), [&](const Call& c) {
    return c.op == Op::kGetRange && c.key == key && c.offset == offset;
  });
}

size_t FaultInjectingStore::in_flight() const {
  std::lock_guard lock(mu_);
  return in_flight_;
}

uint64_t FaultInjectingStore::bytes_returned() const {
  std::lock_guard lock(mu_);
  uint64_t n = 0;
  for (const Call& c : calls_) n += c.bytes;
  return n;
}

uint64_t FaultInjectingStore::injected_count() const {
  std::lock_guard lock(mu_);
  return injected_;
}

void FaultInjectingStore::clear_calls() {
  std::lock_guard lock(mu_);
  calls_.clear();
}

Status FaultInjectingStore::before(Op op) {
  std::chrono::microseconds delay;
  Status injected;
  {
    std::lock_guard lock(mu_);
    Program& p = programs_[int(op)];
    delay = p.delay;
    if (p.fail_forever) {
      injected = p.forever_status;
    } else if (p.fail_count > 0) {
      --p.fail_count;
      injected = p.fail_status;
    }
    if (!injected.is_ok()) ++injected_;
  }
  if (delay.count() > 0) std::this_thread::sleep_for(delay);
  return injected;
}

size_t FaultInjectingStore::start(Call call) {
  std::lock_guard lock(mu_);
  calls_.push_back(std::move(call));
  ++in_flight_;
  return calls_.size() - 1;
}

void FaultInjectingStore::finish(size_t pos, Errc result, size_t bytes) {
  std::lock_guard lock(mu_);
  --in_flight_;
  if (pos >= calls_.size()) return;  // the log was cleared meanwhile
  calls_[pos].result = result;
  calls_[pos].bytes = bytes;
}

Result<ObjectInfo> FaultInjectingStore::head(std::string_view key) {
  const size_t pos = start(Call{Op::kHead, std::string(key)});
  Status injected = before(Op::kHead);
  if (!injected.is_ok()) {
    finish(pos, injected.code());
    return injected;
  }
  Result<ObjectInfo> r = inner_.head(key);
  finish(pos, r.code());
  return r;
}

Result<size_t> FaultInjectingStore::get_range(std::string_view key, uint64_t offset,
                                              std::span<std::byte> out, std::string_view if_match) {
  std::function<void(std::string_view, uint64_t)> hook;
  {
    std::lock_guard lock(mu_);
    hook = before_get_;
  }
  if (hook) hook(key, offset);
  const size_t pos = start(Call{Op::kGetRange, std::string(key), offset, out.size()});
  Status injected = before(Op::kGetRange);
  if (!injected.is_ok()) {
    finish(pos, injected.code());
    return injected;
  }
  Result<size_t> r = inner_.get_range(key, offset, out, if_match);
  if (!r.is_ok()) {
    finish(pos, r.code());
    return r;
  }
  size_t n = *r;
  {
    std::lock_guard lock(mu_);
    if (truncate_count_ > 0) {
      --truncate_count_;
      if (n > truncate_keep_) ++injected_;
      n = std::min(n, truncate_keep_);
    }
  }
  finish(pos, Errc::kOk, n);
  return n;
}

Result<ListPage> FaultInjectingStore::list(const ListRequest& request) {
  const size_t pos = start(Call{Op::kList, request.prefix});
  Status injected = before(Op::kList);
  if (!injected.is_ok()) {
    finish(pos, injected.code());
    return injected;
  }
  Result<ListPage> r = inner_.list(request);
  finish(pos, r.code());
  return r;
}

template <typename R, typename F>
R FaultInjectingStore::pass(Call call, F&& f) {
  const Op op = call.op;
  const size_t pos = start(std::move(call));
  Status injected = before(op);
  if (!injected.is_ok()) {
    finish(pos, injected.code());
    return injected;
  }
  R r = f();
  finish(pos, r.code());
  return r;
}

Result<ObjectInfo> FaultInjectingStore::put(std::string_view key, std::span<const std::byte> body,
                                            const PutOptions& options) {
  return pass<Result<ObjectInfo>>(Call{Op::kPut, std::string(key), 0, body.size()},
                                  [&] { return inner_.put(key, body, options); });
}

Result<std::string> FaultInjectingStore::create_multipart(std::string_view key,
                                                          const ObjectHeaders& headers) {
  return pass<Result<std::string>>(Call{Op::kCreateMultipart, std::string(key)},
                                   [&] { return inner_.create_multipart(key, headers); });
}

Result<ObjectInfo> FaultInjectingStore::replace_metadata(std::string_view key,
                                                         const ObjectInfo& current,
                                                         const ObjectHeaders& headers) {
  return pass<Result<ObjectInfo>>(Call{Op::kCopy, std::string(key)},
                                  [&] { return inner_.replace_metadata(key, current, headers); });
}

Result<CompletedPart> FaultInjectingStore::upload_part(std::string_view key,
                                                       std::string_view upload_id, int part_number,
                                                       std::span<const std::byte> body) {
  return pass<Result<CompletedPart>>(
      Call{Op::kUploadPart, std::string(key), uint64_t(part_number), body.size()},
      [&] { return inner_.upload_part(key, upload_id, part_number, body); });
}

Result<CompletedPart> FaultInjectingStore::upload_part_copy(
    std::string_view key, std::string_view upload_id, int part_number, std::string_view src_key,
    uint64_t first, uint64_t last, std::string_view src_if_match) {
  return pass<Result<CompletedPart>>(
      Call{Op::kUploadPartCopy, std::string(key), uint64_t(part_number), last - first + 1}, [&] {
        return inner_.upload_part_copy(key, upload_id, part_number, src_key, first, last,
                                       src_if_match);
      });
}

Result<ObjectInfo> FaultInjectingStore::complete_multipart(std::string_view key,
                                                           std::string_view upload_id,
                                                           std::span<const CompletedPart> parts) {
  return pass<Result<ObjectInfo>>(Call{Op::kCompleteMultipart, std::string(key)},
                                  [&] { return inner_.complete_multipart(key, upload_id, parts); });
}

Status FaultInjectingStore::abort_multipart(std::string_view key, std::string_view upload_id) {
  return pass<Status>(Call{Op::kAbortMultipart, std::string(key)},
                      [&] { return inner_.abort_multipart(key, upload_id); });
}

Result<std::vector<MultipartUpload>> FaultInjectingStore::list_multipart_uploads(
    std::string_view prefix) {
  return pass<Result<std::vector<MultipartUpload>>>(
      Call{Op::kListUploads, std::string(prefix)},
      [&] { return inner_.list_multipart_uploads(prefix); });
}

Result<ObjectInfo> FaultInjectingStore::copy(std::string_view src_key, std::string_view dst_key,
                                             std::string_view if_match_etag) {
  return pass<Result<ObjectInfo>>(Call{Op::kCopy, std::string(dst_key)},
                                  [&] { return inner_.copy(src_key, dst_key, if_match_etag); });
}

Status FaultInjectingStore::remove(std::string_view key) {
  return pass<Status>(Call{Op::kRemove, std::string(key)}, [&] { return inner_.remove(key); });
}

Result<std::vector<DeleteError>> FaultInjectingStore::remove_many(
    std::span<const std::string> keys) {
  return pass<Result<std::vector<DeleteError>>>(
      Call{Op::kRemoveMany, keys.empty() ? std::string() : keys.front(), 0, keys.size()},
      [&] { return inner_.remove_many(keys); });
}

}  // namespace warmfs

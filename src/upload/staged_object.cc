#include "upload/staged_object.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/log.h"

namespace warmfs {

// ---- Uploader ------------------------------------------------------------------------------

Uploader::Uploader(ObjectStore& store, StagingArea& staging, BlockCache* write_through,
                   Clock& clock, UploaderOptions options)
    : store_(store),
      staging_(staging),
      write_through_(write_through),
      clock_(clock),
      options_(std::move(options)),
      parts_(std::max<uint32_t>(1, options_.threads), "warmfs-upload"),
      fill_(1, "warmfs-wthrough") {}

Uploader::~Uploader() {
  parts_.shutdown();
  fill_.shutdown();
  // A last try at the aborts that failed; what is left stays open in the journal, for the
  // next mount on this staging dir.
  if (staging_.failed_aborts() > 0) {
    const size_t left = staging_.retry_aborts(store_);
    if (left > 0) {
      log::warn(
          "{} multipart uploads could not be aborted; the next mount on this staging dir "
          "aborts them",
          left);
    }
  }
}

std::shared_ptr<StagedObject> Uploader::make(std::string key) {
  return std::make_shared<StagedObject>(*this, std::move(key));
}

UploadCounters Uploader::counters() const {
  UploadCounters c;
  c.uploads_in_flight = in_flight_.load();
  c.upload_failures = failures_.load();
  c.completed_uploads = completed_.load();
  c.write_through_bytes = write_through_bytes_.load();
  c.staged_objects = staged_.load();
  return c;
}

// ---- StagedObject --------------------------------------------------------------------------

StagedObject::StagedObject(Uploader& uploader, std::string key)
    : up_(uploader), key_(std::move(key)) {
  mtime_sec_ = now_sec();
}

StagedObject::~StagedObject() {
  if (staged_) up_.staged_.fetch_sub(1);
  if (!upload_id_.empty()) {
    // Only reached when a flush was never attempted after parts went up (the mount is going
    // away): abort, so the parts do not linger.
    Status st = up_.store_.abort_multipart(key_, upload_id_);
    if (st.is_ok()) {
      up_.staging_.upload_ended(upload_id_);
    } else {
      up_.staging_.abort_failed(key_, upload_id_);
    }
  }
}

int64_t StagedObject::now_sec() const {
  return std::chrono::system_clock::to_time_t(up_.clock_.wall_now());
}

Status StagedObject::stage_empty() {
  std::unique_lock lock(mu_);
  if (staged_) {
    lock.unlock();
    return truncate(0);
  }
  lock.unlock();
  WARMFS_ASSIGN_OR_RETURN(io::UniqueFd fd, up_.staging_.new_file());
  lock.lock();
  if (staged_) {  // another handle staged it meanwhile
    lock.unlock();
    return truncate(0);
  }
  fd_ = std::move(fd);
  staged_ = true;
  up_.staged_.fetch_add(1);
  size_ = 0;
  high_water_ = 0;
  bump_locked(0, 1);
  ++gen_;
  mtime_sec_ = now_sec();
  return Status::ok();
}

Status StagedObject::stage_from(uint64_t size, const Source& source) {
  {
    std::lock_guard lock(mu_);
    if (staged_) return Status::ok();
  }
  WARMFS_ASSIGN_OR_RETURN(io::UniqueFd fd, up_.staging_.new_file());
  std::vector<std::byte> buf(std::min<uint64_t>(size, 8ull << 20));
  uint64_t off = 0;
  while (off < size) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - off));
    WARMFS_ASSIGN_OR_RETURN(size_t got, source(off, std::span(buf.data(), want)));
    if (got != want) return Status(Errc::kIo, "the object ended early while staging " + key());
    size_t done = 0;
    while (done < got) {
      ssize_t w = ::pwrite(fd.get(), buf.data() + done, got - done, static_cast<off_t>(off + done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0)
        return io::errno_status(errno, "cannot stage " + key() + " in " + up_.staging_.dir());
      done += static_cast<size_t>(w);
    }
    off += got;
  }
  std::lock_guard lock(mu_);
  if (staged_) return Status::ok();
  fd_ = std::move(fd);
  staged_ = true;
  up_.staged_.fetch_add(1);
  size_ = size;
  high_water_ = 0;  // bytes that were already there are not a reason to upload parts early
  return Status::ok();
}

bool StagedObject::staged() const {
  std::lock_guard lock(mu_);
  return staged_;
}

void StagedObject::ensure_parts_locked(int n) {
  if (static_cast<int>(parts_.size()) < n) parts_.resize(static_cast<size_t>(n));
}

void StagedObject::bump_locked(uint64_t begin, uint64_t end) {
  const PartPlan& plan = up_.options_.plan;
  const int first = plan.part_at(begin);
  const int last = end > begin ? plan.part_at(end - 1) : first;
  ensure_parts_locked(std::min(last, kMaxPartNumber));
  for (int n = first; n <= last && n <= kMaxPartNumber; ++n) ++parts_[n - 1].gen;
}

Result<size_t> StagedObject::write(uint64_t offset, std::span<const std::byte> data) {
  if (data.empty()) return size_t{0};
  const uint64_t end = offset + data.size();
  if (end > up_.options_.plan.max_object_size()) {
    return Status(Errc::kInvalidArgument, "file too large for one object");
  }
  int fd;
  uint64_t from;
  {
    std::lock_guard lock(mu_);
    if (!staged_) return Status(Errc::kInternal, "write to an object that is not staged");
    // A write past the end changes the hole before it too: the part that held the old end
    // grows (an upload of it taken while the file was shorter no longer counts).
    from = std::min(offset, size_);
    bump_locked(from, end);  // before: an upload reading the part now will not count
    ++gen_;
    fd = fd_.get();
  }
  size_t done = 0;
  Status failure;
  while (done < data.size()) {
    ssize_t w =
        ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      failure = io::errno_status(errno, "cannot write the staged copy of " + key());
      break;
    }
    done += static_cast<size_t>(w);
  }
  std::lock_guard lock(mu_);
  from = std::min(from, size_);
  bump_locked(from, end);  // after: an upload that read the part meanwhile will not count
  ++gen_;
  mtime_sec_ = now_sec();
  if (done == 0) return failure;
  // What was written counts, as on a local disk that fills up part way.
  size_ = std::max(size_, offset + done);
  high_water_ = std::max(high_water_, offset + done);
  schedule_background_locked();
  return done;
}

Status StagedObject::truncate(uint64_t size) {
  if (size > up_.options_.plan.max_object_size()) {
    return Status(Errc::kInvalidArgument, "file too large for one object");
  }
  int fd;
  uint64_t lo, hi;
  {
    std::lock_guard lock(mu_);
    if (!staged_) return Status(Errc::kInternal, "truncate of an object that is not staged");
    lo = std::min(size, size_);
    hi = std::max(size, size_);
    bump_locked(lo, std::max(hi, lo + 1));
    ++gen_;
    fd = fd_.get();
  }
  while (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (errno != EINTR)
      return io::errno_status(errno, "cannot truncate the staged copy of " + key());
  }
  std::lock_guard lock(mu_);
  bump_locked(lo, std::max(hi, lo + 1));
  ++gen_;
  size_ = size;
  high_water_ = std::min(high_water_, size);
  background_next_ = std::min(background_next_, up_.options_.plan.part_at(lo));
  mtime_sec_ = now_sec();
  return Status::ok();
}

Status StagedObject::read_full(uint64_t offset, std::span<std::byte> out) const {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t r =
        ::pread(fd_.get(), out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return io::errno_status(errno, "cannot read the staged copy of " + key_);
    if (r == 0) {
      // A hole past the end written meanwhile: the bytes are zeros.
      std::fill(out.begin() + static_cast<ptrdiff_t>(done), out.end(), std::byte{0});
      break;
    }
    done += static_cast<size_t>(r);
  }
  return Status::ok();
}

Result<size_t> StagedObject::read(uint64_t offset, std::span<std::byte> out) {
  uint64_t size;
  {
    std::lock_guard lock(mu_);
    if (!staged_) return Status(Errc::kInternal, "read of an object that is not staged");
    size = size_;
  }
  if (offset >= size) return size_t{0};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), size - offset));
  WARMFS_RETURN_IF_ERROR(read_full(offset, out.first(n)));
  return n;
}

void StagedObject::schedule_background_locked() {
  if (discarded_ || completing_ || size_ <= up_.options_.single_put_max) return;
  const PartPlan& plan = up_.options_.plan;
  // A part goes up once it is full and the writer is past it: it is not the last part.
  int n = background_next_;
  for (; n <= kMaxPartNumber && plan.part_end(n) < size_ && plan.part_end(n) <= high_water_; ++n) {
    if (part_dirty(n) && !parts_[n - 1].inflight) submit_part_locked(n);
  }
  background_next_ = n;
}

void StagedObject::submit_part_locked(int n) {
  parts_[n - 1].inflight = true;  // reserved; upload_part() clears it when done
  ++inflight_;
  auto self = shared_from_this();
  if (!up_.parts_.submit([self, n] { self->upload_part(n); })) {
    parts_[n - 1].inflight = false;
    --inflight_;
    ++errors_;
    last_error_ = Status(Errc::kCancelled, "the mount is shutting down");
  }
}

void StagedObject::upload_part(int n) {
  std::unique_lock lock(mu_);
  auto finish = [&](Status failure) {
    parts_[n - 1].inflight = false;
    --inflight_;
    if (!failure.is_ok()) {
      ++errors_;
      last_error_ = std::move(failure);
    }
    cv_.notify_all();
  };
  cv_.wait(lock, [&] { return !creating_; });
  const PartPlan& plan = up_.options_.plan;
  const uint64_t off = plan.part_offset(n);
  if (discarded_ || off >= size_ || !part_dirty(n)) return finish(Status::ok());
  if (upload_id_.empty()) {
    creating_ = true;
    const std::string key = key_;
    const auto headers_fn = headers_;
    lock.unlock();
    auto id = up_.store_.create_multipart(key, headers_fn ? headers_fn() : ObjectHeaders{});
    lock.lock();
    creating_ = false;
    cv_.notify_all();
    if (!id.is_ok()) return finish(std::move(id).take_status());
    upload_id_ = *id;
    up_.staging_.upload_started(key, upload_id_);
    if (key != key_ || discarded_) {
      // Renamed or deleted meanwhile: this upload is of no use. This part stops counting as
      // in flight first: abort_upload() waits for every part in flight, this one included.
      finish(Status::ok());
      abort_upload(lock);
      return;
    }
  }
  const uint64_t gen = parts_[n - 1].gen;
  const uint64_t epoch = epoch_;
  const std::string key = key_;
  const std::string upload_id = upload_id_;
  const uint64_t len = std::min(plan.part_size(n), size_ - off);
  lock.unlock();

  up_.in_flight_.fetch_add(1);
  std::vector<std::byte> buf(len);
  Status st = read_full(off, buf);
  Result<CompletedPart> part =
      st.is_ok() ? up_.store_.upload_part(key, upload_id, n, buf) : Result<CompletedPart>(st);
  up_.in_flight_.fetch_sub(1);

  lock.lock();
  if (!part.is_ok()) {
    log::warn("upload of part {} of {:?} failed: {}", n, key, part.status().to_string());
    return finish(std::move(part).take_status());
  }
  if (epoch == epoch_ && upload_id == upload_id_) {
    Part& p = parts_[n - 1];
    p.clean_gen = gen;
    p.epoch = epoch;
    p.etag = part->etag;
    p.size = len;
  }
  finish(Status::ok());
}

void StagedObject::abort_upload(std::unique_lock<std::mutex>& lock) {
  cv_.wait(lock, [&] { return inflight_ == 0 && !creating_; });
  if (upload_id_.empty()) return;
  const std::string key = key_, id = upload_id_;
  upload_id_.clear();
  ++epoch_;
  background_next_ = 1;
  lock.unlock();
  Status st = up_.store_.abort_multipart(key, id);
  if (st.is_ok()) {
    up_.staging_.upload_ended(id);
  } else {
    log::warn(
        "cannot abort the multipart upload of {:?}: {} (tried again after the next upload "
        "that succeeds, and when the mount ends)",
        key, st.to_string());
    up_.staging_.abort_failed(key, id);
  }
  lock.lock();
}

bool StagedObject::dirty() const {
  std::lock_guard lock(mu_);
  return !discarded_ && gen_ != committed_gen_;
}

bool StagedObject::unattempted_changes() const {
  std::lock_guard lock(mu_);
  return !discarded_ && gen_ != committed_gen_ && gen_ != attempted_gen_;
}

Result<ObjectInfo> StagedObject::flush() {
  std::lock_guard flush_lock(flush_mu_);
  std::unique_lock lock(mu_);
  if (discarded_ || gen_ == committed_gen_) return ObjectInfo{key_, size_, "", mtime_sec_};
  attempted_gen_ = gen_;
  Result<ObjectInfo> r =
      size_ <= up_.options_.single_put_max ? flush_single(lock) : flush_multipart(lock);
  if (r.is_ok()) {
    up_.completed_.fetch_add(1);
    // The bucket answers again: aborts that failed are tried once more, off this thread.
    if (up_.staging_.failed_aborts() > 0) {
      up_.parts_.submit([&up = up_] { up.staging_.retry_aborts(up.store_); });
    }
  } else {
    up_.failures_.fetch_add(1);
    log::error("upload of {:?} failed, the data is not in the bucket: {}", key_,
               r.status().to_string());
  }
  return r;
}

Result<ObjectInfo> StagedObject::flush_single(std::unique_lock<std::mutex>& lock) {
  abort_upload(lock);  // the object shrank below the part size after parts went up
  const uint64_t gen = gen_;
  const uint64_t size = size_;
  const std::string key = key_;
  const auto headers_fn = headers_;
  lock.unlock();
  PutOptions options;
  if (headers_fn) {
    ObjectHeaders h = headers_fn();
    options.content_type = std::move(h.content_type);
    options.metadata = std::move(h.metadata);
  }
  std::vector<std::byte> body(size);
  Status st = read_full(0, body);
  if (!st.is_ok()) {
    lock.lock();
    return st;
  }
  up_.in_flight_.fetch_add(1);
  auto r = up_.store_.put(key, body, options);
  up_.in_flight_.fetch_sub(1);
  lock.lock();
  if (!r.is_ok()) return std::move(r).take_status();
  committed_gen_ = std::max(committed_gen_, gen);
  return r;
}

Result<ObjectInfo> StagedObject::flush_multipart(std::unique_lock<std::mutex>& lock) {
  const uint64_t errors_before = errors_;
  // Upload every part not in the bucket yet, and wait for them; again if a concurrent write
  // dirtied one meanwhile.
  while (true) {
    cv_.wait(lock, [&] { return !creating_; });
    const int parts = up_.options_.plan.parts_for(size_);
    ensure_parts_locked(parts);
    bool all_clean = true;
    for (int n = 1; n <= parts; ++n) {
      // A part uploaded while the object was shorter is not this object's part.
      const uint64_t want =
          std::min(up_.options_.plan.part_size(n), size_ - up_.options_.plan.part_offset(n));
      if (!part_dirty(n) && !parts_[n - 1].inflight && parts_[n - 1].size != want)
        ++parts_[n - 1].gen;
      if (part_dirty(n)) {
        all_clean = false;
        if (!parts_[n - 1].inflight) submit_part_locked(n);
      }
    }
    if (all_clean) break;
    cv_.wait(lock, [&] {
      for (int n = 1; n <= up_.options_.plan.parts_for(size_); ++n) {
        if (parts_[n - 1].inflight) return false;
      }
      return !creating_;
    });
    if (errors_ != errors_before) {
      Status failure = last_error_;
      abort_upload(lock);
      return failure;
    }
    if (size_ <= up_.options_.single_put_max) return flush_single(lock);  // truncated meanwhile
  }
  const int parts = up_.options_.plan.parts_for(size_);
  std::vector<CompletedPart> done;
  done.reserve(static_cast<size_t>(parts));
  for (int n = 1; n <= parts; ++n)
    done.push_back(CompletedPart{n, parts_[n - 1].etag, parts_[n - 1].size});
  const uint64_t gen = gen_;
  const std::string key = key_, id = upload_id_;
  completing_ = true;
  lock.unlock();
  up_.in_flight_.fetch_add(1);
  auto r = up_.store_.complete_multipart(key, id, done);
  up_.in_flight_.fetch_sub(1);
  lock.lock();
  completing_ = false;
  if (!r.is_ok()) {
    abort_upload(lock);
    return std::move(r).take_status();
  }
  up_.staging_.upload_ended(id);
  upload_id_.clear();
  ++epoch_;
  background_next_ = 1;
  committed_gen_ = std::max(committed_gen_, gen);
  if (gen_ != committed_gen_) schedule_background_locked();
  return r;
}

uint64_t StagedObject::size() const {
  std::lock_guard lock(mu_);
  return size_;
}

int64_t StagedObject::mtime_sec() const {
  std::lock_guard lock(mu_);
  return mtime_sec_;
}

void StagedObject::set_mtime(int64_t mtime_sec) {
  std::lock_guard lock(mu_);
  mtime_sec_ = mtime_sec;
}

void StagedObject::set_headers(std::function<ObjectHeaders()> headers) {
  std::lock_guard lock(mu_);
  headers_ = std::move(headers);
}

std::string StagedObject::key() const {
  std::lock_guard lock(mu_);
  return key_;
}

void StagedObject::set_key(std::string key) {
  std::unique_lock lock(mu_);
  if (key == key_) return;
  abort_upload(lock);  // parts uploaded under the old key cannot complete the new one
  key_ = std::move(key);
  ++fill_seq_;  // a write-through under the old key is of no use now
  fill_pending_ = false;
}

void StagedObject::discard() {
  std::unique_lock lock(mu_);
  discarded_ = true;
  ++fill_seq_;
  fill_pending_ = false;
  abort_upload(lock);
}

void StagedObject::undiscard() {
  std::lock_guard lock(mu_);
  discarded_ = false;  // the upload discard() aborted starts afresh at the next flush
}

bool StagedObject::write_through_pending() const {
  std::lock_guard lock(mu_);
  return fill_pending_;
}

void StagedObject::write_through(const ObjectInfo& version, std::function<void()> on_done) {
  if (up_.write_through_ == nullptr || version.etag.empty()) {
    if (on_done) on_done();
    return;
  }
  uint64_t seq = 0, gen = 0;
  bool nothing_to_fill = false;
  {
    std::lock_guard lock(mu_);
    nothing_to_fill = !staged_ || discarded_;
    if (!nothing_to_fill) {
      seq = ++fill_seq_;
      gen = gen_;
      fill_pending_ = true;
    }
  }
  // on_done takes the filesystem's locks, which look at this object again (under mu_): it
  // runs with mu_ let go.
  if (nothing_to_fill) {
    if (on_done) on_done();
    return;
  }
  auto self = shared_from_this();
  const bool queued = up_.fill_.submit([self, version, seq, gen, on_done = std::move(on_done)] {
    self->fill(version, seq, gen);
    if (on_done) on_done();
  });
  if (!queued) {
    std::lock_guard lock(mu_);
    fill_pending_ = false;
  }
}

void StagedObject::fill(const ObjectInfo& version, uint64_t seq, uint64_t gen) {
  const uint64_t chunk = up_.options_.chunk_size;
  BlockCache& cache = *up_.write_through_;
  auto current = [&] {
    std::lock_guard lock(mu_);
    return seq == fill_seq_ && gen == gen_ && !discarded_ && size_ == version.size;
  };
  for (uint64_t i = 0; i * chunk < version.size; ++i) {
    if (!current()) break;
    const uint64_t off = i * chunk;
    std::vector<std::byte> bytes(std::min(chunk, version.size - off));
    if (!read_full(off, bytes).is_ok()) break;
    const size_t n = bytes.size();
    cache.put(ChunkKey{up_.options_.bucket, version.key, version.etag, i},
              make_chunk(std::move(bytes)));
    up_.write_through_bytes_.fetch_add(n);
    // Let a tier with a write queue catch up, so the chunks are stored, not dropped.
    if (i % 32 == 31) cache.drain();
  }
  cache.drain();
  std::lock_guard lock(mu_);
  if (seq == fill_seq_) fill_pending_ = false;
}

}  // namespace warmfs

#include "snapshot/branch_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "common/log.h"

namespace warmfs {
namespace {

using Kind = BranchEntry::Kind;

std::string new_writer_id() {
  std::random_device rd;
  const uint64_t id = (uint64_t{rd()} << 32) ^ rd();
  return fmt::format("{:016x}", id);
}

// The smallest string greater than every string starting with p (p ends in '/').
std::string past(std::string p) {
  p.back() = static_cast<char>(p.back() + 1);
  return p;
}

}  // namespace

BranchStore::BranchStore(ObjectStore& inner, SnapshotStore& snapshot, BranchRecord record,
                         const BranchOptions& options)
    : inner_(inner),
      snapshot_(snapshot),
      manifest_(snapshot.manifest()),
      prefix_(record.prefix),
      data_root_(branch_data_root(record.prefix, record.branch)),
      record_key_(branch_record_key(record.prefix, record.branch)),
      pins_root_(branch_pins_root(record.prefix, record.branch)),
      writer_(options.writer),
      refresh_after_(options.clock != nullptr ? options.refresh_after
                                              : std::chrono::milliseconds{0}),
      clock_(options.clock),
      record_(std::move(record)) {
  for (const auto& [rel, e] : record_.entries) ref_locked(e, 1, nullptr);
  if (clock_ != nullptr) read_at_ = clock_->now();
}

Result<std::unique_ptr<BranchStore>> BranchStore::open(ObjectStore& inner, SnapshotStore& snapshot,
                                                       const BranchOptions& o) {
  const Manifest& m = snapshot.manifest();
  const std::string key = branch_record_key(m.prefix(), o.name);
  ObjectInfo head;
  auto loaded = load_branch_record(inner, m.prefix(), o.name, &head);
  std::string etag = std::move(head.etag);
  BranchRecord r;
  if (loaded.is_ok()) {
    r = std::move(*loaded);
    if (r.bucket != m.bucket()) {
      return Status(Errc::kCorrupt, fmt::format("{} is the record of a branch of s3://{}/{}", key,
                                                r.bucket, r.prefix));
    }
    if (r.snapshot_keys != m.size() || r.snapshot_created != m.created_sec()) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("branch '{}' is of another snapshot ('{}': {} keys taken at {}), "
                                "not of this one ({} keys taken at {})",
                                o.name, r.snapshot, r.snapshot_keys, r.snapshot_created, m.size(),
                                m.created_sec()));
    }
  } else if (loaded.code() == Errc::kNotFound) {
    if (!o.writer) {
      return Status(Errc::kNotFound, fmt::format("no branch '{}' ({} has no {}; a writable mount "
                                                 "creates it)",
                                                 o.name, inner.describe(), key));
    }
    r.bucket = m.bucket();
    r.prefix = m.prefix();
    r.branch = o.name;
    r.snapshot = o.snapshot;
    r.snapshot_keys = m.size();
    r.snapshot_created = m.created_sec();
    r.created_sec = o.now_sec;
  } else {
    return loaded.status();
  }
  const bool create = etag.empty();
  if (o.writer) {
    // This mount becomes the branch's writer: the record names it, written over exactly the
    // record read (or created only if there is none).
    r.writer = new_writer_id();
    r.generation += 1;
    r.updated_sec = o.now_sec;
    const std::string bytes = encode_branch_record(r);
    PutOptions put;
    put.content_type = "application/json";
    if (create) {
      put.if_none_match = true;
    } else {
      put.if_match = etag;
    }
    auto written = inner.put(key, std::as_bytes(std::span(bytes.data(), bytes.size())), put);
    if (!written.is_ok()) {
      if (written.code() == Errc::kPreconditionFailed) {
        return Status(Errc::kPreconditionFailed,
                      fmt::format("branch '{}' changed while this mount opened it (another "
                                  "mount of it?); mount again",
                                  o.name));
      }
      return written.status();
    }
    etag = written->etag;
  }
  auto store = std::unique_ptr<BranchStore>(new BranchStore(inner, snapshot, std::move(r), o));
  store->record_etag_ = etag;
  store->created_ = create;
  return store;
}

BranchRecord BranchStore::record() const {
  std::lock_guard lock(mu_);
  return record_;
}

Result<std::string> BranchStore::rel_of(std::string_view key) const {
  if (key.size() <= prefix_.size() || key.compare(0, prefix_.size(), prefix_) != 0) {
    return Status(Errc::kNotFound, fmt::format("{} is not below the branch's prefix", key));
  }
  return std::string(key.substr(prefix_.size()));
}

std::optional<BranchStore::Resolved> BranchStore::resolve_locked(std::string_view rel) const {
  Resolved r;
  auto it = record_.entries.find(rel);
  if (it != record_.entries.end()) {
    const BranchEntry& e = it->second;
    if (e.kind == Kind::kDeleted) return std::nullopt;
    r.in_snapshot = e.kind == Kind::kSnapshot;
    r.key = r.in_snapshot ? prefix_ + e.target : data_key(e.target);
    r.size = e.size;
    r.etag = e.etag;
    r.mtime_sec = e.mtime_sec;
    r.entry = e;
    return r;
  }
  const auto i = manifest_.find(rel);
  if (!i) return std::nullopt;
  r.in_snapshot = true;
  r.key = prefix_ + std::string(rel);
  r.size = manifest_.object_size(*i);
  r.etag = manifest_.etag(*i);
  r.mtime_sec = manifest_.mtime_sec(*i);
  return r;
}

Result<std::string> BranchStore::bytes_key(const Resolved& r) const {
  return r.in_snapshot ? snapshot_.bytes_key(r.key) : Result<std::string>(r.key);
}

std::optional<BranchStore::Resolved> BranchStore::resolve(std::string_view rel) const {
  std::lock_guard lock(mu_);
  return resolve_locked(rel);
}

Status BranchStore::check_writable() const {
  if (!writer_) return Status(Errc::kReadOnly, "the branch is mounted read-only");
  std::lock_guard lock(mu_);
  return fenced_;
}

std::string BranchStore::data_key(std::string_view target) const {
  return data_root_ + std::string(target);
}

std::string BranchStore::new_data_target() {
  std::lock_guard lock(mu_);
  return fmt::format("{}/{:08}", record_.writer, ++seq_);
}

ObjectInfo BranchStore::data_info(std::string_view key, const ObjectInfo& written) const {
  ObjectInfo o = written;
  o.key = std::string(key);
  o.version_id.clear();
  return o;
}

BranchEntry BranchStore::data_entry(std::string target, const ObjectInfo& written) const {
  return BranchEntry{Kind::kData, std::move(target), written.size, written.etag, written.mtime_sec};
}

void BranchStore::ref_locked(const BranchEntry& e, int delta, std::vector<std::string>* garbage) {
  if (e.kind != Kind::kData) return;
  int& n = refs_[e.target];
  n += delta;
  if (n <= 0) {
    refs_.erase(e.target);
    if (garbage != nullptr) garbage->push_back(data_key(e.target));
  }
}

Status BranchStore::commit(std::vector<Change> changes) {
  std::vector<std::string> garbage;
  std::vector<Undo> undo;
  uint64_t gen = 0;
  {
    std::lock_guard lock(mu_);
    for (const Change& c : changes) {
      // A copy whose source was replaced or deleted since it was looked at: its data object
      // may be gone.
      if (c.shares && c.entry && c.entry->kind == Kind::kData &&
          refs_.count(c.entry->target) == 0) {
        return Status(Errc::kPreconditionFailed, fmt::format("the source of {} changed", c.rel));
      }
    }
    undo.reserve(changes.size());
    for (Change& c : changes) {
      auto it = record_.entries.find(c.rel);
      std::optional<BranchEntry> old;
      if (it != record_.entries.end()) old = it->second;
      std::optional<BranchEntry> next = std::move(c.entry);
      if (!next && manifest_.find(c.rel)) next = BranchEntry{};  // a tombstone hides it
      if (next) ref_locked(*next, 1, nullptr);
      if (old) ref_locked(*old, -1, &garbage);
      undo.push_back(Undo{c.rel, old, next});
      if (next) {
        record_.entries.insert_or_assign(c.rel, std::move(*next));
      } else if (it != record_.entries.end()) {
        record_.entries.erase(it);
      }
    }
    gen = ++gen_;
  }
  WARMFS_RETURN_IF_ERROR(persist(gen, undo));
  if (!garbage.empty() && !pinned()) {
    auto removed = inner_.remove_many(garbage);
    if (!removed.is_ok() || !removed->empty()) {
      log::warn("branch '{}': could not delete {} data objects no name refers to: {}",
                record_.branch, garbage.size(),
                removed.is_ok() ? removed->front().key : removed.status().to_string());
    }
  }
  return Status::ok();
}

bool BranchStore::pinned() {
  // Asked after the record without the garbage is in the bucket: a snapshot that pins the
  // branch and then reads its record either finds the pin here or reads a record that does not
  // name the garbage.
  auto pins = inner_.list(ListRequest{pins_root_, "", "", 1});
  if (!pins.is_ok()) {
    log::warn("branch '{}': cannot list its pins, so it keeps its data objects: {}", record_.branch,
              pins.status().to_string());
    return true;
  }
  return !pins->objects.empty();
}

Status BranchStore::persist(uint64_t gen, const std::vector<Undo>& undo) {
  std::lock_guard persist_lock(persist_mu_);
  Status failed = Status::ok();
  // A second pass only after finding that an earlier write of this mount, reported failed, is
  // the bucket's record after all: the record is written again over that one.
  for (int pass = 0; pass < 2; ++pass) {
    std::string bytes;
    uint64_t writing = 0;
    uint64_t generation = 0;
    {
      std::lock_guard lock(mu_);
      if (!fenced_.is_ok()) return fenced_;
      if (persisted_gen_ >= gen) return Status::ok();  // a record written meanwhile holds it
      writing = gen_;
      record_.generation += 1;
      generation = record_.generation;
      bytes = encode_branch_record(record_);
    }
    PutOptions put;
    put.content_type = "application/json";
    put.if_match = record_etag_;
    auto written =
        inner_.put(record_key_, std::as_bytes(std::span(bytes.data(), bytes.size())), put);
    if (written.is_ok()) {
      record_etag_ = written->etag;
      std::lock_guard lock(mu_);
      persisted_gen_ = std::max(persisted_gen_, writing);
      return Status::ok();
    }
    failed = written.status();
    // No answer, an error, or a precondition failure (which a retry of a write that did happen
    // gets too): the bucket's record says which.
    switch (read_back(generation)) {
      case Outcome::kWritten: {
        std::lock_guard lock(mu_);
        persisted_gen_ = std::max(persisted_gen_, writing);
        return Status::ok();
      }
      case Outcome::kEarlierWritten:
        continue;
      case Outcome::kNotWritten: {
        // The change did not happen: the mount shows what the bucket holds. Its data objects
        // stay (a record may still come to name them through a later change): orphans at
        // worst, never a loss.
        std::lock_guard lock(mu_);
        take_back_locked(undo);
        log::warn("branch '{}': cannot write its record, so the change is not made: {}",
                  record_.branch, failed.to_string());
        return failed;
      }
      case Outcome::kTakenOver: {
        std::lock_guard lock(mu_);
        fenced_ = Status(Errc::kPreconditionFailed,
                         fmt::format("branch '{}' was taken over by another mount (one writer per "
                                     "branch): this mount's changes since are not in it",
                                     record_.branch));
        log::error("{}", fenced_.message());
        return fenced_;
      }
      case Outcome::kUnknown:
        // The change stays shown, and the next record write carries it.
        log::warn("branch '{}': cannot write its record, nor read it back: {}", record_.branch,
                  failed.to_string());
        return failed;
    }
  }
  return failed;
}

BranchStore::Outcome BranchStore::read_back(uint64_t generation) {
  ObjectInfo head;
  auto found = load_branch_record(inner_, prefix_, record_.branch, &head);
  if (!found.is_ok())
    return found.code() == Errc::kNotFound ? Outcome::kTakenOver : Outcome::kUnknown;
  const std::string& etag = head.etag;
  if (etag == record_etag_) return Outcome::kNotWritten;
  // Writer ids are unique per writable mount: a record naming this one's was written here.
  if (found->writer != record_.writer) return Outcome::kTakenOver;
  record_etag_ = etag;
  return found->generation == generation ? Outcome::kWritten : Outcome::kEarlierWritten;
}

void BranchStore::take_back_locked(const std::vector<Undo>& undo) {
  for (auto u = undo.rbegin(); u != undo.rend(); ++u) {
    auto it = record_.entries.find(u->rel);
    const bool still =
        u->set ? it != record_.entries.end() && it->second == *u->set : it == record_.entries.end();
    if (!still) continue;  // a later change replaced it: that one stands
    if (u->set) ref_locked(*u->set, -1, nullptr);
    if (u->old) {
      ref_locked(*u->old, 1, nullptr);
      record_.entries.insert_or_assign(u->rel, *u->old);
    } else if (it != record_.entries.end()) {
      record_.entries.erase(it);
    }
  }
}

Result<ObjectInfo> BranchStore::head(std::string_view key) {
  refresh_if_due();
  WARMFS_ASSIGN_OR_RETURN(std::string rel, rel_of(key));
  auto r = resolve(rel);
  if (!r) return Status(Errc::kNotFound, fmt::format("{} is not in the branch", key));
  ObjectInfo o;
  if (!r->in_snapshot) {
    // The data object carries the Content-Type and user metadata (mode, owner) it was written
    // with.
    WARMFS_ASSIGN_OR_RETURN(o, inner_.head(r->key));
  }
  o.key = std::string(key);
  o.size = r->size;
  o.etag = r->etag;
  o.mtime_sec = r->mtime_sec;
  o.version_id.clear();
  return o;
}

Result<size_t> BranchStore::get_range(std::string_view key, uint64_t offset,
                                      std::span<std::byte> out, std::string_view if_match) {
  return get_range_progress(key, offset, out, if_match, nullptr, nullptr);
}

Result<size_t> BranchStore::get_range_progress(std::string_view key, uint64_t offset,
                                               std::span<std::byte> out, std::string_view if_match,
                                               const std::function<void(size_t)>& progress,
                                               const RangeBytesSeen& seen) {
  refresh_if_due();
  WARMFS_ASSIGN_OR_RETURN(std::string rel, rel_of(key));
  auto r = resolve(rel);
  if (!r) return Status(Errc::kNotFound, fmt::format("{} is not in the branch", key));
  if (!if_match.empty() && if_match != r->etag) {
    return Status(Errc::kPreconditionFailed,
                  fmt::format("{}: ETag {} is not the branch's {}", key, if_match, r->etag));
  }
  if (r->in_snapshot) {
    return snapshot_.get_range_progress(r->key, offset, out, r->etag, progress, seen);
  }
  return inner_.get_range_progress(r->key, offset, out, r->etag, progress, seen);
}

Result<ListPage> BranchStore::list(const ListRequest& request) {
  refresh_if_due();
  if (!request.delimiter.empty() && request.delimiter != "/") {
    return Status(Errc::kNotSupported, "a branch lists with delimiter '/' only");
  }
  const std::string& mp = prefix_;
  const bool delimit = !request.delimiter.empty();
  ListPage page;
  const ListStart start =
      request.continuation_token.empty() ? list_start(mp, request.start_after) : ListStart{};
  if (start.kind == ListStart::Kind::kNone) return page;
  std::lock_guard lock(mu_);
  const auto& entries = record_.entries;
  std::string rel;  // request prefix relative to the branch's
  if (request.prefix.size() >= mp.size() && request.prefix.compare(0, mp.size(), mp) == 0) {
    rel = request.prefix.substr(mp.size());
  } else if (mp.compare(0, request.prefix.size(), request.prefix) == 0) {
    // Above the prefix: only the prefix itself is there, if anything is below it.
    bool any = manifest_.size() > 0;
    if (!any) {
      for (const auto& [k, e] : entries) any = any || e.kind != Kind::kDeleted;
    }
    if (!any || delimit) {
      if (any && request.continuation_token.empty()) {
        page.common_prefixes.push_back(mp.substr(0, mp.find('/', request.prefix.size()) + 1));
      }
      return page;
    }
  } else {
    return page;
  }
  const size_t max_keys = static_cast<size_t>(std::clamp(request.max_keys, 1, 1000));
  // Token: 'K' + the last key returned, or 'P' + the last common prefix returned (both
  // relative to the prefix).
  const std::string& token = request.continuation_token;
  std::string from = rel;
  bool after = false;  // start past `from` itself
  if (start.kind == ListStart::Kind::kAfter && start.rel >= from) {
    from = start.rel;
    after = true;
  }
  if (!token.empty()) {
    if (token[0] == 'K') {
      from = token.substr(1);
      after = true;
    } else if (token[0] == 'P' && token.size() > 1) {
      from = past(token.substr(1));
    } else {
      return Status(Errc::kInvalidArgument, "malformed continuation token");
    }
  }
  size_t mi = manifest_.lower_bound(from);
  auto oi = entries.lower_bound(from);
  if (after) {
    if (mi < manifest_.size() && manifest_.key(mi) == from) ++mi;
    if (oi != entries.end() && oi->first == from) ++oi;
  }
  std::string last;
  bool last_is_prefix = false;
  while (true) {
    // Names the branch records are shown from its entries, not from the snapshot.
    while (mi < manifest_.size() && entries.find(manifest_.key(mi)) != entries.end()) ++mi;
    while (oi != entries.end() && oi->second.kind == Kind::kDeleted) ++oi;
    const bool have_m = mi < manifest_.size();
    const bool have_o = oi != entries.end();
    if (!have_m && !have_o) break;
    const bool from_m = have_m && (!have_o || manifest_.key(mi) < std::string_view(oi->first));
    const std::string_view k = from_m ? manifest_.key(mi) : std::string_view(oi->first);
    if (k.compare(0, rel.size(), rel) != 0) break;  // both sorted: past the prefix
    if (page.objects.size() + page.common_prefixes.size() == max_keys) {
      page.truncated = true;
      break;
    }
    const size_t d = delimit ? k.find('/', rel.size()) : std::string_view::npos;
    if (d != std::string_view::npos) {
      last.assign(k.substr(0, d + 1));
      last_is_prefix = true;
      page.common_prefixes.push_back(mp + last);
      const std::string next = past(last);
      mi = manifest_.lower_bound(next);
      oi = entries.lower_bound(next);
      continue;
    }
    ObjectInfo o;
    o.key = mp + std::string(k);
    if (from_m) {
      o.size = manifest_.object_size(mi);
      o.etag = manifest_.etag(mi);
      o.mtime_sec = manifest_.mtime_sec(mi);
      ++mi;
    } else {
      o.size = oi->second.size;
      o.etag = oi->second.etag;
      o.mtime_sec = oi->second.mtime_sec;
      ++oi;
    }
    last.assign(o.key, mp.size());
    last_is_prefix = false;
    page.objects.push_back(std::move(o));
  }
  if (page.truncated) page.next_token = (last_is_prefix ? "P" : "K") + last;
  return page;
}

Result<ObjectInfo> BranchStore::put(std::string_view key, std::span<const std::byte> body,
                                    const PutOptions& options) {
  WARMFS_RETURN_IF_ERROR(check_writable());
  WARMFS_ASSIGN_OR_RETURN(std::string rel, rel_of(key));
  if (options.if_none_match || !options.if_match.empty()) {
    auto now = resolve(rel);
    if (options.if_none_match && now) {
      return Status(Errc::kPreconditionFailed, fmt::format("put: {} exists", key));
    }
    if (!options.if_match.empty() && (!now || now->etag != options.if_match)) {
      return Status(Errc::kPreconditionFailed,
                    fmt::format("put: ETag of {} is not {}", key, options.if_match));
    }
  }
  PutOptions o = options;
  o.if_none_match = false;
  o.if_match.clear();
  std::string target = new_data_target();
  WARMFS_ASSIGN_OR_RETURN(ObjectInfo written, inner_.put(data_key(target), body, o));
  std::vector<Change> changes;
  changes.push_back(Change{rel, data_entry(std::move(target), written)});
  WARMFS_RETURN_IF_ERROR(commit(std::move(changes)));
  return data_info(key, written);
}

Result<std::string> BranchStore::create_multipart(std::string_view key,
                                                  const ObjectHeaders& headers) {
  WARMFS_RETURN_IF_ERROR(check_writable());
  WARMFS_RETURN_IF_ERROR(rel_of(key).status());
  const std::string dk = data_key(new_data_target());
  WARMFS_ASSIGN_OR_RETURN(std::string id, inner_.create_multipart(dk, headers));
  std::lock_guard lock(mu_);
  uploads_[id] = {std::string(key), dk};
  return id;
}

Result<std::string> BranchStore::upload_key(std::string_view upload_id) {
  {
    std::lock_guard lock(mu_);
    auto it = uploads_.find(upload_id);
    if (it != uploads_.end()) return it->second.second;
  }
  // Not this mount's: one a dead mount started (its staging journal names the upload).
  WARMFS_ASSIGN_OR_RETURN(auto open, inner_.list_multipart_uploads(data_root_));
  for (const MultipartUpload& u : open) {
    if (u.upload_id == upload_id) return u.key;
  }
  return Status(Errc::kNotFound, fmt::format("no upload {} in the branch", upload_id));
}

Result<CompletedPart> BranchStore::upload_part(std::string_view key, std::string_view upload_id,
                                               int part_number, std::span<const std::byte> body) {
  (void)key;
  WARMFS_RETURN_IF_ERROR(check_writable());
  WARMFS_ASSIGN_OR_RETURN(std::string dk, upload_key(upload_id));
  return inner_.upload_part(dk, upload_id, part_number, body);
}

Result<CompletedPart> BranchStore::upload_part_copy(std::string_view key,
                                                    std::string_view upload_id, int part_number,
                                                    std::string_view src_key, uint64_t first,
                                                    uint64_t last, std::string_view src_if_match) {
  (void)key;
  WARMFS_RETURN_IF_ERROR(check_writable());
  WARMFS_ASSIGN_OR_RETURN(std::string dk, upload_key(upload_id));
  WARMFS_ASSIGN_OR_RETURN(std::string src_rel, rel_of(src_key));
  auto src = resolve(src_rel);
  if (!src) return Status(Errc::kNotFound, fmt::format("{} is not in the branch", src_key));
  if (!src_if_match.empty() && src_if_match != src->etag) {
    return Status(Errc::kPreconditionFailed,
                  fmt::format("ETag of {} is no longer {}", src_key, src_if_match));
  }
  // A snapshot's object is pinned by its ETag (a copy names no version).
  WARMFS_ASSIGN_OR_RETURN(std::string from, bytes_key(*src));
  return inner_.upload_part_copy(dk, upload_id, part_number, from, first, last, src->etag);
}

Result<ObjectInfo> BranchStore::complete_multipart(std::string_view key, std::string_view upload_id,
                                                   std::span<const CompletedPart> parts) {
  WARMFS_RETURN_IF_ERROR(check_writable());
  WARMFS_ASSIGN_OR_RETURN(std::string rel, rel_of(key));
  WARMFS_ASSIGN_OR_RETURN(std::string dk, upload_key(upload_id));
  WARMFS_ASSIGN_OR_RETURN(ObjectInfo written, inner_.complete_multipart(dk, upload_id, parts));
  {
    std::lock_guard lock(mu_);
    uploads_.erase(std::string(upload_id));
  }
  std::vector<Change> changes;
  changes.push_back(Change{rel, data_entry(dk.substr(data_root_.size()), written)});
  WARMFS_RETURN_IF_ERROR(commit(std::move(changes)));
  return data_info(key, written);
}

Status BranchStore::abort_multipart(std::string_view key, std::string_view upload_id) {
  auto dk = upload_key(upload_id);
  // Not the branch's: an upload of key itself (a journal a plain mount left in the same
  // staging directory).
  if (!dk.is_ok() && dk.code() == Errc::kNotFound) return inner_.abort_multipart(key, upload_id);
  if (!dk.is_ok()) return dk.status();
  WARMFS_RETURN_IF_ERROR(inner_.abort_multipart(*dk, upload_id));
  std::lock_guard lock(mu_);
  uploads_.erase(std::string(upload_id));
  return Status::ok();
}

Result<std::vector<MultipartUpload>> BranchStore::list_multipart_uploads(std::string_view prefix) {
  WARMFS_ASSIGN_OR_RETURN(auto open, inner_.list_multipart_uploads(data_root_));
  std::vector<MultipartUpload> out;
  std::lock_guard lock(mu_);
  for (MultipartUpload& u : open) {
    auto it = uploads_.find(u.upload_id);
    if (it == uploads_.end() || it->second.first.compare(0, prefix.size(), prefix) != 0) continue;
    u.key = it->second.first;
    out.push_back(std::move(u));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

Result<ObjectInfo> BranchStore::copy(std::string_view src_key, std::string_view dst_key,
                                     std::string_view if_match_etag) {
  WARMFS_RETURN_IF_ERROR(check_writable());
  WARMFS_ASSIGN_OR_RETURN(std::string src_rel, rel_of(src_key));
  WARMFS_ASSIGN_OR_RETURN(std::string dst_rel, rel_of(dst_key));
  BranchEntry e;
  {
    std::lock_guard lock(mu_);
    auto src = resolve_locked(src_rel);
    if (!src) return Status(Errc::kNotFound, fmt::format("{} is not in the branch", src_key));
    if (!if_match_etag.empty() && if_match_etag != src->etag) {
      return Status(Errc::kPreconditionFailed,
                    fmt::format("ETag of {} is no longer {}", src_key, if_match_etag));
    }
    // The new name refers to the same bytes: the snapshot's entry, or the same data object.
    e = src->entry ? *src->entry
                   : BranchEntry{Kind::kSnapshot, src_rel, src->size, src->etag, src->mtime_sec};
  }
  std::vector<Change> changes;
  changes.push_back(Change{dst_rel, e, true});
  WARMFS_RETURN_IF_ERROR(commit(std::move(changes)));
  return ObjectInfo{std::string(dst_key), e.size, e.etag, e.mtime_sec};
}

Result<ObjectInfo> BranchStore::replace_metadata(std::string_view key, const ObjectInfo& current,
                                                 const ObjectHeaders& headers) {
  WARMFS_RETURN_IF_ERROR(check_writable());
  WARMFS_ASSIGN_OR_RETURN(std::string rel, rel_of(key));
  auto r = resolve(rel);
  if (!r) return Status(Errc::kNotFound, fmt::format("{} is not in the branch", key));
  if (!current.etag.empty() && current.etag != r->etag) {
    return Status(Errc::kPreconditionFailed,
                  fmt::format("ETag of {} is no longer {}", key, current.etag));
  }
  // A new data object, never the one the record names: until the record names the new one,
  // the name keeps its bytes and ETag, in this mount and in the bucket.
  std::string target = new_data_target();
  WARMFS_ASSIGN_OR_RETURN(std::string from, bytes_key(*r));
  WARMFS_ASSIGN_OR_RETURN(ObjectInfo at, inner_.copy(from, data_key(target), r->etag));
  at.key = data_key(target);
  WARMFS_ASSIGN_OR_RETURN(ObjectInfo written, inner_.replace_metadata(at.key, at, headers));
  std::vector<Change> changes;
  changes.push_back(Change{rel, data_entry(std::move(target), written)});
  WARMFS_RETURN_IF_ERROR(commit(std::move(changes)));
  return data_info(key, written);
}

Status BranchStore::remove(std::string_view key) {
  const std::string k(key);
  WARMFS_ASSIGN_OR_RETURN(auto errors, remove_many(std::span(&k, 1)));
  if (!errors.empty()) return Status(Errc::kIo, errors.front().message);
  return Status::ok();
}

Result<std::vector<DeleteError>> BranchStore::remove_many(std::span<const std::string> keys) {
  WARMFS_RETURN_IF_ERROR(check_writable());
  std::vector<Change> changes;
  for (const std::string& key : keys) {
    auto rel = rel_of(key);
    if (!rel.is_ok()) continue;  // not below the prefix: not in the branch, absent
    if (resolve(*rel)) changes.push_back(Change{std::move(*rel), std::nullopt});
  }
  if (!changes.empty()) WARMFS_RETURN_IF_ERROR(commit(std::move(changes)));
  return std::vector<DeleteError>{};
}

}  // namespace warmfs

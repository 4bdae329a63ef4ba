// The write side of the filesystem core: staged files and their uploads, and the namespace
// changes (mkdir, unlink, rmdir, rename). docs/posix.md describes the semantics.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <set>

#include "common/log.h"
#include "fs/filesystem.h"

namespace warmfs {
namespace {

// fsync/close report EIO for a failed upload, ENOSPC when the staging disk is full.
Status as_flush_error(const Status& st) {
  if (st.is_ok() || st.code() == Errc::kNoSpace) return st;
  return Status(Errc::kIo, st.message());
}

}  // namespace

int64_t Filesystem::wall_sec() const {
  return std::chrono::system_clock::to_time_t(clock_.wall_now());
}

std::shared_ptr<StagedObject> Filesystem::hold_staged(uint64_t ino, const std::string& key) {
  std::lock_guard lock(writes_mu_);
  WriteEntry& e = writes_[ino];
  if (!e.object) {
    e.object = uploader_->make(key);
    // Each upload carries the file's attributes, as the namespace has them then.
    e.object->set_headers([live = liveness_, ino] {
      std::lock_guard lock(live->mu);
      return live->fs != nullptr ? live->fs->meta_.headers_for(ino) : ObjectHeaders{};
    });
  }
  ++e.handles;
  return e.object;
}

std::shared_ptr<StagedObject> Filesystem::find_staged(uint64_t ino) {
  std::lock_guard lock(writes_mu_);
  auto it = writes_.find(ino);
  return it == writes_.end() ? nullptr : it->second.object;
}

std::shared_ptr<StagedObject> Filesystem::find_live_staged(uint64_t ino) {
  std::lock_guard lock(writes_mu_);
  auto it = writes_.find(ino);
  if (it == writes_.end()) return nullptr;
  const WriteEntry& w = it->second;
  // A clean copy kept past its time is as good as gone (the next sweep drops it): the file
  // is what the namespace says, as open() will find.
  if (w.handles == 0 && clock_.now() >= w.keep_until && !w.object->dirty() &&
      !w.object->write_through_pending())
    return nullptr;
  return w.object;
}

void Filesystem::unhold_staged(uint64_t ino) {
  {
    std::lock_guard lock(writes_mu_);
    auto it = writes_.find(ino);
    if (it != writes_.end() && it->second.handles > 0 && --it->second.handles == 0) {
      // Kept only while the staging disk has room to spare; else the space goes back now.
      const uint64_t room = 2 * it->second.object->size() + (256ull << 20);
      const bool keep = uploader_->staging_free_bytes() >= room;
      it->second.keep_until =
          clock_.now() + (keep ? kKeepStagedAfterClose : std::chrono::seconds(0));
    }
  }
  sweep_staged();
}

void Filesystem::sweep_staged() {
  std::vector<std::shared_ptr<StagedObject>> dropped;  // released after the lock
  std::lock_guard lock(writes_mu_);
  const auto now = clock_.now();
  // Staged copies kept after their last close go once their time is up.
  for (auto e = writes_.begin(); e != writes_.end();) {
    const WriteEntry& w = e->second;
    if (w.handles == 0 && now >= w.keep_until && !w.object->dirty() &&
        !w.object->write_through_pending()) {
      dropped.push_back(e->second.object);
      e = writes_.erase(e);
    } else {
      ++e;
    }
  }
}

void Filesystem::apply_staged(Attr& a, const NodeAttr& n) {
  if (a.is_dir) return;
  auto obj = find_live_staged(a.ino);
  if (!obj || !obj->staged()) return;
  a.size = obj->size();
  if (n.attrs.mtime) return;  // set by utimens since the last change
  a.mtime_sec = obj->mtime_sec();
  a.mtime_nsec = 0;
  if (!n.attrs.ctime) {
    a.ctime_sec = a.mtime_sec;
    a.ctime_nsec = 0;
  }
}

Status Filesystem::ensure_staged(StagedObject& obj, const ObjectVersion& version) {
  if (obj.staged()) return Status::ok();
  if (version.size == 0) {
    // Nothing to copy: an empty staged copy is the same object, not a change.
    return obj.stage_from(
        0, [](uint64_t, std::span<std::byte>) -> Result<size_t> { return size_t{0}; });
  }
  // Modifying an existing object: stage its bytes (through the caches), change them, and
  // upload the whole object at flush.
  auto reader = read_path_.open(version);
  return obj.stage_from(version.size, [&reader](uint64_t off, std::span<std::byte> out) {
    return reader->read(off, out);
  });
}

Status Filesystem::stage_through(FileHandle& handle, StagedObject& obj) {
  Status st = ensure_staged(obj, handle.version());
  // Renamed here since the handle opened: its bytes are at the new key.
  if (st.code() != Errc::kNotFound) return st;
  Status moved = follow_move(handle);
  if (moved.is_ok()) return ensure_staged(obj, handle.version());
  return moved.code() == Errc::kNotFound ? st : moved;
}

void Filesystem::committed(uint64_t ino, const std::shared_ptr<StagedObject>& obj,
                           const ObjectInfo& info) {
  if (info.etag.empty()) return;  // nothing was uploaded
  meta_.file_changed(ino, info.size, info.etag, info.mtime_sec);
  obj->write_through(info, [live = liveness_] {
    std::lock_guard lock(live->mu);
    if (live->fs != nullptr) live->fs->sweep_staged();
  });
}

Status Filesystem::do_flush(uint64_t ino, const std::shared_ptr<StagedObject>& obj) {
  if (!obj->dirty()) return Status::ok();
  auto r = obj->flush();
  if (!r.is_ok()) return as_flush_error(r.status());
  committed(ino, obj, *r);
  return Status::ok();
}

Result<CreateResult> Filesystem::create(uint64_t parent, std::string_view name, int flags,
                                        const std::optional<NewNodeAttrs>& attrs) {
  WARMFS_RETURN_IF_ERROR(refuse_control(parent, name));
  WARMFS_RETURN_IF_ERROR(check_writable());
  auto existing = meta_.peek(parent, name);
  if (existing.is_ok()) {
    // The kernel thought the name free (a stale negative entry) or asked for O_EXCL.
    if ((flags & O_EXCL) != 0) return Status(Errc::kExists, "file exists");
    if (existing->is_dir) return Status(Errc::kIsDirectory, "is a directory");
    WARMFS_ASSIGN_OR_RETURN(NodeAttr n, meta_.lookup(parent, name));  // the kernel's reference
    WARMFS_ASSIGN_OR_RETURN(OpenResult o, open(n.ino, flags));
    CreateResult r{attr_from(n), std::move(o)};
    apply_staged(r.attr, n);
    return r;
  }
  if (existing.code() != Errc::kNotFound) return std::move(existing).take_status();
  WARMFS_ASSIGN_OR_RETURN(std::string key, meta_.child_key(parent, name, false));
  ObjectAttrs kept;
  if (attrs)
    kept = ObjectAttrs{S_IFREG | (attrs->mode & 07777), attrs->uid, attrs->gid, {}, {}, {}, {}};
  WARMFS_ASSIGN_OR_RETURN(NodeAttr n, meta_.add_local_file(parent, name, wall_sec(), kept));
  opens_.fetch_add(1, std::memory_order_relaxed);
  ObjectVersion v{key, "", 0};
  auto handle = std::make_unique<FileHandle>(n.ino, v, read_path_.open(v));
  handle->staged_ = hold_staged(n.ino, key);
  handle->writable_ = true;
  // A new file is a change even if nothing is written: close() creates the object.
  Status st = handle->staged_->stage_empty();
  if (!st.is_ok()) {
    release(std::move(handle));
    meta_.removed(parent, name);
    return st;
  }
  CreateResult r{attr_from(n), OpenResult{std::move(handle), false}};
  return r;
}

Result<size_t> Filesystem::write(FileHandle& handle, uint64_t offset,
                                 std::span<const std::byte> data) {
  if (handle.control()) return write_control(handle, offset, data);
  if (!handle.writable() || !handle.staged())
    return Status(Errc::kInvalidArgument, "not open for writing");
  StagedObject& obj = *handle.staged();
  WARMFS_RETURN_IF_ERROR(stage_through(handle, obj));
  meta_.content_changed(handle.ino());
  return obj.write(offset, data);
}

Status Filesystem::flush(FileHandle& handle) {
  if (handle.control()) return flush_control(handle);
  if (!handle.staged()) return Status::ok();
  return do_flush(handle.ino(), handle.staged());
}

Status Filesystem::fsync(FileHandle& handle) {
  if (handle.control() || handle.staged()) return flush(handle);
  auto obj = find_staged(handle.ino());
  if (!obj) return Status::ok();
  return do_flush(handle.ino(), obj);
}

void Filesystem::abandon_unheld(uint64_t ino, const std::shared_ptr<StagedObject>& obj) {
  {
    std::lock_guard lock(writes_mu_);
    auto it = writes_.find(ino);
    if (it == writes_.end() || it->second.object != obj || it->second.handles != 0) return;
    writes_.erase(it);
  }
  obj->discard();
  meta_.local_abandoned(ino);
}

void Filesystem::release(std::unique_ptr<FileHandle> handle) {
  if (!handle) return;
  const uint64_t ino = handle->ino();
  if (ino != kOrderFileIno) order_->file_closed(handle->version().key);
  if (handle->staged()) {
    auto obj = handle->staged();
    bool last = false;
    {
      std::lock_guard lock(writes_mu_);
      auto it = writes_.find(ino);
      last = it != writes_.end() && it->second.handles <= 1;
    }
    bool abandoned = false;
    if (last && obj->dirty()) {
      // Nothing can fsync this data any more. Changes no flush has tried yet (a descriptor
      // closed without close() reaching us) get one upload; after a failure close() already
      // reported, give up: the bucket keeps the old object (or none).
      Status st = obj->unattempted_changes() ? do_flush(ino, obj)
                                             : Status(Errc::kIo, "the upload at close() failed");
      if (!st.is_ok()) {
        log::error("giving up on {:?}: its last handle closed and the upload failed: {}",
                   obj->key(), st.to_string());
        obj->discard();
        abandoned = true;
      }
    }
    handle.reset();
    unhold_staged(ino);
    if (abandoned) abandon_unheld(ino, obj);
  }
}

Result<Attr> Filesystem::setattr(uint64_t ino, const SetAttrRequest& request, FileHandle* handle) {
  if (is_control_ino(ino)) return control_attr(ino);  // the order file is always empty
  WARMFS_RETURN_IF_ERROR(check_writable());
  WARMFS_ASSIGN_OR_RETURN(NodeAttr n, meta_.getattr(ino));
  if (request.size && n.is_dir) return Status(Errc::kIsDirectory, "is a directory");
  constexpr uint64_t kMaxObjectBytes = 5ull << 40;  // S3's largest object
  if (request.size && *request.size > kMaxObjectBytes) {
    return Status(Errc::kInvalidArgument, "a size over S3's 5 TiB object limit");
  }
  if (request.size) {
    std::shared_ptr<StagedObject> obj;
    const bool own = handle == nullptr || !handle->staged();
    WARMFS_ASSIGN_OR_RETURN(std::string key, meta_.key_of(ino));
    obj = own ? hold_staged(ino, key) : handle->staged();
    meta_.content_changed(ino);
    Status st;
    if (*request.size == 0) {
      st = obj->stage_empty();
    } else {
      st = own ? ensure_staged(*obj, ObjectVersion{key, n.etag, n.size})
               : stage_through(*handle, *obj);
      if (st.is_ok()) st = obj->truncate(*request.size);
    }
    // truncate(2) of a path has no close to come: make it durable now.
    if (st.is_ok() && own) st = do_flush(ino, obj);
    if (own) {
      unhold_staged(ino);
      // A failed truncate(2) changes nothing, unless an open handle shares the change (its
      // fsync or close uploads it, or reports the failure).
      if (!st.is_ok()) abandon_unheld(ino, obj);
    }
    if (!st.is_ok()) return own ? as_flush_error(st) : st;
  }
  if (request.mode || request.uid || request.gid || request.mtime || request.atime) {
    WARMFS_ASSIGN_OR_RETURN(NodeAttr now, meta_.getattr(ino));
    const Attr shown = attr_from(now);
    ObjectAttrs next = now.attrs;
    if (request.mode) next.mode = (shown.mode & S_IFMT) | (*request.mode & 07777);
    if (request.uid) next.uid = *request.uid;
    if (request.gid) next.gid = *request.gid;
    if (request.mtime) next.mtime = *request.mtime;
    if (request.atime) next.atime = *request.atime;
    // What is shown already (a chown to the same owner, rsync's second pass) costs nothing.
    const bool same =
        (!request.mode || (shown.mode & 07777) == (*request.mode & 07777)) &&
        (!request.uid || shown.uid == *request.uid) &&
        (!request.gid || shown.gid == *request.gid) &&
        (!request.mtime ||
         (Timespec{shown.mtime_sec, shown.mtime_nsec} == *request.mtime && now.attrs.mtime)) &&
        (!request.atime || now.attrs.atime == request.atime);
    if (!same) {
      const auto wall = clock_.wall_now().time_since_epoch();
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count();
      next.ctime = Timespec{ns / 1'000'000'000, static_cast<uint32_t>(ns % 1'000'000'000)};
      if (request.mtime) {
        if (auto obj = find_staged(ino)) obj->set_mtime(request.mtime->sec);
      }
      WARMFS_RETURN_IF_ERROR(store_attrs(ino, now, next));
    }
  }
  return getattr(ino);
}

Status Filesystem::store_attrs(uint64_t ino, const NodeAttr& current, const ObjectAttrs& attrs) {
  // A file whose next upload is to come carries them in it.
  if (!current.is_dir) {
    auto obj = find_staged(ino);
    if ((obj && obj->dirty()) || current.etag.empty()) {
      meta_.set_attrs(ino, attrs);
      return Status::ok();
    }
  }
  WARMFS_ASSIGN_OR_RETURN(ObjectInfo object, meta_.object_of(ino));
  if (current.is_dir && object.key.empty()) {
    return Status(Errc::kNotPermitted, "the bucket's root has no object to keep attributes on");
  }
  ObjectHeaders headers = meta_.headers_for(ino);
  for (const char* name : kAttrMetadataNames) headers.metadata.erase(name);
  attrs_to_metadata(attrs, headers.metadata);
  if (current.is_dir) {
    // s3fs keeps a directory's attributes on its "dir/" marker; an implicit directory gets one.
    if (headers.content_type.empty()) headers.content_type = kDirContentType;
    auto copied = store_.replace_metadata(object.key, ObjectInfo{object.key, 0, "", 0}, headers);
    if (!copied.is_ok() && copied.code() == Errc::kNotFound) {
      PutOptions put;
      put.content_type = headers.content_type;
      put.metadata = headers.metadata;
      copied = store_.put(object.key, {}, put);
    }
    if (!copied.is_ok()) return std::move(copied).take_status();
    meta_.attrs_stored(ino, *copied, headers);
    return Status::ok();
  }
  // One server-side copy of the object onto itself (part by part above 5 GiB), pinned to the
  // version this mount knows.
  WARMFS_ASSIGN_OR_RETURN(ObjectInfo copied, store_.replace_metadata(object.key, object, headers));
  meta_.attrs_stored(ino, copied, headers);
  return Status::ok();
}

Result<Attr> Filesystem::mkdir(uint64_t parent, std::string_view name,
                               const std::optional<NewNodeAttrs>& attrs) {
  WARMFS_RETURN_IF_ERROR(refuse_control(parent, name));
  WARMFS_RETURN_IF_ERROR(check_writable());
  auto existing = meta_.peek(parent, name);
  if (existing.is_ok()) return Status(Errc::kExists, "file exists");
  if (existing.code() != Errc::kNotFound) return std::move(existing).take_status();
  WARMFS_ASSIGN_OR_RETURN(std::string key, meta_.child_key(parent, name, true));
  // The "dir/" marker object makes an empty directory exist in the bucket; it carries the
  // directory's attributes, as s3fs's do.
  ObjectAttrs kept;
  ObjectHeaders headers;
  PutOptions put;
  if (attrs) {
    // A marker has no Last-Modified a listing shows: its creation time goes in it too.
    const Timespec now{wall_sec(), 0};
    kept = ObjectAttrs{S_IFDIR | (attrs->mode & 07777), attrs->uid, attrs->gid, now, now, {}, {}};
    headers.content_type = kDirContentType;
    attrs_to_metadata(kept, headers.metadata);
    put.content_type = headers.content_type;
    put.metadata = headers.metadata;
  }
  WARMFS_ASSIGN_OR_RETURN(ObjectInfo info, store_.put(key, {}, put));
  (void)info;
  WARMFS_ASSIGN_OR_RETURN(NodeAttr n, meta_.add_dir(parent, name, kept, headers));
  return attr_from(n);
}

Result<Attr> Filesystem::put_node(uint64_t parent, std::string_view name, std::string_view body,
                                  const ObjectAttrs& attrs) {
  WARMFS_RETURN_IF_ERROR(check_writable());
  auto existing = meta_.peek(parent, name);
  if (existing.is_ok()) return Status(Errc::kExists, "file exists");
  if (existing.code() != Errc::kNotFound) return std::move(existing).take_status();
  WARMFS_ASSIGN_OR_RETURN(std::string key, meta_.child_key(parent, name, false));
  ObjectHeaders headers{kFileContentType, {}};
  attrs_to_metadata(attrs, headers.metadata);
  PutOptions put;
  put.content_type = headers.content_type;
  put.metadata = headers.metadata;
  WARMFS_ASSIGN_OR_RETURN(ObjectInfo info,
                          store_.put(key, std::as_bytes(std::span(body.data(), body.size())), put));
  info.key = key;
  WARMFS_ASSIGN_OR_RETURN(NodeAttr n, meta_.add_object(parent, name, info, headers));
  return attr_from(n);
}

Result<Attr> Filesystem::symlink(uint64_t parent, std::string_view name, std::string_view target,
                                 const NewNodeAttrs& attrs) {
  WARMFS_RETURN_IF_ERROR(refuse_control(parent, name));
  if (target.empty()) return Status(Errc::kNotFound, "empty symlink target");
  // s3fs's layout: the target is the body, the link bit is in x-amz-meta-mode.
  WARMFS_ASSIGN_OR_RETURN(
      Attr a, put_node(parent, name, target,
                       ObjectAttrs{S_IFLNK | 0777, attrs.uid, attrs.gid, {}, {}, {}, {}}));
  meta_.set_link_target(a.ino, std::string(target));
  return a;
}

Result<Attr> Filesystem::mknod(uint64_t parent, std::string_view name, uint32_t type, uint64_t rdev,
                               const NewNodeAttrs& attrs) {
  WARMFS_RETURN_IF_ERROR(refuse_control(parent, name));
  if (type == S_IFREG) {
    WARMFS_ASSIGN_OR_RETURN(CreateResult r, create(parent, name, O_WRONLY | O_EXCL, attrs));
    Status st = flush(*r.open.handle);
    release(std::move(r.open.handle));
    WARMFS_RETURN_IF_ERROR(st);
    return r.attr;
  }
  if (type != S_IFIFO && type != S_IFSOCK && type != S_IFCHR && type != S_IFBLK) {
    WARMFS_RETURN_IF_ERROR(check_writable());
    return Status(Errc::kInvalidArgument, "unknown file type");
  }
  ObjectAttrs kept{type | (attrs.mode & 07777), attrs.uid, attrs.gid, {}, {}, {}, {}};
  if (type == S_IFCHR || type == S_IFBLK) kept.rdev = rdev;
  return put_node(parent, name, "", kept);
}

Result<std::string> Filesystem::readlink(uint64_t ino) {
  WARMFS_ASSIGN_OR_RETURN(NodeAttr n, meta_.getattr(ino));
  if (n.is_dir || !n.attrs.is_symlink()) return Status(Errc::kInvalidArgument, "not a symlink");
  if (auto target = meta_.link_target(ino)) return *target;
  constexpr uint64_t kMaxTarget = 4096;  // PATH_MAX
  if (n.size == 0 || n.size > kMaxTarget) {
    return Status(Errc::kCorrupt, "symlink object of " + std::to_string(n.size) + " bytes");
  }
  WARMFS_ASSIGN_OR_RETURN(std::string key, meta_.key_of(ino));
  std::string target(n.size, '\0');
  WARMFS_ASSIGN_OR_RETURN(
      size_t got, store_.get_range(key, 0, std::as_writable_bytes(std::span(target)), n.etag));
  target.resize(got);
  meta_.set_link_target(ino, target);
  return target;
}

Status Filesystem::unlink(uint64_t parent, std::string_view name) {
  WARMFS_RETURN_IF_ERROR(refuse_control(parent, name));
  WARMFS_RETURN_IF_ERROR(check_writable());
  WARMFS_ASSIGN_OR_RETURN(NodeAttr n, meta_.peek(parent, name));
  if (n.is_dir) return Status(Errc::kIsDirectory, "is a directory");
  WARMFS_ASSIGN_OR_RETURN(std::string key, meta_.child_key(parent, name, false));
  // Open handles write on into nothing, and no upload of theirs may land after the delete.
  auto obj = find_staged(n.ino);
  if (obj) obj->discard();
  Status removed = store_.remove(key);
  if (!removed.is_ok()) {
    if (obj) obj->undiscard();  // the file stays, and so do its unflushed writes
    return removed;
  }
  meta_.removed(parent, name);
  {
    std::lock_guard lock(writes_mu_);
    auto it = writes_.find(n.ino);
    if (it != writes_.end() && it->second.handles == 0) writes_.erase(it);
  }
  return Status::ok();
}

Status Filesystem::rmdir(uint64_t parent, std::string_view name) {
  WARMFS_RETURN_IF_ERROR(refuse_control(parent, name));
  WARMFS_RETURN_IF_ERROR(check_writable());
  WARMFS_ASSIGN_OR_RETURN(NodeAttr n, meta_.peek(parent, name));
  if (!n.is_dir) return Status(Errc::kNotDirectory, "not a directory");
  if (meta_.has_local_children(n.ino)) return Status(Errc::kNotEmpty, "directory not empty");
  WARMFS_ASSIGN_OR_RETURN(std::string key, meta_.child_key(parent, name, true));
  // Empty means: nothing under the prefix but the directory's own marker.
  ListRequest req{key, "/", "", 2};
  WARMFS_ASSIGN_OR_RETURN(ListPage page, store_.list(req));
  if (!page.common_prefixes.empty()) return Status(Errc::kNotEmpty, "directory not empty");
  for (const ObjectInfo& o : page.objects) {
    if (o.key != key) return Status(Errc::kNotEmpty, "directory not empty");
  }
  WARMFS_RETURN_IF_ERROR(store_.remove(key));
  meta_.removed(parent, name);
  return Status::ok();
}

Status Filesystem::rename_dir(const std::string& from_key, const std::string& to_key,
                              bool to_exists) {
  // Every key under the prefix, copied then deleted: not atomic (docs/posix.md). Copies go
  // first, so a failure part way leaves every object at least at its old name; the copies of
  // objects still at their old name are then taken back.
  std::vector<std::string> keys;
  ListRequest req{from_key, "", "", 1000};
  while (true) {
    WARMFS_ASSIGN_OR_RETURN(ListPage page, store_.list(req));
    for (auto& o : page.objects) keys.push_back(std::move(o.key));
    if (!page.truncated) break;
    req.continuation_token = page.next_token;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    auto copied = store_.copy(keys[i], to_key + keys[i].substr(from_key.size()), "");
    if (!copied.is_ok()) {
      take_back_copies(keys, i, from_key, to_key, to_exists, true);
      return std::move(copied).take_status();
    }
  }
  auto removed = store_.remove_many(keys);
  if (!removed.is_ok() || !removed->empty()) {
    take_back_copies(keys, keys.size(), from_key, to_key, to_exists, false);
    if (!removed.is_ok()) return std::move(removed).take_status();
    return Status(Errc::kIo, "renamed, but could not delete " + removed->front().key + ": " +
                                 removed->front().code);
  }
  // Staged files below now live under the new prefix.
  std::lock_guard lock(writes_mu_);
  for (auto& [ino, e] : writes_) {
    const std::string k = e.object->key();
    if (k.rfind(from_key, 0) == 0) e.object->set_key(to_key + k.substr(from_key.size()));
  }
  return Status::ok();
}

void Filesystem::take_back_copies(const std::vector<std::string>& keys, size_t copied,
                                  const std::string& from_key, const std::string& to_key,
                                  bool to_exists, bool sources_intact) {
  // After a failed delete some sources may be gone: their copy is the object now, and stays.
  std::set<std::string> present;
  if (sources_intact) {
    present.insert(keys.begin(), keys.begin() + long(copied));
  } else {
    ListRequest req{from_key, "", "", 1000};
    while (true) {
      auto page = store_.list(req);
      if (!page.is_ok()) {
        log::warn("rename of {:?} failed, and its copies under {:?} stay: {}", from_key, to_key,
                  page.status().to_string());
        return;
      }
      for (auto& o : page->objects) present.insert(std::move(o.key));
      if (!page->truncated) break;
      req.continuation_token = page->next_token;
    }
  }
  std::vector<std::string> copies;
  for (size_t i = 0; i < copied; ++i) {
    const std::string to = to_key + keys[i].substr(from_key.size());
    if (to_exists && to == to_key) continue;  // the replaced directory's own marker
    if (present.count(keys[i]) != 0) copies.push_back(to);
  }
  if (copies.empty()) return;
  auto undone = store_.remove_many(copies);
  if (!undone.is_ok() || !undone->empty()) {
    log::warn("rename of {:?} failed, and some of its copies under {:?} stay: {}", from_key, to_key,
              undone.is_ok() ? undone->front().key : undone.status().to_string());
  }
}

Status Filesystem::rename(uint64_t parent, std::string_view name, uint64_t new_parent,
                          std::string_view new_name, unsigned flags) {
  WARMFS_RETURN_IF_ERROR(refuse_control(parent, name));
  WARMFS_RETURN_IF_ERROR(refuse_control(new_parent, new_name));
  WARMFS_RETURN_IF_ERROR(check_writable());
  if ((flags & RENAME_EXCHANGE) != 0)
    return Status(Errc::kInvalidArgument, "RENAME_EXCHANGE is not supported");
  if ((flags & ~unsigned{RENAME_NOREPLACE}) != 0)
    return Status(Errc::kInvalidArgument, "unsupported rename flags");
  WARMFS_ASSIGN_OR_RETURN(NodeAttr src, meta_.peek(parent, name));
  auto dst = meta_.peek(new_parent, new_name);
  if (!dst.is_ok() && dst.code() != Errc::kNotFound) return std::move(dst).take_status();
  if (dst.is_ok()) {
    if (dst->ino == src.ino) return Status::ok();
    if ((flags & RENAME_NOREPLACE) != 0) return Status(Errc::kExists, "file exists");
    if (src.is_dir && !dst->is_dir) return Status(Errc::kNotDirectory, "not a directory");
    if (!src.is_dir && dst->is_dir) return Status(Errc::kIsDirectory, "is a directory");
  }
  WARMFS_ASSIGN_OR_RETURN(std::string from, meta_.child_key(parent, name, src.is_dir));
  WARMFS_ASSIGN_OR_RETURN(std::string to, meta_.child_key(new_parent, new_name, src.is_dir));
  if (src.is_dir) {
    if (to.rfind(from, 0) == 0)
      return Status(Errc::kInvalidArgument, "cannot move a directory into itself");
    if (dst.is_ok()) {
      // Replacing a directory: only an empty one (POSIX).
      ListRequest req{to, "/", "", 2};
      WARMFS_ASSIGN_OR_RETURN(ListPage page, store_.list(req));
      bool empty = page.common_prefixes.empty() && !meta_.has_local_children(dst->ino);
      for (const ObjectInfo& o : page.objects) empty = empty && o.key == to;
      if (!empty) return Status(Errc::kNotEmpty, "directory not empty");
    }
    // Files written below go to the bucket first, so the copy takes their bytes.
    std::vector<std::pair<uint64_t, std::shared_ptr<StagedObject>>> below;
    {
      std::lock_guard lock(writes_mu_);
      for (auto& [ino, e] : writes_) {
        if (e.object->key().rfind(from, 0) == 0) below.emplace_back(ino, e.object);
      }
    }
    for (auto& [ino, obj] : below) WARMFS_RETURN_IF_ERROR(as_flush_error(do_flush(ino, obj)));
    if (Status st = rename_dir(from, to, dst.is_ok()); !st.is_ok()) {
      // Copies it could not take back show as the bucket has them, in the empty directory
      // it was to replace too.
      meta_.forget_listing(parent);
      meta_.forget_listing(new_parent);
      if (dst.is_ok()) meta_.forget_listing(dst->ino);
      return st;
    }
    meta_.renamed(parent, name, new_parent, new_name);
    return Status::ok();
  }

  // A file: its bytes go to the bucket first (if written here and not flushed), then a
  // server-side copy (multipart above 5 GiB) to the new key, then the old key is deleted.
  auto obj = find_staged(src.ino);
  if (obj) WARMFS_RETURN_IF_ERROR(as_flush_error(do_flush(src.ino, obj)));
  WARMFS_ASSIGN_OR_RETURN(NodeAttr current, meta_.getattr(src.ino));
  WARMFS_ASSIGN_OR_RETURN(ObjectInfo info, store_.copy(from, to, current.etag));
  Status removed = store_.remove(from);
  if (!removed.is_ok()) {
    // Copied, not deleted: both names hold the bytes (docs/posix.md). A file of the bucket
    // replaced at the new name shows the copy, as the bucket has it, not its old version. A
    // file created here and not uploaded yet (no ETag) was not in the bucket: the copy is
    // taken back and that file stays as it was, its close still uploading it.
    if (dst.is_ok() && !dst->etag.empty()) {
      // The copy replaced the file at the new name, as the rename would have: that file's
      // open handles write into nothing, and the name is the copy, listed afresh.
      if (auto replaced = find_staged(dst->ino)) replaced->discard();
      meta_.removed(new_parent, new_name);
      meta_.forget_listing(new_parent);
    } else if (Status undone = store_.remove(to); !undone.is_ok()) {
      // Nothing was at the new name: the copy is taken back, so that the failed rename
      // changes nothing; if that fails too, the mount lists the directory again and shows it.
      log::warn("rename of {:?} failed, and its copy {:?} stays: {}", from, to, undone.to_string());
      meta_.forget_listing(new_parent);
    }
    return removed;
  }
  if (dst.is_ok()) {
    if (auto replaced = find_staged(dst->ino)) replaced->discard();
  }
  meta_.renamed(parent, name, new_parent, new_name);
  info.key = to;
  meta_.file_changed(src.ino, info.size, info.etag, info.mtime_sec);
  if (obj) {
    obj->set_key(to);
    // The copy has a new ETag: the chunks go into the cache again, under it.
    committed(src.ino, obj, info);
  }
  return Status::ok();
}

size_t Filesystem::flush_all() {
  if (uploader_ == nullptr) return 0;
  std::vector<std::pair<uint64_t, std::shared_ptr<StagedObject>>> all;
  {
    std::lock_guard lock(writes_mu_);
    for (auto& [ino, e] : writes_) all.emplace_back(ino, e.object);
  }
  size_t failed = 0;
  for (auto& [ino, obj] : all) {
    if (!obj->dirty()) continue;
    auto r = obj->flush();
    if (!r.is_ok()) ++failed;
  }
  return failed;
}

}  // namespace warmfs

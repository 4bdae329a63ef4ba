// The write half of MemoryObjectStore: put, multipart uploads, copy, remove.
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <tuple>

#include "support/memory_object_store.h"

namespace warmfs {

template <typename T>
Result<T> MemoryObjectStore::fail(Errc code, std::string message) {
  errors_.fetch_add(1, std::memory_order_relaxed);
  return Status(code, std::move(message));
}

int64_t MemoryObjectStore::now_sec() const {
  return std::chrono::duration_cast<std::chrono::seconds>(clock_.wall_now().time_since_epoch())
      .count();
}

std::string MemoryObjectStore::multipart_etag(const std::vector<std::string>& part_etags) {
  std::vector<std::byte> digests;
  for (const std::string& etag : part_etags) {
    for (size_t i = 0; i + 1 < etag.size(); i += 2) {
      digests.push_back(static_cast<std::byte>(std::stoi(etag.substr(i, 2), nullptr, 16)));
    }
  }
  return md5_hex(digests) + "-" + std::to_string(part_etags.size());
}

size_t MemoryObjectStore::upload_count() const {
  std::lock_guard lock(mu_);
  return uploads_.size();
}

void MemoryObjectStore::set_min_part_size(uint64_t bytes) {
  std::lock_guard lock(mu_);
  min_part_size_ = bytes;
}

Result<ObjectInfo> MemoryObjectStore::put(std::string_view key, std::span<const std::byte> body,
                                          const PutOptions& options) {
  put_requests_.fetch_add(1, std::memory_order_relaxed);
  if (key.empty()) return fail<ObjectInfo>(Errc::kInvalidArgument, "put: empty key");
  auto obj = std::make_shared<Object>();
  obj->bytes.assign(body.begin(), body.end());
  obj->etag = md5_hex(body);
  obj->mtime_sec = now_sec();
  obj->headers = ObjectHeaders{options.content_type, options.metadata};
  ObjectInfo info{std::string(key), body.size(), obj->etag, obj->mtime_sec};
  {
    std::lock_guard lock(mu_);
    auto it = objects_.find(key);
    if (options.if_none_match && it != objects_.end()) {
      return fail<ObjectInfo>(Errc::kPreconditionFailed, "put: exists: " + std::string(key));
    }
    if (!options.if_match.empty()) {
      if (it == objects_.end()) {
        return fail<ObjectInfo>(Errc::kNotFound, "put If-Match: no such key: " + std::string(key));
      }
      if (it->second->etag != options.if_match) {
        return fail<ObjectInfo>(Errc::kPreconditionFailed,
                                "put: ETag of " + std::string(key) + " is not " + options.if_match);
      }
    }
    objects_.insert_or_assign(std::string(key), std::move(obj));
  }
  bytes_written_.fetch_add(body.size(), std::memory_order_relaxed);
  return info;
}

Result<std::string> MemoryObjectStore::create_multipart(std::string_view key,
                                                        const ObjectHeaders& headers) {
  multipart_requests_.fetch_add(1, std::memory_order_relaxed);
  if (key.empty()) return fail<std::string>(Errc::kInvalidArgument, "create_multipart: empty key");
  std::lock_guard lock(mu_);
  std::string id = "upload-" + std::to_string(next_upload_++);
  uploads_.emplace(id, Upload{std::string(key), now_sec(), {}, headers});
  return id;
}

Result<CompletedPart> MemoryObjectStore::store_part(std::string_view key,
                                                    std::string_view upload_id, int part_number,
                                                    std::span<const std::byte> bytes) {
  if (part_number < 1 || part_number > kMaxPartNumber) {
    return fail<CompletedPart>(Errc::kInvalidArgument,
                               "part number out of range: " + std::to_string(part_number));
  }
  Part part{std::vector<std::byte>(bytes.begin(), bytes.end()), md5_hex(bytes)};
  CompletedPart done{part_number, part.etag, bytes.size()};
  std::lock_guard lock(mu_);
  auto it = uploads_.find(upload_id);
  if (it == uploads_.end() || it->second.key != key) {
    return fail<CompletedPart>(Errc::kNotFound, "no such upload: " + std::string(upload_id));
  }
  it->second.parts.insert_or_assign(part_number, std::move(part));
  return done;
}

Result<CompletedPart> MemoryObjectStore::upload_part(std::string_view key,
                                                     std::string_view upload_id, int part_number,
                                                     std::span<const std::byte> body) {
  multipart_requests_.fetch_add(1, std::memory_order_relaxed);
  auto part = store_part(key, upload_id, part_number, body);
  if (part.is_ok()) bytes_written_.fetch_add(body.size(), std::memory_order_relaxed);
  return part;
}

Result<CompletedPart> MemoryObjectStore::upload_part_copy(std::string_view key,
                                                          std::string_view upload_id,
                                                          int part_number, std::string_view src_key,
                                                          uint64_t first, uint64_t last,
                                                          std::string_view src_if_match) {
  multipart_requests_.fetch_add(1, std::memory_order_relaxed);
  ObjectPtr src = find(src_key);
  if (!src) return fail<CompletedPart>(Errc::kNotFound, "no such key: " + std::string(src_key));
  if (!src_if_match.empty() && src->etag != src_if_match) {
    return fail<CompletedPart>(
        Errc::kPreconditionFailed,
        "ETag of " + std::string(src_key) + " is no longer " + std::string(src_if_match));
  }
  if (last < first || last >= src->bytes.size()) {
    return fail<CompletedPart>(Errc::kInvalidArgument, "copy range past the end of the source");
  }
  return store_part(key, upload_id, part_number,
                    std::span(src->bytes).subspan(first, last - first + 1));
}

Result<ObjectInfo> MemoryObjectStore::complete_multipart(std::string_view key,
                                                         std::string_view upload_id,
                                                         std::span<const CompletedPart> parts) {
  multipart_requests_.fetch_add(1, std::memory_order_relaxed);
  if (parts.empty()) return fail<ObjectInfo>(Errc::kInvalidArgument, "complete: no parts");
  std::lock_guard lock(mu_);
  auto it = uploads_.find(upload_id);
  if (it == uploads_.end() || it->second.key != key) {
    return fail<ObjectInfo>(Errc::kNotFound, "no such upload: " + std::string(upload_id));
  }
  auto obj = std::make_shared<Object>();
  std::vector<std::string> etags;
  int previous = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const CompletedPart& want = parts[i];
    if (want.part_number <= previous) {
      return fail<ObjectInfo>(Errc::kInvalidArgument, "complete: parts not in ascending order");
    }
    previous = want.part_number;
    auto p = it->second.parts.find(want.part_number);
    if (p == it->second.parts.end() || p->second.etag != want.etag) {
      return fail<ObjectInfo>(Errc::kInvalidArgument,
                              "complete: InvalidPart " + std::to_string(want.part_number));
    }
    if (i + 1 < parts.size() && p->second.bytes.size() < min_part_size_) {
      return fail<ObjectInfo>(Errc::kInvalidArgument,
                              "complete: EntityTooSmall part " + std::to_string(want.part_number));
    }
    obj->bytes.insert(obj->bytes.end(), p->second.bytes.begin(), p->second.bytes.end());
    etags.push_back(p->second.etag);
  }
  obj->etag = multipart_etag(etags);
  obj->mtime_sec = now_sec();
  obj->headers = it->second.headers;
  ObjectInfo info{std::string(key), obj->bytes.size(), obj->etag, obj->mtime_sec};
  objects_.insert_or_assign(std::string(key), std::move(obj));
  uploads_.erase(it);
  return info;
}

Status MemoryObjectStore::abort_multipart(std::string_view key, std::string_view upload_id) {
  multipart_requests_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  auto it = uploads_.find(upload_id);
  if (it != uploads_.end() && it->second.key == key) uploads_.erase(it);
  return Status::ok();
}

Result<std::vector<MultipartUpload>> MemoryObjectStore::list_multipart_uploads(
    std::string_view prefix) {
  multipart_requests_.fetch_add(1, std::memory_order_relaxed);
  std::vector<MultipartUpload> out;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, u] : uploads_) {
      if (u.key.starts_with(prefix)) out.push_back({u.key, id, u.initiated_sec});
    }
  }
  std::sort(out.begin(), out.end(), [](const MultipartUpload& a, const MultipartUpload& b) {
    return std::tie(a.key, a.initiated_sec, a.upload_id) <
           std::tie(b.key, b.initiated_sec, b.upload_id);
  });
  return out;
}

Result<ObjectInfo> MemoryObjectStore::copy(std::string_view src_key, std::string_view dst_key,
                                           std::string_view if_match_etag) {
  copy_requests_.fetch_add(1, std::memory_order_relaxed);
  if (dst_key.empty()) return fail<ObjectInfo>(Errc::kInvalidArgument, "copy: empty key");
  ObjectPtr src = find(src_key);
  if (!src) return fail<ObjectInfo>(Errc::kNotFound, "no such key: " + std::string(src_key));
  if (!if_match_etag.empty() && src->etag != if_match_etag) {
    return fail<ObjectInfo>(
        Errc::kPreconditionFailed,
        "ETag of " + std::string(src_key) + " is no longer " + std::string(if_match_etag));
  }
  auto obj = std::make_shared<Object>();
  obj->bytes = src->bytes;
  obj->etag = md5_hex(obj->bytes);
  obj->mtime_sec = now_sec();
  obj->headers = src->headers;
  ObjectInfo info{std::string(dst_key), obj->bytes.size(), obj->etag, obj->mtime_sec};
  std::lock_guard lock(mu_);
  objects_.insert_or_assign(std::string(dst_key), std::move(obj));
  return info;
}

Result<ObjectInfo> MemoryObjectStore::replace_metadata(std::string_view key,
                                                       const ObjectInfo& current,
                                                       const ObjectHeaders& headers) {
  copy_requests_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) {
    return fail<ObjectInfo>(Errc::kNotFound, "no such key: " + std::string(key));
  }
  if (!current.etag.empty() && it->second->etag != current.etag) {
    return fail<ObjectInfo>(Errc::kPreconditionFailed,
                            "ETag of " + std::string(key) + " is no longer " + current.etag);
  }
  auto obj = std::make_shared<Object>(*it->second);
  obj->mtime_sec = now_sec();
  obj->headers = headers;
  ObjectInfo info{std::string(key), obj->bytes.size(), obj->etag, obj->mtime_sec};
  it->second = std::move(obj);
  return info;
}

Status MemoryObjectStore::remove(std::string_view key) {
  delete_requests_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  if (auto it = objects_.find(key); it != objects_.end()) objects_.erase(it);
  return Status::ok();
}

Result<std::vector<DeleteError>> MemoryObjectStore::remove_many(std::span<const std::string> keys) {
  delete_requests_.fetch_add(
      std::max<size_t>(1, (keys.size() + kMaxDeleteBatch - 1) / kMaxDeleteBatch),
      std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  for (const std::string& key : keys) {
    if (auto it = objects_.find(key); it != objects_.end()) objects_.erase(it);
  }
  return std::vector<DeleteError>{};
}

}  // namespace warmfs

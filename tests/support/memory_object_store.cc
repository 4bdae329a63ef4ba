#include "support/memory_object_store.h"

#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/hex.h"

namespace warmfs {

std::vector<std::byte> to_bytes(std::string_view text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  return std::vector<std::byte>(p, p + text.size());
}

std::string MemoryObjectStore::md5_hex(std::span<const std::byte> bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_md5(), nullptr);
  return to_hex(std::span<const unsigned char>(md, len));
}

MemoryObjectStore::MemoryObjectStore(std::string bucket, Clock& clock)
    : bucket_(std::move(bucket)), clock_(clock) {}

std::string MemoryObjectStore::put_object(std::string_view key, std::span<const std::byte> bytes) {
  auto obj = std::make_shared<Object>();
  obj->bytes.assign(bytes.begin(), bytes.end());
  obj->etag = md5_hex(bytes);
  obj->mtime_sec =
      std::chrono::duration_cast<std::chrono::seconds>(clock_.wall_now().time_since_epoch())
          .count();
  std::string etag = obj->etag;
  std::lock_guard lock(mu_);
  objects_.insert_or_assign(std::string(key), std::move(obj));
  return etag;
}

std::string MemoryObjectStore::put_object(std::string_view key, std::string_view text) {
  return put_object(key, std::as_bytes(std::span(text.data(), text.size())));
}

bool MemoryObjectStore::set_metadata(std::string_view key, const UserMetadata& metadata) {
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return false;
  auto copy = std::make_shared<Object>(*it->second);
  copy->headers.metadata = metadata;
  it->second = std::move(copy);
  return true;
}

bool MemoryObjectStore::set_mtime(std::string_view key, int64_t mtime_sec) {
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return false;
  auto copy = std::make_shared<Object>(*it->second);
  copy->mtime_sec = mtime_sec;
  it->second = std::move(copy);
  return true;
}

bool MemoryObjectStore::delete_object(std::string_view key) {
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return false;
  objects_.erase(it);
  return true;
}

MemoryObjectStore::ObjectPtr MemoryObjectStore::find(std::string_view key) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : it->second;
}

std::optional<std::vector<std::byte>> MemoryObjectStore::object_bytes(std::string_view key) const {
  ObjectPtr obj = find(key);
  if (!obj) return std::nullopt;
  return obj->bytes;
}

size_t MemoryObjectStore::object_count() const {
  std::lock_guard lock(mu_);
  return objects_.size();
}

Result<ObjectInfo> MemoryObjectStore::head(std::string_view key) {
  head_requests_.fetch_add(1, std::memory_order_relaxed);
  ObjectPtr obj = find(key);
  if (!obj) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return Status(Errc::kNotFound, "no such key: " + std::string(key));
  }
  return ObjectInfo{std::string(key), obj->bytes.size(),         obj->etag,
                    obj->mtime_sec,   obj->headers.content_type, obj->headers.metadata};
}

Result<size_t> MemoryObjectStore::get_range(std::string_view key, uint64_t offset,
                                            std::span<std::byte> out, std::string_view if_match) {
  get_requests_.fetch_add(1, std::memory_order_relaxed);
  ObjectPtr obj = find(key);
  auto fail = [&](Errc code, std::string message) -> Result<size_t> {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return Status(code, std::move(message));
  };
  if (!obj) return fail(Errc::kNotFound, "no such key: " + std::string(key));
  if (!if_match.empty() && if_match != obj->etag) {
    return fail(Errc::kPreconditionFailed,
                "ETag of " + std::string(key) + " is no longer " + std::string(if_match));
  }
  if (out.empty()) return size_t{0};
  if (offset >= obj->bytes.size()) {
    return fail(Errc::kRangeNotSatisfiable, "range starts at " + std::to_string(offset) +
                                                " past the end of " + std::string(key));
  }
  const size_t n = std::min<uint64_t>(out.size(), obj->bytes.size() - offset);
  std::memcpy(out.data(), obj->bytes.data() + offset, n);
  bytes_read_.fetch_add(n, std::memory_order_relaxed);
  return n;
}

Result<ListPage> MemoryObjectStore::list(const ListRequest& request) {
  list_requests_.fetch_add(1, std::memory_order_relaxed);
  const size_t max_keys = static_cast<size_t>(std::clamp(request.max_keys, 1, 1000));
  const std::string& prefix = request.prefix;
  const std::string& delim = request.delimiter;
  // Token: 'K' + the last key returned, or 'P' + the last common prefix returned.
  const std::string& token = request.continuation_token;
  if (!token.empty() && token[0] != 'K' && token[0] != 'P') {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return Status(Errc::kInvalidArgument, "malformed continuation token");
  }
  const bool after_prefix = !token.empty() && token[0] == 'P';
  const std::string after = token.empty() ? std::string() : token.substr(1);

  ListPage page;
  std::lock_guard lock(mu_);
  auto it = token.empty() ? objects_.lower_bound(prefix) : objects_.upper_bound(after);
  if (token.empty() && !request.start_after.empty() && request.start_after >= prefix) {
    it = objects_.upper_bound(request.start_after);
  }
  std::string last_item;
  bool last_is_prefix = false;
  for (; it != objects_.end(); ++it) {
    const std::string& k = it->first;
    if (k.compare(0, prefix.size(), prefix) != 0) break;  // sorted: past the prefix
    if (after_prefix && k.compare(0, after.size(), after) == 0) continue;
    std::string_view rest = std::string_view(k).substr(prefix.size());
    const size_t d = delim.empty() ? std::string_view::npos : rest.find(delim);
    if (d != std::string_view::npos) {
      std::string cp = prefix + std::string(rest.substr(0, d + delim.size()));
      if (last_is_prefix && cp == last_item) continue;
      if (page.objects.size() + page.common_prefixes.size() == max_keys) {
        page.truncated = true;
        break;
      }
      page.common_prefixes.push_back(cp);
      last_item = std::move(cp);
      last_is_prefix = true;
      continue;
    }
    if (page.objects.size() + page.common_prefixes.size() == max_keys) {
      page.truncated = true;
      break;
    }
    page.objects.push_back(
        ObjectInfo{k, it->second->bytes.size(), it->second->etag, it->second->mtime_sec});
    last_item = k;
    last_is_prefix = false;
  }
  if (page.truncated) page.next_token = (last_is_prefix ? "P" : "K") + last_item;
  return page;
}

ObjectStoreCounters MemoryObjectStore::counters() const {
  ObjectStoreCounters c;
  c.get_requests = get_requests_.load(std::memory_order_relaxed);
  c.head_requests = head_requests_.load(std::memory_order_relaxed);
  c.list_requests = list_requests_.load(std::memory_order_relaxed);
  c.bytes_read = bytes_read_.load(std::memory_order_relaxed);
  c.errors = errors_.load(std::memory_order_relaxed);
  c.bytes_written = bytes_written_.load(std::memory_order_relaxed);
  c.put_requests = put_requests_.load(std::memory_order_relaxed);
  c.copy_requests = copy_requests_.load(std::memory_order_relaxed);
  c.delete_requests = delete_requests_.load(std::memory_order_relaxed);
  c.multipart_requests = multipart_requests_.load(std::memory_order_relaxed);
  return c;
}

std::string MemoryObjectStore::describe() const { return "memory://" + bucket_; }

}  // namespace warmfs

// The write half of S3ObjectStore: PutObject, multipart uploads, CopyObject, deletes.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "objstore/checksums.h"
#include "objstore/s3_store.h"
#include "objstore/s3_store_util.h"
#include "objstore/time_format.h"
#include "objstore/xml.h"

namespace warmfs {
using namespace s3_detail;  // NOLINT(google-build-using-namespace): helpers shared with reads

namespace {

// Content-Type and x-amz-meta-* headers of a write.
void add_object_headers(http::Headers& out, const ObjectHeaders& headers) {
  if (!headers.content_type.empty()) out.emplace_back("content-type", headers.content_type);
  for (const auto& [name, value] : headers.metadata) out.emplace_back("x-amz-meta-" + name, value);
}

// A copy whose source changes between the HEAD and the CopyObject is redone this many times
// (when the caller set no condition) before giving up with kPreconditionFailed.
constexpr int kCopyRaceAttempts = 3;

// mtime of a written object: the server's Date (its clock stamps Last-Modified), else now.
int64_t write_mtime(const http::Response& r, const Clock& clock) {
  if (auto t = s3::parse_http_date(r.header("date"))) return *t;
  return std::chrono::duration_cast<std::chrono::seconds>(clock.wall_now().time_since_epoch())
      .count();
}

Status check_upload_args(const char* op, std::string_view key, std::string_view upload_id,
                         int part_number) {
  if (key.empty()) return Status(Errc::kInvalidArgument, fmt::format("{}: empty key", op));
  if (upload_id.empty()) {
    return Status(Errc::kInvalidArgument, fmt::format("{} {}: empty upload id", op, key));
  }
  if (part_number < 1 || part_number > kMaxPartNumber) {
    return Status(Errc::kInvalidArgument, fmt::format("{} {}: part number {} not in 1..{}", op, key,
                                                      part_number, kMaxPartNumber));
  }
  return Status::ok();
}

// A 404 that means "already gone" for a delete or an abort; NoSuchBucket is a real failure.
bool gone(const http::Response& r) { return r.status == 404 && error_code(r) != "NoSuchBucket"; }

}  // namespace

std::string S3ObjectStore::target_of(std::string_view key) const {
  return fmt::format("{}/{}", describe(), key);
}

Status S3ObjectStore::answer_failure(std::string_view op, std::string_view target,
                                     const Status& why) {
  errors_.fetch_add(1, std::memory_order_relaxed);
  return Status(why.code(), one_line(fmt::format("{} {}: {}", op, target, why.message())));
}

Status S3ObjectStore::http_failure(const char* op, std::string_view target,
                                   const http::Response& r) {
  const Errc code = errc_for(r);
  if (code != Errc::kNotFound && code != Errc::kPreconditionFailed) {
    errors_.fetch_add(1, std::memory_order_relaxed);
  }
  return Status(code, one_line(fmt::format("{} {}: {}", op, target, describe_http_error(r))));
}

Result<ObjectInfo> S3ObjectStore::put(std::string_view key, std::span<const std::byte> body,
                                      const PutOptions& options) {
  put_requests_.fetch_add(1, std::memory_order_relaxed);
  if (key.empty()) return Status(Errc::kInvalidArgument, "PUT: empty key");
  Call call;
  call.op = "PUT";
  call.method = "PUT";
  call.key = std::string(key);
  call.body = s3::as_chars(body);
  call.payload_hash = s3::sha256_hex(body);
  if (options.content_md5) call.extra_headers.emplace_back("content-md5", s3::md5_base64(body));
  if (options.checksum_crc32c) {
    call.extra_headers.emplace_back("x-amz-checksum-crc32c", s3::crc32c_base64(body));
  }
  if (options.if_none_match) call.extra_headers.emplace_back("if-none-match", "*");
  if (!options.if_match.empty()) {
    call.extra_headers.emplace_back("if-match", quote_etag(options.if_match));
  }
  add_object_headers(call.extra_headers, ObjectHeaders{options.content_type, options.metadata});
  int attempts = 0;
  WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call, &attempts));
  const bool conditional = options.if_none_match || !options.if_match.empty();
  if (r.status == 412 && conditional && attempts > 1) {
    // An earlier attempt may have stored the body and lost its answer; then the condition
    // now fails against our own object. Its ETag tells (for MD5 ETags).
    auto now = head(key);
    if (now.is_ok() && now->etag == s3::md5_hex(body)) {
      bytes_written_.fetch_add(body.size(), std::memory_order_relaxed);
      return now;
    }
  }
  if (r.status != 200) return http_failure("PUT", target_of(key), r);
  ObjectInfo info{call.key, body.size(), strip_quotes(r.header("etag")), write_mtime(r, clock_)};
  if (info.etag.empty()) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return Status(Errc::kCorrupt, fmt::format("PUT {}: answer without ETag", target_of(key)));
  }
  bytes_written_.fetch_add(body.size(), std::memory_order_relaxed);
  return info;
}

Result<std::string> S3ObjectStore::create_multipart(std::string_view key,
                                                    const ObjectHeaders& headers) {
  multipart_requests_.fetch_add(1, std::memory_order_relaxed);
  if (key.empty()) return Status(Errc::kInvalidArgument, "CreateMultipartUpload: empty key");
  Call call;
  call.op = "CreateMultipartUpload";
  call.method = "POST";
  call.key = std::string(key);
  call.query.emplace_back("uploads", "");
  call.payload_hash = std::string(s3::kEmptyPayloadSha256);
  add_object_headers(call.extra_headers, headers);
  WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call));
  if (r.status != 200) return http_failure(call.op, target_of(key), r);
  auto id = s3::parse_initiate_multipart(r.body);
  if (!id.is_ok()) {
    return answer_failure(call.op, target_of(key), id.status());
  }
  return id;
}

Result<CompletedPart> S3ObjectStore::upload_part(std::string_view key, std::string_view upload_id,
                                                 int part_number, std::span<const std::byte> body) {
  multipart_requests_.fetch_add(1, std::memory_order_relaxed);
  WARMFS_RETURN_IF_ERROR(check_upload_args("UploadPart", key, upload_id, part_number));
  Call call;
  call.op = "UploadPart";
  call.method = "PUT";
  call.key = std::string(key);
  call.query.emplace_back("partNumber", std::to_string(part_number));
  call.query.emplace_back("uploadId", std::string(upload_id));
  call.body = s3::as_chars(body);
  call.payload_hash = s3::sha256_hex(body);
  call.extra_headers.emplace_back("content-md5", s3::md5_base64(body));
  WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call));
  const std::string target = fmt::format("{} part {}", target_of(key), part_number);
  if (r.status != 200) return http_failure(call.op, target, r);
  CompletedPart part{part_number, strip_quotes(r.header("etag")), body.size()};
  if (part.etag.empty()) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return Status(Errc::kCorrupt, fmt::format("{} {}: answer without ETag", call.op, target));
  }
  bytes_written_.fetch_add(body.size(), std::memory_order_relaxed);
  return part;
}

Result<CompletedPart> S3ObjectStore::upload_part_copy(std::string_view key,
                                                      std::string_view upload_id, int part_number,
                                                      std::string_view src_key, uint64_t first,
                                                      uint64_t last,
                                                      std::string_view src_if_match) {
  multipart_requests_.fetch_add(1, std::memory_order_relaxed);
  WARMFS_RETURN_IF_ERROR(check_upload_args("UploadPartCopy", key, upload_id, part_number));
  if (src_key.empty() || last < first) {
    return Status(Errc::kInvalidArgument, fmt::format("UploadPartCopy {}: bad source '{}' [{}, {}]",
                                                      key, src_key, first, last));
  }
  Call call;
  call.op = "UploadPartCopy";
  call.method = "PUT";
  call.key = std::string(key);
  call.query.emplace_back("partNumber", std::to_string(part_number));
  call.query.emplace_back("uploadId", std::string(upload_id));
  call.payload_hash = std::string(s3::kEmptyPayloadSha256);
  call.error_in_2xx = true;
  call.slow_answer = true;
  call.extra_headers.emplace_back("x-amz-copy-source", copy_source(src_key));
  call.extra_headers.emplace_back("x-amz-copy-source-range",
                                  fmt::format("bytes={}-{}", first, last));
  if (!src_if_match.empty()) {
    call.extra_headers.emplace_back("x-amz-copy-source-if-match", quote_etag(src_if_match));
  }
  WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call));
  const std::string target = fmt::format("{} part {}", target_of(key), part_number);
  if (r.status != 200) return http_failure(call.op, target, r);
  auto result = s3::parse_copy_result(r.body);
  if (!result.is_ok()) {
    return answer_failure(call.op, target, result.status());
  }
  return CompletedPart{part_number, result->etag, last - first + 1};
}

Result<ObjectInfo> S3ObjectStore::complete_multipart(std::string_view key,
                                                     std::string_view upload_id,
                                                     std::span<const CompletedPart> parts) {
  multipart_requests_.fetch_add(1, std::memory_order_relaxed);
  WARMFS_RETURN_IF_ERROR(check_upload_args("CompleteMultipartUpload", key, upload_id, 1));
  if (parts.empty()) {
    return Status(Errc::kInvalidArgument, fmt::format("CompleteMultipartUpload {}: no parts", key));
  }
  const std::string body = s3::complete_multipart_body(parts);
  Call call;
  call.op = "CompleteMultipartUpload";
  call.method = "POST";
  call.key = std::string(key);
  call.query.emplace_back("uploadId", std::string(upload_id));
  call.body = body;
  call.payload_hash = s3::sha256_hex(body);
  call.error_in_2xx = true;
  call.slow_answer = true;
  call.extra_headers.emplace_back("content-type", "application/xml");
  int attempts = 0;
  WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call, &attempts));
  uint64_t size = 0;
  for (const CompletedPart& p : parts) size += p.size;
  if (r.status == 404 && attempts > 1 && errc_for(r) == Errc::kNotFound) {
    // An earlier attempt may have completed the upload and lost its answer.
    std::vector<std::string> etags;
    for (const CompletedPart& p : parts) etags.push_back(p.etag);
    const std::string expected = s3::multipart_etag(etags);
    auto now = head(key);
    if (!expected.empty() && now.is_ok() && now->etag == expected) return now;
  }
  if (r.status != 200) return http_failure(call.op, target_of(key), r);
  auto etag = s3::parse_complete_multipart(r.body);
  if (!etag.is_ok()) {
    return answer_failure(call.op, target_of(key), etag.status());
  }
  return ObjectInfo{call.key, size, *etag, write_mtime(r, clock_)};
}

Status S3ObjectStore::abort_multipart(std::string_view key, std::string_view upload_id) {
  multipart_requests_.fetch_add(1, std::memory_order_relaxed);
  WARMFS_RETURN_IF_ERROR(check_upload_args("AbortMultipartUpload", key, upload_id, 1));
  Call call;
  call.op = "AbortMultipartUpload";
  call.method = "DELETE";
  call.key = std::string(key);
  call.query.emplace_back("uploadId", std::string(upload_id));
  WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call));
  if (r.status == 204 || r.status == 200 || gone(r)) return Status::ok();
  return http_failure(call.op, target_of(key), r);
}

Result<std::vector<MultipartUpload>> S3ObjectStore::list_multipart_uploads(
    std::string_view prefix) {
  std::vector<MultipartUpload> uploads;
  std::string key_marker, id_marker;
  const std::string target = fmt::format("{} prefix '{}'", describe(), prefix);
  for (;;) {
    multipart_requests_.fetch_add(1, std::memory_order_relaxed);
    Call call;
    call.op = "ListMultipartUploads";
    call.query.emplace_back("uploads", "");
    call.query.emplace_back("encoding-type", "url");
    if (!prefix.empty()) call.query.emplace_back("prefix", std::string(prefix));
    if (!key_marker.empty()) call.query.emplace_back("key-marker", key_marker);
    if (!id_marker.empty()) call.query.emplace_back("upload-id-marker", id_marker);
    WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call));
    if (r.status != 200) return http_failure(call.op, target, r);
    auto page = s3::parse_list_multipart_uploads(r.body);
    if (!page.is_ok()) {
      return answer_failure(call.op, target, page.status());
    }
    for (auto& u : page->uploads) uploads.push_back(std::move(u));
    if (!page->truncated) break;
    if (page->next_key_marker == key_marker && page->next_upload_id_marker == id_marker) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      return Status(Errc::kCorrupt, fmt::format("{} {}: markers do not advance", call.op, target));
    }
    key_marker = page->next_key_marker;
    id_marker = page->next_upload_id_marker;
  }
  return uploads;
}

std::string S3ObjectStore::copy_source(std::string_view src_key) const {
  return fmt::format("/{}/{}", http::uri_encode(config_.bucket, false),
                     http::uri_encode(src_key, true));
}

Result<ObjectInfo> S3ObjectStore::copy(std::string_view src_key, std::string_view dst_key,
                                       std::string_view if_match_etag) {
  copy_requests_.fetch_add(1, std::memory_order_relaxed);
  if (src_key.empty() || dst_key.empty()) {
    return Status(Errc::kInvalidArgument, "CopyObject: empty key");
  }
  for (int race = 1;; ++race) {
    // The HEAD gives the size (single or multipart copy) and pins the version copied.
    WARMFS_ASSIGN_OR_RETURN(ObjectInfo src, head(src_key));
    if (!if_match_etag.empty() && src.etag != if_match_etag) {
      return Status(Errc::kPreconditionFailed, fmt::format("CopyObject {}: ETag is no longer {}",
                                                           target_of(src_key), if_match_etag));
    }
    if (src.size > config_.multipart_copy_threshold) {
      return copy_multipart(src, dst_key, ObjectHeaders{src.content_type, src.metadata});
    }
    Call call;
    call.op = "CopyObject";
    call.method = "PUT";
    call.key = std::string(dst_key);
    call.payload_hash = std::string(s3::kEmptyPayloadSha256);
    call.error_in_2xx = true;
    call.slow_answer = true;
    call.extra_headers.emplace_back("x-amz-copy-source", copy_source(src_key));
    call.extra_headers.emplace_back("x-amz-copy-source-if-match", quote_etag(src.etag));
    WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call));
    if (r.status == 412 && if_match_etag.empty() && race < kCopyRaceAttempts) continue;
    const std::string target = fmt::format("{} to {}", target_of(src_key), dst_key);
    if (r.status != 200) return http_failure(call.op, target, r);
    auto result = s3::parse_copy_result(r.body);
    if (!result.is_ok()) {
      return answer_failure(call.op, target, result.status());
    }
    return ObjectInfo{call.key, src.size, result->etag,
                      result->mtime_sec != 0 ? result->mtime_sec : write_mtime(r, clock_)};
  }
}

Result<ObjectInfo> S3ObjectStore::replace_metadata(std::string_view key, const ObjectInfo& current,
                                                   const ObjectHeaders& headers) {
  copy_requests_.fetch_add(1, std::memory_order_relaxed);
  if (key.empty()) return Status(Errc::kInvalidArgument, "CopyObject: empty key");
  if (current.size > config_.multipart_copy_threshold) {
    ObjectInfo src = current;
    src.key = std::string(key);
    if (src.etag.empty()) {
      // The parts must all come from one version: pin the one there now.
      WARMFS_ASSIGN_OR_RETURN(ObjectInfo now, head(key));
      src.etag = now.etag;
      src.size = now.size;
    }
    return copy_multipart(src, key, headers);
  }
  Call call;
  call.op = "CopyObject";
  call.method = "PUT";
  call.key = std::string(key);
  call.payload_hash = std::string(s3::kEmptyPayloadSha256);
  call.error_in_2xx = true;
  call.slow_answer = true;
  call.extra_headers.emplace_back("x-amz-copy-source", copy_source(key));
  if (!current.etag.empty()) {
    call.extra_headers.emplace_back("x-amz-copy-source-if-match", quote_etag(current.etag));
  }
  call.extra_headers.emplace_back("x-amz-metadata-directive", "REPLACE");
  add_object_headers(call.extra_headers, headers);
  WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call));
  if (r.status != 200) return http_failure(call.op, target_of(key), r);
  auto result = s3::parse_copy_result(r.body);
  if (!result.is_ok()) return answer_failure(call.op, target_of(key), result.status());
  return ObjectInfo{call.key, current.size, result->etag,
                    result->mtime_sec != 0 ? result->mtime_sec : write_mtime(r, clock_)};
}

Result<ObjectInfo> S3ObjectStore::copy_multipart(const ObjectInfo& src, std::string_view dst_key,
                                                 const ObjectHeaders& headers) {
  const uint64_t min_part = (src.size + kMaxPartNumber - 1) / kMaxPartNumber;
  const uint64_t part_size = std::max(config_.multipart_copy_part_size, min_part);
  WARMFS_ASSIGN_OR_RETURN(std::string upload_id, create_multipart(dst_key, headers));
  auto abandon = [&](Status failure) -> Status {
    if (Status s = abort_multipart(dst_key, upload_id); !s.is_ok()) {
      log::warn("multipart copy to {}: abort failed, upload {} left open: {}", dst_key, upload_id,
                s.message());
    }
    return failure;
  };
  std::vector<CompletedPart> parts;
  int number = 1;
  for (uint64_t offset = 0; offset < src.size; offset += part_size, ++number) {
    const uint64_t last = std::min(src.size, offset + part_size) - 1;
    auto part = upload_part_copy(dst_key, upload_id, number, src.key, offset, last, src.etag);
    if (!part.is_ok()) return abandon(std::move(part).take_status());
    parts.push_back(std::move(part).value());
  }
  auto done = complete_multipart(dst_key, upload_id, parts);
  if (!done.is_ok()) return abandon(std::move(done).take_status());
  return done;
}

Status S3ObjectStore::remove(std::string_view key) {
  delete_requests_.fetch_add(1, std::memory_order_relaxed);
  if (key.empty()) return Status(Errc::kInvalidArgument, "DELETE: empty key");
  Call call;
  call.op = "DELETE";
  call.method = "DELETE";
  call.key = std::string(key);
  WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call));
  if (r.status == 204 || r.status == 200 || gone(r)) return Status::ok();
  return http_failure(call.op, target_of(key), r);
}

Result<std::vector<DeleteError>> S3ObjectStore::remove_many(std::span<const std::string> keys) {
  std::vector<DeleteError> failed;
  std::vector<std::string> batch;
  auto flush = [&]() -> Status {
    if (batch.empty()) return Status::ok();
    WARMFS_ASSIGN_OR_RETURN(std::vector<DeleteError> errors, remove_batch(batch));
    for (auto& e : errors) failed.push_back(std::move(e));
    batch.clear();
    return Status::ok();
  };
  for (const std::string& key : keys) {
    if (key.empty()) return Status(Errc::kInvalidArgument, "DeleteObjects: empty key");
    if (!s3::xml_safe(key)) {
      WARMFS_RETURN_IF_ERROR(remove(key));
      continue;
    }
    batch.push_back(key);
    if (batch.size() == kMaxDeleteBatch) WARMFS_RETURN_IF_ERROR(flush());
  }
  WARMFS_RETURN_IF_ERROR(flush());
  return failed;
}

Result<std::vector<DeleteError>> S3ObjectStore::remove_batch(std::span<const std::string> keys) {
  delete_requests_.fetch_add(1, std::memory_order_relaxed);
  const std::string body = s3::delete_objects_body(keys);
  Call call;
  call.op = "DeleteObjects";
  call.method = "POST";
  call.query.emplace_back("delete", "");
  call.body = body;
  call.payload_hash = s3::sha256_hex(body);
  call.error_in_2xx = true;
  call.slow_answer = true;
  call.extra_headers.emplace_back("content-md5", s3::md5_base64(s3::as_bytes(body)));
  call.extra_headers.emplace_back("content-type", "application/xml");
  WARMFS_ASSIGN_OR_RETURN(http::Response r, execute(call));
  const std::string target = fmt::format("{} ({} keys)", describe(), keys.size());
  if (r.status != 200) return http_failure(call.op, target, r);
  auto errors = s3::parse_delete_result(r.body);
  if (!errors.is_ok()) {
    return answer_failure(call.op, target, errors.status());
  }
  return errors;
}

}  // namespace warmfs

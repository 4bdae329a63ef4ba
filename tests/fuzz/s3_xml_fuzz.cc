// S3's XML answers (objstore/xml.h): ListObjectsV2 pages, error documents, multipart,
// copy and batch delete answers. The input is one answer body. Every parser must return a
// value or kCorrupt; the values must keep the documented promises; and the request bodies
// warmfs writes must read back as what was put in them.
#include <pugixml.hpp>

#include "fuzz_util.h"
#include "http/http_client.h"
#include "objstore/xml.h"
#include "objstore/xml_load.h"

using namespace warmfs;

namespace {

void check_status(const Status& s) { FUZZ_CHECK(s.code() == Errc::kCorrupt); }

template <typename T>
bool ok_or_corrupt(const Result<T>& r) {
  if (!r.is_ok()) check_status(r.status());
  return r.is_ok();
}

// The <Delete> and <CompleteMultipartUpload> bodies built from strings of the input must be
// well-formed XML giving the same strings back.
void check_request_bodies(std::string_view body) {
  std::vector<std::string> keys;
  std::vector<CompletedPart> parts;
  for (std::string_view field : fuzz::split(body, '\n')) {
    if (field.size() > 64) field = field.substr(0, 64);
    if (s3::xml_safe(field)) keys.emplace_back(field);
    parts.push_back(CompletedPart{static_cast<int>(parts.size() + 1), std::string(field)});
    if (keys.size() >= 16) break;
  }
  const std::string del = s3::delete_objects_body(keys);
  pugi::xml_document doc;
  auto del_root = s3::xml_detail::load(doc, del, "Delete", "Delete");
  FUZZ_CHECK(del_root.is_ok());
  size_t i = 0;
  for (pugi::xml_node o : del_root->children("Object")) {
    FUZZ_CHECK(i < keys.size() && keys[i] == o.child_value("Key"));
    ++i;
  }
  FUZZ_CHECK(i == keys.size());

  bool all_safe = true;
  for (const CompletedPart& p : parts) all_safe = all_safe && s3::xml_safe(p.etag);
  if (all_safe && parts.size() <= 16) {
    const std::string complete = s3::complete_multipart_body(parts);
    pugi::xml_document c;
    auto complete_root =
        s3::xml_detail::load(c, complete, "CompleteMultipartUpload", "CompleteMultipartUpload");
    FUZZ_CHECK(complete_root.is_ok());
    size_t j = 0;
    for (pugi::xml_node p : complete_root->children("Part")) {
      FUZZ_CHECK(j < parts.size() && "\"" + parts[j].etag + "\"" == p.child_value("ETag"));
      ++j;
    }
    FUZZ_CHECK(j == parts.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body = fuzz::as_view(data, size);

  if (auto page = s3::parse_list_objects_v2(body); ok_or_corrupt(page)) {
    FUZZ_CHECK(!page->truncated || !page->next_token.empty());
  }
  if (auto err = s3::parse_error(body); ok_or_corrupt(err)) {
    FUZZ_CHECK(!err->code.empty());
    FUZZ_CHECK(err->code.find('\n') == std::string::npos);
    FUZZ_CHECK(err->message.find('\n') == std::string::npos);
  }
  if (auto id = s3::parse_initiate_multipart(body); ok_or_corrupt(id)) FUZZ_CHECK(!id->empty());
  if (auto etag = s3::parse_complete_multipart(body); ok_or_corrupt(etag)) {
    FUZZ_CHECK(!etag->empty());
  }
  if (auto copy = s3::parse_copy_result(body); ok_or_corrupt(copy)) FUZZ_CHECK(!copy->etag.empty());
  if (auto uploads = s3::parse_list_multipart_uploads(body); ok_or_corrupt(uploads)) {
    FUZZ_CHECK(!uploads->truncated || !uploads->next_key_marker.empty());
    for (const MultipartUpload& u : uploads->uploads) FUZZ_CHECK(!u.upload_id.empty());
  }
  if (auto deleted = s3::parse_delete_result(body); ok_or_corrupt(deleted)) {
    for (const DeleteError& e : *deleted) FUZZ_CHECK(!e.code.empty());
  }

  // url_decode: any input decodes or is kCorrupt; an encoded string decodes back to itself.
  for (bool plus : {false, true}) {
    auto decoded = s3::url_decode(body, plus);
    if (ok_or_corrupt(decoded)) FUZZ_CHECK(decoded->size() <= body.size());
  }
  auto round = s3::url_decode(http::uri_encode(body, false), true);
  FUZZ_CHECK(round.is_ok() && *round == body);

  check_request_bodies(body);
  return 0;
}

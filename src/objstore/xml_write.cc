// XML of the write path: multipart, copy and batch delete answers, and the request bodies.
#include <fmt/format.h>

#include <pugixml.hpp>

#include "objstore/time_format.h"
#include "objstore/xml.h"
#include "objstore/xml_load.h"

namespace warmfs::s3 {
namespace {

using xml_detail::corrupt;
using xml_detail::load;
using xml_detail::one_line;

std::string strip_quotes(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

void append_escaped(std::string& out, std::string_view s) {
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\r':
        out += "&#13;";  // a raw CR would be normalized away by the server's parser
        break;
      default:
        out.push_back(c);
    }
  }
}

}  // namespace

Result<std::string> parse_initiate_multipart(std::string_view body) {
  constexpr std::string_view kWhat = "InitiateMultipartUpload";
  pugi::xml_document doc;
  WARMFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          load(doc, body, kWhat, "InitiateMultipartUploadResult"));
  std::string id = root.child_value("UploadId");
  if (id.empty()) return corrupt(kWhat, "no UploadId");
  return id;
}

Result<std::string> parse_complete_multipart(std::string_view body) {
  constexpr std::string_view kWhat = "CompleteMultipartUpload";
  pugi::xml_document doc;
  // moto names the root CompleteMultipartUploadResponse; S3 ...Result.
  WARMFS_ASSIGN_OR_RETURN(
      pugi::xml_node root,
      load(doc, body, kWhat, "CompleteMultipartUploadResult", "CompleteMultipartUploadResponse"));
  std::string etag = strip_quotes(root.child_value("ETag"));
  if (etag.empty()) return corrupt(kWhat, "no ETag");
  return etag;
}

Result<CopyResult> parse_copy_result(std::string_view body) {
  constexpr std::string_view kWhat = "CopyObject";
  pugi::xml_document doc;
  WARMFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          load(doc, body, kWhat, "CopyObjectResult", "CopyPartResult"));
  CopyResult r;
  r.etag = strip_quotes(root.child_value("ETag"));
  if (r.etag.empty()) return corrupt(kWhat, "no ETag");
  std::string_view modified = root.child_value("LastModified");
  if (!modified.empty()) {
    auto t = parse_iso8601(modified);
    if (!t) return corrupt(kWhat, fmt::format("bad LastModified '{}'", one_line(modified)));
    r.mtime_sec = *t;
  }
  return r;
}

Result<MultipartUploadsPage> parse_list_multipart_uploads(std::string_view body) {
  constexpr std::string_view kWhat = "ListMultipartUploads";
  pugi::xml_document doc;
  WARMFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          load(doc, body, kWhat, "ListMultipartUploadsResult"));
  const bool url_encoded = std::string_view(root.child_value("EncodingType")) == "url";
  MultipartUploadsPage page;
  for (pugi::xml_node node : root.children("Upload")) {
    MultipartUpload u;
    pugi::xml_node key = node.child("Key");
    if (!key) return corrupt(kWhat, "Upload without Key");
    if (url_encoded) {
      WARMFS_ASSIGN_OR_RETURN(u.key, url_decode(key.child_value(), true));
    } else {
      u.key = key.child_value();
    }
    u.upload_id = node.child_value("UploadId");
    if (u.upload_id.empty()) return corrupt(kWhat, "Upload without UploadId");
    if (auto t = parse_iso8601(node.child_value("Initiated"))) u.initiated_sec = *t;
    page.uploads.push_back(std::move(u));
  }
  page.truncated = std::string_view(root.child_value("IsTruncated")) == "true";
  page.next_key_marker = root.child_value("NextKeyMarker");
  page.next_upload_id_marker = root.child_value("NextUploadIdMarker");
  if (url_encoded && !page.next_key_marker.empty()) {
    WARMFS_ASSIGN_OR_RETURN(page.next_key_marker, url_decode(page.next_key_marker, true));
  }
  if (page.truncated && page.next_key_marker.empty()) {
    return corrupt(kWhat, "IsTruncated is true but NextKeyMarker is missing");
  }
  return page;
}

Result<std::vector<DeleteError>> parse_delete_result(std::string_view body) {
  constexpr std::string_view kWhat = "DeleteObjects";
  pugi::xml_document doc;
  WARMFS_ASSIGN_OR_RETURN(pugi::xml_node root, load(doc, body, kWhat, "DeleteResult"));
  std::vector<DeleteError> errors;
  for (pugi::xml_node node : root.children("Error")) {
    DeleteError e;
    e.key = node.child_value("Key");
    e.code = one_line(node.child_value("Code"));
    e.message = one_line(node.child_value("Message"));
    if (e.code.empty()) return corrupt(kWhat, "Error without Code");
    errors.push_back(std::move(e));
  }
  return errors;
}

std::string complete_multipart_body(std::span<const CompletedPart> parts) {
  std::string out = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
  for (const CompletedPart& p : parts) {
    out += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>&quot;", p.part_number);
    append_escaped(out, p.etag);
    out += "&quot;</ETag></Part>";
  }
  out += "</CompleteMultipartUpload>";
  return out;
}

std::string delete_objects_body(std::span<const std::string> keys) {
  std::string out = "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>";
  for (const std::string& k : keys) {
    out += "<Object><Key>";
    append_escaped(out, k);
    out += "</Key></Object>";
  }
  out += "</Delete>";
  return out;
}

bool xml_safe(std::string_view key) {
  for (char ch : key) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
  }
  return true;
}

}  // namespace warmfs::s3

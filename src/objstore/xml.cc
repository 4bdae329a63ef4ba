#include "objstore/xml.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <pugixml.hpp>

#include "common/hex.h"
#include "objstore/time_format.h"
#include "objstore/xml_load.h"

namespace warmfs::s3 {

namespace xml_detail {

Status corrupt(std::string_view what, std::string_view detail) {
  return Status(Errc::kCorrupt, fmt::format("malformed {} XML: {}", what, detail));
}

Result<pugi::xml_node> load(pugi::xml_document& doc, std::string_view body, std::string_view what,
                            std::string_view root_a, std::string_view root_b) {
  if (body.empty()) return corrupt(what, "empty body");
  // pugixml drops text made only of whitespace unless asked to keep an element's only text.
  constexpr unsigned kParseOptions = pugi::parse_default | pugi::parse_ws_pcdata_single;
  pugi::xml_parse_result parsed =
      doc.load_buffer(body.data(), body.size(), kParseOptions, pugi::encoding_utf8);
  if (!parsed) {
    return corrupt(what, fmt::format("{} at offset {} of {}", parsed.description(), parsed.offset,
                                     body.size()));
  }
  pugi::xml_node root = doc.document_element();
  const std::string_view name = root.name();
  if (name != root_a && (root_b.empty() || name != root_b)) {
    return corrupt(what, fmt::format("root element is <{}>, expected <{}>", name, root_a));
  }
  return root;
}

std::string one_line(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
  return out;
}

}  // namespace xml_detail

namespace {

using xml_detail::corrupt;
using xml_detail::load;
using xml_detail::one_line;

std::string trim_copy(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string strip_quotes(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

Result<std::string> maybe_decode(const char* text, bool url_encoded) {
  if (!url_encoded) return std::string(text);
  return url_decode(text, true);
}

Result<ObjectInfo> parse_contents(pugi::xml_node node, bool url_encoded) {
  constexpr std::string_view kWhat = "ListObjectsV2";
  ObjectInfo info;
  pugi::xml_node key = node.child("Key");
  if (!key) return corrupt(kWhat, "Contents without Key");
  WARMFS_ASSIGN_OR_RETURN(info.key, maybe_decode(key.child_value(), url_encoded));

  std::string_view size = node.child_value("Size");
  auto [ptr, ec] = std::from_chars(size.data(), size.data() + size.size(), info.size);
  if (size.empty() || ec != std::errc() || ptr != size.data() + size.size()) {
    return corrupt(kWhat, fmt::format("bad Size '{}' for key '{}'", one_line(size), info.key));
  }
  info.etag = strip_quotes(node.child_value("ETag"));
  std::string_view modified = node.child_value("LastModified");
  if (!modified.empty()) {
    auto t = parse_iso8601(modified);
    if (!t) {
      return corrupt(
          kWhat, fmt::format("bad LastModified '{}' for key '{}'", one_line(modified), info.key));
    }
    info.mtime_sec = *t;
  }
  return info;
}

}  // namespace

Result<std::string> url_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      const int hi = i + 2 < s.size() ? hex_digit_value(s[i + 1]) : -1;
      const int lo = i + 2 < s.size() ? hex_digit_value(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return Status(Errc::kCorrupt, fmt::format("bad percent escape in '{}'", one_line(s)));
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// A listing's CommonPrefixes and IsTruncated, into page.
static Status parse_prefixes_and_truncation(pugi::xml_node root, bool url_encoded,
                                            std::string_view what, ListPage* page) {
  for (pugi::xml_node node : root.children("CommonPrefixes")) {
    pugi::xml_node prefix = node.child("Prefix");
    if (!prefix) return corrupt(what, "CommonPrefixes without Prefix");
    WARMFS_ASSIGN_OR_RETURN(std::string p, maybe_decode(prefix.child_value(), url_encoded));
    page->common_prefixes.push_back(std::move(p));
  }
  std::string_view truncated = root.child_value("IsTruncated");
  if (truncated == "true") {
    page->truncated = true;
  } else if (!truncated.empty() && truncated != "false") {
    return corrupt(what, fmt::format("bad IsTruncated '{}'", one_line(truncated)));
  }
  return Status::ok();
}

Result<ListPage> parse_list_objects_v2(std::string_view body) {
  constexpr std::string_view kWhat = "ListObjectsV2";
  pugi::xml_document doc;
  WARMFS_ASSIGN_OR_RETURN(pugi::xml_node root, load(doc, body, kWhat, "ListBucketResult"));
  const bool url_encoded = std::string_view(root.child_value("EncodingType")) == "url";

  ListPage page;
  for (pugi::xml_node node : root.children("Contents")) {
    WARMFS_ASSIGN_OR_RETURN(ObjectInfo info, parse_contents(node, url_encoded));
    page.objects.push_back(std::move(info));
  }
  WARMFS_RETURN_IF_ERROR(parse_prefixes_and_truncation(root, url_encoded, kWhat, &page));
  page.next_token = root.child_value("NextContinuationToken");
  if (page.truncated && page.next_token.empty()) {
    return corrupt(kWhat, "IsTruncated is true but NextContinuationToken is missing");
  }
  return page;
}

Result<ListPage> parse_list_object_versions(std::string_view body) {
  constexpr std::string_view kWhat = "ListObjectVersions";
  pugi::xml_document doc;
  WARMFS_ASSIGN_OR_RETURN(pugi::xml_node root, load(doc, body, kWhat, "ListVersionsResult"));
  const bool url_encoded = std::string_view(root.child_value("EncodingType")) == "url";

  ListPage page;
  for (pugi::xml_node node : root.children("Version")) {
    if (std::string_view(node.child_value("IsLatest")) != "true") continue;
    WARMFS_ASSIGN_OR_RETURN(ObjectInfo info, parse_contents(node, url_encoded));
    info.version_id = node.child_value("VersionId");
    if (info.version_id.empty()) return corrupt(kWhat, "Version without VersionId");
    page.objects.push_back(std::move(info));
  }
  WARMFS_RETURN_IF_ERROR(parse_prefixes_and_truncation(root, url_encoded, kWhat, &page));
  if (page.truncated) {
    WARMFS_ASSIGN_OR_RETURN(std::string key_marker,
                            maybe_decode(root.child_value("NextKeyMarker"), url_encoded));
    if (key_marker.empty())
      return corrupt(kWhat, "IsTruncated is true but NextKeyMarker is missing");
    page.next_token = key_marker + "\n" + root.child_value("NextVersionIdMarker");
  }
  return page;
}

Result<S3ErrorInfo> parse_error(std::string_view body) {
  pugi::xml_document doc;
  WARMFS_ASSIGN_OR_RETURN(pugi::xml_node root, load(doc, body, "S3 error", "Error"));
  S3ErrorInfo info;
  info.code = one_line(root.child_value("Code"));
  if (info.code.empty()) return corrupt("S3 error", "no Code element");
  info.message = one_line(root.child_value("Message"));
  return info;
}

Result<StsCredentialsXml> parse_sts_credentials(std::string_view body, std::string_view action) {
  const std::string what = fmt::format("STS {}", action);
  pugi::xml_document doc;
  WARMFS_ASSIGN_OR_RETURN(pugi::xml_node root,
                          load(doc, body, what, fmt::format("{}Response", action)));
  pugi::xml_node creds = root.child(fmt::format("{}Result", action).c_str()).child("Credentials");
  if (!creds) return corrupt(what, fmt::format("no {}Result/Credentials element", action));
  StsCredentialsXml out;
  out.access_key_id = trim_copy(creds.child_value("AccessKeyId"));
  out.secret_access_key = trim_copy(creds.child_value("SecretAccessKey"));
  out.session_token = trim_copy(creds.child_value("SessionToken"));
  if (out.access_key_id.empty() || out.secret_access_key.empty() || out.session_token.empty()) {
    return corrupt(what, "Credentials lacks AccessKeyId, SecretAccessKey or SessionToken");
  }
  std::string expiration = trim_copy(creds.child_value("Expiration"));
  auto secs = parse_iso8601(expiration);
  if (!secs) return corrupt(what, fmt::format("bad Expiration '{}'", expiration));
  out.expiration_sec = *secs;
  return out;
}

Result<S3ErrorInfo> parse_sts_error(std::string_view body) {
  pugi::xml_document doc;
  WARMFS_ASSIGN_OR_RETURN(pugi::xml_node root, load(doc, body, "STS error", "ErrorResponse"));
  pugi::xml_node error = root.child("Error");
  S3ErrorInfo info;
  info.code = one_line(error.child_value("Code"));
  if (info.code.empty()) return corrupt("STS error", "no Error/Code element");
  info.message = one_line(error.child_value("Message"));
  return info;
}

}  // namespace warmfs::s3

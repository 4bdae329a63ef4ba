// Parsing of the XML bodies S3 returns: ListObjectsV2 results and error documents.
//
// Built on pugixml. Every malformed, truncated or unexpected document is a kCorrupt Status
// with a one-line message naming what was wrong; nothing here throws or crashes on hostile
// input. With EncodingType "url" in the result, keys and prefixes are decoded (S3 encodes
// them form-style: '+' is a space). Pure functions; thread safe.
#pragma once

#include <string>
#include <string_view>

#include "objstore/object_store.h"
#include "warmfs/result.h"

namespace warmfs::s3 {

struct S3ErrorInfo {
  std::string code;     // "NoSuchKey", "SignatureDoesNotMatch", ...
  std::string message;  // S3's human text, newlines removed
};

// A ListBucketResult document to a ListPage. kCorrupt if the document is not well formed,
// is not a ListBucketResult, has a Contents without Key, a bad Size or LastModified, or is
// truncated without a NextContinuationToken.
Result<ListPage> parse_list_objects_v2(std::string_view body);

// An <Error> document. kCorrupt if it is not well formed or has no Code.
Result<S3ErrorInfo> parse_error(std::string_view body);

// Percent-decoding; '+' becomes a space when plus_is_space. kCorrupt on a bad escape.
Result<std::string> url_decode(std::string_view s, bool plus_is_space);

}  // namespace warmfs::s3

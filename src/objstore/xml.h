// Parsing of the XML bodies S3 returns: ListObjectsV2 results, error documents and the
// answers to write requests; the XML bodies write requests send; and STS's answers
// (temporary credentials, error documents).
//
// Built on pugixml. Every malformed, truncated or unexpected document is a kCorrupt Status
// with a one-line message naming what was wrong; nothing here throws or crashes on hostile
// input. With EncodingType "url" in the result, keys and prefixes are decoded (S3 encodes
// them form-style: '+' is a space). Pure functions; thread safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

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

// A ListVersionsResult document to a ListPage of the latest versions (IsLatest), each with
// its version_id; delete markers and older versions are left out. next_token is
// "NextKeyMarker\nNextVersionIdMarker" when truncated.
Result<ListPage> parse_list_object_versions(std::string_view body);

// An <Error> document. kCorrupt if it is not well formed or has no Code.
Result<S3ErrorInfo> parse_error(std::string_view body);

// --- STS answers (the Query API's XML). ---

struct StsCredentialsXml {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  int64_t expiration_sec = 0;  // seconds since the epoch
};
// <ACTIONResponse><ACTIONResult><Credentials>...: all four members are required. kCorrupt
// otherwise (an <ErrorResponse> included: the caller checks the status first).
Result<StsCredentialsXml> parse_sts_credentials(std::string_view body, std::string_view action);
// <ErrorResponse><Error><Code>..</Code><Message>..</Message></Error></ErrorResponse>.
Result<S3ErrorInfo> parse_sts_error(std::string_view body);

// Percent-decoding; '+' becomes a space when plus_is_space. kCorrupt on a bad escape.
Result<std::string> url_decode(std::string_view s, bool plus_is_space);

// --- Write requests (xml_write.cc): the bodies they send and the answers they get. ---

// InitiateMultipartUploadResult to its UploadId. kCorrupt if absent.
Result<std::string> parse_initiate_multipart(std::string_view body);

// CompleteMultipartUploadResult (or ...Response, as moto names it) to its ETag (quotes
// stripped). kCorrupt for any other root, an <Error> included (the caller checks first).
Result<std::string> parse_complete_multipart(std::string_view body);

struct CopyResult {
  std::string etag;  // quotes stripped
  int64_t mtime_sec = 0;
};
// CopyObjectResult or CopyPartResult. kCorrupt if it has no ETag.
Result<CopyResult> parse_copy_result(std::string_view body);

struct MultipartUploadsPage {
  std::vector<MultipartUpload> uploads;
  bool truncated = false;
  std::string next_key_marker;
  std::string next_upload_id_marker;
};
// ListMultipartUploadsResult (keys decoded when EncodingType is url). kCorrupt if an Upload
// lacks Key or UploadId, or the page is truncated without markers.
Result<MultipartUploadsPage> parse_list_multipart_uploads(std::string_view body);

// DeleteResult to the keys it reports as not deleted.
Result<std::vector<DeleteError>> parse_delete_result(std::string_view body);

// <CompleteMultipartUpload> listing parts (ETags quoted) in the order given.
std::string complete_multipart_body(std::span<const CompletedPart> parts);
// <Delete> in quiet mode (only failures are reported) for keys; each must be xml_safe.
std::string delete_objects_body(std::span<const std::string> keys);
// False for a key holding a character XML 1.0 cannot carry (control characters other than
// tab, CR and LF); such a key must be deleted on its own.
bool xml_safe(std::string_view key);

}  // namespace warmfs::s3

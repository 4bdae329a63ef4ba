#include "objstore/xml.h"

#include <catch2/catch.hpp>
#include <string>

#include "objstore/time_format.h"

using warmfs::Errc;
using warmfs::s3::parse_error;
using warmfs::s3::parse_list_objects_v2;

namespace {

const std::string kListing = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name>
  <Prefix>photos/</Prefix>
  <KeyCount>3</KeyCount>
  <MaxKeys>1000</MaxKeys>
  <Delimiter>/</Delimiter>
  <IsTruncated>false</IsTruncated>
  <Contents>
    <Key>photos/a.jpg</Key>
    <LastModified>2009-10-12T17:50:30.000Z</LastModified>
    <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>
    <Size>434234</Size>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <Contents>
    <Key>photos/empty</Key>
    <LastModified>2024-05-17T09:30:15Z</LastModified>
    <ETag>"d41d8cd98f00b204e9800998ecf8427e"</ETag>
    <Size>0</Size>
  </Contents>
  <CommonPrefixes><Prefix>photos/2023/</Prefix></CommonPrefixes>
  <CommonPrefixes><Prefix>photos/2024/</Prefix></CommonPrefixes>
</ListBucketResult>)";

}  // namespace

TEST_CASE("ListObjectsV2: objects and common prefixes", "[objstore]") {
  auto page = parse_list_objects_v2(kListing);
  REQUIRE(page.is_ok());
  REQUIRE(page->objects.size() == 2);
  CHECK(page->objects[0].key == "photos/a.jpg");
  CHECK(page->objects[0].size == 434234);
  CHECK(page->objects[0].etag == "fba9dede5f27731c9771645a39863328");
  CHECK(page->objects[0].mtime_sec == 1255369830);
  CHECK(page->objects[1].key == "photos/empty");
  CHECK(page->objects[1].size == 0);
  CHECK(page->objects[1].mtime_sec == 1715938215);
  REQUIRE(page->common_prefixes.size() == 2);
  CHECK(page->common_prefixes[0] == "photos/2023/");
  CHECK(page->common_prefixes[1] == "photos/2024/");
  CHECK_FALSE(page->truncated);
  CHECK(page->next_token.empty());
}

TEST_CASE("ListObjectsV2: empty result and prefixes only", "[objstore]") {
  auto empty = parse_list_objects_v2(
      "<ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated>"
      "</ListBucketResult>");
  REQUIRE(empty.is_ok());
  CHECK(empty->objects.empty());
  CHECK(empty->common_prefixes.empty());

  auto prefixes = parse_list_objects_v2(
      "<ListBucketResult><IsTruncated>false</IsTruncated>"
      "<CommonPrefixes><Prefix>a/</Prefix></CommonPrefixes></ListBucketResult>");
  REQUIRE(prefixes.is_ok());
  CHECK(prefixes->objects.empty());
  CHECK(prefixes->common_prefixes == std::vector<std::string>{"a/"});
}

TEST_CASE("ListObjectsV2: truncation and continuation token", "[objstore]") {
  auto page = parse_list_objects_v2(
      "<ListBucketResult><IsTruncated>true</IsTruncated>"
      "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
      "<Contents><Key>k</Key><Size>1</Size></Contents></ListBucketResult>");
  REQUIRE(page.is_ok());
  CHECK(page->truncated);
  CHECK(page->next_token == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");

  auto no_token =
      parse_list_objects_v2("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>");
  REQUIRE_FALSE(no_token.is_ok());
  CHECK(no_token.code() == Errc::kCorrupt);
  CHECK_THAT(no_token.status().message(), Catch::Contains("NextContinuationToken"));
}

TEST_CASE("ListObjectsV2: url-encoded keys are decoded only when the result says so",
          "[objstore]") {
  const std::string body =
      "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
      "<Contents><Key>dir/my+file%20%281%29%2B%0A.txt</Key><Size>5</Size></Contents>"
      "<Contents><Key>%E3%83%87%E3%83%BC%E3%82%BF</Key><Size>1</Size></Contents>"
      "<CommonPrefixes><Prefix>sub+dir%2F/</Prefix></CommonPrefixes></ListBucketResult>";
  auto page = parse_list_objects_v2(body);
  REQUIRE(page.is_ok());
  REQUIRE(page->objects.size() == 2);
  CHECK(page->objects[0].key == "dir/my file (1)+\n.txt");
  CHECK(page->objects[1].key == "\xE3\x83\x87\xE3\x83\xBC\xE3\x82\xBF");
  CHECK(page->common_prefixes[0] == "sub dir//");

  auto plain = parse_list_objects_v2(
      "<ListBucketResult><Contents><Key>a+b%20c</Key><Size>1</Size></Contents></ListBucketResult>");
  REQUIRE(plain.is_ok());
  CHECK(plain->objects[0].key == "a+b%20c");

  auto bad = parse_list_objects_v2(
      "<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>bad%zz</Key><Size>1</Size>"
      "</Contents></ListBucketResult>");
  CHECK(bad.code() == Errc::kCorrupt);
}

TEST_CASE("ListObjectsV2: a key made only of whitespace stays itself", "[objstore]") {
  // Found by tests/fuzz/s3_xml_fuzz (a <Delete> body's key read back empty): pugixml drops
  // whitespace-only text by default, so a server that does not URL-encode listed " " as "".
  auto page = parse_list_objects_v2(
      "<ListBucketResult>\n  <Contents>\n    <Key> </Key><Size>1</Size></Contents>\n"
      "  <Contents><Key>\t\n</Key><Size>2</Size></Contents>\n"
      "  <CommonPrefixes><Prefix>  /</Prefix></CommonPrefixes></ListBucketResult>");
  REQUIRE(page.is_ok());
  REQUIRE(page->objects.size() == 2);
  CHECK(page->objects[0].key == " ");
  CHECK(page->objects[1].key == "\t\n");
  CHECK(page->common_prefixes[0] == "  /");
  auto deleted = warmfs::s3::parse_delete_result(
      "<DeleteResult><Error><Key>  </Key><Code>AccessDenied</Code></Error></DeleteResult>");
  REQUIRE(deleted.is_ok());
  REQUIRE(deleted->size() == 1);
  CHECK((*deleted)[0].key == "  ");
}

TEST_CASE("ListObjectsV2: malformed or truncated bodies are kCorrupt", "[objstore]") {
  for (const std::string& body : {
           std::string(),
           std::string("not xml at all"),
           kListing.substr(0, kListing.size() / 2),            // cut mid-document
           kListing.substr(0, kListing.find("<Size>434234")),  // cut mid-element
           std::string("<Error><Code>AccessDenied</Code></Error>"),
           std::string("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>"),
           std::string("<ListBucketResult><Contents><Key>k</Key><Size>x1</Size></Contents></"
                       "ListBucketResult>"),
           std::string("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></"
                       "ListBucketResult>"),
           std::string("<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>"),
           std::string("<ListBucketResult><Contents><Key>k</Key><Size>1</Size>"
                       "<LastModified>yesterday</LastModified></Contents></ListBucketResult>"),
           std::string("<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>"),
           std::string("<ListBucketResult><CommonPrefixes></CommonPrefixes></ListBucketResult>"),
           std::string("\0\0\0", 3),
       }) {
    INFO("body: " << body);
    auto r = parse_list_objects_v2(body);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.code() == Errc::kCorrupt);
    CHECK_THAT(r.status().message(), Catch::StartsWith("malformed"));
    CHECK(r.status().message().find('\n') == std::string::npos);
  }
}

TEST_CASE("S3 error documents", "[objstore]") {
  auto e = parse_error(R"(<?xml version="1.0" encoding="UTF-8"?>
<Error>
  <Code>SignatureDoesNotMatch</Code>
  <Message>The request signature we calculated does not match
the signature you provided.</Message>
  <AWSAccessKeyId>AKIAIOSFODNN7EXAMPLE</AWSAccessKeyId>
  <StringToSign>AWS4-HMAC-SHA256...</StringToSign>
  <RequestId>4442587FB7D0A2F9</RequestId>
</Error>)");
  REQUIRE(e.is_ok());
  CHECK(e->code == "SignatureDoesNotMatch");
  CHECK(e->message ==
        "The request signature we calculated does not match the signature you provided.");

  CHECK(parse_error("<Error><Message>no code</Message></Error>").code() == Errc::kCorrupt);
  CHECK(parse_error("<Error><Code>NoSuchKey</Code>").code() == Errc::kCorrupt);
  CHECK(parse_error("").code() == Errc::kCorrupt);
  CHECK(parse_error("<html>502 Bad Gateway</html>").code() == Errc::kCorrupt);
}

TEST_CASE("S3 time formats", "[objstore]") {
  using namespace warmfs::s3;
  CHECK(parse_iso8601("1970-01-01T00:00:00Z") == 0);
  CHECK(parse_iso8601("2009-10-12T17:50:30.000Z") == 1255369830);
  CHECK(parse_iso8601("2024-02-29T23:59:59.123456+00:00") == 1709251199);
  CHECK_FALSE(parse_iso8601("2009-10-12 17:50:30Z"));
  CHECK_FALSE(parse_iso8601("2009-13-12T17:50:30Z"));
  CHECK_FALSE(parse_iso8601("2009-10-12T17:50:30"));
  CHECK_FALSE(parse_iso8601("2009-10-12T17:50:30+02:00"));
  CHECK(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777);
  CHECK(parse_http_date("Fri, 17 May 2024 09:30:15 GMT") == 1715938215);
  CHECK_FALSE(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"));
  CHECK_FALSE(parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT"));
  CHECK(format_amz_date(std::chrono::system_clock::time_point(std::chrono::seconds(1440938160))) ==
        "20150830T123600Z");
}

TEST_CASE("ListObjectVersions keeps the latest version of each key", "[objstore][xml]") {
  constexpr std::string_view kVersions = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListVersionsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>b</Name><Prefix>p/</Prefix><KeyMarker></KeyMarker><MaxKeys>3</MaxKeys>
  <EncodingType>url</EncodingType>
  <IsTruncated>true</IsTruncated>
  <NextKeyMarker>p/c%20d</NextKeyMarker><NextVersionIdMarker>v9</NextVersionIdMarker>
  <Version><Key>p/a</Key><VersionId>v2</VersionId><IsLatest>true</IsLatest>
    <LastModified>2026-01-02T03:04:05.000Z</LastModified><ETag>"0123456789abcdef0123456789abcdef"</ETag><Size>5</Size></Version>
  <Version><Key>p/a</Key><VersionId>v1</VersionId><IsLatest>false</IsLatest>
    <LastModified>2026-01-01T03:04:05.000Z</LastModified><ETag>"aa"</ETag><Size>4</Size></Version>
  <DeleteMarker><Key>p/b</Key><VersionId>v3</VersionId><IsLatest>true</IsLatest>
    <LastModified>2026-01-02T03:04:05.000Z</LastModified></DeleteMarker>
  <Version><Key>p/b</Key><VersionId>v0</VersionId><IsLatest>false</IsLatest>
    <LastModified>2026-01-01T03:04:05.000Z</LastModified><ETag>"bb"</ETag><Size>2</Size></Version>
  <Version><Key>p/c%20d</Key><VersionId>v9</VersionId><IsLatest>true</IsLatest>
    <LastModified>2026-01-02T03:04:05.000Z</LastModified><ETag>"cc"</ETag><Size>7</Size></Version>
  <CommonPrefixes><Prefix>p/sub/</Prefix></CommonPrefixes>
</ListVersionsResult>)";
  auto page = warmfs::s3::parse_list_object_versions(kVersions);
  REQUIRE(page.is_ok());
  REQUIRE(page->objects.size() == 2);
  CHECK(page->objects[0].key == "p/a");
  CHECK(page->objects[0].version_id == "v2");
  CHECK(page->objects[0].etag == "0123456789abcdef0123456789abcdef");
  CHECK(page->objects[0].size == 5);
  CHECK(page->objects[1].key == "p/c d");
  CHECK(page->objects[1].version_id == "v9");
  CHECK(page->common_prefixes == std::vector<std::string>{"p/sub/"});
  CHECK(page->truncated);
  CHECK(page->next_token == "p/c d\nv9");
  CHECK(warmfs::s3::parse_list_object_versions("<ListBucketResult/>").code() ==
        warmfs::Errc::kCorrupt);
}

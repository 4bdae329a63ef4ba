// The XML of the write path: answers to multipart, copy and batch delete; bodies sent.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "objstore/checksums.h"
#include "objstore/xml.h"

using warmfs::CompletedPart;
using warmfs::Errc;
namespace s3 = warmfs::s3;

TEST_CASE("write answers parse", "[objstore-write]") {
  auto id = s3::parse_initiate_multipart(
      "<?xml version=\"1.0\"?><InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
      "<UploadId>VXBsb2FkIElE</UploadId></InitiateMultipartUploadResult>");
  REQUIRE(id.is_ok());
  CHECK(*id == "VXBsb2FkIElE");
  CHECK(s3::parse_initiate_multipart("<InitiateMultipartUploadResult/>").code() == Errc::kCorrupt);

  auto etag = s3::parse_complete_multipart(
      "<CompleteMultipartUploadResult><Location>x</Location><ETag>&quot;3858f62230ac3c915f300c"
      "664312c11f-9&quot;</ETag></CompleteMultipartUploadResult>");
  REQUIRE(etag.is_ok());
  CHECK(*etag == "3858f62230ac3c915f300c664312c11f-9");
  auto moto = s3::parse_complete_multipart(
      "<CompleteMultipartUploadResponse xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<ETag>\"m-2\"</ETag></CompleteMultipartUploadResponse>");
  REQUIRE(moto.is_ok());
  CHECK(*moto == "m-2");
  CHECK(s3::parse_complete_multipart("<Error><Code>InternalError</Code></Error>").code() ==
        Errc::kCorrupt);

  auto copied = s3::parse_copy_result(
      "<CopyObjectResult><LastModified>2024-05-17T09:30:15.000Z</LastModified>"
      "<ETag>\"9b2cf535f27731c974343645a3985328\"</ETag></CopyObjectResult>");
  REQUIRE(copied.is_ok());
  CHECK(copied->etag == "9b2cf535f27731c974343645a3985328");
  CHECK(copied->mtime_sec == 1715938215);
  auto part = s3::parse_copy_result("<CopyPartResult><ETag>\"p\"</ETag></CopyPartResult>");
  REQUIRE(part.is_ok());
  CHECK(part->etag == "p");
  CHECK(s3::parse_copy_result("<CopyObjectResult/>").code() == Errc::kCorrupt);

  auto page = s3::parse_list_multipart_uploads(
      "<ListMultipartUploadsResult><EncodingType>url</EncodingType><IsTruncated>true"
      "</IsTruncated><NextKeyMarker>a%2Bb+c</NextKeyMarker><NextUploadIdMarker>u2"
      "</NextUploadIdMarker><Upload><Key>a%2Bb+c</Key><UploadId>u2</UploadId>"
      "<Initiated>2024-05-17T09:30:15.000Z</Initiated></Upload></ListMultipartUploadsResult>");
  REQUIRE(page.is_ok());
  REQUIRE(page->uploads.size() == 1);
  CHECK(page->uploads[0].key == "a+b c");
  CHECK(page->uploads[0].upload_id == "u2");
  CHECK(page->uploads[0].initiated_sec == 1715938215);
  CHECK(page->truncated);
  CHECK(page->next_key_marker == "a+b c");
  CHECK(page->next_upload_id_marker == "u2");

  auto deleted = s3::parse_delete_result(
      "<DeleteResult><Deleted><Key>a</Key></Deleted><Error><Key>b</Key><Code>AccessDenied"
      "</Code><Message>Access Denied</Message></Error></DeleteResult>");
  REQUIRE(deleted.is_ok());
  REQUIRE(deleted->size() == 1);
  CHECK((*deleted)[0].key == "b");
  CHECK((*deleted)[0].code == "AccessDenied");
}

TEST_CASE("write bodies escape keys and quote ETags", "[objstore-write]") {
  std::vector<CompletedPart> parts = {{1, "aaa", 5}, {2, "bbb", 1}};
  CHECK(s3::complete_multipart_body(parts) ==
        "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Part><PartNumber>1</PartNumber><ETag>&quot;aaa&quot;</ETag></Part>"
        "<Part><PartNumber>2</PartNumber><ETag>&quot;bbb&quot;</ETag></Part>"
        "</CompleteMultipartUpload>");
  std::vector<std::string> keys = {"a<b>&'\"", "c\rd"};
  CHECK(s3::delete_objects_body(keys) ==
        "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>"
        "<Object><Key>a&lt;b&gt;&amp;&apos;&quot;</Key></Object>"
        "<Object><Key>c&#13;d</Key></Object></Delete>");
  CHECK(s3::xml_safe("dir/file name\twith tab"));
  CHECK_FALSE(s3::xml_safe(std::string("a\x01") + "b"));
}

TEST_CASE("checksums match S3's known values", "[objstore-write]") {
  const auto hello = s3::as_bytes("hello world");
  CHECK(s3::md5_hex(hello) == "5eb63bbbe01eeed093cb22bb8f5acdc3");
  CHECK(s3::md5_base64(hello) == "XrY7u+Ae7tCTyyK7j1rNww==");
  CHECK(s3::crc32c_base64(hello) == "yZRlqg==");  // CRC32C 0xc99465aa, big-endian
  CHECK(s3::crc32c_base64(s3::as_bytes("")) == "AAAAAA==");
  CHECK(s3::sha256_hex(hello) ==
        "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
  CHECK(s3::base64_encode(std::vector<unsigned char>{'M', 'a'}) == "TWE=");
  // Two parts "a" and "b": MD5 of the two binary MD5s, then "-2".
  std::vector<std::string> etags = {s3::md5_hex(s3::as_bytes("a")), s3::md5_hex(s3::as_bytes("b"))};
  const std::string e = s3::multipart_etag(etags);
  CHECK(e == "96e024ba2074fe77e8e965ba43a704be-2");  // hashlib, by hand
  CHECK(s3::multipart_etag(std::vector<std::string>{"nothex"}).empty());
}

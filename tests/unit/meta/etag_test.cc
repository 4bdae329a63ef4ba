#include "meta/etag.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>

using namespace warmfs;

TEST_CASE("Etag gives back every form byte for byte", "[etag]") {
  const std::string md5 = "0123456789abcdef0123456789abcdef";
  const char* forms[] = {
      "",
      "0123456789abcdef0123456789abcdef",           // MD5: kept in place
      "0123456789abcdef0123456789abcdef-1",         // multipart: in place with its part count
      "0123456789abcdef0123456789abcdef-10000",     //
      "0123456789abcdef0123456789abcdef-16777215",  // the largest count kept in place
      "0123456789abcdef0123456789abcdef-16777216",  // the rest: a heap copy
      "0123456789abcdef0123456789abcdef-0",
      "0123456789abcdef0123456789abcdef-01",
      "0123456789abcdef0123456789abcdef-",
      "0123456789abcdef0123456789abcdef-1x",
      "0123456789ABCDEF0123456789abcdef",  // upper case hex
      "\"0123456789abcdef0123456789abcdef\"",
      "0123456789abcdef0123456789abcde",    // 31 digits
      "0123456789abcdef0123456789abcdef0",  // 33
      "0123456789abcdeg0123456789abcdef",
      "W/\"xyz\"",
      "a",
  };
  for (const char* f : forms) {
    INFO(f);
    const Etag e(f);
    CHECK(e.str() == f);
    CHECK(e == f);
    CHECK(e.empty() == std::string(f).empty());
    Etag copy = e;
    CHECK(copy.str() == f);
    CHECK(copy == e);
    Etag moved = std::move(copy);
    CHECK(moved.str() == f);
    Etag assigned("other-etag-form");
    assigned = moved;
    CHECK(assigned.str() == f);
    assigned = Etag(md5);
    CHECK(assigned.str() == md5);
    const std::string back = e;
    CHECK(back == f);
  }
}

TEST_CASE("Etags are equal when their bytes are", "[etag]") {
  const Etag a("0123456789abcdef0123456789abcdef");
  CHECK(a == Etag("0123456789abcdef0123456789abcdef"));
  CHECK_FALSE(a == Etag("0123456789abcdef0123456789abcdee"));
  CHECK_FALSE(a == Etag("0123456789abcdef0123456789abcdef-1"));
  CHECK_FALSE(Etag("0123456789abcdef0123456789abcdef-2") ==
              Etag("0123456789abcdef0123456789abcdef-1"));
  CHECK_FALSE(a == Etag("0123456789ABCDEF0123456789ABCDEF"));
  CHECK_FALSE(a == Etag());
  CHECK(Etag("x-y") == std::string("x-y"));
  CHECK_FALSE(Etag("x-y") == std::string("x-z"));
  CHECK(a.md5() != nullptr);
  CHECK(a.md5()[0] == 0x01);
  CHECK(a.md5()[15] == 0xef);
  CHECK(Etag::from_md5(a.md5()) == a);
  CHECK(Etag("0123456789abcdef0123456789abcdef-3").md5() == nullptr);
  CHECK(Etag("x").md5() == nullptr);
}

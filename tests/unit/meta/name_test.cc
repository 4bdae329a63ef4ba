#include "meta/name.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

using namespace warmfs;

TEST_CASE("Name gives back every name byte for byte, in place or on the heap", "[name]") {
  std::vector<std::string> names = {"",
                                    "a",
                                    std::string(14, 'x'),
                                    std::string(15, 'y'),
                                    std::string(16, 'z'),
                                    std::string(255, 'w'),
                                    std::string("a\0b", 3),
                                    "\xc3\xa9t\xc3\xa9.jpg"};
  for (const std::string& s : names) {
    const Name n(s);
    CHECK(n.view() == s);
    CHECK(n.str() == s);
    CHECK(n.size() == s.size());
    CHECK(n.empty() == s.empty());
    CHECK(n == s);
    CHECK(n == Name(s));

    Name copy = n;
    CHECK(copy == s);
    Name moved = std::move(copy);
    CHECK(moved == s);
    CHECK(copy.empty());  // NOLINT(bugprone-use-after-move): a moved-from Name is empty
    Name assigned("before, a name long enough for the heap");
    assigned = n;
    CHECK(assigned == s);
    assigned = std::move(moved);
    CHECK(assigned == s);
    Name& self = assigned;
    assigned = self;
    CHECK(assigned == s);
  }
}

TEST_CASE("Names order as their bytes do", "[name]") {
  const Name a("abc"), b("abd"), longer("abcdefghijklmnopqrstuvwxyz");
  CHECK(a < b);
  CHECK(a < longer);
  CHECK(longer < b);
  CHECK(a < std::string_view("abca"));
  CHECK(Name("") < a);
  CHECK(a == "abc");
  CHECK(a != "abd");
  CHECK(a == std::string("abc"));
  CHECK(std::string_view(a) == "abc");
}

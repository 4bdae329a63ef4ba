// Every page of a listing, for tests that compare one store's listings with another's.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "objstore/object_store.h"

namespace warmfs::testing {

// Each object as "KEY SIZE ETAG" and each common prefix as itself, from every page of the
// listing (max_keys a page, so small values exercise the tokens), sorted.
inline std::vector<std::string> all_pages(ObjectStore& s, const std::string& prefix,
                                          const std::string& delimiter, int max_keys,
                                          const std::string& start_after = "") {
  std::vector<std::string> out;
  ListRequest req;
  req.prefix = prefix;
  req.delimiter = delimiter;
  req.max_keys = max_keys;
  req.start_after = start_after;
  for (;;) {
    auto page = s.list(req);
    REQUIRE(page.is_ok());
    for (auto& o : page->objects)
      out.push_back(o.key + " " + std::to_string(o.size) + " " + o.etag);
    for (auto& p : page->common_prefixes) out.push_back(p);
    if (!page->truncated) break;
    req.continuation_token = page->next_token;
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace warmfs::testing

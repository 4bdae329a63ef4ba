// NodeTable: numbers name slots and are never given twice; the path index against a model
// (std::map) through random inserts, replacements and removals, including the backward shift
// of deletion across the end of the table.
#include "meta/node_table.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>

using namespace warmfs;

TEST_CASE("node table: numbers are found, and none is given twice", "[node_table]") {
  NodeTable t;
  MetaNode& root = t.create_with_ino(1);
  CHECK(root.ino == 1);
  CHECK(t.find(1) == &root);
  CHECK(t.find(0) == nullptr);
  CHECK(t.find(2) == nullptr);

  std::set<uint64_t> given{1};
  std::vector<uint64_t> live;
  std::mt19937 rng(7);
  size_t peak = 0;
  for (int i = 0; i < 20'000; ++i) {
    peak = std::max(peak, live.size());
    if (live.empty() || rng() % 3 != 0) {
      MetaNode& n = t.create();
      INFO(n.ino);
      REQUIRE(given.insert(n.ino).second);  // never given before, though slots are reused
      REQUIRE(t.find(n.ino) == &n);
      live.push_back(n.ino);
    } else {
      const size_t k = rng() % live.size();
      MetaNode* n = t.find(live[k]);
      REQUIRE(n != nullptr);
      t.erase(*n);
      REQUIRE(t.find(live[k]) == nullptr);
      live[k] = live.back();
      live.pop_back();
    }
  }
  CHECK(t.size() == live.size() + 1);
  size_t seen = 0;
  t.for_each([&](MetaNode&) { ++seen; });
  CHECK(seen == t.size());
  // Freed slots were reused: no more slots than nodes held at once.
  std::set<uint64_t> slots;
  for (uint64_t ino : given) slots.insert(ino & 0xffffffff);
  CHECK(slots.size() <= peak + 2);
  CHECK(slots.size() < given.size());
}

TEST_CASE("node table: a renumbered node keeps its number, and it is not given again",
          "[node_table]") {
  NodeTable t;
  t.create_with_ino(1);
  MetaNode& a = t.create();
  a.path = std::string(1, 'a');  // (not = "a": g++ 12 warns falsely, -Wrestrict)
  t.index(a);
  const uint64_t old = a.ino;
  // A number from a previous daemon: another slot's, with a later generation.
  const uint64_t to = (uint64_t{5} << 32) | 3;
  REQUIRE(t.renumber(a, to));
  CHECK(t.find(old) == nullptr);
  CHECK(t.find(to) == &a);
  CHECK(t.at_path("a") == &a);
  CHECK_FALSE(t.renumber(t.create(), to));  // in use
  std::set<uint64_t> given;
  for (int i = 0; i < 100; ++i) {
    MetaNode& n = t.create();
    CHECK(n.ino != to);
    CHECK((n.ino >> 32) > 5);  // generations after it
    given.insert(n.ino);
  }
  t.erase(a);
  CHECK(t.find(to) == nullptr);
  CHECK(t.at_path("a") == nullptr);
  MetaNode& b = t.create();
  CHECK(given.count(b.ino) == 0);
  CHECK(b.ino != to);
  CHECK(b.ino != old);
}

TEST_CASE("node table: the path index agrees with a model", "[node_table]") {
  NodeTable t;
  t.create_with_ino(1);
  std::map<std::string, MetaNode*> model;  // the node indexed at each path
  std::vector<MetaNode*> nodes;
  std::mt19937 rng(11);
  for (int i = 0; i < 50'000; ++i) {
    const std::string path = fmt::format("d{}/f{}", rng() % 40, rng() % 400);
    switch (rng() % 4) {
      case 0:
      case 1: {  // a new node at path, replacing any indexed there
        MetaNode& n = t.create();
        n.path = path;
        t.index(n);
        model[path] = &n;
        nodes.push_back(&n);
        break;
      }
      case 2: {  // a node leaves the index (unlinked), or the table (forgotten)
        if (nodes.empty()) break;
        const size_t k = rng() % nodes.size();
        MetaNode* n = nodes[k];
        auto it = model.find(n->path);
        const bool indexed = it != model.end() && it->second == n;
        if (rng() % 2 == 0) {
          t.unindex(*n);
        } else {
          t.erase(*n);
          nodes[k] = nodes.back();
          nodes.pop_back();
        }
        if (indexed) model.erase(it);
        break;
      }
      case 3: {  // lookups
        MetaNode* found = t.at_path(path);
        auto it = model.find(path);
        REQUIRE(found == (it == model.end() ? nullptr : it->second));
        break;
      }
    }
  }
  for (const auto& [path, n] : model) {
    REQUIRE(t.at_path(path) == n);
    REQUIRE(t.indexed(*n));
  }
  // At most three quarters full.
  CHECK(model.size() * 4 <= t.index_capacity() * 3);
}

TEST_CASE("node table: the kernel's lookup count, and a count too large to hold",
          "[node_table]") {
  MetaNode n;
  n.add_lookup();
  n.add_lookup();
  CHECK_FALSE(n.forget_lookups(1));
  CHECK(n.forget_lookups(5));  // more than it holds: none left
  CHECK(n.nlookup == 0);
  // A count past what the node holds stays at the top: the node is never let go early.
  n.set_lookups(uint64_t{1} << 40);
  CHECK(n.nlookup == MetaNode::kMaxLookups);
  n.add_lookup();
  CHECK(n.nlookup == MetaNode::kMaxLookups);
  CHECK_FALSE(n.forget_lookups(MetaNode::kMaxLookups));
  CHECK_FALSE(n.forget_lookups(uint64_t{1} << 41));
  n.is_dir = true;
  n.local = true;
  CHECK(n.nlookup == MetaNode::kMaxLookups);  // the flags beside it leave it be
}

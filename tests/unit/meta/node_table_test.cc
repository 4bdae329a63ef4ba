// NodeTable: numbers name slots and are never given twice; a directory stays while nodes
// below it do; the name index against a model (std::map) through random inserts,
// replacements and removals, including the backward shift of deletion across the end of the
// table.
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
      t.release(*n);
      REQUIRE(t.find(live[k]) == nullptr);
      live[k] = live.back();
      live.pop_back();
    }
  }
  CHECK(t.size() == live.size() + 1);
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
  a.name = std::string(1, 'a');  // (not = "a": g++ 12 warns falsely, -Wrestrict)
  t.set_parent(a, 1);
  t.index(a);
  const uint64_t old = a.ino;
  // A number from a previous daemon: another slot's, with a later generation.
  const uint64_t to = (uint64_t{5} << 32) | 3;
  REQUIRE(t.renumber(a, to));
  CHECK(t.find(old) == nullptr);
  CHECK(t.find(to) == &a);
  CHECK(t.at(1, "a") == &a);
  CHECK(t.id(a) == old);                    // its id stays
  CHECK_FALSE(t.renumber(t.create(), to));  // in use
  std::set<uint64_t> given;
  for (int i = 0; i < 100; ++i) {
    MetaNode& n = t.create();
    CHECK(n.ino != to);
    CHECK((n.ino >> 32) > 5);  // generations after it
    given.insert(n.ino);
  }
  t.release(a);
  CHECK(t.find(to) == nullptr);
  CHECK(t.at(1, "a") == nullptr);
  MetaNode& b = t.create();
  CHECK(given.count(b.ino) == 0);
  CHECK(b.ino != to);
  CHECK(b.ino != old);
}

TEST_CASE("node table: the name index agrees with a model", "[node_table]") {
  NodeTable t;
  t.create_with_ino(1);
  // The (parent id, name) each node is indexed at, if it is.
  std::map<std::pair<uint64_t, std::string>, MetaNode*> model;
  std::vector<MetaNode*> nodes;
  std::mt19937 rng(11);
  for (int i = 0; i < 50'000; ++i) {
    // Parents 1-40 (ids no node has: the index does not look them up), so the same names
    // meet in many directories.
    const uint64_t parent = 1 + rng() % 40;
    const std::string name = fmt::format("f{}", rng() % 400);
    switch (rng() % 4) {
      case 0:
      case 1: {  // a new node at (parent, name), replacing any indexed there
        MetaNode& n = t.create();
        n.name = name;
        n.parent = parent;  // not set_parent(): these parents are not nodes
        t.index(n);
        model[{parent, name}] = &n;
        nodes.push_back(&n);
        break;
      }
      case 2: {  // a node leaves the index (unlinked), or the table (forgotten)
        if (nodes.empty()) break;
        const size_t k = rng() % nodes.size();
        MetaNode* n = nodes[k];
        auto it = model.find({n->parent, n->name.str()});
        const bool indexed = it != model.end() && it->second == n;
        if (rng() % 2 == 0) {
          t.unindex(*n);
        } else {
          t.release(*n);
          nodes[k] = nodes.back();
          nodes.pop_back();
        }
        if (indexed) model.erase(it);
        break;
      }
      case 3: {  // lookups
        MetaNode* found = t.at(parent, name);
        auto it = model.find({parent, name});
        REQUIRE(found == (it == model.end() ? nullptr : it->second));
        break;
      }
    }
  }
  for (const auto& [key, n] : model) {
    REQUIRE(t.at(key.first, key.second) == n);
    REQUIRE(t.indexed(*n));
  }
  // At most three quarters full.
  CHECK(model.size() * 4 <= t.index_capacity() * 3);
}

TEST_CASE("node table: a directory the kernel forgot stays while nodes below it do",
          "[node_table]") {
  NodeTable t;
  MetaNode& root = t.create_with_ino(1);
  root.parent = 1;
  auto child = [&](MetaNode& parent, const char* name) -> MetaNode& {
    MetaNode& n = t.create();
    n.name = name;
    t.set_parent(n, t.id(parent));
    t.index(n);
    return n;
  };
  MetaNode& a = child(root, "a");
  MetaNode& b = child(a, "b");
  MetaNode& f = child(b, "f");
  MetaNode& g = child(b, "g");
  const uint64_t a_ino = a.ino, b_ino = b.ino, f_ino = f.ino, g_ino = g.ino;
  CHECK(t.children(b) == 2);
  CHECK(t.children(a) == 1);

  // Forgotten parents first: they stay, released, for the files below them.
  t.release(a);
  t.release(b);
  REQUIRE(t.find(a_ino) == &a);
  REQUIRE(t.find(b_ino) == &b);
  CHECK(a.released);
  CHECK(t.at(t.id(b), "f") == &f);
  t.release(f);
  CHECK(t.find(f_ino) == nullptr);
  CHECK(t.find(b_ino) == &b);  // g is still below it
  // A directory looked up again is the kernel's once more: it stays when emptied.
  b.add_lookup();
  CHECK_FALSE(b.released);
  g.add_lookup();
  CHECK(g.forget_lookups(1));
  t.release(g);
  CHECK(t.find(g_ino) == nullptr);
  CHECK(t.find(b_ino) == &b);
  CHECK(t.find(a_ino) == &a);  // b is below it
  // The last one goes, and takes the released directories above it.
  CHECK(b.forget_lookups(1));
  t.release(b);
  CHECK(t.find(b_ino) == nullptr);
  CHECK(t.find(a_ino) == nullptr);
  CHECK(t.size() == 1);

  // A node moved out of a released directory lets it go too.
  MetaNode& d = child(root, "d");
  MetaNode& x = child(d, "x");
  const uint64_t d_ino = d.ino;
  t.release(d);
  CHECK(t.find(d_ino) == &d);
  t.unindex(x);
  t.set_parent(x, t.id(root));
  t.index(x);
  CHECK(t.find(d_ino) == nullptr);
  CHECK(t.at(1, "x") == &x);
}

TEST_CASE("node table: the kernel's lookup count, and a count too large to hold", "[node_table]") {
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

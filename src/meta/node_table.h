// NodeTable: the inodes the kernel holds, found by inode number and by (parent, name).
//
// A mount that walks a tree of a million files holds a node for each of them, so a node costs
// what its own fields cost and little more. Nodes live in a slab (chunks of kChunkNodes,
// never moved, so a MetaNode& stays valid until release()); a freed slot is reused, and the
// slab keeps its high-water mark (a freed slot's name is freed, its 96 bytes stay). An inode
// number names its slot: the slot's index in the low 32 bits and the slot's generation
// (bumped at each reuse) in the high ones, so finding a node by number takes no table, and a
// number once given is not given again to another node. Numbers a node takes over from a
// previous daemon (renumber(), a live upgrade) are the exception: they are found through a
// small map, and the generations given afterwards are above any of theirs. The number a node
// was created with stays its id() through renumbering: a child names its parent by it, so a
// directory that takes another number leaves its children as they are.
//
// A node holds its name and its parent's id, not its path: a path is the names up to the
// root, so a directory's rename moves everything below it without touching it, and a file's
// node holds no heap copy of its path. A directory stays while a node below it does
// (release()), so every node's parents can be walked.
//
// The name index is an open-addressing table (linear probing, deletion by backward shift) of
// slot numbers, hashed by (parent, name), so the name is not copied into it: 5 to 11 bytes a
// node (a load between 3/8 and 3/4), against 40 for a std::unordered_set of pointers.
//
// Not thread safe: Metadata calls it under its mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "meta/etag.h"
#include "meta/name.h"

namespace warmfs {

// One per path the kernel holds: 96 bytes. The 8-byte fields come first, then the 20-byte
// ETag and the lookup count with the flags in its top bits, so no padding is spent.
struct MetaNode {
  // The kernel's references (lookups not forgotten yet). A count that reaches kMaxLookups
  // stays there: the node is then kept for good rather than let go while still referenced.
  static constexpr uint32_t kMaxLookups = (1U << 29) - 1;
  void add_lookup() {
    if (nlookup < kMaxLookups) ++nlookup;
    released = false;
  }
  void set_lookups(uint64_t n) {
    nlookup = n < kMaxLookups ? static_cast<uint32_t>(n) : kMaxLookups;
    if (nlookup > 0) released = false;
  }
  // Drops n references; true when none is left.
  bool forget_lookups(uint64_t n) {
    if (nlookup == kMaxLookups) return false;
    nlookup = n >= nlookup ? 0 : nlookup - static_cast<uint32_t>(n);
    return nlookup == 0;
  }

  uint64_t ino = 0;     // the kernel's number for it; 0: the slot is free
  uint64_t parent = 0;  // the parent's NodeTable::id() (set_parent()); the root's own
  Name name;            // "" for the root
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  std::chrono::steady_clock::time_point validated_at;
  Etag etag;
  uint32_t nlookup : 29 = 0;
  bool is_dir : 1 = false;
  bool local : 1 = false;     // created here, not in the bucket yet
  bool released : 1 = false;  // forgotten by the kernel, kept for the nodes below it
};
static_assert(sizeof(MetaNode) <= 80, "a node per file of a million-file tree: keep it small");

class NodeTable {
 public:
  static constexpr size_t kChunkNodes = 1024;

  // The node numbered ino; null if there is none.
  MetaNode* find(uint64_t ino);
  const MetaNode* find(uint64_t ino) const;
  // A new node with a number never given before (or `ino`, which must be free: the root's
  // fixed number). Not in the name index, and no parent's child (set_parent()).
  MetaNode& create();
  MetaNode& create_with_ino(uint64_t ino);
  // The kernel forgot n: it leaves the table (and the name index), unless nodes below it
  // remain; then it stays, released, until the last of them goes (or the kernel looks it
  // up again). n is invalid after, unless it stays.
  void release(MetaNode& n);
  // Makes n a child of the node whose id() is parent_id.
  void set_parent(MetaNode& n, uint64_t parent_id);
  // Nodes that name n as their parent.
  uint32_t children(const MetaNode& n) const;
  // The node takes the number `to` (free, or false). Its name index entry and id() are kept.
  bool renumber(MetaNode& n, uint64_t to);
  // The number n was created with (its ino unless renumbered), and the node it names while
  // that node lives (null after, even when its slot holds another).
  uint64_t id(const MetaNode& n) const;
  MetaNode* find_id(uint64_t id);
  const MetaNode* find_id(uint64_t id) const;
  size_t size() const { return live_; }

  // ---- The name index: which node each name in a directory names now -------------------
  MetaNode* at(uint64_t parent_id, std::string_view name) const;
  // Makes n the node at its (parent, name), in place of any other.
  void index(MetaNode& n);
  // Drops n from the index, if it is the node at its (parent, name). Call before changing
  // n.parent or n.name.
  void unindex(const MetaNode& n);
  bool indexed(const MetaNode& n) const { return at(n.parent, n.name) == &n; }
  size_t index_capacity() const { return index_.size(); }

 private:
  static uint64_t make_ino(uint32_t slot, uint32_t gen) {
    return (static_cast<uint64_t>(gen) << 32) | slot;
  }
  MetaNode& slot_node(size_t slot) { return chunks_[slot / kChunkNodes][slot % kChunkNodes]; }
  const MetaNode& slot_node(size_t slot) const {
    return chunks_[slot / kChunkNodes][slot % kChunkNodes];
  }
  // Out of the table, and out of its parent's children (which may release the parent).
  void erase(MetaNode& n);
  // The slot holding n (n is in the table).
  uint32_t slot_of(const MetaNode& n) const;
  // A free slot, and the generation its next number takes.
  uint32_t take_slot(uint32_t* gen);

  // Name index: index_ holds slot numbers (0: empty); its size is a power of two.
  size_t home(uint64_t parent_id, std::string_view name) const;
  void grow_index();
  void index_insert(uint32_t slot);

  std::vector<std::unique_ptr<MetaNode[]>> chunks_;
  size_t slots_ = 1;  // slots in use or freed; slot 0 is never used (inode 0 names nothing)
  size_t live_ = 0;
  std::vector<uint32_t> free_;      // freed slots
  std::vector<uint32_t> next_gen_;  // per slot: the generation its next number takes
  uint32_t min_gen_ = 0;            // above every renumbered node's generation
  // Numbers taken by renumber() that do not name their node's slot: number -> slot.
  std::unordered_map<uint64_t, uint32_t> foreign_;
  // Nodes below each node that has any, by its id (directories only: a few per thousand
  // files).
  std::unordered_map<uint64_t, uint32_t> children_;

  std::vector<uint32_t> index_;
  size_t indexed_ = 0;
};

}  // namespace warmfs

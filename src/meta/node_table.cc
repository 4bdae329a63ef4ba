#include "meta/node_table.h"

#include <algorithm>
#include <limits>

namespace warmfs {

namespace {
constexpr uint64_t kSlotMask = 0xffffffffULL;
constexpr uint32_t kMaxGen = std::numeric_limits<uint32_t>::max();
}  // namespace

const MetaNode* NodeTable::find(uint64_t ino) const {
  if (ino == 0) return nullptr;
  const uint64_t slot = ino & kSlotMask;
  if (slot < slots_ && slot_node(slot).ino == ino) return &slot_node(slot);
  if (foreign_.empty()) return nullptr;
  auto it = foreign_.find(ino);
  return it == foreign_.end() ? nullptr : &slot_node(it->second);
}

MetaNode* NodeTable::find(uint64_t ino) {
  return const_cast<MetaNode*>(static_cast<const NodeTable*>(this)->find(ino));
}

uint32_t NodeTable::slot_of(const MetaNode& n) const {
  const uint64_t slot = n.ino & kSlotMask;
  if (slot < slots_ && &slot_node(slot) == &n) return static_cast<uint32_t>(slot);
  return foreign_.at(n.ino);
}

uint32_t NodeTable::take_slot(uint32_t* gen) {
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    if (slots_ >= chunks_.size() * kChunkNodes) {
      chunks_.push_back(std::make_unique<MetaNode[]>(kChunkNodes));
      next_gen_.resize(chunks_.size() * kChunkNodes, 0);
    }
    slot = static_cast<uint32_t>(slots_++);
  }
  *gen = std::max(next_gen_[slot], min_gen_);
  return slot;
}

MetaNode& NodeTable::create() {
  uint32_t gen;
  const uint32_t slot = take_slot(&gen);
  // A number a renumbered node holds is not given again (only possible when its generation
  // was the largest there is, so min_gen_ could not pass it).
  while (gen < kMaxGen && foreign_.count(make_ino(slot, gen)) != 0) ++gen;
  // A slot whose generations are used up is not freed again (erase()): next_gen_ wraps to 0.
  next_gen_[slot] = gen + 1;
  MetaNode& n = slot_node(slot);
  n.ino = make_ino(slot, gen);
  ++live_;
  return n;
}

MetaNode& NodeTable::create_with_ino(uint64_t ino) {
  MetaNode& n = create();
  if (n.ino != ino) renumber(n, ino);
  return n;
}

void NodeTable::set_parent(MetaNode& n, uint64_t parent_id) {
  if (n.parent == parent_id) return;
  const uint64_t old_parent = n.parent;
  n.parent = parent_id;
  if (parent_id != 0) ++children_[parent_id];
  if (old_parent == 0) return;
  auto it = children_.find(old_parent);
  if (it == children_.end() || --it->second > 0) return;
  children_.erase(it);
  // The old parent goes if the kernel let go of it and n was the last node below it.
  MetaNode* parent = find_id(old_parent);
  if (parent != nullptr && parent->released && parent->nlookup == 0) erase(*parent);
}

uint32_t NodeTable::children(const MetaNode& n) const {
  auto it = children_.find(id(n));
  return it == children_.end() ? 0 : it->second;
}

void NodeTable::release(MetaNode& n) {
  if (children(n) > 0) {
    n.released = true;
    return;
  }
  erase(n);
}

void NodeTable::erase(MetaNode& n) {
  MetaNode* node = &n;
  while (node != nullptr) {
    unindex(*node);
    const uint64_t parent_id = node->parent;
    const uint32_t slot = slot_of(*node);
    children_.erase(id(*node));
    foreign_.erase(node->ino);
    *node = MetaNode{};
    --live_;
    if (next_gen_[slot] != 0) free_.push_back(slot);
    // The parent goes too if the kernel let go of it and this was the last node below it.
    node = nullptr;
    auto it = children_.find(parent_id);
    if (it != children_.end() && --it->second == 0) {
      children_.erase(it);
      MetaNode* parent = find_id(parent_id);
      if (parent != nullptr && parent->released && parent->nlookup == 0) node = parent;
    }
  }
}

bool NodeTable::renumber(MetaNode& n, uint64_t to) {
  if (to == n.ino) return true;
  if (to == 0 || find(to) != nullptr) return false;
  const uint32_t slot = slot_of(n);
  foreign_.erase(n.ino);
  n.ino = to;
  // find() finds it without the map only when it names the node's own slot.
  if ((to & kSlotMask) != slot) foreign_.emplace(to, slot);
  // Numbers given from now on have a larger generation than this one, so none equals it
  // (for the largest generation of all, create() looks in foreign_).
  const uint32_t gen = static_cast<uint32_t>(to >> 32);
  if (gen < kMaxGen) min_gen_ = std::max(min_gen_, gen + 1);
  return true;
}

uint64_t NodeTable::id(const MetaNode& n) const {
  const uint32_t slot = slot_of(n);
  // next_gen_ is the generation after the one the slot's node was created with (0 once
  // they are used up: the last one, kMaxGen).
  return make_ino(slot, next_gen_[slot] - 1);
}

const MetaNode* NodeTable::find_id(uint64_t id) const {
  const uint64_t slot = id & kSlotMask;
  if (slot == 0 || slot >= slots_) return nullptr;
  const MetaNode& n = slot_node(slot);
  if (n.ino == 0 || next_gen_[slot] - 1 != static_cast<uint32_t>(id >> 32)) return nullptr;
  return &n;
}

MetaNode* NodeTable::find_id(uint64_t id) {
  return const_cast<MetaNode*>(static_cast<const NodeTable*>(this)->find_id(id));
}

// ---- Path index ------------------------------------------------------------------------

size_t NodeTable::home(uint64_t parent_id, std::string_view name) const {
  // The parent's id mixed in (Fibonacci hashing), so the same name in many directories
  // ("train", "0.jpg") spreads.
  const size_t h = std::hash<std::string_view>{}(name) ^ (parent_id * 0x9E3779B97F4A7C15ULL);
  return (h ^ (h >> 32)) & (index_.size() - 1);
}

MetaNode* NodeTable::at(uint64_t parent_id, std::string_view name) const {
  if (index_.empty()) return nullptr;
  const size_t mask = index_.size() - 1;
  for (size_t i = home(parent_id, name);; i = (i + 1) & mask) {
    const uint32_t slot = index_[i];
    if (slot == 0) return nullptr;
    const MetaNode& n = slot_node(slot);
    if (n.parent == parent_id && n.name == name) return const_cast<MetaNode*>(&n);
  }
}

void NodeTable::index_insert(uint32_t slot) {
  const size_t mask = index_.size() - 1;
  const MetaNode& n = slot_node(slot);
  size_t i = home(n.parent, n.name);
  while (index_[i] != 0) i = (i + 1) & mask;
  index_[i] = slot;
}

void NodeTable::grow_index() {
  std::vector<uint32_t> old = std::move(index_);
  index_.assign(std::max<size_t>(16, old.size() * 2), 0);
  for (uint32_t slot : old) {
    if (slot != 0) index_insert(slot);
  }
}

void NodeTable::index(MetaNode& n) {
  if (MetaNode* other = at(n.parent, n.name); other != nullptr) {
    if (other == &n) return;
    unindex(*other);
  }
  // At most 3/4 full: linear probing's runs stay short.
  if ((indexed_ + 1) * 4 > index_.size() * 3) grow_index();
  index_insert(slot_of(n));
  ++indexed_;
}

void NodeTable::unindex(const MetaNode& n) {
  if (index_.empty()) return;
  const size_t mask = index_.size() - 1;
  size_t i = home(n.parent, n.name);
  const uint32_t slot = slot_of(n);
  for (;; i = (i + 1) & mask) {
    if (index_[i] == 0) return;  // not indexed
    if (index_[i] == slot) break;
  }
  // Backward shift: move up each entry after the hole that may fill it, so every entry stays
  // reachable from its home without passing an empty slot.
  index_[i] = 0;
  --indexed_;
  for (size_t j = (i + 1) & mask; index_[j] != 0; j = (j + 1) & mask) {
    const MetaNode& moved = slot_node(index_[j]);
    const size_t k = home(moved.parent, moved.name);
    // The entry at j may move to the hole at i unless its home lies cyclically in (i, j].
    const bool home_between = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (home_between) continue;
    index_[i] = index_[j];
    index_[j] = 0;
    i = j;
  }
}

}  // namespace warmfs

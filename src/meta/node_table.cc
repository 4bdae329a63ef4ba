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
  if (slot < slots_ && at(slot).ino == ino) return &at(slot);
  if (foreign_.empty()) return nullptr;
  auto it = foreign_.find(ino);
  return it == foreign_.end() ? nullptr : &at(it->second);
}

MetaNode* NodeTable::find(uint64_t ino) {
  return const_cast<MetaNode*>(static_cast<const NodeTable*>(this)->find(ino));
}

uint32_t NodeTable::slot_of(const MetaNode& n) const {
  const uint64_t slot = n.ino & kSlotMask;
  if (slot < slots_ && &at(slot) == &n) return static_cast<uint32_t>(slot);
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
  MetaNode& n = at(slot);
  n.ino = make_ino(slot, gen);
  ++live_;
  return n;
}

MetaNode& NodeTable::create_with_ino(uint64_t ino) {
  MetaNode& n = create();
  if (n.ino != ino) renumber(n, ino);
  return n;
}

void NodeTable::erase(MetaNode& n) {
  unindex(n);
  const uint32_t slot = slot_of(n);
  foreign_.erase(n.ino);
  n = MetaNode{};
  --live_;
  if (next_gen_[slot] != 0) free_.push_back(slot);
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
  const MetaNode& n = at(slot);
  if (n.ino == 0 || next_gen_[slot] - 1 != static_cast<uint32_t>(id >> 32)) return nullptr;
  return &n;
}

MetaNode* NodeTable::find_id(uint64_t id) {
  return const_cast<MetaNode*>(static_cast<const NodeTable*>(this)->find_id(id));
}

// ---- Path index ------------------------------------------------------------------------

size_t NodeTable::home(std::string_view path) const {
  return std::hash<std::string_view>{}(path) & (index_.size() - 1);
}

MetaNode* NodeTable::at_path(std::string_view path) const {
  if (index_.empty()) return nullptr;
  const size_t mask = index_.size() - 1;
  for (size_t i = home(path);; i = (i + 1) & mask) {
    const uint32_t slot = index_[i];
    if (slot == 0) return nullptr;
    const MetaNode& n = at(slot);
    if (n.path == path) return const_cast<MetaNode*>(&n);
  }
}

void NodeTable::index_insert(uint32_t slot) {
  const size_t mask = index_.size() - 1;
  size_t i = home(at(slot).path);
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
  if (MetaNode* other = at_path(n.path); other != nullptr) {
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
  size_t i = home(n.path);
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
    const size_t k = home(at(index_[j]).path);
    // The entry at j may move to the hole at i unless its home lies cyclically in (i, j].
    const bool home_between = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (home_between) continue;
    index_[i] = index_[j];
    index_[j] = 0;
    i = j;
  }
}

}  // namespace warmfs

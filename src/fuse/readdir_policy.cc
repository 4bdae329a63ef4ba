#include "fuse/readdir_policy.h"

namespace warmfs {

bool ReaddirPolicy::attributes_for(uint32_t tid, uint64_t dir) {
  if (always_) return true;
  std::lock_guard lock(mu_);
  if (callers_.size() >= kMaxCallers && callers_.count(tid) == 0) callers_.clear();
  Caller& c = callers_[tid];
  if (c.attributes) return true;
  if (c.names_only_dir != dir) {
    c.names_only_dir = dir;
    c.lookups = 0;
  }
  return false;
}

void ReaddirPolicy::looked_up(uint32_t tid, uint64_t dir, bool is_dir) {
  // A walk looks up the directories it descends into; only files say the caller looks at
  // what it lists.
  if (always_ || is_dir) return;
  std::lock_guard lock(mu_);
  auto it = callers_.find(tid);
  if (it == callers_.end()) return;
  Caller& c = it->second;
  if (c.attributes || c.names_only_dir != dir) return;
  if (++c.lookups >= kLookupsToLearn) {
    c.attributes = true;
    ++learned_;
  }
}

uint64_t ReaddirPolicy::learned() const {
  std::lock_guard lock(mu_);
  return learned_;
}

}  // namespace warmfs

// MemoryKvStore: a KvStore (common/kv_store.h) in a std::map, for tests; counts its calls.
//
// Thread safe: mu_ guards the map and the counters.
#pragma once

#include <map>
#include <mutex>

#include "common/kv_store.h"

namespace warmfs {

class MemoryKvStore final : public KvStore {
 public:
  Result<std::optional<std::string>> get(std::string_view key) const override {
    std::lock_guard lock(mu_);
    ++gets_;
    auto it = map_.find(std::string(key));
    if (it == map_.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  Status put(std::string_view key, std::string_view value) override {
    std::lock_guard lock(mu_);
    ++puts_;
    map_[std::string(key)] = std::string(value);
    return Status::ok();
  }
  Status erase(std::string_view key) override {
    std::lock_guard lock(mu_);
    map_.erase(std::string(key));
    return Status::ok();
  }
  Status erase_prefix(std::string_view prefix) override {
    std::lock_guard lock(mu_);
    for (auto it = map_.lower_bound(std::string(prefix));
         it != map_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
      it = map_.erase(it);
    }
    return Status::ok();
  }
  Status scan(std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& visit) const override {
    std::lock_guard lock(mu_);
    for (auto it = map_.lower_bound(std::string(prefix));
         it != map_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      if (!visit(it->first, it->second)) break;
    }
    return Status::ok();
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return map_.size();
  }
  uint64_t puts() const {
    std::lock_guard lock(mu_);
    return puts_;
  }
  std::map<std::string, std::string> contents() const {
    std::lock_guard lock(mu_);
    return map_;
  }
  void set(const std::string& key, const std::string& value) {
    std::lock_guard lock(mu_);
    map_[key] = value;
  }

 private:
  mutable std::mutex mu_;  // protects everything below
  std::map<std::string, std::string> map_;
  mutable uint64_t gets_ = 0;
  uint64_t puts_ = 0;
};

}  // namespace warmfs

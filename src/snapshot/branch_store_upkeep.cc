// What a BranchStore does besides answering requests (branch_store.h): a reader's refresh of
// the record once it is older than refresh_after, and a writer's sweep of orphaned data
// objects (branch_sweep.h) on a thread of its own.
#include <chrono>

#include "common/log.h"
#include "snapshot/branch_store.h"

namespace warmfs {

void BranchStore::refresh_if_due() {
  if (writer_ || refresh_after_.count() <= 0) return;
  {
    std::lock_guard lock(mu_);
    if (refreshing_ || clock_->now() - read_at_ < refresh_after_) return;
    refreshing_ = true;
  }
  std::lock_guard persist(persist_mu_);  // protects record_etag_
  auto done = [this] {
    std::lock_guard lock(mu_);
    read_at_ = clock_->now();
    refreshing_ = false;
  };
  auto head = inner_.head(record_key_);
  if (head.is_ok() && head->etag == record_etag_) return done();
  ObjectInfo read;
  auto r = head.is_ok() ? load_branch_record(inner_, prefix_, record_.branch, &read)
                        : Result<BranchRecord>(head.status());
  if (r.is_ok() && (r->bucket != record_.bucket || r->snapshot_keys != record_.snapshot_keys ||
                    r->snapshot_created != record_.snapshot_created)) {
    r = Status(Errc::kInvalidArgument, "its record is now of another snapshot");
  }
  if (!r.is_ok()) {
    // The branch as last read stays shown; what it named may be gone (reads then fail).
    log::warn("branch '{}': cannot read its record again, so it shows it as read before: {}",
              record_.branch, r.status().to_string());
    return done();
  }
  {
    std::lock_guard lock(mu_);
    refs_.clear();
    record_ = std::move(*r);
    for (const auto& [rel, e] : record_.entries) ref_locked(e, 1, nullptr);
  }
  record_etag_ = read.etag;
  log::info("branch '{}': record read again (generation {}, {} changed names)", record_.branch,
            record_.generation, record_.entries.size());
  done();
}

void BranchStore::start_sweep() {
  if (!writer_ || sweeper_.joinable()) return;
  std::string name, writer;
  {
    std::lock_guard lock(mu_);
    name = record_.branch;
    writer = record_.writer;
  }
  sweeper_ = std::jthread([this, name, writer](std::stop_token stop) {
    const auto started = std::chrono::steady_clock::now();
    auto swept = sweep_branch_orphans(inner_, prefix_, name, writer,
                                      [&stop] { return stop.stop_requested(); });
    if (!swept.is_ok()) {
      log::warn("branch '{}': orphaned data objects not swept: {}", name,
                swept.status().to_string());
      return;
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    if (swept->pinned) {
      log::info("branch '{}': {} orphaned data objects kept: the branch is pinned by a snapshot",
                name, swept->orphans);
    } else if (swept->orphans > 0) {
      log::info("branch '{}': deleted {} orphaned data objects ({} bytes) of {} in {:.0f} ms", name,
                swept->deleted, swept->deleted_bytes, swept->data_objects, ms);
    }
    if (!swept->refused.empty()) {
      log::warn("branch '{}': {} orphaned data objects not deleted: {}", name,
                swept->orphans - swept->deleted, swept->refused);
    }
    std::lock_guard lock(mu_);
    sweep_ = std::move(*swept);
  });
}

std::optional<BranchSweep> BranchStore::sweep_result() const {
  std::lock_guard lock(mu_);
  return sweep_;
}

}  // namespace warmfs

#include "snapshot/snapshot_lister.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace warmfs {
namespace {

// The shared state of one snapshot's listing.
struct Walk {
  ObjectStore& store;
  const std::string& prefix;
  const SnapshotListOptions& options;
  SnapshotListStats* stats;

  std::mutex mu;  // protects everything below
  std::condition_variable cv;
  std::deque<std::string> queue;  // prefixes to list
  size_t busy = 0;                // prefixes being listed
  Status failed = Status::ok();
  ManifestBuilder builder;

  Walk(ObjectStore& s, const std::string& p, const SnapshotListOptions& o, SnapshotListStats* st,
       ManifestBuilder b)
      : store(s), prefix(p), options(o), stats(st), builder(std::move(b)) {}

  // Lists one prefix, all pages; queues its common prefixes. Called without mu.
  Status list_one(const std::string& dir) {
    ListRequest req;
    req.prefix = dir;
    req.delimiter = "/";
    const std::string reserved = prefix + std::string(kReservedDirName) + "/";
    for (;;) {
      Result<ListPage> page = options.versions ? store.list_versions(req) : store.list(req);
      if (stats) stats->list_requests.fetch_add(1, std::memory_order_relaxed);
      if (!page.is_ok()) return page.status();
      std::lock_guard lock(mu);
      if (!failed.is_ok()) return Status::ok();  // another listing failed: stop
      for (const ObjectInfo& o : page->objects) {
        if (o.key.compare(0, prefix.size(), prefix) != 0) continue;
        WARMFS_RETURN_IF_ERROR(builder.add(std::string_view(o.key).substr(prefix.size()), o.size,
                                           o.mtime_sec, o.etag, o.version_id));
      }
      if (stats) stats->keys.fetch_add(page->objects.size(), std::memory_order_relaxed);
      for (std::string& cp : page->common_prefixes) {
        if (cp == reserved || cp.compare(0, dir.size(), dir) != 0 || cp.size() <= dir.size()) {
          continue;  // the reserved folder; or a prefix that is not below dir (a bad server)
        }
        queue.push_back(std::move(cp));
      }
      cv.notify_all();
      if (!page->truncated) return Status::ok();
      req.continuation_token = page->next_token;
    }
  }

  void worker() {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return !queue.empty() || busy == 0 || !failed.is_ok(); });
      if (!failed.is_ok() || (queue.empty() && busy == 0)) {
        cv.notify_all();
        return;
      }
      std::string dir = std::move(queue.front());
      queue.pop_front();
      ++busy;
      lock.unlock();
      Status st = list_one(dir);
      lock.lock();
      --busy;
      if (!st.is_ok() && failed.is_ok()) failed = std::move(st);
      cv.notify_all();
    }
  }
};

}  // namespace

Result<Manifest> take_snapshot(ObjectStore& store, const std::string& bucket,
                               const std::string& prefix, int64_t created_sec,
                               const SnapshotListOptions& options, SnapshotListStats* stats) {
  if (!prefix.empty() && prefix.back() != '/') {
    return Status(Errc::kInvalidArgument, "snapshot prefix must end in '/'");
  }
  Walk walk(store, prefix, options, stats,
            ManifestBuilder(bucket, prefix, options.versions, created_sec));
  walk.queue.push_back(prefix);
  const size_t n = std::max<size_t>(options.concurrency, 1);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i) threads.emplace_back([&walk] { walk.worker(); });
  for (auto& t : threads) t.join();
  if (!walk.failed.is_ok()) return walk.failed;
  return std::move(walk.builder).finish();
}

}  // namespace warmfs

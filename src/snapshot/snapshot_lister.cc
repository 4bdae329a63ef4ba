#include "snapshot/snapshot_lister.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "snapshot/key_split.h"

namespace warmfs {
namespace {

// Once a range's rest is estimated at this many names or more, it is split: each part then
// costs at most one request beyond its pages (the one that runs past its end).
constexpr size_t kItemsPerPart = 8000;

// A piece of work: the names of dir (listed with delimiter "/") after lo and up to hi
// (inclusive); lo empty: from the start, hi empty: to the end of dir.
struct Range {
  std::string dir;
  std::string lo;
  std::string hi;
};

// The shared state of one snapshot's listing.
struct Walk {
  ObjectStore& store;
  const std::string& prefix;
  const SnapshotListOptions& options;
  SnapshotListStats* stats;

  std::mutex mu;  // protects everything below
  std::condition_variable cv;
  std::deque<Range> queue;         // ranges to list
  std::set<std::string> prefixes;  // directories queued so far (a split range may name one twice)
  size_t busy = 0;                 // ranges being listed
  Status failed = Status::ok();
  ManifestBuilder builder;

  Walk(ObjectStore& s, const std::string& p, const SnapshotListOptions& o, SnapshotListStats* st,
       ManifestBuilder b)
      : store(s), prefix(p), options(o), stats(st), builder(std::move(b)) {}

  void push_dir(std::string dir) {
    if (prefixes.insert(dir).second) queue.push_back(Range{std::move(dir), {}, {}});
  }

  // Lists one range, all its pages; queues the directories it names, and splits its rest when
  // that looks large. Called without mu.
  Status list_one(Range range) {
    const std::string& dir = range.dir;
    ListRequest req;
    req.prefix = dir;
    req.delimiter = "/";
    req.start_after = range.lo;
    const std::string reserved = prefix + std::string(kReservedDirName) + "/";
    std::string first;
    size_t listed = 0;
    std::vector<std::string> sample;
    for (;;) {
      Result<ListPage> page = options.versions ? store.list_versions(req) : store.list(req);
      if (stats) stats->list_requests.fetch_add(1, std::memory_order_relaxed);
      if (!page.is_ok()) return page.status();
      // Past the range's end: that name and every later one belong to the next range.
      auto past = [&](const std::string& name) { return !range.hi.empty() && name > range.hi; };
      auto before = [&](const std::string& name) { return !range.lo.empty() && name <= range.lo; };
      bool done = !page->truncated;
      sample.clear();
      std::lock_guard lock(mu);
      if (!failed.is_ok()) return Status::ok();  // another listing failed: stop
      for (const ObjectInfo& o : page->objects) {
        if (past(o.key)) done = true;
        if (past(o.key) || before(o.key)) continue;
        sample.push_back(o.key);
        if (o.key.compare(0, prefix.size(), prefix) != 0) continue;
        WARMFS_RETURN_IF_ERROR(builder.add(std::string_view(o.key).substr(prefix.size()), o.size,
                                           o.mtime_sec, o.etag, o.version_id));
        if (stats) stats->keys.fetch_add(1, std::memory_order_relaxed);
      }
      for (std::string& cp : page->common_prefixes) {
        // A common prefix before lo has keys after it (it is named again); one after hi has
        // none up to hi.
        if (past(cp)) done = true;
        if (past(cp)) continue;
        sample.push_back(cp);
        if (cp == reserved || cp.compare(0, dir.size(), dir) != 0 || cp.size() <= dir.size()) {
          continue;  // the reserved folder; or a prefix that is not below dir (a bad server)
        }
        push_dir(std::move(cp));
      }
      cv.notify_all();
      if (done) return Status::ok();
      req.continuation_token = page->next_token;
      if (sample.empty()) continue;
      if (first.empty()) first = *std::min_element(sample.begin(), sample.end());
      listed += sample.size();
      split(range, first, *std::max_element(sample.begin(), sample.end()), listed, sample);
    }
  }

  // Cuts (last, range.hi] into parts when it looks large: range keeps the first, the others are
  // queued. Called with mu held.
  void split(Range& range, const std::string& first, const std::string& last, size_t listed,
             const std::vector<std::string>& sample) {
    const size_t max_parts = std::max<size_t>(options.concurrency, 2);
    std::vector<std::string> cuts = split_key_range(
        KeySplitInput{range.dir, first, last, range.hi, listed, sample}, kItemsPerPart, max_parts);
    if (cuts.empty()) return;
    for (size_t i = 0; i < cuts.size(); ++i) {
      queue.push_back(Range{range.dir, cuts[i], i + 1 < cuts.size() ? cuts[i + 1] : range.hi});
    }
    range.hi = std::move(cuts.front());
    cv.notify_all();
  }

  void worker() {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return !queue.empty() || busy == 0 || !failed.is_ok(); });
      if (!failed.is_ok() || (queue.empty() && busy == 0)) {
        cv.notify_all();
        return;
      }
      Range range = std::move(queue.front());
      queue.pop_front();
      ++busy;
      lock.unlock();
      Status st = list_one(std::move(range));
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
  walk.push_dir(prefix);
  const size_t n = std::max<size_t>(options.concurrency, 1);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i) threads.emplace_back([&walk] { walk.worker(); });
  for (auto& t : threads) t.join();
  if (!walk.failed.is_ok()) return walk.failed;
  return std::move(walk.builder).finish();
}

}  // namespace warmfs

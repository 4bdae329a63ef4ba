// Registry: the collectors a process's /metrics is made of.
//
// A collector is a function that, at scrape time, reads some part's counters (relaxed atomics,
// the counters() snapshots the stats already use) and adds families to a MetricSink. Parts
// that know nothing of each other add their own collectors (the mount's core, cache
// servers, credentials, ...); scrape() runs them in the order added and renders the text.
// Counters are read while collecting and formatted afterwards, from plain values: no lock of
// the read path is held while the text is written.
//
// Thread safe: add() and scrape() may be called from any thread; scrapes run one at a time
// (a second waits), so collectors need not be reentrant. A collector must not throw and must
// stay valid (with everything it reads) until the registry, or the server scraping it, is
// gone.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "metrics/exposition.h"

namespace warmfs::metrics {

using Collector = std::function<void(MetricSink&)>;

class Registry {
 public:
  void add(Collector collector);
  // Runs every collector and renders the exposition text.
  std::string scrape() const;
  // As scrape(), the families before rendering (tests).
  std::vector<Family> collect() const;

 private:
  // Protects collectors_; held for a whole scrape. Lock order: mu_ before any lock a
  // collector takes (a counters() snapshot); nothing a collector calls takes mu_.
  mutable std::mutex mu_;
  std::vector<Collector> collectors_;
};

}  // namespace warmfs::metrics

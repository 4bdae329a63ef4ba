#include "metrics/registry.h"

#include <utility>

namespace warmfs::metrics {

void Registry::add(Collector collector) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collector));
}

std::vector<Family> Registry::collect() const {
  MetricSink sink;
  std::lock_guard lock(mu_);
  for (const Collector& c : collectors_) c(sink);
  return sink.take();
}

std::string Registry::scrape() const { return render(collect()); }

}  // namespace warmfs::metrics

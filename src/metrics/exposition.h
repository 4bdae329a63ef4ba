// The Prometheus text exposition format, version 0.0.4: metric families as values, and the
// text a scrape of /metrics answers.
//
// A Family is a name, a help line, a type and its samples; a MetricSink collects families
// (collectors call it at scrape time, registry.h) and merges samples added twice under one
// name into one family, since the format wants all of a family's lines together. render()
// writes "# HELP" and "# TYPE" lines and one line per sample: label values escaped (\\, \",
// \n), help text escaped (\\, \n), names outside [a-zA-Z_:][a-zA-Z0-9_:]* made valid by
// replacing the offending characters with '_'. A histogram's sample writes its cumulative
// _bucket lines (le ascending, then le="+Inf" equal to _count), _sum and _count.
//
// Names follow Prometheus's conventions: counters end in _total, units are base units
// (seconds, bytes) named in the metric. This file does no I/O and takes no locks; a
// MetricSink is used by one thread at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warmfs::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

using Labels = std::vector<std::pair<std::string, std::string>>;

// A histogram at one moment: cumulative counts at ascending upper bounds (le), excluding
// +Inf, whose count is `count`. Counts never decrease along buckets; count >= the last one.
struct HistogramData {
  std::vector<std::pair<double, uint64_t>> buckets;  // (le, observations <= le)
  uint64_t count = 0;
  double sum = 0;
};

struct Sample {
  Labels labels;
  double value = 0;         // counters and gauges
  HistogramData histogram;  // histograms
};

struct Family {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<Sample> samples;

  Family& add(double value, Labels labels = {});
  Family& add(HistogramData histogram, Labels labels = {});
};

// Collects families in the order first named. References it returns stay valid while it
// lives. Asking again for a name already present
// returns that family (its help and type stay those of the first ask); a type mismatch
// gets a separate family under the name suffixed "_conflict" rather than a broken output.
class MetricSink {
 public:
  Family& counter(std::string_view name, std::string_view help);
  Family& gauge(std::string_view name, std::string_view help);
  Family& histogram(std::string_view name, std::string_view help);

  // The families so far, in order; the sink is left empty.
  std::vector<Family> take();

 private:
  Family& family(std::string_view name, std::string_view help, MetricType type);
  std::deque<Family> families_;
};

// The exposition text of families (families with no samples are left out).
std::string render(const std::vector<Family>& families);

// Helpers of render(), exposed for tests.
std::string escape_label_value(std::string_view value);
std::string escape_help(std::string_view help);
// name with every character outside [a-zA-Z0-9_:] (and a leading digit) replaced by '_';
// label names also lose ':'.
std::string sanitize_metric_name(std::string_view name);
std::string sanitize_label_name(std::string_view name);
// A sample value as Prometheus parses it: shortest round-trip decimal, "+Inf", "-Inf", "NaN".
std::string format_value(double value);

// The Content-Type of render()'s text.
inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace warmfs::metrics

#include "metrics/exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>

namespace warmfs::metrics {
namespace {

bool name_char(char c, bool colon_ok) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         (colon_ok && c == ':');
}

std::string sanitize(std::string_view name, bool colon_ok) {
  std::string out(name.empty() ? "_" : name);
  for (char& c : out) {
    if (!name_char(c, colon_ok)) c = '_';
  }
  if (out[0] >= '0' && out[0] <= '9') out.insert(out.begin(), '_');
  return out;
}

const char* type_name(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// name{labels[,extra]} value
void write_line(std::string& out, const std::string& name, const Labels& labels,
                const std::pair<std::string_view, std::string>* extra, const std::string& value) {
  out += name;
  if (!labels.empty() || extra != nullptr) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) out += ',';
      first = false;
      out += sanitize_label_name(k);
      out += "=\"";
      out += escape_label_value(v);
      out += '"';
    }
    if (extra != nullptr) {
      if (!first) out += ',';
      out += extra->first;
      out += "=\"";
      out += extra->second;
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += value;
  out += '\n';
}

void write_histogram(std::string& out, const std::string& name, const Sample& s) {
  const HistogramData& h = s.histogram;
  const std::string bucket = name + "_bucket";
  uint64_t last = 0;
  for (const auto& [le, n] : h.buckets) {
    if (!std::isfinite(le)) continue;  // +Inf is written from count below
    last = std::max(last, n);          // cumulative, whatever the snapshot said
    const std::pair<std::string_view, std::string> tag{"le", format_value(le)};
    write_line(out, bucket, s.labels, &tag, std::to_string(last));
  }
  const std::pair<std::string_view, std::string> inf{"le", "+Inf"};
  const uint64_t count = std::max(last, h.count);
  write_line(out, bucket, s.labels, &inf, std::to_string(count));
  write_line(out, name + "_sum", s.labels, nullptr, format_value(h.sum));
  write_line(out, name + "_count", s.labels, nullptr, std::to_string(count));
}

}  // namespace

Family& Family::add(double value, Labels labels) {
  samples.push_back(Sample{std::move(labels), value, {}});
  return *this;
}

Family& Family::add(HistogramData histogram, Labels labels) {
  samples.push_back(Sample{std::move(labels), 0, std::move(histogram)});
  return *this;
}

Family& MetricSink::counter(std::string_view name, std::string_view help) {
  return family(name, help, MetricType::kCounter);
}

Family& MetricSink::gauge(std::string_view name, std::string_view help) {
  return family(name, help, MetricType::kGauge);
}

Family& MetricSink::histogram(std::string_view name, std::string_view help) {
  return family(name, help, MetricType::kHistogram);
}

Family& MetricSink::family(std::string_view name, std::string_view help, MetricType type) {
  std::string clean = sanitize_metric_name(name);
  for (Family& f : families_) {
    if (f.name != clean) continue;
    if (f.type == type) return f;
    clean += "_conflict";
    return family(clean, help, type);
  }
  families_.push_back(Family{std::move(clean), std::string(help), type, {}});
  return families_.back();
}

std::vector<Family> MetricSink::take() {
  std::vector<Family> out(std::make_move_iterator(families_.begin()),
                          std::make_move_iterator(families_.end()));
  families_.clear();
  return out;
}

std::string render(const std::vector<Family>& families) {
  std::string out;
  out.reserve(families.size() * 256);
  for (const Family& f : families) {
    if (f.samples.empty()) continue;
    const std::string name = sanitize_metric_name(f.name);
    out += "# HELP " + name + " " + escape_help(f.help) + "\n";
    out += "# TYPE " + name + " " + type_name(f.type) + "\n";
    for (const Sample& s : f.samples) {
      if (f.type == MetricType::kHistogram)
        write_histogram(out, name, s);
      else
        write_line(out, name, s.labels, nullptr, format_value(s.value));
    }
  }
  return out;
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string escape_help(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string sanitize_metric_name(std::string_view name) { return sanitize(name, true); }
std::string sanitize_label_name(std::string_view name) { return sanitize(name, false); }

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

}  // namespace warmfs::metrics

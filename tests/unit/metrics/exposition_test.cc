#include "metrics/exposition.h"

#include <catch2/catch.hpp>

#include "metrics/histogram_export.h"
#include "metrics/metrics_server.h"
#include "metrics/registry.h"

using namespace warmfs::metrics;

TEST_CASE("a counter and a gauge render with HELP, TYPE and labels", "[metrics]") {
  MetricSink sink;
  sink.counter("warmfs_reads_total", "Read calls").add(42);
  sink.gauge("warmfs_cache_used_bytes", "Bytes held")
      .add(1024, {{"tier", "memory"}})
      .add(2048, {{"tier", "disk"}});
  CHECK(render(sink.take()) ==
        "# HELP warmfs_reads_total Read calls\n"
        "# TYPE warmfs_reads_total counter\n"
        "warmfs_reads_total 42\n"
        "# HELP warmfs_cache_used_bytes Bytes held\n"
        "# TYPE warmfs_cache_used_bytes gauge\n"
        "warmfs_cache_used_bytes{tier=\"memory\"} 1024\n"
        "warmfs_cache_used_bytes{tier=\"disk\"} 2048\n");
}

TEST_CASE("label values and help text are escaped", "[metrics]") {
  CHECK(escape_label_value("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
  CHECK(escape_label_value("plain é") == "plain é");
  CHECK(escape_help("x\\y\nz \"q\"") == "x\\\\y\\nz \"q\"");
  MetricSink sink;
  sink.gauge("g", "line one\nline \\two").add(1, {{"path", "C:\\dir \"x\"\n"}});
  CHECK(render(sink.take()) ==
        "# HELP g line one\\nline \\\\two\n"
        "# TYPE g gauge\n"
        "g{path=\"C:\\\\dir \\\"x\\\"\\n\"} 1\n");
}

TEST_CASE("names are made valid", "[metrics]") {
  CHECK(sanitize_metric_name("warmfs_ok:total") == "warmfs_ok:total");
  CHECK(sanitize_metric_name("bad-name.x") == "bad_name_x");
  CHECK(sanitize_metric_name("9lives") == "_9lives");
  CHECK(sanitize_metric_name("") == "_");
  CHECK(sanitize_label_name("a:b-c") == "a_b_c");
}

TEST_CASE("values render as Prometheus parses them", "[metrics]") {
  CHECK(format_value(0) == "0");
  CHECK(format_value(12345678901234.0) == "12345678901234");
  CHECK(format_value(0.25) == "0.25");
  CHECK(format_value(8e-6) == "8e-06");
  CHECK(format_value(1.0 / 0.0) == "+Inf");
  CHECK(format_value(-1.0 / 0.0) == "-Inf");
  CHECK(format_value(0.0 / 0.0) == "NaN");
}

TEST_CASE("a histogram renders cumulative buckets, +Inf, _sum and _count", "[metrics]") {
  HistogramData h;
  h.buckets = {{0.001, 1}, {0.01, 3}, {0.1, 3}};
  h.count = 5;
  h.sum = 1.5;
  MetricSink sink;
  sink.histogram("warmfs_bucket_request_duration_seconds", "Durations").add(h, {{"op", "get"}});
  CHECK(render(sink.take()) ==
        "# HELP warmfs_bucket_request_duration_seconds Durations\n"
        "# TYPE warmfs_bucket_request_duration_seconds histogram\n"
        "warmfs_bucket_request_duration_seconds_bucket{op=\"get\",le=\"0.001\"} 1\n"
        "warmfs_bucket_request_duration_seconds_bucket{op=\"get\",le=\"0.01\"} 3\n"
        "warmfs_bucket_request_duration_seconds_bucket{op=\"get\",le=\"0.1\"} 3\n"
        "warmfs_bucket_request_duration_seconds_bucket{op=\"get\",le=\"+Inf\"} 5\n"
        "warmfs_bucket_request_duration_seconds_sum{op=\"get\"} 1.5\n"
        "warmfs_bucket_request_duration_seconds_count{op=\"get\"} 5\n");
}

TEST_CASE("a histogram snapshot that is not cumulative still renders monotonic", "[metrics]") {
  HistogramData h;
  h.buckets = {{1, 4}, {2, 3}};  // torn snapshot: the second count below the first
  h.count = 2;
  MetricSink sink;
  sink.histogram("h", "x").add(h);
  const std::string text = render(sink.take());
  CHECK(text.find("h_bucket{le=\"2\"} 4\n") != std::string::npos);
  CHECK(text.find("h_bucket{le=\"+Inf\"} 4\n") != std::string::npos);
  CHECK(text.find("h_count 4\n") != std::string::npos);
}

TEST_CASE("a family asked for twice is one family; a type clash is kept apart", "[metrics]") {
  MetricSink sink;
  sink.counter("c_total", "first").add(1, {{"a", "1"}});
  sink.gauge("g", "gauge").add(7);
  sink.counter("c_total", "second").add(2, {{"a", "2"}});
  sink.gauge("c_total", "clash").add(3);
  const std::vector<Family> fams = sink.take();
  REQUIRE(fams.size() == 3);
  CHECK(fams[0].name == "c_total");
  CHECK(fams[0].samples.size() == 2);
  CHECK(fams[0].help == "first");
  CHECK(fams[2].name == "c_total_conflict");
  const std::string text = render(fams);
  CHECK(text.find("c_total{a=\"1\"} 1\nc_total{a=\"2\"} 2\n") != std::string::npos);
}

TEST_CASE("families without samples are left out", "[metrics]") {
  MetricSink sink;
  sink.counter("empty_total", "nothing");
  CHECK(render(sink.take()).empty());
}

TEST_CASE("the log-linear histogram exports exact cumulative buckets in seconds", "[metrics]") {
  warmfs::Histogram h;
  // 7 µs and 8 µs straddle the first bound (2^3 µs); 1000 µs is below 1024 µs (2^10).
  for (uint64_t us : {7ull, 8ull, 1000ull, 1023ull, 1024ull, 100'000'000ull}) h.record(us);
  const HistogramData d = export_microseconds(h);
  const auto bounds = exported_bounds_seconds();
  REQUIRE(d.buckets.size() == bounds.size());
  CHECK(d.buckets.front().first == Approx(8e-6));
  CHECK(d.buckets.back().first == Approx(67.108864));
  auto at = [&](double le) {
    for (const auto& [b, n] : d.buckets)
      if (b == Approx(le)) return n;
    FAIL("no bucket " << le);
    return uint64_t{0};
  };
  CHECK(at(8e-6) == 1);   // 7
  CHECK(at(16e-6) == 2);  // 7, 8
  CHECK(at(512e-6) == 2);
  CHECK(at(1024e-6) == 4);  // ... 1000, 1023 (1024 is not below 1024)
  CHECK(at(2048e-6) == 5);
  CHECK(at(67.108864) == 5);  // 100 s is above the last bound
  CHECK(d.count == 6);        // +Inf
  CHECK(d.sum == Approx((7 + 8 + 1000 + 1023 + 1024 + 100'000'000) / 1e6));
  for (size_t i = 1; i < d.buckets.size(); ++i) {
    CHECK(d.buckets[i].first > d.buckets[i - 1].first);
    CHECK(d.buckets[i].second >= d.buckets[i - 1].second);
  }
  CHECK(export_microseconds(h, 2.5).sum == 2.5);
}

TEST_CASE("histograms of several sources add up", "[metrics]") {
  warmfs::Histogram a, b;
  a.record(10);
  b.record(10);
  b.record(5000);
  HistogramData sum;
  accumulate(sum, export_microseconds(a));
  accumulate(sum, export_microseconds(b));
  CHECK(sum.count == 3);
  CHECK(sum.buckets.size() == exported_bounds_seconds().size());
  CHECK(sum.buckets.back().second == 3);
  CHECK(sum.sum == Approx(5020 / 1e6));
}

TEST_CASE("the registry runs its collectors in order at every scrape", "[metrics]") {
  Registry r;
  int n = 0;
  r.add([&n](MetricSink& out) { out.counter("scrapes_total", "Scrapes").add(++n); });
  r.add([](MetricSink& out) { out.gauge("later", "Added by another part").add(1); });
  CHECK(r.scrape().find("scrapes_total 1\n") != std::string::npos);
  const std::string second = r.scrape();
  CHECK(second.find("scrapes_total 2\n") != std::string::npos);
  CHECK(second.find("scrapes_total") < second.find("later"));
}

TEST_CASE("GET /metrics answers the text; anything else 404", "[metrics]") {
  Registry r;
  r.add([](MetricSink& out) { out.gauge("up", "Up").add(1); });
  warmfs::http::ServerRequest req;
  req.method = "GET";
  req.path = "/metrics";
  auto ok = answer(r, req);
  CHECK(ok.status == 200);
  CHECK(ok.body == "# HELP up Up\n# TYPE up gauge\nup 1\n");
  REQUIRE(ok.headers.size() == 1);
  CHECK(ok.headers[0].second == "text/plain; version=0.0.4; charset=utf-8");
  req.path = "/";
  CHECK(answer(r, req).status == 404);
  req.path = "/metrics/x";
  CHECK(answer(r, req).status == 404);
  req.path = "/metrics";
  req.method = "POST";
  CHECK(answer(r, req).status == 404);
}

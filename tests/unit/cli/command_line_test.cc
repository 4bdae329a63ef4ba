#include "cli/command_line.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/sizes.h"

using warmfs::kMiB;
using namespace warmfs::cli;

namespace {

// Parses "warmfs <args>" with every subcommand registered, then finishes the one given.
struct Parsed {
  MountCommand mount;
  UnmountCommand unmount;
  StatsCommand stats;
  ServeCommand serve;
  PrefetchCommand prefetch;
  CLI::App app{"warmfs"};

  explicit Parsed(std::vector<std::string> args) {
    app.require_subcommand(1);
    mount.register_options(app);
    unmount.register_options(app);
    stats.register_options(app);
    serve.register_options(app);
    prefetch.register_options(app);
    std::vector<char*> argv;
    std::string name = "warmfs";
    argv.push_back(name.data());
    for (auto& a : args) argv.push_back(a.data());
    app.parse(static_cast<int>(argv.size()), argv.data());
    if (mount.app->parsed()) mount.finish();
    if (stats.app->parsed()) stats.finish();
    if (serve.app->parsed()) serve.finish();
  }
};

std::string usage_error(std::vector<std::string> args) {
  try {
    Parsed p(std::move(args));
  } catch (const UsageError& e) {
    return e.message;
  }
  return "(no usage error)";
}

}  // namespace

TEST_CASE("command line: mount flags land in MountArgs, sizes and durations converted",
          "[cli][command_line]") {
  Parsed p({"mount",
            "s3://b/p",
            "/mnt",
            "--memory-cache-size",
            "512M",
            "--metadata-ttl",
            "5m",
            "--cache-dir",
            "/ssd",
            "--cache-size",
            "10G",
            "--cache-ttl",
            "1h",
            "--read-only",
            "--prefetch",
            "a,b",
            "--cache-server",
            "http://s1:7070,http://s2:7070",
            "--insecure-no-token",
            "--uid",
            "7",
            "--upload-threads",
            "9"});
  const MountArgs& a = p.mount.args;
  CHECK(a.source == "s3://b/p");
  CHECK(a.mountpoint == "/mnt");
  CHECK(a.memory_cache_bytes == 512 * kMiB);
  CHECK(a.metadata_ttl_sec == 300);
  CHECK(a.cache_dir == "/ssd");
  CHECK(a.cache_size_bytes == 10240 * kMiB);
  CHECK(a.cache_ttl_sec == 3600);
  CHECK(a.read_only);
  CHECK(a.file_mode == 0444);  // --read-only's defaults
  CHECK(a.dir_mode == 0555);
  CHECK(a.prefetch == std::vector<std::string>{"a", "b"});
  CHECK(a.cache_servers.size() == 2);
  CHECK(a.insecure_no_token);
  CHECK(a.uid == 7);
  CHECK(a.upload_threads == 9);
}

TEST_CASE("command line: mount defaults", "[cli][command_line]") {
  Parsed p({"mount", "s3://b", "/mnt"});
  const MountArgs& a = p.mount.args;
  CHECK(a.memory_cache_bytes == 1024 * kMiB);
  CHECK(a.metadata_ttl_sec == 60);
  CHECK(a.cache_size_bytes == 0);
  CHECK(a.cache_ttl_sec == 0);
  CHECK(a.file_mode == 0644);
  CHECK(a.dir_mode == 0755);
  CHECK_FALSE(a.foreground);
}

TEST_CASE("command line: bad values are one usage line naming the flag", "[cli][command_line]") {
  CHECK(usage_error({"mount", "s3://b", "/m", "--cache-size", "1G"}) ==
        "--cache-size and --cache-ttl need --cache-dir");
  CHECK(usage_error({"mount", "s3://b", "/m", "--memory-cache-size", "lots"}) ==
        "--memory-cache-size: 'lots' is not a size like 512M or 4G");
  CHECK(usage_error({"mount", "s3://b", "/m", "--metadata-ttl", "soon"}) ==
        "--metadata-ttl: 'soon' is not a number of seconds");
  CHECK(usage_error({"mount", "s3://b", "/m", "--file-mode", "0999"}) ==
        "--file-mode must be an octal mode such as 0644, not '0999'");
  CHECK(usage_error({"mount", "s3://b", "/m", "--cache-server", "http://s:1"}) ==
        "--cache-server needs --token-file (or --insecure-no-token on a trusted network)");
  CHECK(usage_error({"stats"}) == "warmfs stats takes a MOUNTPOINT or --server URL");
  CHECK(usage_error({"stats", "/m", "--server", "http://s:1"}) ==
        "warmfs stats takes a MOUNTPOINT or --server URL");
  CHECK(usage_error({"serve", "--bucket", "b", "--cache-dir", "/c", "--insecure-no-token",
                     "--memory-cache-size", "8M"}) ==
        "--memory-cache-size: '8M' is not a size of at least 16M");
  CHECK(usage_error({"serve", "--bucket", "b", "--cache-dir", "/c"}) ==
        "warmfs serve needs --token-file (or --insecure-no-token on a trusted network)");
  CHECK(usage_error({"serve", "--bucket", "b", "--cache-dir", "/c", "--insecure-no-token",
                     "--metrics-listen", "nonsense"})
            .find("--metrics-listen") != std::string::npos);
}

TEST_CASE("command line: serve flags land in ServeArgs", "[cli][command_line]") {
  Parsed p({"serve", "--bucket", "a,b", "--cache-dir", "/c", "--token-file", "/t", "--cache-size",
            "2G", "--cache-ttl", "12h", "--version-check-interval", "2m"});
  const ServeArgs& s = p.serve.args;
  CHECK(s.buckets == std::vector<std::string>{"a", "b"});
  CHECK(s.cache_size_bytes == 2048 * kMiB);
  CHECK(s.cache_ttl_sec == 12 * 3600);
  CHECK(s.version_check_sec == 120);
  CHECK(s.memory_cache_bytes == 1024 * kMiB);
  CHECK(s.listen == "127.0.0.1:7070");
}

TEST_CASE("size, duration and mode flag helpers", "[cli][command_line]") {
  CHECK(size_option("--x", "4G", "a size") == 4096 * kMiB);
  CHECK_THROWS_AS(size_option("--x", "0", "a size"), UsageError);  // below the default min of 1
  CHECK(size_option("--x", "0", "a size", 0) == 0);
  CHECK(duration_option("--x", "90", "a duration") == 90);
  CHECK_THROWS_AS(duration_option("--x", "1w", "a duration"), UsageError);
  CHECK(parse_mode("0640", "--m") == 0640);
  CHECK(parse_mode("7777", "--m") == 07777);
  CHECK_THROWS_AS(parse_mode("10000", "--m"), UsageError);
  CHECK_THROWS_AS(parse_mode("", "--m"), UsageError);
  CHECK_THROWS_AS(parse_mode("rw", "--m"), UsageError);
}

// warmfs's command line: each subcommand's options, registered on a CLI11 app, and the checks
// and conversions of their values once parsed. main() registers them all, parses, and
// dispatches to the command (cli/commands.h, cli/serve_command.h).
//
// A bad value is a UsageError: one line naming the flag and what it wants (exit status 2).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/plan_command.h"
#include "cli/serve_command.h"
#include "cli/snapshot_command.h"

namespace warmfs::cli {

struct UsageError {
  std::string message;
};

// A size flag's value ("512M", "100G"), at least min; else a usage error naming the flag and
// what it wants.
uint64_t size_option(const char* flag, const std::string& text, const char* wanted,
                     uint64_t min = 1);
// A duration flag's value in seconds ("90", "30m", "1h"); else a usage error.
double duration_option(const char* flag, const std::string& text, const char* wanted);
// An octal permission mode ("0644"); else a usage error naming what.
uint32_t parse_mode(const std::string& text, const char* what);

// Each command: register() adds its subcommand and options to app; after app.parse(),
// finish() (only when the subcommand was given) converts and checks the values, throwing
// UsageError. The object must outlive the app's parse: CLI11 writes into its fields.
struct MountCommand {
  CLI::App* app = nullptr;
  MountArgs args;
  std::string memory_cache_size = "1G";
  std::string metadata_ttl = "60";
  std::string file_mode, dir_mode, cache_size, cache_ttl;
  void register_options(CLI::App& parent);
  void finish();
};

struct UnmountCommand {
  CLI::App* app = nullptr;
  std::string mountpoint;
  void register_options(CLI::App& parent);
};

struct RestartCommand {
  CLI::App* app = nullptr;
  std::string mountpoint;
  void register_options(CLI::App& parent);
};

struct StatsCommand {
  CLI::App* app = nullptr;
  std::string mountpoint;
  bool json = false;
  std::string server, token_file, ca;
  bool no_token = false;
  bool epochs = false;
  void register_options(CLI::App& parent);
  void finish();
};

struct ServeCommand {
  CLI::App* app = nullptr;
  ServeArgs args;
  std::string cache_size, cache_ttl, memory = "1G", version_check = "60";
  void register_options(CLI::App& parent);
  void finish();
};

struct PrefetchCommand {
  CLI::App* app = nullptr;
  std::string mountpoint;
  std::vector<std::string> paths;
  std::string order;
  unsigned threads = 8;
  void register_options(CLI::App& parent);
  void finish();
};

struct SnapshotCommand {
  CLI::App* app = nullptr;
  SnapshotArgs args;
  void register_options(CLI::App& parent);
};

struct PlanCommand {
  CLI::App* app = nullptr;
  PlanArgs args;
  std::string memory_cache_size = "1G", cache_size, server_cache_size, server_memory_size = "1G",
              server_rate;
  double probe_seconds = 2;
  void register_options(CLI::App& parent);
  void finish();
};

}  // namespace warmfs::cli

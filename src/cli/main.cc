// warmfs: mount an S3 bucket as a filesystem for training jobs. main registers the
// subcommands (cli/command_line.h), parses, and runs the one given.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/mount_options.h"
#include "cli/serve_command.h"
#include "cli/supervisor.h"

int main(int argc, char** argv) {
  using namespace warmfs::cli;
  // As /sbin/mount.warmfs or /sbin/mount.fuse.warmfs: mount(8)'s helper (cli/mount_options.h).
  if (argc > 0 && is_mount_helper_name(argv[0])) return run_mount_helper(argc, argv);
  CLI::App app{"warmfs: mount an S3 bucket as a filesystem, cached in memory, for training jobs"};
  app.set_version_flag("--version", std::string("warmfs ") + WARMFS_VERSION);
  app.require_subcommand(1);

  MountCommand mount;
  UnmountCommand unmount;
  RestartCommand restart;
  StatsCommand stats;
  ServeCommand serve;
  PrefetchCommand prefetch;
  SnapshotCommand snapshot;
  PlanCommand plan;
  mount.register_options(app);
  unmount.register_options(app);
  restart.register_options(app);
  keep_command_line(argc, argv);  // a --restartable mount's supervisor runs it again
  stats.register_options(app);
  serve.register_options(app);
  prefetch.register_options(app);
  snapshot.register_options(app);
  plan.register_options(app);

  try {
    app.parse(argc, argv);
    if (mount.app->parsed()) mount.finish();
    if (stats.app->parsed()) stats.finish();
    if (serve.app->parsed()) serve.finish();
    if (prefetch.app->parsed()) prefetch.finish();
    if (plan.app->parsed()) plan.finish();
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion&) {
    std::printf("warmfs %s\n", WARMFS_VERSION);
    return 0;
  } catch (const CLI::ParseError& e) {
    // Help for a subcommand arrives as CallForHelp of the subcommand too.
    if (e.get_exit_code() == 0) {
      std::fputs(app.help().c_str(), stdout);
      return 0;
    }
    print_error(std::string(e.what()) + " (see warmfs --help)");
    return kExitUsage;
  } catch (const UsageError& e) {
    print_error(e.message);
    return kExitUsage;
  }

  if (mount.app->parsed()) return run_mount(mount.args);
  if (unmount.app->parsed()) return run_unmount(unmount.mountpoint);
  if (restart.app->parsed()) return run_restart(restart.mountpoint);
  if (snapshot.app->parsed()) return run_snapshot(snapshot.args);
  if (plan.app->parsed()) return run_plan(plan.args);
  if (stats.app->parsed() && !stats.server.empty()) {
    return run_server_stats(stats.server, stats.token_file, stats.no_token, stats.ca, stats.json);
  }
  if (stats.app->parsed() && stats.epochs) return run_epochs(stats.mountpoint, stats.json);
  if (stats.app->parsed()) return run_stats(stats.mountpoint, stats.json);
  if (serve.app->parsed()) return run_serve(serve.args);
  if (prefetch.app->parsed() && !prefetch.order.empty()) {
    return run_publish_order(prefetch.mountpoint, prefetch.order);
  }
  if (prefetch.app->parsed())
    return run_prefetch(prefetch.mountpoint, prefetch.paths, prefetch.threads);
  return kExitUsage;
}

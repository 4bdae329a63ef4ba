// mount(8)'s helper arguments (cli/mount_options.h): what an fstab line and mount(8) hand
// `mount.warmfs`. The input is the argument list, one argument per NUL-separated field. Any
// list translates or is refused with a one-line message; a translation is a `warmfs mount`
// call with a source and a directory, and the variables it sets have names a process
// environment can hold.
#include <string>
#include <vector>

#include "cli/mount_options.h"
#include "fuzz_util.h"

using namespace warmfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  for (std::string_view f : fuzz::split(fuzz::as_view(data, size), '\0')) args.emplace_back(f);
  cli::IdLookups lookups;
  lookups.user = [](const std::string& name) -> std::optional<int64_t> {
    if (name == "alice") return 1000;
    return std::nullopt;
  };
  lookups.group = [](const std::string& name) -> std::optional<int64_t> {
    if (name == "staff") return 50;
    return std::nullopt;
  };
  auto r = cli::translate_mount_helper_args(args, lookups);
  if (!r.is_ok()) {
    const std::string& msg = r.status().message();
    FUZZ_CHECK(!msg.empty());
    return 0;
  }
  const auto& argv = r->argv;
  FUZZ_CHECK(argv.size() >= 4);
  FUZZ_CHECK(argv[0] == "warmfs" && argv[1] == "mount");
  FUZZ_CHECK(!argv[2].empty() && !argv[3].empty());
  for (const auto& [name, value] : r->env) {
    FUZZ_CHECK(!name.empty() && name.find('=') == std::string::npos);
  }
  // The option splitter alone: every piece comes from the input, and none holds a comma
  // outside the quotes it came in (those are removed).
  if (!args.empty()) {
    for (const std::string& o : cli::split_mount_options(args.back())) {
      FUZZ_CHECK(o.size() <= args.back().size());
    }
  }
  return 0;
}

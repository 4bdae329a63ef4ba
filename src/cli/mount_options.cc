#include "cli/mount_options.h"

#include <algorithm>
#include <array>

namespace warmfs::cli {
namespace {

enum class Kind { kSwitch, kValue, kList };

struct FlagSpec {
  std::string_view name;  // the option, and the flag --name of `warmfs mount`
  Kind kind;
};

// The long flags of `warmfs mount` (src/cli/main.cc) but --uid and --gid, which take names
// too (resolve_id). foreground is accepted although a helper is expected to return.
constexpr std::array kMountFlags = {
    FlagSpec{"endpoint", Kind::kValue},
    FlagSpec{"region", Kind::kValue},
    FlagSpec{"profile", Kind::kValue},
    FlagSpec{"no-sign-request", Kind::kSwitch},
    FlagSpec{"path-style", Kind::kSwitch},
    FlagSpec{"memory-cache-size", Kind::kValue},
    FlagSpec{"metadata-ttl", Kind::kValue},
    FlagSpec{"allow-other", Kind::kSwitch},
    FlagSpec{"no-object-attrs", Kind::kSwitch},
    FlagSpec{"object-attrs", Kind::kSwitch},
    FlagSpec{"file-mode", Kind::kValue},
    FlagSpec{"dir-mode", Kind::kValue},
    FlagSpec{"staging-dir", Kind::kValue},
    FlagSpec{"upload-threads", Kind::kValue},
    FlagSpec{"log-level", Kind::kValue},
    FlagSpec{"log-file", Kind::kValue},
    FlagSpec{"foreground", Kind::kSwitch},
    FlagSpec{"cache-dir", Kind::kValue},
    FlagSpec{"cache-size", Kind::kValue},
    FlagSpec{"cache-ttl", Kind::kValue},
    FlagSpec{"prefetch", Kind::kList},
    FlagSpec{"cache-server", Kind::kList},
    FlagSpec{"token-file", Kind::kValue},
    FlagSpec{"insecure-no-token", Kind::kSwitch},
    FlagSpec{"cache-server-ca", Kind::kValue},
    FlagSpec{"metrics-listen", Kind::kValue},
    FlagSpec{"snapshot", Kind::kValue},
    FlagSpec{"snapshot-versions", Kind::kSwitch},
    FlagSpec{"branch", Kind::kValue},
    FlagSpec{"restartable", Kind::kSwitch},
    FlagSpec{"readdirplus-always", Kind::kSwitch},
};

// Options that concern mount(8), fstab or systemd only, or that FUSE and warmfs already
// satisfy: accepted and dropped. (FUSE mounts are always nosuid and nodev; warmfs shows no
// setuid bits or devices, keeps no access times, and checks permissions in the kernel.)
constexpr std::array<std::string_view, 30> kDropped = {
    "defaults",    "auto",          "noauto",   "netdev",
    "nofail",      "user",          "nouser",   "users",
    "owner",       "group",         "suid",     "nosuid",
    "dev",         "nodev",         "exec",     "noexec",
    "atime",       "noatime",       "relatime", "norelatime",
    "strictatime", "nostrictatime", "lazytime", "nolazytime",
    "diratime",    "nodiratime",    "async",    "default-permissions",
    "loud",        "silent",
};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// `_netdev` and `allow_other` alike: underscores become dashes, a leading one is dropped.
std::string normalize(std::string_view name) {
  std::string n(name);
  std::replace(n.begin(), n.end(), '_', '-');
  if (starts_with(n, "-")) n.erase(0, 1);
  return n;
}

const FlagSpec* find_flag(std::string_view name) {
  for (const auto& f : kMountFlags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool is_number(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Status usage(std::string message) { return Status(Errc::kInvalidArgument, std::move(message)); }

// uid=/gid=: a number, or a user or group name.
Result<std::string> resolve_id(const std::string& key, const std::string& value,
                               const IdLookups& lookups) {
  if (is_number(value)) return value;
  const auto& lookup = key == "uid" ? lookups.user : lookups.group;
  std::optional<int64_t> id = lookup ? lookup(value) : std::nullopt;
  if (!id) {
    return usage(key + "=" + value + ": no such " + (key == "uid" ? "user" : "group"));
  }
  return std::to_string(*id);
}

struct Translation {
  // Flags in the order first given, with their values. A value option given again (fstab's
  // endpoint=, then mount -o endpoint= on the command line) keeps the last value; a list
  // option (prefetch, cache-server) collects them all.
  std::vector<std::pair<std::string, std::optional<std::string>>> flags;
  std::optional<bool> read_only;  // ro/rw/read-only, the last one given
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> warnings;
};

void set_flag(Translation& t, const std::string& flag, std::optional<std::string> value,
              bool list) {
  if (!list) {
    for (auto& [f, v] : t.flags) {
      if (f == flag) {
        v = std::move(value);
        return;
      }
    }
  }
  t.flags.emplace_back(flag, std::move(value));
}

// One option of -o. Unknown ones are errors unless sloppy.
Status translate_option(const std::string& option, bool sloppy, const IdLookups& lookups,
                        Translation& t) {
  if (option.empty()) return Status::ok();  // "a,,b"
  const size_t eq = option.find('=');
  const std::string raw_name = option.substr(0, eq);
  const bool has_value = eq != std::string::npos;
  const std::string value = has_value ? option.substr(eq + 1) : "";
  const std::string name = normalize(raw_name);

  if (starts_with(raw_name, "x-") || starts_with(raw_name, "X-") || name == "comment") {
    return Status::ok();  // for systemd, mount(8) and other tools reading fstab
  }
  if (name == "ro" || name == "rw" || name == "read-only") {
    if (has_value) return usage("option '" + raw_name + "' takes no value");
    t.read_only = name != "rw";
    return Status::ok();
  }
  if (std::find(kDropped.begin(), kDropped.end(), name) != kDropped.end()) {
    if (has_value) return usage("option '" + raw_name + "' takes no value");
    return Status::ok();
  }
  if (name == "uid" || name == "gid") {
    if (value.empty()) return usage("option '" + raw_name + "' needs a value (" + name + "=N)");
    WARMFS_ASSIGN_OR_RETURN(std::string id, resolve_id(name, value, lookups));
    set_flag(t, "--" + name, id, false);
    return Status::ok();
  }
  if (name == "credentials-file") {
    if (value.empty()) return usage("option '" + raw_name + "' needs a value (a file)");
    t.env.emplace_back("AWS_SHARED_CREDENTIALS_FILE", value);
    return Status::ok();
  }
  const FlagSpec* flag = find_flag(name);
  if (flag == nullptr) {
    if (sloppy) {
      t.warnings.push_back("ignoring unknown option '" + option + "' (-s)");
      return Status::ok();
    }
    return usage("unknown option '" + raw_name + "' (see mount.warmfs(8))");
  }
  if (flag->kind == Kind::kSwitch) {
    if (has_value) return usage("option '" + raw_name + "' takes no value");
    set_flag(t, "--" + name, std::nullopt, false);
    return Status::ok();
  }
  if (value.empty()) {
    return usage("option '" + raw_name + "' needs a value (" + name + "=...)");
  }
  set_flag(t, "--" + name, value, flag->kind == Kind::kList);
  return Status::ok();
}

}  // namespace

bool is_mount_helper_name(std::string_view argv0) {
  const size_t slash = argv0.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? argv0 : argv0.substr(slash + 1);
  return starts_with(base, "mount.");
}

std::vector<std::string> split_mount_options(std::string_view options) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : options) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(std::move(cur));
  return out;
}

Result<MountHelperCall> translate_mount_helper_args(const std::vector<std::string>& args,
                                                    const IdLookups& lookups) {
  MountHelperCall call;
  std::vector<std::string> positional;
  std::vector<std::string> option_strings;
  bool sloppy = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') {
      positional.push_back(a);
      continue;
    }
    // -o OPTS, -oOPTS, -t TYPE, -N NS, and the switches -s -f -n -v, also combined (-sv).
    for (size_t j = 1; j < a.size(); ++j) {
      const char c = a[j];
      if (c == 'o' || c == 't' || c == 'N') {
        std::string value = a.substr(j + 1);
        if (value.empty()) {
          if (i + 1 >= args.size()) return usage(std::string("-") + c + " needs a value");
          value = args[++i];
        }
        if (c == 'o') option_strings.push_back(value);
        if (c == 't' && value != "warmfs" && value != "fuse.warmfs" && value != "fuse3.warmfs") {
          return usage("type '" + value + "' is not warmfs or fuse.warmfs");
        }
        if (c == 'N') return usage("-N (mounting in another namespace) is not supported");
        break;
      }
      switch (c) {
        case 's':
          sloppy = true;
          break;
        case 'f':
          call.fake = true;
          break;
        case 'v':
          call.verbose = true;
          break;
        case 'n':
          break;  // no /etc/mtab to write: the kernel's mount table is the record
        default:
          return usage(std::string("unknown flag -") + c);
      }
    }
  }
  if (positional.size() != 2) {
    return usage("usage: mount.warmfs s3://BUCKET[/PREFIX] MOUNTPOINT [-sfnv] [-o OPTIONS]");
  }
  std::string source = positional[0];
  // The `warmfs#SOURCE` form of fuse's fstab lines (type fuse).
  if (starts_with(source, "warmfs#")) source.erase(0, 7);
  if (source.empty() || positional[1].empty()) {
    return usage("mount.warmfs: the source and the mount point must not be empty");
  }

  Translation t;
  for (const auto& s : option_strings) {
    for (const auto& option : split_mount_options(s)) {
      if (Status st = translate_option(option, sloppy, lookups, t); !st.is_ok()) return st;
    }
  }
  call.argv = {"warmfs", "mount", source, positional[1]};
  for (auto& [flag, value] : t.flags) {
    call.argv.push_back(flag);
    if (value) call.argv.push_back(*value);
  }
  if (t.read_only.value_or(false)) call.argv.push_back("--read-only");
  call.env = std::move(t.env);
  call.warnings = std::move(t.warnings);
  return call;
}

}  // namespace warmfs::cli

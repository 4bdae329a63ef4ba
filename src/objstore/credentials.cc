#include "objstore/credentials.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

namespace warmfs::s3 {
namespace {

constexpr std::string_view kDefaultRegion = "us-east-1";

using Section = std::map<std::string, std::string>;
using IniFile = std::map<std::string, Section>;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string env_value(const EnvLookup& env, const char* name) {
  if (!env) return {};
  const char* v = env(name);
  return v == nullptr ? std::string() : std::string(v);
}

// The AWS INI dialect: [section], key = value, '#' and ';' comments. Indented lines under a
// key are nested sub-settings (e.g. "s3 =" blocks) and are skipped.
IniFile parse_ini(std::istream& in) {
  IniFile file;
  Section* current = nullptr;
  std::string raw;
  while (std::getline(in, raw)) {
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      size_t close = line.find(']');
      if (close == std::string_view::npos) {
        current = nullptr;
        continue;
      }
      current = &file[std::string(trim(line.substr(1, close - 1)))];
      continue;
    }
    if (current == nullptr || std::isspace(static_cast<unsigned char>(raw.front()))) continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    (*current)[lower(trim(line.substr(0, eq)))] = std::string(trim(line.substr(eq + 1)));
  }
  return file;
}

std::optional<IniFile> read_ini(const std::string& path) {
  if (path.empty()) return std::nullopt;
  std::ifstream in(path);
  if (!in) return std::nullopt;
  return parse_ini(in);
}

std::string expand_home(const std::string& path, const EnvLookup& env) {
  if (path.starts_with("~/")) {
    std::string home = env_value(env, "HOME");
    if (home.empty()) return {};
    return home + path.substr(1);
  }
  return path;
}

std::string shared_file_path(const EnvLookup& env, const char* variable, const char* leaf) {
  std::string path = env_value(env, variable);
  if (!path.empty()) return expand_home(path, env);
  std::string home = env_value(env, "HOME");
  if (home.empty()) return {};
  return home + "/.aws/" + leaf;
}

std::string pick_profile(std::string_view requested, const EnvLookup& env, bool* named) {
  if (!requested.empty()) {
    *named = true;
    return std::string(requested);
  }
  std::string from_env = env_value(env, "AWS_PROFILE");
  *named = !from_env.empty();
  return from_env.empty() ? std::string("default") : from_env;
}

// The config file's section for a profile: "[profile NAME]", or "[default]" for default.
const Section* config_section(const IniFile& config, const std::string& profile) {
  auto it = config.find("profile " + profile);
  if (it != config.end()) return &it->second;
  if (profile == "default") {
    it = config.find("default");
    if (it != config.end()) return &it->second;
  }
  return nullptr;
}

std::string get(const Section& s, const char* key) {
  auto it = s.find(key);
  return it == s.end() ? std::string() : it->second;
}

}  // namespace

std::string choose_profile(std::string_view requested, const EnvLookup& env, bool* named) {
  return pick_profile(requested, env, named);
}

std::optional<ProfileSettings> load_profile(const std::string& profile, const EnvLookup& env,
                                            std::string* where) {
  const std::string credentials_path =
      shared_file_path(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials");
  const std::string config_path = shared_file_path(env, "AWS_CONFIG_FILE", "config");
  std::optional<ProfileSettings> out;
  std::string places;
  if (auto file = read_ini(config_path)) {
    if (const Section* s = config_section(*file, profile)) {
      out = *s;
      places = fmt::format("{} [{}]", config_path,
                           profile == "default" ? profile : "profile " + profile);
    }
  }
  if (auto file = read_ini(credentials_path)) {
    auto it = file->find(profile);
    if (it != file->end()) {
      if (!out) out.emplace();
      for (const auto& [k, v] : it->second) (*out)[k] = v;
      places += (places.empty() ? "" : " and ") + fmt::format("{} [{}]", credentials_path, profile);
    }
  }
  if (where != nullptr) *where = places;
  return out;
}

std::string Credentials::describe() const {
  if (empty()) return "anonymous";
  std::string_view id = access_key_id;
  std::string tail(id.size() > 4 ? id.substr(id.size() - 4) : std::string_view());
  return fmt::format("access key ****{}{}", tail,
                     session_token.empty() ? "" : " (with session token)");
}

EnvLookup process_environment() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

std::string resolve_region(std::string_view explicit_region, std::string_view profile,
                           const EnvLookup& env) {
  if (!explicit_region.empty()) return std::string(explicit_region);
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    std::string v = env_value(env, name);
    if (!v.empty()) return v;
  }
  bool named = false;
  const std::string name = pick_profile(profile, env, &named);
  if (auto file = read_ini(shared_file_path(env, "AWS_CONFIG_FILE", "config"))) {
    if (const Section* s = config_section(*file, name)) {
      std::string region = get(*s, "region");
      if (!region.empty()) return region;
    }
  }
  return std::string(kDefaultRegion);
}

}  // namespace warmfs::s3

// The credential chain's parsers of outside input (objstore/credentials.h,
// objstore/credential_chain.h): the shared config and credentials files (INI), the JSON that
// credential_process prints and that the container endpoint and IMDS answer, and
// credential_process's command line. The input is four fields separated by NUL bytes: config
// file, credentials file, JSON, command line. Each parses or is refused with a message; a
// profile found names where; credentials parsed from JSON have both keys.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "fuzz_util.h"
#include "objstore/credential_chain.h"
#include "objstore/credentials.h"

using namespace warmfs;

namespace {

// A memory file holding text, named by a /proc path the profile loader can open.
class TextFile {
 public:
  explicit TextFile(std::string_view text) : fd_(::memfd_create("fuzz", MFD_CLOEXEC)) {
    FUZZ_CHECK(fd_ >= 0);
    FUZZ_CHECK(::write(fd_, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~TextFile() { ::close(fd_); }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto fields = fuzz::split(fuzz::as_view(data, size), '\0');
  fields.resize(4);
  TextFile config(fields[0]), creds(fields[1]);
  const std::string config_path = config.path(), creds_path = creds.path();
  s3::EnvLookup env = [&](const char* name) -> const char* {
    if (std::strcmp(name, "AWS_CONFIG_FILE") == 0) return config_path.c_str();
    if (std::strcmp(name, "AWS_SHARED_CREDENTIALS_FILE") == 0) return creds_path.c_str();
    return nullptr;
  };
  for (const char* profile : {"default", "p", "profile p"}) {
    std::string where;
    if (auto settings = s3::load_profile(profile, env, &where)) {
      FUZZ_CHECK(!where.empty());
      for (const auto& [key, value] : *settings) {
        for (char c : key) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));  // keys are lower-cased
      }
    }
  }
  (void)s3::resolve_region("", "p", env);

  for (auto parse : {&s3::parse_process_credentials, &s3::parse_metadata_credentials}) {
    auto r = parse(fields[2]);
    if (r.is_ok()) {
      FUZZ_CHECK(!r->credentials.access_key_id.empty());
      FUZZ_CHECK(!r->credentials.secret_access_key.empty());
    } else {
      FUZZ_CHECK(!r.status().message().empty());
    }
  }

  auto words = s3::split_command(fields[3]);
  if (words.is_ok()) {
    for (const std::string& w : *words) FUZZ_CHECK(w.size() <= fields[3].size());
  }
  (void)s3::container_uri_allowed(fields[3]);
  return 0;
}

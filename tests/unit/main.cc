#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>

#include "common/log.h"

int main(int argc, char* argv[]) {
  // Tests provoke failures on purpose; their log lines are noise unless asked for.
  warmfs::log::Level level = warmfs::log::Level::kOff;
  if (const char* l = std::getenv("WARMFS_TEST_LOG")) warmfs::log::parse_level(l, &level);
  warmfs::log::set_level(level);
  return Catch::Session().run(argc, argv);
}

#!/usr/bin/env bash
# Configure (once) and build warmfs into build/, or into the build dir given with the meson
# options it is configured with (tools/test --sanitize: build-asan/ -Db_sanitize=...).
# Serialised with other builds on this machine by /tmp/warmfs-build.lock (two cores are
# shared). Used by tools/test and tools/demo.
#
#   tools/lib/build.sh [BUILD_DIR [MESON_OPTION ...]]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
dir=${1:-build}
(($#)) && shift
lock=()
command -v flock >/dev/null 2>&1 && lock=(flock /tmp/warmfs-build.lock)
if [[ ! -f $dir/build.ninja ]]; then
  "${lock[@]}" meson setup "$dir" "$@"
fi
"${lock[@]}" ninja -C "$dir"

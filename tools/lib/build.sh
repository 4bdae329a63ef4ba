#!/usr/bin/env bash
# Configure (once) and build warmfs into build/. Serialised with other builds on this machine by
# /tmp/warmfs-build.lock (two cores are shared). Used by tools/test and tools/demo.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
lock=()
command -v flock >/dev/null 2>&1 && lock=(flock /tmp/warmfs-build.lock)
if [[ ! -f build/build.ninja ]]; then
  "${lock[@]}" meson setup build
fi
"${lock[@]}" ninja -C build

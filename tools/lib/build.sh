#!/usr/bin/env bash
# Configure (once) and build warmfs into build/, or into the build dir given with the meson
# options it is configured with (tools/test --sanitize: build-asan/ -Db_sanitize=...), and
# only the ninja targets given after "--" if any (all of them otherwise).
# Serialised with other builds on this machine by /tmp/warmfs-build.lock (two cores are
# shared). Used by tools/test and tools/demo.
#
#   tools/lib/build.sh [BUILD_DIR [MESON_OPTION ...] [-- TARGET ...]]
#
# A build dir configured earlier with other options is reconfigured with the ones given (the
# options last applied are kept in BUILD_DIR/warmfs-options), so a change of flags in
# tools/test reaches existing build dirs too.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
dir=${1:-build}
(($#)) && shift
opts=() targets=()
while (($#)); do
  if [[ $1 == -- ]]; then
    shift
    targets=("$@")
    break
  fi
  opts+=("$1")
  shift
done
lock=()
command -v flock >/dev/null 2>&1 && lock=(flock /tmp/warmfs-build.lock)
if [[ ! -f $dir/build.ninja ]]; then
  "${lock[@]}" meson setup "$dir" "${opts[@]}"
  printf '%s\n' "${opts[@]}" >"$dir/warmfs-options"
elif ((${#opts[@]})) && [[ $(printf '%s\n' "${opts[@]}") != "$(cat "$dir/warmfs-options" 2>/dev/null)" ]]; then
  "${lock[@]}" meson configure "$dir" "${opts[@]}"
  printf '%s\n' "${opts[@]}" >"$dir/warmfs-options"
fi
"${lock[@]}" ninja -C "$dir" "${targets[@]}"

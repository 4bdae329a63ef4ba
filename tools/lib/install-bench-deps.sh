#!/usr/bin/env bash
# Install what the benchmark harness (tools/bench/run) needs beyond install-deps.sh, and nothing
# when it is all there: the peers (s3fs-fuse, rclone), fio for random reads, and
# python3-matplotlib for the chart (drawn by Debian's /usr/bin/python3: the default python3 may
# be another build without matplotlib). apt-get update + install only when a package is missing.
# Needs root for apt-get. Idempotent. The smoke mode (tools/bench/run --smoke) needs none of it.
set -euo pipefail

APT_PACKAGES=(s3fs rclone fio python3-matplotlib curl)

say() { printf 'install-bench-deps: %s\n' "$*" >&2; }

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  [[ $(id -u) -eq 0 ]] || { say "need root to apt-get install: ${missing[*]}"; exit 1; }
  say "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -q
  timeout 1200 apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  say "Debian packages: all present"
fi

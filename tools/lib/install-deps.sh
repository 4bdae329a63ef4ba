#!/usr/bin/env bash
# Install what building and testing warmfs needs on Debian 12, and nothing when it is all there:
# the Debian packages (apt-get update + install only when one is missing), node for s3rver, and
# s3rver itself through `npm ci` (pinned in package.json / package-lock.json at the repo root).
# Used by .ci/run and tools/demo. Needs root for apt-get. Idempotent.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

APT_PACKAGES=(
  meson ninja-build pkg-config g++
  libfuse3-dev fuse3
  libcurl4-openssl-dev libssl-dev
  librocksdb-dev liburing-dev
  libzstd-dev  # snapshot files (docs/snapshots.md); RocksDB depends on it already
  libfmt-dev catch2 libpugixml-dev nlohmann-json3-dev libcli11-dev
  libmicrohttpd-dev  # the HTTP/1.1 server of `warmfs serve` (keep-alive, thread per connection, TLS)
  rsync  # the write tests copy trees into the mount with it
  strace  # tests count the system calls a listing makes into the mount
  s3fs  # test_attributes: objects written by s3fs-fuse read through warmfs, and the other way
  autoconf automake  # tools/pjdfstest builds pjdfstest from ../shared/testtools
  libsystemd-dev  # sd_notify: readiness and stop for systemd units of Type=notify
  # tools/fuzz: clang's libFuzzer and its sanitizer runtimes (the fuzz targets build with
  # clang only; the rest of warmfs keeps g++).
  clang-16 libfuzzer-16-dev libclang-rt-16-dev
  clang-format-16  # tools/format: the C++ tree is kept in .clang-format; tools/test checks it
  # Deployment checks: the Debian package (build, lint, man pages), the Prometheus endpoint
  # (promtool), the Kubernetes manifests (yamllint).
  debhelper dpkg-dev fakeroot lintian help2man prometheus yamllint python3-yaml
  python3-kubernetes  # the API's models: tests/integration/test_manifests.py checks field names
  # python/ (the loader helper): tests/integration/test_loaders.py runs a real PyTorch DataLoader
  # whose OrderedSampler publishes each epoch's order to a mount.
  python3-torch
)

say() { printf 'install-deps: %s\n' "$*" >&2; }

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done
# node and npm may come from Debian or from another node distribution; only ask apt when absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

if ((${#missing[@]})); then
  [[ $(id -u) -eq 0 ]] || { say "need root to apt-get install: ${missing[*]}"; exit 1; }
  say "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -q
  timeout 1200 apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  say "Debian packages: all present"
fi

# s3rver, exactly as locked. `npm ci` wipes node_modules, so skip it when the lock is satisfied.
want=$(sed -n 's/^ *"s3rver": *"\([^"]*\)".*/\1/p' "$repo/package.json" | head -n1)
have=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' \
         "$repo/node_modules/s3rver/package.json" 2>/dev/null | head -n1 || true)
if [[ -z $want || $have != "$want" || ! -f $repo/node_modules/.package-lock.json ]]; then
  say "npm ci (s3rver $want)"
  (cd "$repo" && timeout 600 npm ci --no-audit --no-fund --loglevel=error)
else
  say "s3rver $have: present"
fi

# Python side of the integration tests: not installable from here (no PyPI), so check and say.
if ! python3 -c 'import boto3, moto, flask' >/dev/null 2>&1; then
  say "WARNING: python3 lacks boto3/moto[server]; the integration tests will fail"
fi

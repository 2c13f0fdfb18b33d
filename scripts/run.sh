#!/usr/bin/env bash
# Installs what is missing, builds, and runs rocewatchd in the foreground on its built-in defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
[[ -f build/build.ninja ]] || meson setup build -Dtests=disabled
ninja -C build daemon/rocewatchd
state=${ROCEWATCH_STATE_DIR:-$PWD/build/state}
mkdir -p "$state"
exec build/daemon/rocewatchd --state-dir "$state" "$@"

#!/bin/bash
# Refreshes tests/fixtures/sysfs/rxe-real/ from a real guest: runs the healthy scenario
# (which snapshots rxe0 and rxe1 of node 1 after traffic) and copies the snapshot in.
# Run by hand, as root; the result is meant to be reviewed and committed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${ROCEWATCH_VM_WORK:-/tmp/rocewatch-vm}
"$here/run-scenario.sh" healthy "$@"
src=$work/results/healthy/node1/results/sysfs-rxe-real
dest=$repo/tests/fixtures/sysfs/rxe-real
[[ -s $src/class/infiniband/rxe0/ports/1/state ]] || { echo "no snapshot in $src" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
cp -r "$src" "$dest"
echo "updated $dest: $(find "$dest" -type f | wc -l) files"

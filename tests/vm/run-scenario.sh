#!/bin/bash
# Runs one rocewatch test-bed scenario in QEMU guests: tests/vm/run-scenario.sh NAME
#
# What it is
#   Real kernel RDMA and bonding objects for rocewatch to watch: Debian's own kernel
#   (rdma_rxe = Soft-RoCE, bonding) booted under QEMU with an initramfs that mounts the
#   host's / read-only over 9p (tmpfs overlay on top), so the guests run the very
#   binaries built on the host (build/daemon/rocewatchd, perftest, iproute2, rdma-core).
#   Two guests ("nodes"), each with two NICs ("rails" railA 10.10.1.N/24 and railB
#   10.10.2.N/24, MTU 9000), cabled rail to rail by QEMU -netdev dgram on 127.0.0.1.
#   No other network at all: -nodefaults -nic none.
#
# Usage (as root; packages: qemu-system-x86 linux-image-amd64 busybox-static kmod cpio
# rdma-core ibverbs-utils ibverbs-providers perftest iproute2 curl jq)
#   tests/vm/run-scenario.sh healthy       # or bonded, cable-pull, misconfig
#   tests/vm/run-scenario.sh --list
#   ROCEWATCHD=/path/to/rocewatchd tests/vm/run-scenario.sh healthy
#   meson test -C build --suite vm         # all of them, one after the other
#   tests/vm/update-sysfs-fixture.sh       # refresh tests/fixtures/sysfs/rxe-real
#   Guest output streams prefixed [node1]/[node2]; logs, dmesg, perftest output and
#   daemon answers of the last run stay in ${ROCEWATCH_VM_WORK:-/tmp/rocewatch-vm}/results/NAME/.
#   Each scenario is tests/vm/scenarios/NAME.sh (helpers in scenarios/lib.sh; its header
#   gives vm-nodes and vm-timeout). Each guest runs the daemon (ROCEWATCHD, default
#   build/daemon/rocewatchd) on its real sysfs and netlink with the config lib.sh writes,
#   and holds its REST and /metrics answers against rdma link, ibv_devinfo, sysfs, ip -j
#   and /proc/net/bonding. Without the binary the daemon assertions are skipped with a
#   reason; with CI=true that is a failure.
#
# What it can simulate
#   Real rxe verbs devices: port state, GID tables (RoCE v2, IPv4-mapped at index 1),
#   hw_counters, RDMA write traffic (perftest); real bonds (/proc/net/bonding, netlink);
#   cable pulls (QMP set_link on both ends: ports DOWN within a second); MTU, address
#   and GID misconfigurations; the GID-entries-move-to-bond0 failure mode.
# What it cannot
#   - No PFC, ECN or CNPs (rxe has no congestion control counters), no lossless fabric.
#   - No mlx5 counters: rxe has hw_counters (sent_pkts, rcvd_pkts, retry_exceeded_err,
#     link_downed, ...) but no counters/ directory (port_xmit_data & co.).
#   - The port rate is whatever the virtio NIC declares (speed=100000 in vm.py, so
#     "100 Gb/sec (4X EDR)"); nothing runs at that speed.
#   - No speed: QEMU runs on TCG (software CPU; KVM hangs on this machine), so RDMA moves
#     tens of MB/s with hundreds of microseconds of latency. Good for function, never for
#     performance figures.
#   - No GPUs, no nvidia_peermem, no UCX device topology; one port per device.
#   - Kernel 6.1 rxe ignores network namespaces: a "node" is a whole guest.
#
# Cost on the 2-core machine, with the daemon assertions (host load 2-7): healthy 80-140 s,
# bonded 180-275 s (15 s of it waiting out the RDMA that must fail), cable-pull 70-150 s,
# misconfig 75-115 s; boot ~10 s each. The daemon's collection (1024 GID slots a rxe
# port read through sysfs) takes about a second under TCG, so at interval 1s it keeps
# the guest's one vCPU busy, and every check (a curl+jq fork) waits for it.
#
# Exit status: 0 pass, 1 fail, 77 skip (not root / no QEMU, outside CI; in CI, with
# CI=true, those are failures).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

list() {
    local f
    for f in "$here"/scenarios/*.sh; do
        [[ $f == */lib.sh ]] || basename "$f" .sh
    done
}
case ${1:-} in
    --list) list; exit 0 ;;
    "" | -h | --help) echo "usage: $0 SCENARIO [vm.py options]; scenarios: $(list | tr '\n' ' ')" >&2; exit 2 ;;
esac

# Missing prerequisites: a skip on a developer's machine, a failure in CI.
unmet() {
    if [[ ${CI:-} == true ]]; then
        echo "run-scenario: FAIL: $* (CI=true: the VM suite must run)" >&2
        exit 1
    fi
    echo "run-scenario: SKIP: $*" >&2
    exit 77
}
[[ $(id -u) == 0 ]] || unmet "needs root (QEMU's 9p export of /, net.core.rmem_default)"
command -v qemu-system-x86_64 >/dev/null || unmet "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
ls /boot/vmlinuz-* >/dev/null 2>&1 || unmet "no kernel in /boot (apt-get install linux-image-amd64)"
command -v busybox >/dev/null || unmet "busybox not found (apt-get install busybox-static)"
for tool in rdma ibv_devinfo ib_write_bw jq curl; do
    command -v $tool >/dev/null || unmet "$tool not found (rdma-core ibverbs-utils perftest jq curl)"
done

# The daemon under test (vm.py's default when unset). Without it the scenarios still
# check the kernel; in CI that is not enough.
export ROCEWATCHD=${ROCEWATCHD:-$(dirname "$(dirname "$here")")/build/daemon/rocewatchd}
if [[ ! -x $ROCEWATCHD ]]; then
    if [[ ${CI:-} == true ]]; then
        echo "run-scenario: FAIL: rocewatchd not found or not executable at $ROCEWATCHD (CI=true: the daemon assertions must run; build it or set ROCEWATCHD)" >&2
        exit 1
    fi
    echo "run-scenario: rocewatchd not found at $ROCEWATCHD: the daemon assertions will be skipped (set ROCEWATCHD)" >&2
fi

work=${ROCEWATCH_VM_WORK:-/tmp/rocewatch-vm}
mkdir -p "$work"
images=$("$here/build-initramfs.sh")
kernel=$(awk '$1 == "kernel" { print $2 }' <<<"$images")
initrd=$(awk '$1 == "initrd" { print $2 }' <<<"$images")

scenario=$1
shift
exec python3 "$here/vm.py" --scenario "$scenario" --kernel "$kernel" --initrd "$initrd" --work "$work" "$@"

#!/bin/bash
# Harness self-check (not in the meson suite): both guests boot, the modules load, the
# rails carry their MACs, addresses and MTU, a Soft-RoCE device comes up, and the
# guests see each other through the shared dir. About 15 s.
# vm-nodes: 2
# vm-timeout: 180
. "$(dirname "$0")/lib.sh"

log "node$NODE of $NODES: $(uname -r), $(nproc) CPU, $(awk '/MemTotal/ { print $2 " kB" }' /proc/meminfo)"
for m in rdma_rxe bonding veth ib_uverbs rdma_ucm; do
    check "module $m loaded" test -d "/sys/module/$m"
done
check "no bond0 left by bonding.ko" test ! -e /sys/class/net/bond0
for rail in "${RAILS[@]}"; do
    check_eq "$rail MTU" 9000 "$(cat /sys/class/net/$rail/mtu)"
    check_match "$rail address" "inet $(rail_ip "$rail")/24" "$(ip -4 addr show dev "$rail")"
done
check "no default route (no way out)" test -z "$(ip route show default)"
add_rxe rxe0 railA
check_eq "rxe0 GID 1" "$(ipv4_gid "$(rail_ip railA)")" "$(cat "$(port_dir rxe0)/gids/1")"
check_eq "rxe0 rate (virtio-net speed=100000)" "100 Gb/sec (4X EDR)" "$(cat "$(port_dir rxe0)/rate")"
sync_point booted 60
finish

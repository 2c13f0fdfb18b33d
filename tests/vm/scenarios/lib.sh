# Helpers every scenario sources. Runs inside a test guest, as root, chrooted into the
# host's own tree (read-only 9p under a tmpfs overlay), so the host's binaries run here.
#
# Environment from init: RW_NODE (1 or 2), RW_NODES, RW_SCENARIO, RW_SHARE (the
# read-write share, the same directory in every guest and on the host), RW_REPO,
# ROCEWATCHD (path of the daemon binary; may not exist yet).
#
# Conventions: check/fail never exit; `finish` at the end exits non-zero when any check
# failed. Waits are bounded. Figures go to results/summary.txt, which the host prints.

# shellcheck disable=SC2034  # PEER, RAILS and the like are for the scenarios
set -uo pipefail

NODE=${RW_NODE:?}
NODES=${RW_NODES:-1}
SHARE=${RW_SHARE:?}
OUT=$SHARE/node$NODE
RES=$OUT/results
PEER=$((NODES > 1 ? 3 - NODE : 0))
mkdir -p "$RES"

RAILS=(railA railB)
declare -A RAIL_RXE=([railA]=rxe0 [railB]=rxe1)
declare -A RAIL_SUBNET=([railA]=10.10.1 [railB]=10.10.2)

CHECKS=0
FAILS=0
SKIPS=0

# Time without forking (a fork+exec costs ~50 ms under TCG): bash's EPOCHREALTIME in
# microseconds. `us` is the current reading; fmt_us prints microseconds as seconds.
us() { echo "${EPOCHREALTIME/./}"; }
fmt_us() { printf '%d.%03d\n' $(($1 / 1000000)) $(($1 % 1000000 / 1000)); }
T0=${EPOCHREALTIME/./}
log() {
    local t=$((${EPOCHREALTIME/./} - T0))
    printf '[%4d.%02d] %s\n' $((t / 1000000)) $((t % 1000000 / 10000)) "$*"
}
# snooze SECONDS: sleep without a fork (sleep(1) is a fork+exec, ~50 ms under TCG):
# a read with a timeout on a fifo nobody writes.
mkfifo /run/rocewatch-vm/snooze.$$ 2>/dev/null
exec {SNOOZE_FD}<>/run/rocewatch-vm/snooze.$$
rm -f /run/rocewatch-vm/snooze.$$
snooze() { read -r -t "$1" -u "$SNOOZE_FD" _; return 0; }

pass() { CHECKS=$((CHECKS + 1)); log "PASS: $*"; }
fail() { CHECKS=$((CHECKS + 1)); FAILS=$((FAILS + 1)); log "FAIL: $*"; echo "FAIL: $*" >>"$RES/failures.txt"; }
skip() { SKIPS=$((SKIPS + 1)); log "SKIP: $*"; }
section() { log "==== $* ===="; }
# Figures worth reading after the run; the host prints this file.
record() { echo "$*" >>"$RES/summary.txt"; log "RECORD: $*"; }

# check DESCRIPTION CMD...: passes when CMD exits 0; shows CMD's output when it fails.
check() {
    local desc=$1 outp
    shift
    if outp=$("$@" 2>&1); then
        pass "$desc"
    else
        fail "$desc: $* -> $(echo "$outp" | tail -5)"
    fi
}

# check_eq DESCRIPTION EXPECTED ACTUAL
check_eq() {
    if [[ "$3" == "$2" ]]; then pass "$1 ($3)"; else fail "$1: expected '$2', got '$3'"; fi
}

# check_match DESCRIPTION REGEX TEXT
check_match() {
    if [[ "$3" =~ $2 ]]; then pass "$1"; else fail "$1: /$2/ not in: $(echo "$3" | head -5)"; fi
}

finish() {
    if [[ -n ${DAEMON_PID:-} ]]; then stop_daemon; fi
    log "$CHECKS checks, $FAILS failed, $SKIPS skipped"
    echo "node$NODE: $CHECKS checks, $FAILS failed, $SKIPS skipped" >>"$RES/summary.txt"
    if ((FAILS > 0)); then exit 1; fi
    exit 0
}

# float comparisons
fgt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }
flt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# Tools the host may lack come from the initramfs busybox.
bb() { /run/rocewatch-vm/busybox "$@"; }

# ping_jumbo ADDR: a 9000-byte IP packet (8972 + 28) to ADDR and back; with iputils the
# don't-fragment bit is set, busybox's ping cannot (the local MTU is checked apart).
ping_jumbo() {
    if command -v ping >/dev/null; then
        ping -c 2 -W 5 -M "do" -s 8972 "$1"
    else
        bb ping -c 2 -W 5 -s 8972 "$1"
    fi
}

# ------------------------------------------------------------------ coordination

# sync_point NAME [TIMEOUT]: every guest waits here until all guests arrived.
sync_point() {
    local name=$1 timeout=${2:-120} n t=0
    : >"$SHARE/marks/$name.node$NODE"
    while :; do
        local all=1
        for ((n = 1; n <= NODES; n++)); do
            [[ -e $SHARE/marks/$name.node$n ]] || all=0
        done
        ((all)) && return 0
        if ((t >= timeout * 10)); then
            fail "sync point '$name': the other guest did not arrive within ${timeout}s"
            return 1
        fi
        snooze 0.1
        t=$((t + 1))
    done
}

# mark NAME / wait_mark NAME [TIMEOUT]: one-way signal between guests.
mark() { : >"$SHARE/marks/$1"; }
wait_mark() {
    local name=$1 timeout=${2:-60} t=0
    while [[ ! -e $SHARE/marks/$name ]]; do
        if ((t >= timeout * 10)); then
            fail "mark '$name' not seen within ${timeout}s"
            return 1
        fi
        snooze 0.1
        t=$((t + 1))
    done
}

# host_request WORDS...: asks the harness on the host to act (e.g. "set_link railA off":
# QMP set_link on that rail of every guest, i.e. both ends of the cable). Waits for it.
host_request() {
    # Builtins only until the request is out: the callers time from just before it.
    local id=${EPOCHREALTIME/./}.node$NODE t=0
    printf '%s\n' "$*" >"$SHARE/ctl/$id.req"
    while [[ ! -e $SHARE/ctl/$id.done ]]; do
        if ((t >= 600)); then
            fail "host did not answer '$*' within 30s"
            return 1
        fi
        snooze 0.05
        t=$((t + 1))
    done
    local r
    r=$(cat "$SHARE/ctl/$id.done")
    if [[ $r != ok* ]]; then
        fail "host request '$*': $r"
        return 1
    fi
}

# ------------------------------------------------------------------ rails and rxe

rail_ip() { echo "${RAIL_SUBNET[$1]}.${2:-$NODE}"; }

# The GID sysfs shows for an IPv4 address: ::ffff:a.b.c.d, spelled out.
ipv4_gid() {
    local IFS=.
    # shellcheck disable=SC2086
    set -- $1
    printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$1" "$2" "$3" "$4"
}

port_dir() { echo "/sys/class/infiniband/$1/ports/${2:-1}"; }
port_state() { cut -d' ' -f2 "$(port_dir "$1")/state" 2>/dev/null; }

# wait_port_state DEV STATE TIMEOUT_S: prints the seconds it took; fails after TIMEOUT_S.
wait_port_state() {
    local dev=$1 want=$2 limit=$(($3 * 1000000)) start=${EPOCHREALTIME/./} s
    local f
    f=$(port_dir "$dev")/state
    while :; do
        read -r _ s <"$f"
        [[ $s == "$want" ]] && break
        if ((${EPOCHREALTIME/./} - start > limit)); then
            echo timeout
            return 1
        fi
        snooze 0.02
    done
    fmt_us $((${EPOCHREALTIME/./} - start))
}

add_rxe() {
    local dev=$1 netdev=$2
    if rdma link add "$dev" type rxe netdev "$netdev"; then
        pass "rdma link add $dev on $netdev"
    else
        fail "rdma link add $dev type rxe netdev $netdev"
        return 1
    fi
    wait_port_state "$dev" ACTIVE 10 >/dev/null || fail "$dev did not become ACTIVE"
}

# Non-empty GID entries of DEV's port 1 as "index gid type ndev", one a line (one grep
# over the 1024 slots: a fork per slot costs seconds under TCG).
gid_table() {
    local d i g t n
    d=$(port_dir "$1")
    grep -H . "$d"/gids/* | grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$' |
        while IFS= read -r line; do
            i=${line%%:*}
            i=${i##*/}
            g=${line#*:}
            t=$(cat "$d/gid_attrs/types/$i" 2>/dev/null) || t=-
            n=$(cat "$d/gid_attrs/ndevs/$i" 2>/dev/null) || n=-
            echo "$i $g ${t// /_} $n"
        done | sort -n
}

# Index of the GID entry equal to GID on DEV's port 1, or nothing.
gid_index_of() { gid_table "$1" | awk -v g="$2" '$2 == g { print $1; exit }'; }

# What the kernel says about a healthy rail: rdma link, ibv_devinfo and sysfs agree that
# DEV is ACTIVE on NETDEV, and GID index 1 is the RoCE v2 entry of the rail's IPv4 address.
check_rxe_healthy() {
    local dev=$1 netdev=$2 ip=$3 d
    d=$(port_dir "$dev")
    check_match "$dev: rdma link shows ACTIVE on $netdev" \
        "state ACTIVE physical_state LINK_UP netdev $netdev" "$(rdma link show "$dev/1")"
    local info
    info=$(ibv_devinfo -d "$dev")
    check_match "$dev: ibv_devinfo port PORT_ACTIVE" "state:[[:space:]]+PORT_ACTIVE \(4\)" "$info"
    check_match "$dev: ibv_devinfo link_layer Ethernet" "link_layer:[[:space:]]+Ethernet" "$info"
    check_match "$dev: ibv_devinfo active_mtu 4096 (netdev MTU 9000)" "active_mtu:[[:space:]]+4096" "$info"
    check_match "$dev: ibv_devinfo active_width 4X" "active_width:[[:space:]]+4X" "$(ibv_devinfo -v -d "$dev")"
    check_eq "$dev: sysfs state" "4: ACTIVE" "$(cat "$d/state")"
    check_eq "$dev: sysfs phys_state" "5: LinkUp" "$(cat "$d/phys_state")"
    check_eq "$dev: sysfs link_layer" "Ethernet" "$(cat "$d/link_layer")"
    check_eq "$dev: sysfs rate (from the NIC's 100G speed)" "100 Gb/sec (4X EDR)" "$(cat "$d/rate")"
    check_eq "$dev: parent netdev" "$netdev" "$(cat "/sys/class/infiniband/$dev/parent")"
    check_eq "$dev: GID 1 is the IPv4-mapped $ip" "$(ipv4_gid "$ip")" "$(cat "$d/gids/1")"
    check_eq "$dev: GID 1 type" "RoCE v2" "$(cat "$d/gid_attrs/types/1")"
    check_eq "$dev: GID 1 netdev" "$netdev" "$(cat "$d/gid_attrs/ndevs/1")"
    check_match "$dev: GID 0 is link-local" "^fe80:" "$(cat "$d/gids/0")"
    check "$dev: has hw_counters" test -r "$d/hw_counters/sent_pkts"
    check "$dev: has no counters/ (Soft-RoCE)" test ! -e "$d/counters"
    check_eq "$netdev: MTU" 9000 "$(cat "/sys/class/net/$netdev/mtu")"
}

hw_counter() { cat "$(port_dir "$1")/hw_counters/$2"; }

# ------------------------------------------------------------------ perftest
#
# perftest exits 0 after zero iterations and its server can hang after a fault: every
# run is wrapped in timeout and judged by its figures. Node 1 serves, node 2 connects.

PERF_ITERS_BW=${PERF_ITERS_BW:-200}
PERF_ITERS_LAT=${PERF_ITERS_LAT:-200}

# perftest_run TOOL RAIL TAG [EXTRA OPTS...]: runs TOOL (ib_write_bw / ib_write_lat)
# between the guests over RAIL's rxe device with GID index 1 (a later -x in EXTRA OPTS
# wins). The client connects to PERF_SERVER_IP (default: node 1's address on RAIL).
# Output in $RES/TAG.node$NODE.txt. Returns 0 when this side printed a result line.
perftest_run() {
    local tool=$1 rail=$2 tag=$3
    shift 3
    local dev=${RAIL_RXE[$rail]} port iters outf
    port=$((18515 + $(cksum <<<"$tag" | cut -d' ' -f1) % 1000))
    iters=$PERF_ITERS_BW
    [[ $tool == *lat ]] && iters=$PERF_ITERS_LAT
    outf=$RES/$tag.node$NODE.txt
    local opts=(-d "$dev" -i 1 -x 1 -F -n "$iters" -p "$port" "$@")
    [[ $tool == *bw ]] && opts+=(-s 65536)
    if ((NODE == 1)); then
        timeout -k 5 "${PERF_TIMEOUT:-90}" stdbuf -oL -eL "$tool" "${opts[@]}" >"$outf" 2>&1 &
        local pid=$! t=0
        while ! ss -Hltn "sport = :$port" | grep -q .; do
            snooze 0.1
            t=$((t + 1))
            ((t < 100)) || break
        done
        mark "$tag.listening"
        wait "$pid"
    else
        wait_mark "$tag.listening" 60 || return 1
        timeout -k 5 "${PERF_TIMEOUT:-90}" stdbuf -oL -eL "$tool" "${opts[@]}" "${PERF_SERVER_IP:-$(rail_ip "$rail" 1)}" >"$outf" 2>&1
    fi
    local rc=$?
    log "$tool on $rail: exit $rc"
    perftest_result_line "$outf" >/dev/null
}

# The first figure line after perftest's "#bytes" header.
perftest_result_line() {
    awk '/#bytes/ { h = 1; next } h && $1 ~ /^[0-9]+$/ { print; found = 1; exit } END { exit !found }' "$1"
}

# ------------------------------------------------------------------ rocewatchd hooks
#
# Phase 2 wires these to the real daemon. Until build/daemon/rocewatchd exists they say
# so and skip: the kernel-side checks above stand on their own.

DAEMON_URL=http://127.0.0.1:9879
DAEMON_PID=

daemon_present() { [[ -n ${ROCEWATCHD:-} && -x $ROCEWATCHD ]]; }

# The config the guests run with: short clear delays so a scenario sees an alert clear
# within seconds. The key names follow daemon/model/config.hpp; if the daemon rejects
# them (--check-config), the daemon runs on its built-in defaults instead.
daemon_config() {
    cat <<'EOF'
[daemon]
listen = "127.0.0.1:9879"
interval = "1s"
state_dir = "/var/lib/rocewatch"
log_level = "debug"

[expect]
mtu = 9000

[rules.port_down]
clear_after = "3s"
[rules.netdev_down]
clear_after = "3s"
[rules.bond_slave_down]
clear_after = "3s"
[rules.bond_degraded]
clear_after = "3s"
EOF
}

# start_daemon [EXTRA ARGS...]: starts rocewatchd in the background and waits for
# /readyz. Returns 1 (after saying why) when the binary is missing or it does not start.
start_daemon() {
    if ! daemon_present; then
        skip "rocewatchd not built (${ROCEWATCHD:-unset} missing): daemon assertions skipped"
        return 1
    fi
    mkdir -p /etc/rocewatch /var/lib/rocewatch
    local cfg=/etc/rocewatch/vm.toml args=(--listen 127.0.0.1:9879 --log-level debug)
    daemon_config >"$cfg"
    if "$ROCEWATCHD" --check-config "$cfg" >"$OUT/rocewatchd-check-config.txt" 2>&1; then
        args+=(--config "$cfg")
    else
        log "rocewatchd --check-config rejected the VM config; running on built-in defaults:"
        sed 's/^/    /' "$OUT/rocewatchd-check-config.txt"
    fi
    "$ROCEWATCHD" "${args[@]}" "$@" >>"$OUT/rocewatchd.log" 2>&1 &
    DAEMON_PID=$!
    local t=0
    until curl -sf --max-time 2 "$DAEMON_URL/readyz" >/dev/null; do
        if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
            fail "rocewatchd exited during start-up (see rocewatchd.log)"
            DAEMON_PID=
            return 1
        fi
        if ((t >= 300)); then
            fail "rocewatchd not ready within 30s"
            return 1
        fi
        snooze 0.1
        t=$((t + 1))
    done
    pass "rocewatchd ready (pid $DAEMON_PID)"
}

stop_daemon() {
    [[ -n $DAEMON_PID ]] || return 0
    kill -TERM "$DAEMON_PID" 2>/dev/null
    local t=0
    while kill -0 "$DAEMON_PID" 2>/dev/null && ((t < 100)); do snooze 0.1; t=$((t + 1)); done
    if kill -0 "$DAEMON_PID" 2>/dev/null; then
        fail "rocewatchd ignored SIGTERM for 10s"
        kill -KILL "$DAEMON_PID"
    fi
    wait "$DAEMON_PID" 2>/dev/null
    DAEMON_PID=
}

daemon_running() { [[ -n $DAEMON_PID ]]; }

# query_daemon PATH: the body of GET PATH (non-zero status on HTTP errors).
query_daemon() { curl -sf --max-time 5 "$DAEMON_URL$1"; }

# Snapshot of every REST answer and /metrics into results, for the record.
save_daemon_state() {
    local tag=$1 p
    daemon_running || return 0
    for p in status devices interfaces bonds alerts alerts/history; do
        query_daemon "/api/v1/$p" >"$RES/daemon-$tag-${p//\//-}.json" 2>/dev/null
    done
    query_daemon /metrics >"$RES/daemon-$tag-metrics.txt" 2>/dev/null
}

# The JSON shapes are guesses until phase 2; the helpers search the whole document for
# objects with the expected keys so that wrapping ({"alerts": [...]} or [...]) does not
# matter.

# active_alerts: "rule object state" per line.
active_alerts() {
    query_daemon /api/v1/alerts |
        jq -r '[.. | objects | select(has("rule") and has("object"))] | .[] | "\(.rule) \(.object) \(.state // "?")"'
}

# alert_active RULE OBJECT [STATE]: OBJECT is an extended regex for the whole object
# name ("extra0|railA"); "rxe0" matches "rxe0/1" too.
alert_active() {
    active_alerts | awk -v r="$1" -v o="^(${2})(/1)?\$" -v s="${3:-}" \
        '$1 == r && $2 ~ o && (s == "" || $3 == s) { f = 1 } END { exit !f }'
}

# wait_alert RULE OBJECT TIMEOUT_S [STATE=firing [START_US]]: prints the seconds it took
# (from START_US, an earlier ${EPOCHREALTIME/./}, when given).
wait_alert() {
    local start=${5:-${EPOCHREALTIME/./}}
    local limit=$(($3 * 1000000))
    while ! alert_active "$1" "$2" "${4:-firing}"; do
        if ((${EPOCHREALTIME/./} - start > limit)); then
            echo timeout
            return 1
        fi
        snooze 0.05
    done
    local took=$((${EPOCHREALTIME/./} - start))
    fmt_us "$took"
    ((took <= limit))
}

# wait_alert_gone RULE OBJECT TIMEOUT_S: prints the seconds it took.
wait_alert_gone() {
    local limit=$(($3 * 1000000)) start=${EPOCHREALTIME/./}
    while alert_active "$1" "$2"; do
        if ((${EPOCHREALTIME/./} - start > limit)); then
            echo timeout
            return 1
        fi
        snooze 0.2
    done
    fmt_us $((${EPOCHREALTIME/./} - start))
}

# alert_since_us RULE OBJECT: when the daemon says the alert started (its "first_seen"
# or "since", as epoch seconds or an ISO 8601 string), in epoch microseconds; empty when
# it says nothing parseable. Polling through curl+jq costs ~0.3 s a round under TCG, so
# the daemon's own timestamp is the better measure of how fast it noticed.
alert_since_us() {
    local v
    v=$(query_daemon /api/v1/alerts | jq -r --arg r "$1" --arg o "^(${2})(/1)?$" \
        '[.. | objects | select(.rule? == $r and ((.object? // "") | test($o)))][0] | .first_seen // .since // empty')
    [[ -n $v ]] || return 0
    if [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
        awk -v v="$v" 'BEGIN { if (v > 1e14) v /= 1e6; else if (v > 1e11) v /= 1e3; printf "%.0f\n", v * 1e6 }'
    else
        date -d "$v" +%s%6N 2>/dev/null
    fi
}

# expect_alert RULE OBJECT TIMEOUT_S [START_US]: the alert fires within TIMEOUT_S (of
# START_US when given: then the daemon's own start time of the alert is judged where it
# gives one, else the time the poll saw it).
expect_alert() {
    local took since
    if took=$(wait_alert "$1" "$2" "$3" firing "${4:-}"); then
        pass "rocewatchd: alert $1 on $2 firing after ${took}s"
        record "alert $1 $2 fired after ${took}s"
    elif [[ -n ${4:-} && $took != timeout ]] && since=$(alert_since_us "$1" "$2") && [[ -n $since ]] &&
        ((since - $4 <= $3 * 1000000 && since - $4 > -500000)); then
        pass "rocewatchd: alert $1 on $2 started $(fmt_us $((since - $4)))s after the fault (seen by polling after ${took}s)"
        record "alert $1 $2 started $(fmt_us $((since - $4)))s after the fault"
    else
        fail "rocewatchd: alert $1 on $2 not firing within $3s (${took}); active: $(active_alerts | tr '\n' ';')"
    fi
}

# expect_cleared RULE OBJECT TIMEOUT_S
expect_cleared() {
    local took
    if took=$(wait_alert_gone "$1" "$2" "$3"); then
        pass "rocewatchd: alert $1 on $2 cleared after ${took}s"
    else
        fail "rocewatchd: alert $1 on $2 still active after $3s"
    fi
}

# expect_no_alerts: nothing pending or firing.
expect_no_alerts() {
    local a
    a=$(active_alerts)
    if [[ -z $a ]]; then pass "rocewatchd: no active alerts"; else fail "rocewatchd: unexpected alerts: $(echo "$a" | tr '\n' ';')"; fi
}

# expect_health healthy|warning|critical
expect_health() {
    local h
    h=$(query_daemon /api/v1/status | jq -r '.health // .verdict // .status // .overall // empty')
    check_eq "rocewatchd: overall health" "$1" "$h"
}

# port_json DEV: the first object under /api/v1/devices/DEV that looks like a port.
port_json() {
    query_daemon "/api/v1/devices/$1" | jq -c '[.. | objects | select(has("state_name") or has("roce_v2_ipv4_gid_index"))][0]'
}

# expect_device_port DEV STATE GID_INDEX ADDRESS
expect_device_port() {
    local j
    j=$(port_json "$1")
    check_eq "rocewatchd: $1 port state" "$2" "$(jq -r '.state_name // .state' <<<"$j")"
    check_eq "rocewatchd: $1 RoCE v2 IPv4 GID index" "$3" "$(jq -r '.roce_v2_ipv4_gid_index' <<<"$j")"
    check_eq "rocewatchd: $1 RoCE v2 IPv4 address" "$4" "$(jq -r '.roce_v2_ipv4_address' <<<"$j")"
}

# expect_interface NAME FIELD VALUE: a field of NAME in /api/v1/interfaces.
expect_interface() {
    local v
    v=$(query_daemon /api/v1/interfaces | jq -r --arg n "$1" --arg f "$2" \
        '[.. | objects | select(.name? == $n)][0] | .[$f] | if type == "array" then tostring else . end')
    check_eq "rocewatchd: $1 $2" "$3" "$v"
}

# expect_metric REGEX: some /metrics line matches.
expect_metric() {
    if query_daemon /metrics | grep -Eq "$1"; then
        pass "rocewatchd /metrics has /$1/"
    else
        fail "rocewatchd /metrics lacks /$1/"
    fi
}

# ------------------------------------------------------------------ sysfs snapshot

# snapshot_rxe_sysfs DEST DEV...: copies the contents (never the links) of each rxe
# device's sysfs tree into DEST/class/infiniband/DEV, and its parent netdev's attributes
# into DEST/class/net/NETDEV, laid out as a --sysfs-root for the daemon's unit tests
# (python: a shell loop forks too often for TCG).
snapshot_rxe_sysfs() {
    local dest=$1 dev
    shift
    python3 "$(dirname "${BASH_SOURCE[0]}")/sysfs_snapshot.py" "$dest" "$@" || return 1
    {
        echo "Real Soft-RoCE (rdma_rxe) sysfs, copied from a test guest by tests/vm (scenario $RW_SCENARIO, node$NODE)."
        echo "kernel: $(uname -r)"
        echo "devices: $*  (rxe0 on railA, rxe1 on railB; MTU 9000; after ib_write_bw/ib_write_lat)"
        echo "layout: class/infiniband/<dev>/ and class/net/<parent>/ are plain directories here (in sysfs, links into devices/)"
        echo "left out: power/, the subsystem link, GID slots 16..1023 (all-zero like 2..15; sysfs has 1024 per port);"
        echo "  of the netdevs, everything but their top-level attributes and statistics/"
        echo "netdevs: virtio-net with speed=100000 (hence rate 100 Gb/sec (4X EDR)); carrier, operstate, mtu as in a healthy run"
        echo "empty GID slots: gids/N reads all-zero and gid_attrs/{types,ndevs}/N fail with EINVAL (absent here, listed in UNREADABLE)"
        for dev in "$@"; do
            echo "$dev: $(gid_table "$dev" | tr '\n' ';')"
        done
    } >"$dest/MANIFEST"
}

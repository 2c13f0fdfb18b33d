# Helpers every scenario sources. Runs inside a test guest, as root, chrooted into the
# host's own tree (read-only 9p under a tmpfs overlay), so the host's binaries run here.
#
# Environment from init: RW_NODE (1 or 2), RW_NODES, RW_SCENARIO, RW_SHARE (the
# read-write share, the same directory in every guest and on the host), RW_REPO,
# ROCEWATCHD (path of the daemon binary), RW_CI ("true" when the host runs in CI: a
# missing daemon is then a failure, not a skip).
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
# QMP set_link on that rail of every guest, i.e. both ends of the cable; it answers
# "ok HOST_US_BEFORE HOST_US_AFTER", its clock around the QMP commands; "clock" answers
# "ok HOST_US"). Waits for it; with HOST_REPLY_FILE set, leaves the answer there.
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
    # The reply ("ok [FIGURES...]") for a caller that runs this in the background.
    [[ -n ${HOST_REPLY_FILE:-} ]] && echo "$r" >"$HOST_REPLY_FILE"
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

# plug_back RAIL DEV MARK: after a cable pull, node 2 asks the host to plug RAIL back in; every
# node then waits for its DEV to be ACTIVE again. Marks MARK (node 2) or waits for it.
plug_back() {
    local rail=$1 dev=$2 mark=$3
    if ((NODE == 2)); then
        host_request set_link "$rail" on
        wait_port_state "$dev" ACTIVE 20 >/dev/null || fail "$dev not ACTIVE again after the link returned"
        mark "$mark"
    else
        wait_mark "$mark" 120
        wait_port_state "$dev" ACTIVE 20 >/dev/null || fail "$dev not ACTIVE again after the link returned"
    fi
}

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

# rxe_on_every_rail: a Soft-RoCE device on each rail (rxe0 on railA, rxe1 on railB), ACTIVE.
rxe_on_every_rail() {
    local rail
    for rail in "${RAILS[@]}"; do
        add_rxe "${RAIL_RXE[$rail]}" "$rail"
    done
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

# ------------------------------------------------------------------ rocewatchd
#
# The daemon under test runs in each guest on the guest's real /sys, /proc and netlink,
# with a config of its own (daemon_config) and a fresh state dir; its answers are held
# against what the kernel says. The JSON keys are those of api/json_view.cpp, the alert
# objects those of daemon/rules/rules.cpp ("rxe0/1" for ports, the netdev's name for
# netdev rules, "rxe0/1:link_downed" for error counters, the slave or bond for bond rules).

# A scenario may listen on every address (peer probing: the other guest's daemon calls in).
DAEMON_LISTEN=${DAEMON_LISTEN:-127.0.0.1:9879}
DAEMON_URL=http://127.0.0.1:${DAEMON_LISTEN##*:}
DAEMON_PID=
DAEMON_DIR=/run/rocewatchd-vm
# expect.rails of the config; a scenario may change it before start_daemon ("" = every device).
DAEMON_RAILS=${DAEMON_RAILS-rxe0 rxe1}
# Rules the scenarios watch clear: a short clear_after so that takes seconds, not 30 s+.
DAEMON_FAST_CLEAR=(port_down netdev_down bond_slave_down bond_degraded ${DAEMON_FAST_CLEAR_EXTRA:-})
# TOML a scenario appends to the config ([probes], [[peers]], ...).
DAEMON_EXTRA_CONFIG=${DAEMON_EXTRA_CONFIG:-}

daemon_present() { [[ -n ${ROCEWATCHD:-} && -x $ROCEWATCHD ]]; }

# build_tool NAME: the path of tools/NAME, next to the running scenario (bench and hand runs
# copy it there), else in the build tree the daemon came from, else in the repository's
# build/; empty when there is none.
build_tool() {
    local c
    for c in "$(dirname "$0")/$1" \
        "${ROCEWATCHD:+$(dirname "$ROCEWATCHD")/../tools/$1}" \
        "$RW_REPO/build/tools/$1"; do
        [[ -n $c && -x $c ]] && echo "$c" && return
    done
}

# The config every guest runs with: a healthy node as the test bed builds it (MTU 9000,
# 100 Gb/s rails as the NICs declare), collection every second, fast clears.
daemon_config() {
    local rails="" r
    for r in $DAEMON_RAILS; do rails+="${rails:+, }\"$r\""; done
    cat <<EOF
# written by tests/vm/scenarios/lib.sh for scenario $RW_SCENARIO, node $NODE
[daemon]
interval = "1s"
log_level = "info"

[expect]
mtu = 9000
port_rate_gbps = 100
rails = [$rails]
EOF
    for r in "${DAEMON_FAST_CLEAR[@]}"; do
        printf '\n[rules.%s]\nclear_after = "2s"\n' "$r"
    done
    [[ -z $DAEMON_EXTRA_CONFIG ]] || printf '\n%s\n' "$DAEMON_EXTRA_CONFIG"
}

# start_lldpd: lldpd on the rails at its default socket (the daemon's default lldpd_socket),
# announcing this guest as node$NODE; resumed here rather than by the lldpcli it runs itself
# (that child can lose the race and leave lldpd paused). Returns 1 when lldpd is missing (a
# failure with CI=true, else a skip) or its socket never appears.
LLDPD_SOCKET=/run/lldpd.socket
start_lldpd() {
    if [[ ! -x /usr/sbin/lldpd ]]; then
        if [[ ${RW_CI:-} == true ]]; then
            fail "lldpd is not installed (scripts/deps.sh test installs it; CI=true: the LLDP checks must run)"
        else
            skip "lldpd is not installed: LLDP checks skipped (apt install lldpd)"
        fi
        return 1
    fi
    /usr/sbin/lldpd -d -u "$LLDPD_SOCKET" -I "$(IFS=,; echo "${RAILS[*]}")" >>"$OUT/lldpd.log" 2>&1 &
    LLDPD_PID=$!
    local t=0
    until [[ -S $LLDPD_SOCKET ]]; do
        if ((t++ > 100)); then
            fail "lldpd made no socket at $LLDPD_SOCKET in 10 s: $(tail -3 "$OUT/lldpd.log" | tr '\n' ' ')"
            return 1
        fi
        snooze 0.1
    done
    lldpcli -u "$LLDPD_SOCKET" resume >/dev/null
    lldpcli -u "$LLDPD_SOCKET" configure system hostname "node$NODE" >/dev/null
    pass "lldpd runs on ${RAILS[*]} as node$NODE"
}

# lldp_neighbour RAIL: "system-name port-id port-description" of what lldpd hears on RAIL.
lldp_neighbour() {
    lldpcli -u "$LLDPD_SOCKET" -f json0 show neighbors 2>/dev/null | jq -r --arg r "$1" \
        'first(.lldp[0].interface[]? | select(.name == $r)) |
         "\(.chassis[0].name[0].value) \(.port[0].id[0].value) \(.port[0].descr[0].value)"'
}

# start_daemon: checks the config with --check-config (a rejected config is a failure,
# never a fallback to defaults), starts rocewatchd in the background and waits for
# /readyz. Returns 1 when it cannot: the binary missing (a failure with CI=true, else a
# skip that says why) or the daemon not starting.
start_daemon() {
    if ! daemon_present; then
        if [[ ${RW_CI:-} == true ]]; then
            fail "rocewatchd not found or not executable at '${ROCEWATCHD:-}' (CI=true: the daemon assertions must run)"
        else
            skip "rocewatchd not found or not executable at '${ROCEWATCHD:-}': daemon assertions skipped (build it, or set ROCEWATCHD)"
        fi
        return 1
    fi
    mkdir -p "$DAEMON_DIR/state"
    local cfg=$DAEMON_DIR/rocewatch.toml
    daemon_config >"$cfg"
    cp "$cfg" "$RES/rocewatch.toml"
    local out
    if out=$("$ROCEWATCHD" --check-config --config "$cfg" 2>&1); then
        pass "rocewatchd --check-config accepts the test bed's config ($out)"
    else
        fail "rocewatchd --check-config rejects the test bed's config: $out"
        return 1
    fi
    "$ROCEWATCHD" --config "$cfg" --state-dir "$DAEMON_DIR/state" --listen "$DAEMON_LISTEN" \
        >>"$OUT/rocewatchd.log" 2>&1 &
    DAEMON_PID=$!
    local t=0 t0=${EPOCHREALTIME/./}
    until curl -sf --max-time 2 "$DAEMON_URL/readyz" >/dev/null; do
        if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
            wait "$DAEMON_PID"
            fail "rocewatchd exited ($?) during start-up: $(tail -3 "$OUT/rocewatchd.log" | tr '\n' ' ')"
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
    pass "rocewatchd ready after $(fmt_us $((${EPOCHREALTIME/./} - t0)))s (pid $DAEMON_PID)"
    # Two more collections: every rule has judged a settled snapshot (rates need two).
    wait_generation 2 10
}

# wait_generation N TIMEOUT_S: waits until the daemon has made N more snapshots.
wait_generation() {
    local g0 g t=0
    g0=$(query_daemon /api/v1/status | jq -r .generation) || return 1
    while :; do
        g=$(query_daemon /api/v1/status | jq -r .generation)
        ((g >= g0 + $1)) && return 0
        ((t++ < $2 * 5)) || { fail "rocewatchd made no new snapshot within $2s (generation $g)"; return 1; }
        snooze 0.2
    done
}

# stop_daemon: SIGTERM must end it cleanly (exit 0) within 10 s.
stop_daemon() {
    [[ -n $DAEMON_PID ]] || return 0
    if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
        wait "$DAEMON_PID"
        fail "rocewatchd died during the scenario (exit status $?): $(tail -3 "$OUT/rocewatchd.log" | tr '\n' ' ')"
        DAEMON_PID=
        return 1
    fi
    kill -TERM "$DAEMON_PID" 2>/dev/null
    local t=0 rc
    while kill -0 "$DAEMON_PID" 2>/dev/null && ((t < 100)); do snooze 0.1; t=$((t + 1)); done
    if kill -0 "$DAEMON_PID" 2>/dev/null; then
        fail "rocewatchd ignored SIGTERM for 10s"
        kill -KILL "$DAEMON_PID"
    fi
    wait "$DAEMON_PID"
    rc=$?
    check_eq "rocewatchd exit status after SIGTERM" 0 "$rc"
    DAEMON_PID=
}

daemon_running() { [[ -n $DAEMON_PID ]]; }

# query_daemon PATH: the body of GET PATH (non-zero status on HTTP errors).
query_daemon() { curl -sf --max-time 5 "$DAEMON_URL$1"; }

# Every REST answer and /metrics into results, for the record.
save_daemon_state() {
    local tag=$1 p
    daemon_running || return 0
    for p in status devices interfaces bonds alerts alerts/history config; do
        query_daemon "/api/v1/$p" >"$RES/daemon-$tag-${p//\//-}.json" 2>/dev/null
    done
    query_daemon /metrics >"$RES/daemon-$tag-metrics.txt" 2>/dev/null
}

# ---- peer probes (two guests' daemons probing each other)

# The token both guests' daemons hold.
TOKEN=5f0c9a3e1b7d4c2a8e6f0b1d3c5a7e9f2b4d6f8a0c1e3a5b7d9f1b3d5f7a9c0e

# peer_config: TOML naming the other guest as this daemon's peer, with both rails.
peer_config() {
    cat <<EOF
[[peers]]
name = "node$PEER"
address = "$(rail_ip railA "$PEER"):9879"

[[peers.rails]]
name = "railA"
local_address = "$(rail_ip railA)"
remote_address = "$(rail_ip railA "$PEER")"

[[peers.rails]]
name = "railB"
local_address = "$(rail_ip railB)"
remote_address = "$(rail_ip railB "$PEER")"
EOF
}

# run_probe TAG JSON: POST /api/v1/probes/run with the token; the result in PROBE, the
# time the call took in PROBE_MS.
run_probe() {
    local tag=$1 body=$2 t0
    t0=${EPOCHREALTIME/./}
    PROBE=$(curl -sS --max-time 60 -X POST -H "Authorization: Bearer $TOKEN" -d "$body" \
        "$DAEMON_URL/api/v1/probes/run" 2>"$RES/$tag.err")
    PROBE_MS=$(((${EPOCHREALTIME/./} - t0) / 1000))
    echo "$PROBE" >"$RES/$tag.json"
    [[ -n $PROBE ]] || PROBE='{}'
    log "$tag: ${PROBE_MS} ms: $PROBE"
}
# jf FILTER: a field of the last probe result.
jf() { jq -r "$1" <<<"$PROBE"; }

# probe_latest PEER RAIL KIND: the latest result's JSON from /api/v1/probes ("null" if none).
probe_latest() {
    query_daemon /api/v1/probes | jq -c --arg p "$1" --arg r "$2" --arg k "$3" \
        'first(.probes[] | select(.peer == $p and .rail == $r and .kind == $k) | .latest) // null'
}

# ---- alerts

# active_alerts: "rule object state severity" per line, from GET /api/v1/alerts.
active_alerts() {
    query_daemon /api/v1/alerts | jq -r '.alerts[] | "\(.rule) \(.object) \(.state) \(.severity)"'
}

# alert_json RULE OBJECT: the active alert, compact JSON ("null" when there is none).
alert_json() {
    query_daemon /api/v1/alerts | jq -c --arg r "$1" --arg o "$2" \
        'first(.alerts[] | select(.rule == $r and .object == $o)) // null'
}

# alert_active RULE OBJECT [STATE]: OBJECT is the alert's exact object name.
alert_active() {
    active_alerts | awk -v r="$1" -v o="$2" -v s="${3:-}" \
        '$1 == r && $2 == o && (s == "" || $3 == s) { f = 1 } END { exit !f }'
}

# rfc3339_us TIME: an RFC 3339 time as epoch microseconds.
rfc3339_us() { date -u -d "$1" +%s%6N; }

# wait_alert RULE OBJECT TIMEOUT_S: prints how long the poll took to see it firing.
wait_alert() {
    local start=${EPOCHREALTIME/./} limit=$(($3 * 1000000))
    while ! alert_active "$1" "$2" firing; do
        if ((${EPOCHREALTIME/./} - start > limit)); then
            echo timeout
            return 1
        fi
        snooze 0.1
    done
    fmt_us $((${EPOCHREALTIME/./} - start))
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

# expect_alert RULE OBJECT TIMEOUT_S [SEVERITY]: the alert is firing within TIMEOUT_S
# of now (an alert already firing counts), with SEVERITY when given. Leaves the alert's
# JSON in ALERT.
expect_alert() {
    local took
    ALERT=null
    if took=$(wait_alert "$1" "$2" "$3"); then
        ALERT=$(alert_json "$1" "$2")
        pass "rocewatchd: alert $1 on $2 firing (seen after ${took}s): $(jq -r .summary <<<"$ALERT")"
        [[ -n ${4:-} ]] && check_eq "rocewatchd: $1 on $2 severity" "$4" "$(jq -r .severity <<<"$ALERT")"
        return 0
    fi
    fail "rocewatchd: alert $1 on $2 not firing within $3s; active: $(active_alerts | tr '\n' ';')"
    return 1
}

# expect_alert_within RULE OBJECT LIMIT_MS EVENT_US: the daemon's own start time of the
# alert (first_seen) lies within LIMIT_MS of EVENT_US (this guest's clock, microseconds).
# Polling through curl+jq costs ~0.3 s a round under TCG; the daemon's timestamp is the
# measure of how fast it noticed. The alert must be firing (expect_alert first).
expect_alert_within() {
    local rule=$1 obj=$2 limit=$3 event=$4 a fs d
    a=$(alert_json "$rule" "$obj")
    fs=$(jq -r '.first_seen_at // empty' <<<"$a")
    if [[ -z $fs ]]; then
        fail "rocewatchd: $rule on $obj has no first_seen: $a"
        return 1
    fi
    d=$((($(rfc3339_us "$fs") - event) / 1000))
    if ((d <= limit && d >= -${CLOCK_ERR_MS:-0} - 1)); then
        pass "rocewatchd: $rule on $obj first seen $d ms after the fault (limit $limit ms; clock error +-${CLOCK_ERR_MS:-0} ms)"
        record "alert $rule $obj: first seen $d ms after the fault (+-${CLOCK_ERR_MS:-0} ms)"
    else
        fail "rocewatchd: $rule on $obj first seen $d ms after the fault (first_seen $fs; limit $limit ms, clock error +-${CLOCK_ERR_MS:-0} ms)"
    fi
}

# expect_cleared RULE OBJECT TIMEOUT_S: the alert leaves /api/v1/alerts, and the history
# records its firing -> resolved transition.
expect_cleared() {
    local took
    if took=$(wait_alert_gone "$1" "$2" "$3"); then
        pass "rocewatchd: alert $1 on $2 cleared after ${took}s"
        local h
        h=$(query_daemon /api/v1/alerts/history | jq -r --arg r "$1" --arg o "$2" \
            '[.history[] | select(.rule == $r and .object == $o) | "\(.from)->\(.to)"] | join(" ")')
        check_match "rocewatchd: history of $1 on $2 ends firing -> resolved" "firing->resolved$" "$h"
    else
        fail "rocewatchd: alert $1 on $2 still active after $3s: $(alert_json "$1" "$2")"
    fi
}

# expect_no_alert RULE OBJECT: that alert is not active.
expect_no_alert() {
    if alert_active "$1" "$2"; then
        fail "rocewatchd: unexpected $1 on $2: $(alert_json "$1" "$2" | jq -r .summary)"
    else
        pass "rocewatchd: no $1 on $2"
    fi
}

# expect_no_alerts: nothing pending or firing.
expect_no_alerts() {
    local a
    a=$(active_alerts)
    if [[ -z $a ]]; then pass "rocewatchd: no active alerts"; else fail "rocewatchd: unexpected alerts: $(echo "$a" | tr '\n' ';')"; fi
}

# expect_alert_set "RULE OBJECT" ...: the active alerts are exactly these.
expect_alert_set() {
    local want got
    want=$(printf '%s\n' "$@" | sort)
    got=$(active_alerts | awk '{ print $1, $2 }' | sort)
    if [[ $got == "$want" ]]; then
        pass "rocewatchd: exactly the expected alerts ($(tr '\n' ';' <<<"$got"))"
    else
        fail "rocewatchd: alerts differ: expected $(tr '\n' ';' <<<"$want") got $(tr '\n' ';' <<<"$got")"
    fi
}

# expect_health healthy|warning|critical: /api/v1/status and /metrics agree.
expect_health() {
    local h m
    h=$(query_daemon /api/v1/status | jq -r .health)
    check_eq "rocewatchd: /api/v1/status health" "$1" "$h"
    m=$(query_daemon /metrics | awk '$1 == "rocewatch_health_status" { print $2 }')
    declare -A code=([healthy]=0 [warning]=1 [critical]=2)
    check_eq "rocewatchd: rocewatch_health_status" "${code[$1]}" "$m"
}

# ---- comparing the daemon with the kernel

# views_agree KERNEL DAEMON: every key=value line of KERNEL is in DAEMON (quietly).
views_agree() {
    local line
    declare -A have=()
    while IFS= read -r line; do [[ -n $line ]] && have[$line]=1; done <<<"$2"
    while IFS= read -r line; do
        [[ -z $line || -n ${have[$line]:-} ]] || return 1
    done <<<"$1"
}

# compare_views WHAT KERNEL DAEMON: both "key=value" lines; every key the kernel side
# names must have the same value on the daemon's side (one check per key).
compare_views() {
    local what=$1 kernel=$2 daemon=$3 line key kv dv
    declare -A dmap=()
    while IFS= read -r line; do
        [[ -n $line ]] && dmap[${line%%=*}]=${line#*=}
    done <<<"$daemon"
    while IFS= read -r line; do
        [[ -n $line ]] || continue
        key=${line%%=*}
        kv=${line#*=}
        dv=${dmap[$key]-<absent>}
        if [[ $dv == "$kv" ]]; then
            pass "rocewatchd = kernel: $what $key ($kv)"
        else
            fail "rocewatchd != kernel: $what $key: kernel '$kv', rocewatchd '$dv'"
        fi
    done <<<"$kernel"
}

# Kernel view of DEV's port 1 as key=value: sysfs, rdma link and ibv_devinfo.
kernel_port_view() {
    local dev=$1 d info link n
    d=$(port_dir "$dev")
    info=$(ibv_devinfo -v -d "$dev")
    link=$(rdma -j link show "$dev/1")
    local st ph
    st=$(cat "$d/state")
    ph=$(cat "$d/phys_state")
    echo "state=${st%%:*}"
    echo "state_name=${st#*: }"
    echo "phys_state=${ph%%:*}"
    echo "phys_state_name=${ph#*: }"
    echo "rdma_link_state=$(jq -r '.[0].state' <<<"$link")"
    echo "rdma_link_physical_state=$(jq -r '.[0].physical_state' <<<"$link")"
    echo "netdev=$(jq -r '.[0].netdev' <<<"$link")"
    echo "link_layer=$(cat "$d/link_layer")"
    echo "rate_text=$(cat "$d/rate")"
    echo "rate_gbps=$(awk '{ print $1 }' "$d/rate")"
    echo "active_mtu=$(awk '$1 == "active_mtu:" { print $2; exit }' <<<"$info")"
    echo "max_mtu=$(awk '$1 == "max_mtu:" { print $2; exit }' <<<"$info")"
    echo "active_width=$(sed -n 's/.*active_width:.*(\([0-9]*\)).*/\1/p' <<<"$info" | head -1)"
    echo "active_speed=$(sed -n 's/.*active_speed:.*(\([0-9]*\)).*/\1/p' <<<"$info" | head -1)"
    echo "gids=$(gid_table "$dev" | tr '\n' ';')"
    # lifespan is the counters' cache time in ms, not a counter
    echo "hw_counters=$(grep -H . "$d"/hw_counters/* | sed 's|.*/||' | grep -v '^lifespan:' | sort | tr '\n' ';')"
    echo "has_counters_dir=$([[ -d $d/counters ]] && echo yes || echo no)"
    echo "node_guid=$(cat "/sys/class/infiniband/$dev/node_guid")"
    echo "node_type=$(cat "/sys/class/infiniband/$dev/node_type")"
    # rxe has no device/driver link: a parent file and no device/ say "rxe"
    [[ -r /sys/class/infiniband/$dev/parent && ! -e /sys/class/infiniband/$dev/device ]] && echo "driver=rxe"
}

# The daemon's view of DEV's port 1, keyed like kernel_port_view.
daemon_port_view() {
    query_daemon "/api/v1/devices/$1" | jq -r '
        .ports[0] as $p
        | "state=\($p.state)", "state_name=\($p.state_name)",
          "phys_state=\($p.phys_state)", "phys_state_name=\($p.phys_state_name)",
          "rdma_link_state=\($p.state_name)",
          "rdma_link_physical_state=\($p.phys_state_name | if . == "LinkUp" then "LINK_UP" else ascii_upcase end)",
          "netdev=\($p.netdev)", "link_layer=\($p.link_layer)",
          "rate_text=\($p.rate_text)", "rate_gbps=\(if $p.rate_bytes_per_second == null then null else $p.rate_bytes_per_second * 8 / 1e9 end)",
          "active_mtu=\($p.active_mtu)", "max_mtu=\($p.max_mtu)",
          "active_width=\($p.active_width)", "active_speed=\($p.active_speed)",
          "gids=\([$p.gids[] | "\(.index) \(.gid) \(.type | gsub(" "; "_")) \(.netdev)\n"] | join("") | gsub("\n"; ";"))",
          "hw_counters=\($p.hw_counters | to_entries | map("\(.key):\(.value);") | join(""))",
          "has_counters_dir=\(if ($p.counters | length) > 0 then "yes" else "no" end)",
          "node_guid=\(.node_guid)", "node_type=\(.node_type)", "driver=\(.driver)",
          "roce_v2_gid=\($p.roce_v2_gid.index) \($p.roce_v2_gid.address)",
          "up=\($p.up)"'
}

# wait_counter_read SECONDS: until the daemon has read the ports' counter files again. It reads
# them within a share of a core (daemon/core/engine.cpp, kCounterShare), not every cycle: under
# TCG a read of two rxe ports costs enough CPU to space reads seconds apart.
wait_counter_read() {
    local r0 r t=0
    r0=$(query_daemon /api/v1/status | jq -r .counters_read_at) || return 1
    while :; do
        r=$(query_daemon /api/v1/status | jq -r .counters_read_at)
        [[ $r != "$r0" ]] && return 0
        ((t++ < $1 * 5)) || { fail "rocewatchd read no counters within $1 s (last read $r)"; return 1; }
        snooze 0.2
    done
}

# expect_view_matches KIND ARG WHAT TAG: kernel_KIND_view ARG and daemon_KIND_view ARG agree,
# key by key (when they differ, judged again: the kernel read first, then the daemon's view
# from a snapshot made after that reading, with the port counters read after it too, since the
# daemon's may be older). Both views are kept as $RES/kernel-TAG.txt and $RES/daemon-TAG.txt.
expect_view_matches() {
    local kind=$1 arg=$2 what=$3 tag=$4 k dv
    k=$("kernel_${kind}_view" "$arg")
    dv=$("daemon_${kind}_view" "$arg")
    if ! views_agree "$k" "$dv"; then
        log "rocewatchd and the kernel differ on $what; judged again after a newer snapshot"
        k=$("kernel_${kind}_view" "$arg")
        wait_generation 2 10
        [[ $kind == port ]] && wait_counter_read 60
        dv=$("daemon_${kind}_view" "$arg")
    fi
    echo "$k" >"$RES/kernel-$tag.txt"
    echo "$dv" >"$RES/daemon-$tag.txt"
    compare_views "$what" "$k" "$dv"
}

# expect_port_matches_kernel DEV [STATE_NAME]: the daemon's port equals the kernel's.
expect_port_matches_kernel() {
    local dev=$1
    expect_view_matches port "$dev" "$dev/1" "port-$dev"
    [[ -n ${2:-} ]] && check_eq "rocewatchd: $dev/1 state_name" "$2" "$(grep -m1 ^state_name= "$RES/daemon-port-$dev.txt" | cut -d= -f2)"
}

# expect_roce_gid DEV INDEX ADDRESS: the daemon's chosen RoCE v2 GID, and the kernel's
# entry at that index holds ADDRESS as a RoCE v2 GID.
expect_roce_gid() {
    local dev=$1 idx=$2 addr=$3 d
    d=$(port_dir "$dev")
    check_eq "rocewatchd: $dev/1 roce_v2_gid" "$idx $addr" \
        "$(query_daemon "/api/v1/devices/$dev" | jq -r '.ports[0].roce_v2_gid | "\(.index) \(.address)"')"
    check_eq "kernel: $dev GID $idx is $addr" "$(ipv4_gid "$addr") RoCE v2" "$(cat "$d/gids/$idx") $(cat "$d/gid_attrs/types/$idx")"
}

# Kernel view of netdev NAME as key=value (ip -j and sysfs).
kernel_link_view() {
    local n=$1 j
    j=$(ip -j -d addr show dev "$n")
    echo "mtu=$(cat "/sys/class/net/$n/mtu")"
    echo "ip_mtu=$(jq -r '.[0].mtu' <<<"$j")"
    echo "operstate=$(cat "/sys/class/net/$n/operstate")"
    echo "carrier=$([[ $(cat "/sys/class/net/$n/carrier" 2>/dev/null) == 1 ]] && echo true || echo false)"
    echo "admin_up=$(jq -r '.[0].flags | index("UP") != null' <<<"$j")"
    echo "mac=$(cat "/sys/class/net/$n/address")"
    echo "master=$(jq -r '.[0].master // "null"' <<<"$j")"
    echo "kind=$(jq -r '.[0].linkinfo.info_kind // "null"' <<<"$j")"
    echo "carrier_changes=$(cat "/sys/class/net/$n/carrier_changes")"
    echo "addresses=$(jq -r '[.[0].addr_info[] | "\(.family) \(.local)/\(.prefixlen) \(.scope)"] | sort | join(";")' <<<"$j")"
}

daemon_link_view() {
    query_daemon /api/v1/interfaces | jq -r --arg n "$1" '
        first(.interfaces[] | select(.name == $n)) as $l
        | "mtu=\($l.mtu)", "ip_mtu=\($l.mtu)", "operstate=\($l.operstate)", "carrier=\($l.carrier)",
          "admin_up=\($l.admin_up)", "mac=\($l.mac)", "master=\($l.master)", "kind=\($l.kind)",
          "carrier_changes=\($l.carrier_changes)",
          "addresses=\([$l.addresses[] | "\(.family) \(.address)/\(.prefixlen) \(.scope)"] | sort | join(";"))",
          "rdma=\([$l.rdma[] | "\(.device)/\(.port) \(.state_name) \(.roce_v2_gid_index)"] | join(";"))"'
}

# expect_link_matches_kernel NAME: the daemon's interface equals ip -j and sysfs.
expect_link_matches_kernel() {
    expect_view_matches link "$1" "interface $1" "link-$1"
}

# expect_interface NAME FIELD VALUE: one field of NAME in /api/v1/interfaces (arrays and
# objects as compact JSON); FIELD may be a jq expression on the interface (".rdma | length").
expect_interface() {
    local v f=$2
    [[ $f == .* ]] || f=".$f"
    v=$(query_daemon /api/v1/interfaces | jq -r --arg n "$1" \
        "first(.interfaces[] | select(.name == \$n)) | $f | if type == \"array\" or type == \"object\" then tojson else . end")
    check_eq "rocewatchd: interface $1 $2" "$3" "$v"
}

# expect_metric LINE...: each exact line ("name{labels} value") is in /metrics.
expect_metric() {
    local m l
    m=$'\n'$(query_daemon /metrics)$'\n'
    for l in "$@"; do
        # a whole line, matched without a fork (each costs ~50 ms under TCG)
        if [[ $m == *$'\n'"$l"$'\n'* ]]; then
            pass "rocewatchd /metrics: $l"
        else
            fail "rocewatchd /metrics lacks '$l'; it has: $(grep -F -- "${l%% *}" <<<"$m" | head -3 | tr '\n' ';')"
        fi
    done
}

# expect_no_metric PREFIX: no series starts with PREFIX.
expect_no_metric() {
    if query_daemon /metrics | grep -qF -- "$1"; then
        fail "rocewatchd /metrics has unexpected '$1'"
    else
        pass "rocewatchd /metrics has no '$1'"
    fi
}

# ---- clocks
#
# The guests' clocks start from the RTC (one-second resolution) and drift under TCG, so
# a time taken on the host (the moment QEMU was told to pull a cable) is brought into
# this guest's clock through an offset measured against the host just before.

# measure_host_clock: HOST_OFFSET_US = host clock - this guest's clock, best of 3 round
# trips through the host; CLOCK_ERR_MS is half the best round trip (the bound on its error).
measure_host_clock() {
    local i t0 t1 h best=
    for i in 1 2 3; do
        t0=${EPOCHREALTIME/./}
        HOST_REPLY_FILE=$RES/.clock host_request clock || return 1
        t1=${EPOCHREALTIME/./}
        read -r _ h <"$RES/.clock"
        if [[ -z $best ]] || ((t1 - t0 < best)); then
            best=$((t1 - t0))
            HOST_OFFSET_US=$((h - (t0 + t1) / 2))
        fi
    done
    rm -f "$RES/.clock"
    CLOCK_ERR_MS=$(((best / 2 + 999) / 1000))
    log "host clock - guest clock: $((HOST_OFFSET_US / 1000)) ms (+-$CLOCK_ERR_MS ms)"
}

# host_to_guest_us HOST_US: a host time in this guest's clock.
host_to_guest_us() { echo $(($1 - HOST_OFFSET_US)); }

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

# ---- systemd as PID 1 (the systemd-unit and package scenarios)

# boot_systemd: starts the distribution's systemd as PID 1 of new PID and mount namespaces,
# booted to an empty target, and waits until it runs; then sd CMD... runs a command in its
# namespaces. Returns 1 (after a fail) when systemd does not come up.
#
# The scenario runs chrooted, and the kernel lets no chrooted process make a user namespace
# (PrivateUsers=yes needs one). So systemd starts as a booted system's does: from the
# guest's initramfs root (PID 1's, reached through /proc/1/root), in new mount and PID
# namespaces, with the root tree moved onto / as switch_root does, then a fresh /proc.
# Told it runs in a container, systemd leaves mount propagation as it finds it, but its
# credentials reach the unit through a mount that must propagate: shared, as a booted
# systemd makes it.
SD_PID=
boot_systemd() {
    printf '[Unit]\nDescription=rocewatch test bed\n' >/etc/systemd/system/rocewatch-vm.target
    mountpoint -q /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup
    chroot /proc/1/root /bin/busybox unshare -m -p -f --propagation private /bin/busybox sh -c '
        cd /newroot && /bin/busybox mount --move . / && exec /bin/busybox chroot . /usr/bin/env -i \
            container=rocewatch-vm PATH=/usr/sbin:/usr/bin:/sbin:/bin /bin/sh -c "
                mount -t proc proc /proc && mount --make-rshared / && exec /lib/systemd/systemd --system --unit=rocewatch-vm.target \
                    --log-target=journal-or-kmsg --log-level=info"' \
        >"$OUT/systemd.log" 2>&1 </dev/null &
    local unshare_pid=$! t state
    for ((t = 0; t < 100; t++)); do
        SD_PID=$(cat "/proc/$unshare_pid/task/$unshare_pid/children" 2>/dev/null | awk '{ print $1 }')
        [[ -n $SD_PID ]] && break
        snooze 0.1
    done
    [[ -n $SD_PID ]] || { fail "systemd did not start: $(tail -5 "$OUT/systemd.log")"; return 1; }
    # Up once its private bus socket is there; then wait for its start-up jobs.
    for ((t = 0; t < 600; t++)); do
        sd test -S /run/systemd/private && break
        kill -0 "$SD_PID" 2>/dev/null || break
        snooze 0.1
    done
    state=$(sd timeout 120 systemctl is-system-running --wait 2>&1)
    if [[ $state == running || $state == degraded ]]; then
        pass "systemd $(sd systemctl --version | head -1 | awk '{ print $2 }') up: $state"
    else
        fail "systemd not up: '$state' (pid $SD_PID $(kill -0 "$SD_PID" 2>/dev/null && echo alive || echo gone)): $(tail -5 "$OUT/systemd.log" | tr '\n' ' ')"
        return 1
    fi
    [[ $state == degraded ]] && log "failed units (not ours): $(sd systemctl --failed --no-legend --plain | awk '{ print $1 }' | tr '\n' ' ')"
    return 0
}
# Commands in systemd's namespaces (its PIDs, its /proc), from its root.
sd() { nsenter -t "$SD_PID" -p -m -r -w "$@"; }

# unit_prop PROP: one property of rocewatchd.service.
unit_prop() { sd systemctl show -P "$1" rocewatchd.service; }
# start_unit VERB: systemctl VERB rocewatchd; passes when it ends active (Type=notify: READY=1).
start_unit() {
    local t0=${EPOCHREALTIME/./} out
    if out=$(sd timeout 120 systemctl "$1" rocewatchd.service 2>&1); then
        pass "systemctl $1 rocewatchd: active after $(fmt_us $((${EPOCHREALTIME/./} - t0))) s ($(unit_prop ActiveState)/$(unit_prop SubState))"
        return 0
    fi
    unit_diagnostics
    fail "systemctl $1 rocewatchd: $out; $(grep -E 'rocewatchd|Process|status=' "$RES/unit-status.txt" | tail -8 | tr '\n' ' ')"
    return 1
}
# unit_diagnostics: the unit's status, every unit and the journal into results.
unit_diagnostics() {
    sd systemctl status rocewatchd.service --no-pager -l -n 30 >"$RES/unit-status.txt" 2>&1
    sd systemctl list-units --all --no-pager >"$RES/units.txt" 2>&1
    sd journalctl --no-pager >"$RES/journal.txt" 2>&1
}
# wait_unit_ready: the unit's daemon answers /readyz (within 30 s).
wait_unit_ready() {
    local t=0
    until query_daemon /readyz >/dev/null; do
        ((t++ < 300)) || { fail "the unit's daemon not ready within 30 s"; return 1; }
        snooze 0.1
    done
}
# journal_warnings PATTERN: waits up to 10 s for `journalctl -p warning -u rocewatchd` to show it.
journal_warnings() {
    local t=0
    until sd journalctl -p warning -u rocewatchd --no-pager -o cat 2>/dev/null | grep -q -- "$1"; do
        ((t++ < 100)) || return 1
        snooze 0.1
    done
}

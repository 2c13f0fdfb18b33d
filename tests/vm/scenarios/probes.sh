#!/bin/bash
# RDMA probes between the two guests, for real, over Soft-RoCE: rocewatch's own verbs
# probes (rdma_probe_cli: the probes/rdma.* code the daemon runs) write bandwidth and
# write latency on each rail, and bandwidth on both rails at once; the bytes each rail
# moved by the netdev's tx_bytes (rxe has no port_xmit_data) must match what the probe
# says it wrote, headers included; a cable pull on rail A in the middle of a bandwidth
# probe must fail it with a reason well within its deadline; and ib_write_bw /
# ib_write_lat run on the same devices beside ours for the side-by-side figures (more
# rounds with BENCH_ROUNDS from bench.env next to this script: bench/rdma_probe_vs_perftest.sh).
# Node 1 serves (rdma_probe_cli server, perftest server), node 2 runs the probes.
# vm-nodes: 2
# vm-timeout: 600
. "$(dirname "$0")/lib.sh"

BENCH_ROUNDS=1
# shellcheck disable=SC1091
[[ -r $(dirname "$0")/bench.env ]] && . "$(dirname "$0")/bench.env"
BW_ITERS=${BW_ITERS:-200}     # 64 KiB writes per QP: 13 MB, about a second under TCG
LAT_ITERS=${LAT_ITERS:-200}
# shellcheck disable=SC2034  # read by lib.sh perftest_run
PERF_ITERS_BW=$BW_ITERS
# shellcheck disable=SC2034
PERF_ITERS_LAT=$LAT_ITERS
CLI_PORT=7471
MSG=65536
# RoCE v2 bytes on the wire per packet beyond the payload, as the netdev's tx_bytes counts
# them (no preamble, no FCS): Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 = 58; the
# first packet of each RDMA write adds a RETH (16). A 64 KiB write at path MTU 4096 is 16
# packets: 65536 + 16 x 58 + 16 = 66480 bytes, 1.44% over the payload. So a rail's tx bytes
# must be at least that per write (0.5% less for rounding), and at most what the packets
# rxe says it sent (hw_counters/sent_pkts, retransmissions included: go-back-N resends
# whenever QEMU's UDP sockets drop a frame under TCG) can hold: MTU 4096 + 58 + 16 (RETH)
# + 4 (immediate) each, plus 64 KiB for the TCP of the endpoint exchange. Where only the
# bytes are known (the probe's own data-phase count), at most 1.5 x: anything above that
# is traffic the probe did not send, or a rail counted twice.
PKT_WIRE=$((MSG / 4096))
WIRE_PER_MSG=$((MSG + PKT_WIRE * 58 + 16))
MAX_PER_PKT=$((4096 + 58 + 16 + 4))
# The probe client/server (lib.sh build_tool: bench and hand runs copy it next to this script).
CLI=$(build_tool rdma_probe_cli)

section "rxe devices"
for rail in "${RAILS[@]}"; do
    add_rxe "${RAIL_RXE[$rail]}" "$rail"
    check_eq "${RAIL_RXE[$rail]}: GID 1 type" "RoCE v2" "$(cat "$(port_dir "${RAIL_RXE[$rail]}")/gid_attrs/types/1")"
done
if [[ -z $CLI ]]; then
    if [[ ${RW_CI:-} == true ]]; then fail "rdma_probe_cli not found (build tools/rdma_probe_cli)"; else skip "rdma_probe_cli not found: our probes are not run"; fi
fi
sync_point rxe-up

tx_bytes() { cat "/sys/class/net/$1/statistics/tx_bytes"; }

# within_wire DESC COUNTED PAYLOAD_BYTES [SENT_PKTS]: COUNTED tx bytes fit PAYLOAD bytes of
# 64 KiB writes (bounds above); SENT_PKTS, the rail's rxe sent_pkts delta in the same window.
within_wire() {
    local desc=$1 counted=$2 payload=$3 pkts=${4:-} expect low high ratio note='' data_pkts
    expect=$((payload * WIRE_PER_MSG / MSG))
    data_pkts=$((payload * PKT_WIRE / MSG))
    low=$((expect - expect / 200))
    if [[ -n $pkts ]]; then
        high=$((pkts * MAX_PER_PKT + 65536))
        note=", $pkts packets sent for $data_pkts data packets ($((pkts - data_pkts)) resent or control)"
    else
        high=$((expect * 3 / 2))
    fi
    ratio=$(awk -v c="$counted" -v e="$expect" 'BEGIN { printf "%.4f", e ? c / e : 0 }')
    if ((counted >= low && counted <= high)); then
        pass "$desc: $counted bytes counted, $expect expected on the wire (ratio $ratio, bounds $low..$high)"
    else
        fail "$desc: $counted bytes counted, $expect expected on the wire (ratio $ratio, not in $low..$high)"
    fi
    record "$desc: counted $counted, payload $payload, expected on the wire $expect, ratio $ratio$note"
}

# probe TAG ARGS...: runs our client against node 1's server; the JSON result in PROBE
# (also $RES/TAG.json), the wall time in PROBE_MS.
probe() {
    local tag=$1 t0
    shift
    t0=${EPOCHREALTIME/./}
    PROBE=$(timeout -k 5 120 "$CLI" client --port "$CLI_PORT" --retry-cnt 6 "$@" 2>"$RES/$tag.err")
    PROBE_RC=$?
    PROBE_MS=$(((${EPOCHREALTIME/./} - t0) / 1000))
    echo "$PROBE" >"$RES/$tag.json"
    [[ -n $PROBE ]] || PROBE='{}'
    log "$tag: rc $PROBE_RC in ${PROBE_MS} ms: $PROBE"
}
jf() { jq -r "$1" <<<"$PROBE"; }

if ((NODE == 1)); then
    if [[ -n $CLI ]]; then
        "$CLI" server --port "$CLI_PORT" --retry-cnt 6 >"$RES/cli-server.jsonl" 2>"$RES/cli-server.err" &
        SERVER_PID=$!
        t=0
        while ! ss -Hltn "sport = :$CLI_PORT" | grep -q . && ((t < 100)); do snooze 0.1; t=$((t + 1)); done
    fi
    mark cli-listening
else
    wait_mark cli-listening 60
fi

declare -A OURS_BW OURS_LAT

# ------------------------------------------------------------------ per rail
if [[ -n $CLI && $NODE == 2 ]]; then
    for rail in "${RAILS[@]}"; do
        dev=${RAIL_RXE[$rail]}
        other=railB
        [[ $rail == railB ]] && other=railA
        section "our write bandwidth on $rail ($dev)"
        a0=$(tx_bytes "$rail")
        o0=$(tx_bytes "$other")
        p0=$(hw_counter "$dev" sent_pkts)
        probe "bw-$rail" --server "$(rail_ip "$rail" 1)" --mode bw --dev "$dev:1" --iters "$BW_ITERS" --timeout 60
        a1=$(tx_bytes "$rail")
        o1=$(tx_bytes "$other")
        p1=$(hw_counter "$dev" sent_pkts)
        check_eq "bw $rail: success" true "$(jf .success)"
        bytes=$(jf .bytes)
        check_eq "bw $rail: payload = iterations x 64 KiB" $((BW_ITERS * MSG)) "$bytes"
        gbps=$(jf '(.bandwidth_bytes_per_second // 0) * 8 / 1e9')
        if fgt "$gbps" 0 && flt "$gbps" 100; then pass "bw $rail: $gbps Gb/s (non-zero, below the 100G port rate)"; else fail "bw $rail: $gbps Gb/s"; fi
        check_eq "bw $rail: path MTU" 4096 "$(jf .info.path_mtu)"
        check_eq "bw $rail: GID index" 1 "$(jf .info.gid_index)"
        OURS_BW[$rail]=$gbps
        record "rocewatch rdma_write_bw $rail $dev: ${MSG}B x $BW_ITERS, $gbps Gb/s, probe ${PROBE_MS} ms"
        within_wire "bw $rail: probe's own $rail tx_bytes delta (data phase)" "$(jf ".bytes_per_rail.$dev // 0")" "$bytes"
        within_wire "bw $rail: $rail tx_bytes delta around the whole run" $((a1 - a0)) "$bytes" $((p1 - p0))
        if (((o1 - o0) < 1048576)); then pass "bw $rail: $other idle ($((o1 - o0)) bytes)"; else fail "bw $rail: $other carried $((o1 - o0)) bytes"; fi

        section "our write latency on $rail ($dev)"
        probe "lat-$rail" --server "$(rail_ip "$rail" 1)" --mode lat --dev "$dev:1" --iters "$LAT_ITERS" --timeout 60
        check_eq "lat $rail: success" true "$(jf .success)"
        check_eq "lat $rail: iterations" "$LAT_ITERS" "$(jf .iterations)"
        typ=$(jf '(.latency_seconds.typical // 0) * 1e6')
        p99=$(jf '(.latency_seconds.p99 // 0) * 1e6')
        if fgt "$typ" 0 && flt "$typ" 1000000 && ! flt "$p99" "$typ"; then pass "lat $rail: typical $typ us, p99 $p99 us"; else fail "lat $rail: typical $typ us p99 $p99 us"; fi
        OURS_LAT[$rail]=$typ
        record "rocewatch rdma_write_lat $rail $dev: 2B x $LAT_ITERS, typical $typ us, p99 $p99 us, min $(jf '.latency_seconds.min * 1e6') us"
    done

    section "our write bandwidth on both rails at once (2 QPs per rail)"
    a0=$(tx_bytes railA)
    b0=$(tx_bytes railB)
    pa0=$(hw_counter rxe0 sent_pkts)
    pb0=$(hw_counter rxe1 sent_pkts)
    probe multirail --server "$(rail_ip railA 1)" --mode multirail --dev rxe0:1 --dev rxe1:1 --qps 2 --iters "$BW_ITERS" --timeout 90
    a1=$(tx_bytes railA)
    b1=$(tx_bytes railB)
    pa1=$(hw_counter rxe0 sent_pkts)
    pb1=$(hw_counter rxe1 sent_pkts)
    check_eq "multirail: success" true "$(jf .success)"
    check_eq "multirail: 4 QPs" 4 "$(jf .streams)"
    check_eq "multirail: payload = 2 rails x 2 QPs x iterations x 64 KiB" $((4 * BW_ITERS * MSG)) "$(jf .bytes)"
    per_rail=$((2 * BW_ITERS * MSG))
    check_eq "multirail: payload per rail" "$per_rail $per_rail" "$(jf '.bytes_per_stream | map(tostring) | join(" ")')"
    gbps=$(jf '(.bandwidth_bytes_per_second // 0) * 8 / 1e9')
    if fgt "$gbps" 0; then pass "multirail: $gbps Gb/s"; else fail "multirail: $gbps Gb/s"; fi
    record "rocewatch rdma_multirail_bw rxe0+rxe1, 2 QPs each: $gbps Gb/s (railA $(jf '.info["rail.rxe0.bytes_per_second"] | tonumber * 8 / 1e9'), railB $(jf '.info["rail.rxe1.bytes_per_second"] | tonumber * 8 / 1e9') Gb/s), probe ${PROBE_MS} ms"
    within_wire "multirail: probe's railA bytes (data phase)" "$(jf '.bytes_per_rail.rxe0 // 0')" "$per_rail"
    within_wire "multirail: probe's railB bytes (data phase)" "$(jf '.bytes_per_rail.rxe1 // 0')" "$per_rail"
    # the control exchange crossed rail A only, so rail B's window holds the data alone
    within_wire "multirail: railA tx_bytes delta around the run" $((a1 - a0)) "$per_rail" $((pa1 - pa0))
    within_wire "multirail: railB tx_bytes delta around the run" $((b1 - b0)) "$per_rail" $((pb1 - pb0))

    section "errors our probe must report"
    probe nodev --server "$(rail_ip railA 1)" --mode bw --dev rxe9:1 --iters 10 --timeout 10
    check_eq "bw on a device that does not exist: device_not_found" "false device_not_found" "$(jf '"\(.success) \(.reason)"')"
    probe wronggid --server "$(rail_ip railA 1)" --mode bw --dev rxe0:0 --remote-dev rxe0:1 --iters 10 --timeout 10
    record "bw with link-local GID 0 against the peer's IPv4 GID 1: $(jf '"\(.success) \(.reason): \(.detail)"')"
fi
sync_point per-rail-done 600

# ------------------------------------------------------------------ cable pull mid-probe
section "cable pull on rail A in the middle of a bandwidth probe"
PULL_DEADLINE=30
if [[ -n $CLI && $NODE == 2 ]]; then
    t0=${EPOCHREALTIME/./}
    timeout -k 5 60 "$CLI" client --port "$CLI_PORT" --retry-cnt 6 --server "$(rail_ip railA 1)" --mode bw \
        --dev rxe0:1 --seconds 20 --timeout "$PULL_DEADLINE" >"$RES/pull.json" 2>"$RES/pull.err" &
    pid=$!
    snooze 3
    pull_at=${EPOCHREALTIME/./}
    host_request set_link railA off
    wait "$pid"
    end=${EPOCHREALTIME/./}
    PROBE=$(cat "$RES/pull.json")
    [[ -n $PROBE ]] || PROBE='{}'
    log "pull: $PROBE"
    check_eq "bw through the pull: failed" false "$(jf .success)"
    reason=$(jf .reason)
    if [[ -n $reason && $reason != null ]]; then pass "bw through the pull: reason $reason ($(jf .detail))"; else fail "bw through the pull: no reason"; fi
    dur=$(jf .duration_seconds)
    if flt "$dur" $((PULL_DEADLINE + 1)); then pass "bw through the pull: ended in $dur s (deadline $PULL_DEADLINE s)"; else fail "bw through the pull: took $dur s (deadline $PULL_DEADLINE s)"; fi
    record "cable pull mid-probe: failed with '$reason' $(((end - pull_at) / 1000)) ms after the QMP request (probe $dur s, deadline $PULL_DEADLINE s): $(jf .detail)"
fi
plug_back railA rxe0 pull-done
sync_point pull-done 120
if [[ -n $CLI && $NODE == 2 ]]; then
    # a fresh probe works on the rail again: the failure was the fault, not left-over state
    probe after-pull --server "$(rail_ip railA 1)" --mode bw --dev rxe0:1 --iters 50 --timeout 60
    check_eq "bw on rail A after the link returned: success" true "$(jf .success)"
fi
sync_point after-pull 180

# ------------------------------------------------------------------ side by side with perftest
section "side by side with perftest on railA (rxe0), $BENCH_ROUNDS round(s)"
for ((round = 1; round <= BENCH_ROUNDS; round++)); do
    if [[ -n $CLI && $NODE == 2 ]] && ((round > 1)); then
        probe "bench-bw-$round" --server "$(rail_ip railA 1)" --mode bw --dev rxe0:1 --iters "$BW_ITERS" --timeout 60
        [[ $(jf .success) == true ]] && OURS_BW[railA]="${OURS_BW[railA]} $(jf '.bandwidth_bytes_per_second * 8 / 1e9')"
    fi
    sync_point "bench-ours-bw-$round" 180
    if perftest_run ib_write_bw railA "perf-bw-$round" --report_gbits; then
        line=$(perftest_result_line "$RES/perf-bw-$round.node$NODE.txt")
        read -r _ iters _ avg _ <<<"$line"
        ((NODE == 2)) && PERF_BW="${PERF_BW:-} $avg"
        ((NODE == 2)) && record "ib_write_bw railA rxe0 round $round: ${MSG}B x $iters, $avg Gb/s"
    else
        fail "ib_write_bw round $round printed no result: $(tail -3 "$RES/perf-bw-$round.node$NODE.txt")"
    fi
    if [[ -n $CLI && $NODE == 2 ]] && ((round > 1)); then
        probe "bench-lat-$round" --server "$(rail_ip railA 1)" --mode lat --dev rxe0:1 --iters "$LAT_ITERS" --timeout 60
        [[ $(jf .success) == true ]] && OURS_LAT[railA]="${OURS_LAT[railA]} $(jf '.latency_seconds.typical * 1e6')"
    fi
    sync_point "bench-ours-lat-$round" 180
    if perftest_run ib_write_lat railA "perf-lat-$round"; then
        line=$(perftest_result_line "$RES/perf-lat-$round.node$NODE.txt")
        read -r _ iters _ _ typical _ <<<"$line"
        ((NODE == 2)) && PERF_LAT="${PERF_LAT:-} $typical"
        ((NODE == 2)) && record "ib_write_lat railA rxe0 round $round: 2B x $iters, typical $typical us"
    else
        fail "ib_write_lat round $round printed no result: $(tail -3 "$RES/perf-lat-$round.node$NODE.txt")"
    fi
done
if [[ -n $CLI && $NODE == 2 ]]; then
    # medians over the rounds; ratio ours / perftest (bandwidth: higher is better; latency: lower)
    med() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print 0 }'; }
    ob=$(med <<<"${OURS_BW[railA]}")
    pb=$(med <<<"${PERF_BW:-}")
    ol=$(med <<<"${OURS_LAT[railA]}")
    pl=$(med <<<"${PERF_LAT:-}")
    record "BENCH railA rxe0 ($BENCH_ROUNDS rounds, medians, TCG): write bw ours $ob Gb/s vs ib_write_bw $pb Gb/s, ratio $(awk -v a="$ob" -v b="$pb" 'BEGIN { printf "%.3f", b ? a / b : 0 }'); write lat typical ours $ol us vs ib_write_lat $pl us, ratio $(awk -v a="$ol" -v b="$pl" 'BEGIN { printf "%.3f", b ? a / b : 0 }')"
    mark bench-done
fi
sync_point finished 120
if [[ -n ${SERVER_PID:-} ]]; then
    kill "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
    sessions=$(grep -c . "$RES/cli-server.jsonl")
    record "rdma_probe_cli server: $sessions sessions, $(grep -c '"success":true' "$RES/cli-server.jsonl") succeeded"
fi
finish

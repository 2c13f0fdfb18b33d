#!/bin/bash
# The daemon as it ships: node 1 installs the build with `meson install` and runs it under
# systemd (the distribution's own, as PID 1 of a PID namespace) with the shipped unit and
# every sandboxing setting in it: DynamicUser, no capabilities, the system call filter,
# MemoryDenyWriteExecute, DevicePolicy=closed with only the verbs devices allowed,
# PrivateUsers, ProtectProc=invisible. Node 2 runs a plain daemon. Then:
#   - the unit starts (Type=notify: systemd saw READY=1), its process is a dynamic user
#     with no capabilities, no new privileges and a seccomp filter;
#   - without /etc/credstore/rocewatch-peer-token it runs with peer probing off and says
#     where the token goes; with it (LoadCredential=), probing is on after a restart;
#   - inside the sandbox it still reads the RDMA devices, GID tables and verbs attributes
#     (uverbs opened through DeviceAllow) and the links over netlink;
#   - as the active side it runs RDMA write bandwidth and latency per rail, both rails at
#     once, TCP bandwidth, and UCX put latency and bandwidth (UCX in rocewatch-ucx-session
#     children, under MemoryDenyWriteExecute) against node 2's daemon;
#   - as the passive side it serves node 2's RDMA and UCX sessions;
#   - lldpd runs on both guests: the sandboxed daemon cannot use lldpd's socket and says what
#     to add; with the drop-in the docs give (SupplementaryGroups=_lldpd) it names node 2 and
#     its port on each rail;
#   - `systemctl reload` reloads the config; `journalctl -p warning -u rocewatchd` shows a
#     rejected reload and an alert firing, with RULE=/OBJECT=/DEVICE= fields;
#   - `systemctl stop` ends it with status 0.
# vm-nodes: 2
# vm-timeout: 600
DAEMON_LISTEN=0.0.0.0:9879
. "$(dirname "$0")/lib.sh"

section "rxe devices"
rxe_on_every_rail
sync_point rxe-up

# probe_config TOKEN_LINE: [probes] and the peer. Nothing runs on schedule: each probe
# below is asked for, so none finds the peer busy.
probe_config() {
    cat <<EOF
[probes]
$1
enabled = []
latency_threshold = "10s"

[probes.rdma_lat]
count = 100
timeout = "30s"

[probes.rdma_bw]
duration = "2s"

[probes.tcp_bw]
duration = "2s"

[probes.ucx_lat]
count = 100
timeout = "30s"

$(peer_config)
EOF
}
# As in peer-probes: UCX's ud_verbs wire-up on rxe does not finish under TCG.
export UCX_TLS=rc_verbs,tcp

if ((NODE == 2)); then
    section "node 2: a plain daemon"
    mkdir -p "$DAEMON_DIR"
    (umask 077 && echo "$TOKEN" >"$DAEMON_DIR/token")
    DAEMON_EXTRA_CONFIG=$(probe_config "token_file = \"$DAEMON_DIR/token\"")
    start_lldpd  # so that node 1's lldpd hears node 2 on each rail
    start_daemon || { finish; exit; }
    mark node2-up
    # Node 1 marks unit-probed once its unit has run its probes against us, or
    # node1-gave-up when it cannot go on. The two directions take turns: Soft-RoCE under
    # TCG drops enough when both guests' rails carry bandwidth runs at once to exhaust a
    # QP's retries, which would test the emulator, not the unit.
    for ((t = 0; t < 3600; t++)); do
        [[ -e $SHARE/marks/unit-probed || -e $SHARE/marks/node1-gave-up ]] && break
        snooze 0.1
    done
    if [[ ! -e $SHARE/marks/unit-probed ]]; then
        fail "node 1's unit did not come up (see node 1's log)"
        stop_daemon
        finish
    fi

    section "node 2 -> the unit's daemon (passive sessions in the sandbox)"
    run_probe lat-railA '{"peer": "node1", "rail": "railA", "kind": "rdma_write_lat"}'
    check_eq "rdma_write_lat railA, served by the unit: success" true "$(jf .success)"
    check_eq "rdma_write_lat railA: iterations" 100 "$(jf .iterations)"
    record "node2 -> unit rdma_write_lat railA: typical $(jf '.latency_seconds.typical * 1e6') us"
    run_probe bw-railB '{"peer": "node1", "rail": "railB", "kind": "rdma_write_bw"}'
    check_eq "rdma_write_bw railB, served by the unit: success" true "$(jf .success)"
    record "node2 -> unit rdma_write_bw railB: $(jf '(.bandwidth_bytes_per_second // 0) * 8 / 1e9') Gb/s"
    run_probe ucx-bw '{"peer": "node1", "rail": "", "kind": "ucx_put_bw"}'
    check_eq "ucx_put_bw, served by a session child of the unit: success" true "$(jf .success)"
    check_eq "ucx_put_bw: the unit's UCX version" "$(jf .info.local_ucx_version)" "$(jf .info.remote_ucx_version)"
    record "node2 -> unit ucx_put_bw: lanes $(jf '.info.ucx_lanes // ""'), $(jf '(.bandwidth_bytes_per_second // 0) * 8 / 1e9') Gb/s"
    mark node2-done
    wait_mark unit-done 300
    save_daemon_state final
    stop_daemon
    finish
fi

# ---------------------------------------------------------------- node 1: the unit

BUILD=${ROCEWATCHD%/daemon/rocewatchd}
CRED=/etc/credstore/rocewatch-peer-token
# give_up: node 1 cannot go on; node 2 stops waiting for it.
give_up() {
    mark node1-gave-up
    finish
}

section "install (meson install from the build)"
if ! daemon_present; then
    start_daemon  # says why the binary is missing (a failure in CI) and returns
    give_up
fi
if out=$(meson install -C "$BUILD" --no-rebuild 2>&1); then
    pass "meson install"
else
    fail "meson install: $(tail -5 <<<"$out")"
    give_up
fi
echo "$out" >"$RES/meson-install.txt"
UNIT=
for d in /lib/systemd/system /usr/lib/systemd/system /usr/local/lib/systemd/system /etc/systemd/system; do
    [[ -f $d/rocewatchd.service ]] && UNIT=$d/rocewatchd.service
done
[[ -n $UNIT ]] || { fail "meson install put no rocewatchd.service in a unit directory"; give_up; }
cp "$UNIT" "$RES/rocewatchd.service"
EXEC=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$UNIT")
CFG=$(sed -n 's/^ExecStart=.*--config \([^ ]*\).*/\1/p' "$UNIT")
check "the unit's ExecStart ($EXEC) is the binary built here" cmp "$EXEC" "$ROCEWATCHD"
check "the example config is installed where the unit reads it ($CFG)" test -s "$CFG"
check "the installed example config passes --check-config" "$EXEC" --check-config --config "$CFG"
# This node's config replaces the example: the test bed's, listening for node 2, with no
# token_file (the token comes as a credential).
DAEMON_EXTRA_CONFIG=$(probe_config "")
daemon_config | sed '/^\[daemon\]$/a listen = "0.0.0.0:9879"' >"$CFG"
cp "$CFG" "$RES/rocewatch.toml"
check "the test bed's config passes --check-config" "$EXEC" --check-config --config "$CFG"

section "systemd as PID 1 of its own PID namespace"
# A drop-in for what only the test bed needs (UCX's transports, as above). Nothing of the
# sandbox is changed.
mkdir -p /etc/systemd/system/rocewatchd.service.d
printf '[Service]\nEnvironment=UCX_TLS=%s\n' "$UCX_TLS" >/etc/systemd/system/rocewatchd.service.d/test-bed.conf
boot_systemd || give_up
# lldpd as Debian ships it, as a unit in the same systemd: its socket is root:_lldpd 0770.
if [[ -x /usr/sbin/lldpd ]]; then
    if out=$(sd timeout 60 systemctl start lldpd.service 2>&1); then
        pass "lldpd.service started"
        sd lldpcli resume >/dev/null 2>&1
        sd lldpcli configure system hostname node1 >/dev/null 2>&1
    else
        fail "systemctl start lldpd: $out"
    fi
elif [[ ${RW_CI:-} == true ]]; then
    fail "lldpd is not installed (scripts/deps.sh test installs it; CI=true: the LLDP checks must run)"
else
    skip "lldpd is not installed: the sandbox's LLDP checks skipped"
fi

section "the unit without a token: starts, probing off, says where the token goes"
start_unit start || give_up
wait_unit_ready
status=$(query_daemon /api/v1/status)
check_eq "probing off without the credential" false "$(jq -r .probes.enabled <<<"$status")"
check_match "the reason names the credential's place" "/etc/credstore/rocewatch-peer-token" \
    "$(jq -r .probes.disabled_reason <<<"$status")"
record "unit without token: $(jq -r .probes.disabled_reason <<<"$status")"
if [[ -x /usr/sbin/lldpd ]]; then
    # The dynamic user is not in group _lldpd: the lldp collector fails and says what to add.
    check_match "without group _lldpd the unit's daemon cannot ask lldpd, and says what to add" \
        '^false .*permission denied.*SupplementaryGroups=_lldpd' \
        "$(jq -r 'first(.collectors[] | select(.name == "lldp")) | "\(.success) \(.last_error)"' <<<"$status")"
    # The drop-in docs/configuration.md gives; it takes effect at the restart below.
    printf '[Service]\nSupplementaryGroups=_lldpd\n' >/etc/systemd/system/rocewatchd.service.d/lldpd.conf
    sd systemctl daemon-reload
fi

section "the unit's process"
PID=$(unit_prop MainPID)
pstatus=$(sd cat "/proc/$PID/status")
uid=$(awk '$1 == "Uid:" { print $2 }' <<<"$pstatus")
if [[ -n $uid && $uid != 0 ]]; then pass "runs as a dynamic user (uid $uid, $(unit_prop User))"; else fail "runs as uid '$uid'"; fi
check_eq "no effective capabilities" 0000000000000000 "$(awk '$1 == "CapEff:" { print $2 }' <<<"$pstatus")"
check_eq "no bounding capabilities" 0000000000000000 "$(awk '$1 == "CapBnd:" { print $2 }' <<<"$pstatus")"
check_eq "no new privileges" 1 "$(awk '$1 == "NoNewPrivs:" { print $2 }' <<<"$pstatus")"
check_eq "seccomp filter on" 2 "$(awk '$1 == "Seccomp:" { print $2 }' <<<"$pstatus")"
check_eq "memlock unlimited (verbs pins probe buffers)" unlimited \
    "$(sd awk '/^Max locked memory/ { print $4 }' "/proc/$PID/limits")"
# systemd starts services at a soft 1024 open files; the daemon raises it to the hard limit
# so that it can keep its sysfs counter files open (half the soft limit).
nofile=$(sd awk '/^Max open files/ { print $4, $5 }' "/proc/$PID/limits")
if [[ $nofile =~ ^([0-9]+)\ ([0-9]+)$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" && ${BASH_REMATCH[1]} -gt 1024 ]]; then
    pass "open-file limit raised to the hard one under the unit ($nofile)"
else
    fail "open-file limit under the unit: soft hard = '$nofile' (want soft = hard > 1024)"
fi

section "inside the sandbox: sysfs, verbs and netlink"
for dev in rxe0 rxe1; do
    d=$(query_daemon "/api/v1/devices/$dev")
    check_eq "$dev: RoCE v2 GID index 1 (GID table read)" 1 "$(jq -r '.ports[0].roce_v2_gid.index' <<<"$d")"
    check_eq "$dev: active_mtu 4096 (from verbs: uverbs opened)" 4096 "$(jq -r '.ports[0].active_mtu' <<<"$d")"
done
check_eq "railA over netlink: MTU and address" "9000 $(rail_ip railA)" \
    "$(query_daemon /api/v1/interfaces | jq -r 'first(.interfaces[] | select(.name == "railA")) | "\(.mtu) \(.addresses[] | select(.family == "inet") | .address)"')"

section "the token as a systemd credential"
mkdir -p /etc/credstore
(umask 077 && echo "$TOKEN" >"$CRED")
start_unit restart || give_up
wait_unit_ready
check_eq "probing on with the credential" "true null" \
    "$(query_daemon /api/v1/status | jq -r '"\(.probes.enabled) \(.probes.disabled_reason)"')"
uid=$(sd awk '$1 == "Uid:" { print $2 }' "/proc/$(unit_prop MainPID)/status")
check_eq "the credential as the dynamic user sees it" "-r-------- 1 $uid 65" \
    "$(sd ls -ln "/run/credentials/rocewatchd.service/rocewatch-peer-token" | awk '{ print $1, $2, $3, $5 }')"
check_match "the daemon says it took the credential" "token from /run/credentials/rocewatchd.service/rocewatch-peer-token" \
    "$(sd journalctl -u rocewatchd --no-pager -o cat 2>&1)"
if [[ -x /usr/sbin/lldpd ]]; then
    # With SupplementaryGroups=_lldpd the sandboxed daemon asks lldpd (every 30 s): node 2 on
    # both rails, by name and port.
    t=0
    while :; do
        got=$(query_daemon /api/v1/interfaces | jq -r '[.interfaces[] | select(.name | test("^rail")) | "\(.name)=\(.lldp.switch) \(.lldp.switch_port)"] | join(" ")')
        [[ $got == "railA=node2 railA railB=node2 railB" ]] && break
        ((t++ < 900)) || break
        snooze 0.1
    done
    check_eq "with SupplementaryGroups=_lldpd the unit's daemon names node 2's port on each rail" \
        "railA=node2 railA railB=node2 railB" "$got"
    check_eq "the lldp collector succeeds in the sandbox" "true null" \
        "$(query_daemon /api/v1/status | jq -r 'first(.collectors[] | select(.name == "lldp")) | "\(.success) \(.last_error)"')"
fi
wait_mark node2-up 240

section "the unit's daemon -> node 2"
for rail in "${RAILS[@]}"; do
    run_probe "bw-$rail" "{\"peer\": \"node2\", \"rail\": \"$rail\", \"kind\": \"rdma_write_bw\"}"
    check_eq "rdma_write_bw $rail from the unit: success" true "$(jf .success)"
    check_eq "rdma_write_bw $rail: 2 QPs" 2 "$(jf .streams)"
    record "unit -> node2 rdma_write_bw $rail: $(jf '(.bandwidth_bytes_per_second // 0) * 8 / 1e9') Gb/s, $(jf .bytes) bytes; $rail counter $(jf ".bytes_per_rail.$rail // 0")"
    if (($(jf ".bytes_per_rail.$rail // 0") >= $(jf '.bytes // 0') && $(jf '.bytes // 0') > 0)); then
        pass "rdma_write_bw $rail: the rail's counter (read in the sandbox) covers the payload"
    else
        fail "rdma_write_bw $rail: bytes_per_rail $(jf ".bytes_per_rail.$rail") for $(jf .bytes) bytes"
    fi
done
run_probe multirail '{"peer": "node2", "rail": "", "kind": "rdma_multirail_bw"}'
check_eq "rdma_multirail_bw from the unit: success, 2 rails x 2 QPs" "true 4" "$(jf '"\(.success) \(.streams)"')"
record "unit -> node2 rdma_multirail_bw: railA $(jf .bytes_per_rail.railA) bytes, railB $(jf .bytes_per_rail.railB) bytes"
run_probe lat-railB '{"peer": "node2", "rail": "railB", "kind": "rdma_write_lat"}'
check_eq "rdma_write_lat railB from the unit: success" true "$(jf .success)"
run_probe tcp-bw '{"peer": "node2", "rail": "railA", "kind": "tcp_bw"}'
check_eq "tcp_bw railA from the unit: success" true "$(jf .success)"
record "unit -> node2 tcp_bw railA: $(jf '(.bandwidth_bytes_per_second // 0) * 8 / 1e9') Gb/s"
for kind in ucx_put_lat ucx_put_bw; do
    run_probe "$kind" "{\"peer\": \"node2\", \"rail\": \"\", \"kind\": \"$kind\"}"
    check_eq "$kind from the unit (UCX in a session child): success" true "$(jf .success)"
    lanes=$(jf '.info.ucx_lanes // ""')
    if [[ -n $lanes ]]; then pass "$kind: lanes $lanes"; else fail "$kind: no lanes reported"; fi
    record "unit -> node2 $kind: lanes $lanes, UCX $(jf .info.local_ucx_version)"
done
mark unit-probed
wait_mark node2-done 300

section "reload and stop"
before=$(query_daemon /metrics | awk '$1 == "rocewatch_config_last_reload_success_timestamp_seconds" { print $2 }')
snooze 1.1
start_unit reload
t=0
while :; do
    after=$(query_daemon /metrics | awk '$1 == "rocewatch_config_last_reload_success_timestamp_seconds" { print $2 }')
    [[ -n $after && $after != "$before" ]] && break
    ((t++ < 100)) || break
    snooze 0.1
done
if [[ -n $after && $after != "$before" ]]; then pass "systemctl reload: a successful reload at $after (was '${before}')"; else fail "systemctl reload: no new successful reload ($before -> $after)"; fi
expect_metric "rocewatch_config_last_reload_successful 1"

section "journald: priorities and fields"
cp "$CFG" "$RES/rocewatch.toml.good"
printf '\n[rules.no_such_rule]\nenabled = false\n' >>"$CFG"
sd timeout 60 systemctl reload rocewatchd.service >/dev/null 2>&1
check "journalctl -p warning -u rocewatchd shows the rejected reload" journal_warnings "config reload rejected"
# A port rate the rxe ports cannot meet: port_rate_low fires (warning) at once.
sed 's/^port_rate_gbps = 100$/port_rate_gbps = 400/' "$RES/rocewatch.toml.good" >"$CFG"
sd timeout 60 systemctl reload rocewatchd.service >/dev/null 2>&1
check "journalctl -p warning -u rocewatchd shows the alert firing" journal_warnings "alert port_rate_low rxe0/1 firing (warning, node)"
check_match "the firing line carries RULE=, OBJECT=, DEVICE= fields" "RULE=port_rate_low OBJECT=rxe0/1 DEVICE=rxe0" \
    "$(sd journalctl -u rocewatchd --no-pager -o json 2>/dev/null | jq -r 'select(.RULE == "port_rate_low" and .OBJECT == "rxe0/1") | "RULE=\(.RULE) OBJECT=\(.OBJECT) DEVICE=\(.DEVICE)"' | head -1)"
cp "$RES/rocewatch.toml.good" "$CFG"
start_unit reload
expect_metric "rocewatch_config_last_reload_successful 1"
sd journalctl -u rocewatchd --no-pager >"$RES/journal-rocewatchd.txt" 2>&1
if out=$(sd timeout 60 systemctl stop rocewatchd.service 2>&1); then pass "systemctl stop"; else fail "systemctl stop: $out"; fi
check_eq "stopped cleanly" "inactive success 0" "$(unit_prop ActiveState) $(unit_prop Result) $(unit_prop ExecMainStatus)"
sd journalctl --no-pager >"$RES/journal.txt" 2>&1
mark unit-done
# The unit is stopped: nothing in systemd's namespace needs an orderly end.
kill -KILL "$SD_PID" 2>/dev/null
finish

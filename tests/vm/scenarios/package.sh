#!/bin/bash
# The Debian package as a user meets it: in a guest booted with the distribution's systemd
# as PID 1 (as in systemd-unit), `apt-get install ./rocewatch_*.deb` (the .deb pkg_deb just
# built, ROCEWATCH_DEB on the host) must
#   - install the daemon, the unit, the man pages and /etc/rocewatch/rocewatch.toml as a conffile;
#   - enable and start the unit with the shipped config (postinst under a running systemd);
#   - answer on the shipped port, and log at warning priority what a fresh node lacks
#     (`journalctl -p warning -u rocewatchd`: probing off without the token, alerts firing);
#   - reload on `systemctl reload`, refuse a broken edit of the conffile and say so;
# and `apt-get purge rocewatch` must stop the unit and leave nothing behind: no binary, unit,
# enablement link, config or state directory.
# vm-nodes: 1
# vm-timeout: 720
DAEMON_LISTEN=0.0.0.0:9879
. "$(dirname "$0")/lib.sh"

give_up() { finish; exit; }

section "the .deb"
if [[ -z ${RW_DEB:-} || ! -r $RW_DEB ]]; then
    if [[ ${RW_CI:-} == true ]]; then
        fail "no .deb to install ('${RW_DEB:-}'): pkg_deb runs this scenario with the package it built (ROCEWATCH_DEB)"
    else
        skip "no .deb to install ('${RW_DEB:-}'): set ROCEWATCH_DEB, or run suite pkg"
    fi
    give_up
fi
pass "installing $(basename "$RW_DEB") ($(stat -c %s "$RW_DEB") bytes)"

# A container-built host may carry Docker's /usr/sbin/policy-rc.d (exit 101: "start no
# service"), which would keep postinst from starting the unit; a real node has none. Removed
# in the guest's overlay only.
if [[ -e /usr/sbin/policy-rc.d ]]; then
    rm -f /usr/sbin/policy-rc.d && log "removed the host's /usr/sbin/policy-rc.d from the guest's view"
fi

section "systemd as PID 1"
boot_systemd || give_up

section "apt-get install ./$(basename "$RW_DEB")"
# No network in the guest: every dependency must already be installed (the host's build
# dependencies pull in the libraries); apt would fail trying to download one.
export DEBIAN_FRONTEND=noninteractive
if out=$(sd env DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y --no-install-recommends \
    "$RW_DEB" 2>&1); then
    pass "apt-get install: $(grep -E '^Setting up rocewatch' <<<"$out" | head -1)"
else
    fail "apt-get install failed: $(tail -5 <<<"$out" | tr '\n' ' ')"
    give_up
fi
echo "$out" >"$RES/apt-install.txt"
check_eq "dpkg: installed" "install ok installed" "$(sd dpkg-query -W -f='${Status}' rocewatch)"
check "the daemon at /usr/sbin/rocewatchd" sd test -x /usr/sbin/rocewatchd
check "the shipped config is a conffile" grep -qx ' /etc/rocewatch/rocewatch.toml [0-9a-f]*' \
    <(sd dpkg-query -W -f='${Conffiles}\n' rocewatch)
check "man rocewatchd(8) and rocewatch.toml(5) are installed" sd test -s /usr/share/man/man8/rocewatchd.8.gz -a \
    -s /usr/share/man/man5/rocewatch.toml.5.gz
check "the shipped rules are installed" sd test -s /usr/share/rocewatch/prometheus/rocewatch-rules.yml

section "the service, started by the package"
check_eq "enabled by postinst" enabled "$(sd systemctl is-enabled rocewatchd.service 2>&1)"
state=
limit=$((${EPOCHREALTIME/./} + 90000000))
while ((${EPOCHREALTIME/./} < limit)); do
    state=$(unit_prop ActiveState)
    [[ $state == active || $state == failed || $state == inactive ]] && break
    snooze 0.2
done
if [[ $state == active ]]; then
    pass "started by postinst: $state/$(unit_prop SubState) (Type=notify: READY=1 seen)"
else
    unit_diagnostics
    fail "not active after install: $state; $(tail -5 "$RES/unit-status.txt" | tr '\n' ' ')"
    give_up
fi
wait_unit_ready
cfg=$(query_daemon /api/v1/config)
check_eq "the daemon runs the shipped config" /etc/rocewatch/rocewatch.toml "$(jq -r .source <<<"$cfg")"
check_eq "on the shipped port" 0.0.0.0:9879 "$(jq -r .daemon.listen <<<"$cfg")"
check_eq "ExecStart is the package's binary" /usr/sbin/rocewatchd "$(unit_prop ExecStart | sed -n 's/.*path=\([^ ;]*\).*/\1/p')"
check "journalctl -p warning -u rocewatchd: probing off, and where the token goes" \
    journal_warnings "peer probing is off"
check "journalctl -p warning -u rocewatchd: an alert firing (the example's rails are not in this guest)" \
    journal_warnings " firing ("

section "reload, a broken edit, purge"
before=$(query_daemon /metrics | awk '$1 == "rocewatch_config_last_reload_success_timestamp_seconds" { print $2 }')
start_unit reload
after=
for ((t = 0; t < 100; t++)); do
    after=$(query_daemon /metrics | awk '$1 == "rocewatch_config_last_reload_success_timestamp_seconds" { print $2 }')
    [[ -n $after && $after != "$before" ]] && break
    snooze 0.1
done
if [[ -n $after && $after != "$before" ]]; then pass "systemctl reload: reloaded ($before -> $after)"; else fail "systemctl reload: no new reload ($before -> $after)"; fi
sd sh -c 'printf "\n[daemon]\nlisten = \"nowhere\"\n" >>/etc/rocewatch/rocewatch.toml'
sd timeout 60 systemctl reload rocewatchd.service >/dev/null 2>&1
check "a broken conffile edit: the reload is refused, at warning priority" journal_warnings "config reload rejected"
check_eq "... and the running daemon stays" active "$(unit_prop ActiveState)"
sd journalctl -u rocewatchd --no-pager >"$RES/journal-rocewatchd.txt" 2>&1

# As long as the install may take: under TCG on a loaded host, man-db's trigger and systemd's
# reload inside the purge took over 120 s in a CI run here (killed by a 120 s limit).
t0=${EPOCHREALTIME/./}
if out=$(sd env DEBIAN_FRONTEND=noninteractive timeout 300 apt-get purge -y rocewatch 2>&1); then
    pass "apt-get purge rocewatch (in $(fmt_us $((${EPOCHREALTIME/./} - t0))) s)"
else
    fail "apt-get purge failed (exit $?, after $(fmt_us $((${EPOCHREALTIME/./} - t0))) s): $(tail -5 <<<"$out" | tr '\n' ' ')"
fi
echo "$out" >"$RES/apt-purge.txt"
check_eq "dpkg: gone, not even config-files" "" "$(sd dpkg-query -W -f='${Status}' rocewatch 2>/dev/null)"
check_eq "the unit is gone" "inactive not-found" "$(unit_prop ActiveState) $(unit_prop LoadState)"
check "nothing answers on 9879 any more" bash -c "! curl -s --max-time 2 $DAEMON_URL/healthz"
for p in /usr/sbin/rocewatchd /etc/rocewatch /lib/systemd/system/rocewatchd.service \
    /etc/systemd/system/multi-user.target.wants/rocewatchd.service /var/lib/rocewatch /var/lib/private/rocewatch \
    /usr/share/rocewatch /usr/share/doc/rocewatch /usr/share/man/man8/rocewatchd.8.gz; do
    check "purge left no $p" sd bash -c "! test -e $p -o -L $p"
done
kill -KILL "$SD_PID" 2>/dev/null
finish

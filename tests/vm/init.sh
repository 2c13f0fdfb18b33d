#!/bin/busybox sh
# PID 1 of a rocewatch test guest: loads modules, builds the root (host / over 9p,
# read-only, under a tmpfs overlay), names and configures the rail NICs, runs one
# scenario script chrooted, reports its exit status through the shared dir, powers off.
#
# PID 1 itself stays in the initramfs: a PID 1 running from 9p panics at power-off.
# Kernel command line: rw.node=N (this guest's number), optionally rw.scenario=NAME.
# Everything else comes from the read-write share (tag "shared"): config.env (scenario,
# node count, time limit, paths) and nodeN/net.conf (rails by MAC); the scenario scripts
# are in its scenarios/ dir, and the guest leaves nodeN/{log,init.log,dmesg.txt,rc,results/}.

/bin/busybox mkdir -p /proc /sys /dev /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

say() { echo "rw-init: $*"; }

halt_now() {
    sync
    umount /mnt/shared 2>/dev/null
    poweroff -f
    echo o >/proc/sysrq-trigger
    sleep 5
}

# Anything fatal before the scenario runs: say why, leave the status where the host
# looks for it (when the share is up), power off.
die() {
    say "FATAL: $*"
    if [ -d /mnt/shared/node$NODE ]; then
        echo "init: $*" >>/mnt/shared/node$NODE/init.log
        echo 100 >/mnt/shared/node$NODE/rc
    fi
    halt_now
}

NODE=0
SCENARIO=
for w in $(cat /proc/cmdline); do
    case $w in
        rw.node=*) NODE=${w#rw.node=} ;;
        rw.scenario=*) SCENARIO=${w#rw.scenario=} ;;
    esac
done
say "node $NODE, kernel $(uname -r)"

while read -r mod opts; do
    insmod /modules/$mod $opts || die "insmod $mod $opts failed"
done </modules/order

# rdma_rxe calls request_module("crc32") when a device is added: the helper runs the
# real modprobe inside the chroot, where /lib/modules lives.
echo /sbin/modprobe-chroot >/proc/sys/kernel/modprobe

mkdir -p /mnt/host /mnt/rw /mnt/shared /mnt/keep
msize=262144
mount -t 9p -o trans=virtio,version=9p2000.L,msize=$msize,cache=none shared /mnt/shared \
    || die "cannot mount the shared dir"
[ -r /mnt/shared/config.env ] || die "no config.env in the shared dir"
. /mnt/shared/config.env
# rw.scenario= on the kernel command line wins over the shared dir's choice.
[ -n "$SCENARIO" ] && RW_SCENARIO=$SCENARIO
OUT=/mnt/shared/node$NODE
mkdir -p $OUT
exec >>$OUT/init.log 2>&1 </dev/null
say "node $NODE booted in $(cut -d' ' -f1 /proc/uptime) s"

# The host's root is read-only and shared with the host: cache it (nothing changes it
# while a scenario runs), write through a tmpfs overlay.
mount -t 9p -o trans=virtio,version=9p2000.L,msize=$msize,ro,cache=loose hostroot /mnt/host \
    || die "cannot mount the host root"
mount -t tmpfs -o mode=755 tmpfs /mnt/rw || die "tmpfs"
mkdir -p /mnt/rw/upper /mnt/rw/work
mount -t overlay overlay -o lowerdir=/mnt/host,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work /newroot \
    || die "cannot mount the overlay root"
R=/newroot
# What rocewatch left on the host (its state directory after a run with the defaults, an
# installed unit, config or token) must not leak into a guest: systemd's StateDirectory=
# with DynamicUser= moves /var/lib/rocewatch into /var/lib/private, which across the overlay
# is a rename of a lower directory (EXDEV), and an old unit or token would change what the
# scenarios test. Removing them here leaves whiteouts in the tmpfs upper layer only.
for p in /var/lib/rocewatch /var/lib/private/rocewatch /etc/rocewatch /usr/local/etc/rocewatch \
    /etc/credstore/rocewatch-peer-token /etc/systemd/system/rocewatchd.service \
    /etc/systemd/system/rocewatchd.service.d; do
    if [ -e $R$p ] || [ -L $R$p ]; then
        rm -rf $R$p || die "cannot hide the host's $p from the guest"
        say "hid the host's $p"
    fi
done
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts devpts $R/dev/pts
mount -t tmpfs tmpfs $R/dev/shm
ln -s /proc/self/fd $R/dev/fd
ln -s /proc/self/fd/0 $R/dev/stdin
ln -s /proc/self/fd/1 $R/dev/stdout
ln -s /proc/self/fd/2 $R/dev/stderr
mkdir -p $R/vmshare
mount --bind /mnt/shared $R/vmshare

# Host directories the scenario needs (the source and build trees) that sit under /tmp
# would vanish under the guest's own /tmp: hold them aside and put them back.
i=0
for p in $(echo "$RW_KEEP" | tr ':' ' '); do
    case $p in
        /tmp/*)
            i=$((i + 1))
            mkdir -p /mnt/keep/$i
            mount --bind $R$p /mnt/keep/$i && echo "$i $p" >>/mnt/keep/list
            ;;
    esac
done
mount -t tmpfs tmpfs $R/tmp
mount -t tmpfs tmpfs $R/run
mount -t tmpfs tmpfs $R/var/tmp
mount -t tmpfs tmpfs $R/var/log
# The initramfs busybox, for the applets the host may lack (ping).
mkdir -p $R/run/rocewatch-vm
cp /bin/busybox $R/run/rocewatch-vm/busybox
if [ -f /mnt/keep/list ]; then
    while read -r i p; do
        mkdir -p $R$p && mount --bind /mnt/keep/$i $R$p
    done </mnt/keep/list
fi

hostname node$NODE
echo node$NODE >$R/etc/hostname
printf '127.0.0.1 localhost\n127.0.1.1 node%s\n' "$NODE" >$R/etc/hosts

# bonding.ko makes a balance-rr bond0 unless max_bonds=0 reached it: scenarios make
# their own bonds.
ip link del bond0 2>/dev/null
ip link set lo up

# Rails by MAC: "name mac address/prefix mtu" per line.
if [ -r $OUT/net.conf ]; then
    while read -r name mac addr mtu; do
        [ -n "$name" ] || continue
        dev=
        for d in /sys/class/net/*; do
            [ -r $d/address ] && [ "$(cat $d/address)" = "$mac" ] && dev=${d##*/}
        done
        [ -n "$dev" ] || die "no NIC with MAC $mac for $name"
        ip link set $dev name $name || die "rename $dev -> $name"
        ip link set $name mtu $mtu || die "mtu $mtu on $name"
        ip addr add $addr dev $name || die "address $addr on $name"
        ip link set $name up || die "$name up"
        say "$name: $mac $addr mtu $mtu"
    done <$OUT/net.conf
fi

script=/vmshare/scenarios/$RW_SCENARIO.sh
[ -r $R$script ] || die "no scenario $script"
say "running $RW_SCENARIO (limit ${RW_TIMEOUT}s)"
# env -i: nothing of the initramfs environment leaks into the scenario.
timeout -s KILL $RW_TIMEOUT chroot $R /usr/bin/env -i \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    RW_NODE="$NODE" RW_NODES="$RW_NODES" RW_SCENARIO="$RW_SCENARIO" RW_SHARE=/vmshare \
    RW_REPO="$RW_REPO" ROCEWATCHD="$ROCEWATCHD" RW_CI="$RW_CI" RW_DEB="${RW_DEB:-}" \
    /bin/bash $script >$OUT/log 2>&1
rc=$?
say "scenario exited $rc after $(cut -d' ' -f1 /proc/uptime) s uptime"
dmesg >$OUT/dmesg.txt 2>&1
echo $rc >$OUT/rc.tmp && mv $OUT/rc.tmp $OUT/rc
# Kill what the scenario left behind so the overlay can go quietly.
kill -9 -1 2>/dev/null
halt_now

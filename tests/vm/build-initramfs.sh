#!/bin/bash
# Builds (or reuses) the test guests' initramfs: busybox-static, the kernel modules in
# dependency order, and init.sh as /init. Prints "kernel PATH" and "initrd PATH".
#
# The kernel is the host's own Debian kernel (it has rdma_rxe and bonding; the host
# may not load them itself). Its version is found at run time; ROCEWATCH_VM_KVER
# overrides. The image is cached under ${ROCEWATCH_VM_WORK:-/tmp/rocewatch-vm}/initramfs/
# by a hash of every input, so a re-run costs one hash.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${ROCEWATCH_VM_WORK:-/tmp/rocewatch-vm}
log() { echo "build-initramfs: $*" >&2; }
die() { log "error: $*"; exit 1; }

# Modules the guest needs before it can reach its root (9p over virtio), its NICs, the
# RDMA and bonding drivers under test, and netem for a delayed path. modprobe --show-depends
# adds the rest (udp tunnels, ib_core, ib_uverbs, netfs, fscache, 9pnet, virtio helpers,
# failover, tls).
top_modules=(
    virtio_pci 9pnet_virtio 9p overlay
    virtio_net
    rdma_rxe rdma_ucm
    bonding veth
    sch_netem
)

pick_kver() {
    if [[ -n ${ROCEWATCH_VM_KVER:-} ]]; then echo "$ROCEWATCH_VM_KVER"; return; fi
    local k best=
    # Newest version that has both a kernel image and its modules.
    for k in $(ls -1 /lib/modules 2>/dev/null | sort -V); do
        [[ -r /boot/vmlinuz-$k && -d /lib/modules/$k/kernel ]] && best=$k
    done
    [[ -n $best ]] || die "no kernel with modules found (/boot/vmlinuz-* + /lib/modules/*); install linux-image-amd64"
    echo "$best"
}

kver=$(pick_kver)
kernel=/boot/vmlinuz-$kver
[[ -r $kernel ]] || die "$kernel not readable"
busybox=$(command -v busybox || true)
[[ -n $busybox ]] || die "busybox not found; install busybox-static"
linkage=$(LC_ALL=C ldd "$busybox" 2>&1 || true)
[[ $linkage == *"not a dynamic executable"* ]] || die "$busybox is not statically linked; install busybox-static"
command -v modprobe >/dev/null || die "modprobe not found; install kmod"
command -v cpio >/dev/null || die "cpio not found"

# "path options" per line, dependency order, each module once.
modlist=$(
    for m in "${top_modules[@]}"; do
        modprobe -S "$kver" --show-depends "$m" || die "modprobe --show-depends $m failed"
    done | awk '$1 == "insmod" && !seen[$2]++ { p = $2; $1 = ""; $2 = ""; sub(/^ +/, ""); print p, $0 }'
)
[[ -n $modlist ]] || die "empty module list for $kver"

hash=$(
    {
        echo "$kver"
        sha256sum "$kernel" "$busybox" "$here/init.sh" "$here/build-initramfs.sh"
        while read -r p _; do stat -c '%n %s %Y' "$p"; done <<<"$modlist"
        echo "$modlist"
    } | sha256sum | cut -c1-16
)
out=$work/initramfs/$kver-$hash.cpio
if [[ -s $out ]]; then
    log "cached $out"
else
    mkdir -p "$work/initramfs"
    tmp=$(mktemp -d "$work/initramfs/build.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    root=$tmp/root
    mkdir -p "$root"/{bin,sbin,proc,sys,dev,mnt,newroot,modules}
    cp "$busybox" "$root/bin/busybox"
    cp "$here/init.sh" "$root/init"
    chmod 755 "$root/init"
    # kernel.modprobe points here: request_module() (rdma_rxe asks for crc32 at run time)
    # must find the modules, which live in the chrooted host root, not in the initramfs.
    printf '#!/bin/busybox sh\nexec /bin/busybox chroot /newroot /sbin/modprobe "$@"\n' >"$root/sbin/modprobe-chroot"
    chmod 755 "$root/sbin/modprobe-chroot"
    i=0
    while read -r p opts; do
        i=$((i + 1))
        name=$(printf '%02d-%s' "$i" "$(basename "$p")")
        case $p in
            *.ko) cp "$p" "$root/modules/$name" ;;
            *.ko.xz) xz -dc "$p" >"$root/modules/${name%.xz}"; name=${name%.xz} ;;
            *.ko.zst) zstd -qdc "$p" >"$root/modules/${name%.zst}"; name=${name%.zst} ;;
            *.ko.gz) gzip -dc "$p" >"$root/modules/${name%.gz}"; name=${name%.gz} ;;
            *) die "unknown module format: $p" ;;
        esac
        echo "$name $opts" >>"$root/modules/order"
    done <<<"$modlist"
    echo "$kver" >"$root/kver"
    # Uncompressed: under TCG the kernel's own decompression costs more than the copy.
    (cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) >"$tmp/out.cpio"
    mv "$tmp/out.cpio" "$out"
    log "built $out ($(du -h "$out" | cut -f1), $i modules, kernel $kver)"
    # Older images of other inputs are dead weight.
    find "$work/initramfs" -maxdepth 1 -name '*.cpio' ! -path "$out" -mmin +60 -delete 2>/dev/null || true
fi
echo "kernel $kernel"
echo "initrd $out"

#!/usr/bin/env python3
"""Writes an N-NIC mlx5 sysfs tree (and its procfs) for the collection benchmarks, built from
the same pieces as the committed DGX Spark fixture, with mlx5's real 255-slot GID tables.

    bench/make_nic_tree.py N OUTDIR      -> OUTDIR/sysfs, OUTDIR/procfs
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "sysfs"))
import make_fixtures as mf  # noqa: E402


def make_tree(n, out):
    mf.GID_SLOTS = 255  # the fixture trims the all-zero tail; a real mlx5 port has it
    root, proc = f"{out}/sysfs", f"{out}/procfs"
    if os.path.lexists(out):
        raise SystemExit(f"{out} exists; give a new directory")
    mf.write(f"{root}/bus/pci/drivers/mlx5_core/uevent", "DRIVER=mlx5_core\n")
    for i in range(n):
        bus, fn = divmod(i, 2)
        pci = f"0000:{bus + 1:02x}:00.{fn}"
        pdev = f"devices/pci0000:00/0000:00:{bus:02x}.0/{pci}"
        name, netdev = f"mlx5_{i}", f"enp{bus + 1}s0f{fn}np{fn}"
        mac = "30:c5:99:%02x:%02x:%02x" % (i >> 16 & 0xFF, i >> 8 & 0xFF, i & 0xFF)
        guid = "30c5:9903:00%02x:%04x" % (i >> 16 & 0xFF, i & 0xFFFF)
        ipv4 = f"10.{i // 250}.{i % 250}.11"
        mf.write(f"{root}/{pdev}/vendor", "0x15b3\n")
        mf.write(f"{root}/{pdev}/class", "0x020000\n")
        mf.link(f"{root}/{pdev}/driver", "../../../../bus/pci/drivers/mlx5_core")
        mf.write(f"{root}/{pdev}/net/{netdev}/address", mac + "\n")
        mf.link(f"{root}/bus/pci/devices/{pci}", f"../../../{pdev}")
        mf.link(f"{root}/class/net/{netdev}", f"../../{pdev}/net/{netdev}")
        ibdev = f"{pdev}/infiniband/{name}"
        mf.write_mlx5_device(f"{root}/{ibdev}", name, guid, mac, netdev, ipv4, 100 + i, 90 + i)
        # ib_core gives every port these (port_default_attrs); the committed fixture leaves
        # them out. Without sm_sl, which rocewatchd reads every cycle (a subnet manager may
        # move it), each port cost a failed open and the opens of its directories a cycle,
        # which no real node pays.
        mf.write(f"{root}/{ibdev}/ports/1/sm_sl", "0\n")
        mf.write(f"{root}/{ibdev}/ports/1/lid_mask_count", "0\n")
        mf.write(f"{root}/{ibdev}/ports/1/cap_mask", "0x04010000\n")
        mf.link(f"{root}/{ibdev}/device", "../..")
        mf.link(f"{root}/class/infiniband/{name}", f"../../{ibdev}")
        # Every link has its ARP sysctls (rocewatchd reads three of them a link).
        for knob, v in (("arp_ignore", 0), ("arp_announce", 0), ("rp_filter", 2)):
            mf.write(f"{proc}/sys/net/ipv4/conf/{netdev}/{knob}", f"{v}\n")
    for knob, v in (("arp_ignore", 0), ("arp_announce", 0), ("rp_filter", 0)):
        for d in ("all", "lo"):
            mf.write(f"{proc}/sys/net/ipv4/conf/{d}/{knob}", f"{v}\n")
    mf.write(f"{proc}/sys/kernel/hostname", f"bench-{n}nic\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    make_tree(int(sys.argv[1]), sys.argv[2])

#!/usr/bin/env python3
"""Copies rxe devices' sysfs trees (contents, never links) into DEST/class/infiniband/DEV,
and the top-level attributes and statistics/ of each one's parent netdev into
DEST/class/net/NETDEV.

Usage: sysfs_snapshot.py DEST DEV...   (in a test guest; see lib.sh snapshot_rxe_sysfs)
Left out: power/, the subsystem link, and GID slots >= KEEP_GIDS (all-zero on rxe; there
are 1024 per port); of the netdev, every subdirectory but statistics/. Files that cannot
be read (the EINVAL attrs of empty GID slots) are listed in DEST/UNREADABLE with their
errno name.
"""
import errno
import os
import re
import shutil
import sys

KEEP_GIDS = 16
GID_SLOT = re.compile(r"^ports/\d+/(gids|gid_attrs/[^/]+)/(\d+)$")


def main():
    dest, devs = sys.argv[1], sys.argv[2:]
    shutil.rmtree(dest, ignore_errors=True)
    unreadable = []
    copied = 0
    for dev in devs:
        src = os.path.realpath(f"/sys/class/infiniband/{dev}")
        for root, dirs, files in os.walk(src):  # os.walk does not follow links
            rel_root = os.path.relpath(root, src)
            dirs[:] = sorted(d for d in dirs if not (rel_root == "." and d == "power"))
            for name in sorted(files):
                path = os.path.join(root, name)
                rel = os.path.normpath(os.path.join(rel_root, name))
                if os.path.islink(path):
                    continue
                m = GID_SLOT.match(rel)
                if m and int(m.group(2)) >= KEEP_GIDS:
                    continue
                target = os.path.join(dest, "class", "infiniband", dev, rel)
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                except OSError as e:
                    unreadable.append(f"class/infiniband/{dev}/{rel}: {errno.errorcode.get(e.errno, e.errno)}")
                    continue
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as f:
                    f.write(data)
                copied += 1
        try:
            with open(os.path.join(src, "parent")) as f:
                netdev = f.read().strip()
        except OSError:
            continue
        nsrc = os.path.realpath(f"/sys/class/net/{netdev}")
        for sub in ("", "statistics"):
            d = os.path.join(nsrc, sub)
            for name in sorted(os.listdir(d)):
                path = os.path.join(d, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                if not os.stat(path).st_mode & 0o444:
                    continue  # write-only
                rel = os.path.join("class", "net", netdev, sub, name)
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                except OSError as e:
                    unreadable.append(f"{os.path.normpath(rel)}: {errno.errorcode.get(e.errno, e.errno)}")
                    continue
                target = os.path.join(dest, rel)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as f:
                    f.write(data)
                copied += 1
    os.makedirs(dest, exist_ok=True)
    with open(os.path.join(dest, "UNREADABLE"), "w") as f:
        f.write("".join(u + "\n" for u in unreadable))
    print(f"sysfs snapshot: {copied} files copied, {len(unreadable)} unreadable, into {dest}")


if __name__ == "__main__":
    main()

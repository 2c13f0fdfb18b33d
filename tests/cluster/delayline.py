#!/usr/bin/env python3
"""A userspace delay line for the cluster test (this kernel has no sch_netem and no sch_fq).

Run inside a node's namespace: it creates a TAP device; the test attaches a tc BPF program
(fault.c, MODE 2) to the node's rail netdev that redirects every small frame leaving it into the
TAP. Here each frame is held for the delay, then sent out of the rail netdev through a packet
socket with a mark that the BPF program lets pass. Bulk segments (over 512 bytes) bypass the
line, so latency grows by the delay while bandwidth probes stay at line rate.

  delayline.py TAP DEV DELAY_MS     prints the TAP's ifindex, then runs until SIGTERM
"""
import fcntl
import heapq
import os
import select
import socket
import struct
import subprocess
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000
SO_MARK = 36
MARK = 0x5E1A


def main():
    tap, dev, delay = sys.argv[1], sys.argv[2], float(sys.argv[3]) / 1000
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", tap.encode(), IFF_TAP | IFF_NO_PI))
    subprocess.run(["ip", "link", "set", tap, "up"], check=True)
    out = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    out.setsockopt(socket.SOL_SOCKET, SO_MARK, MARK)
    out.bind((dev, 0))
    with open(f"/sys/class/net/{tap}/ifindex") as f:
        print(f.read().strip(), flush=True)
    held = []
    seq = 0
    while True:
        now = time.monotonic()
        while held and held[0][0] <= now:
            _, _, frame = heapq.heappop(held)
            try:
                out.send(frame)
            except OSError:
                pass
        wait = max(0.0, held[0][0] - now) if held else 1.0
        r, _, _ = select.select([fd], [], [], wait)
        if r:
            frame = os.read(fd, 65536)
            seq += 1
            heapq.heappush(held, (time.monotonic() + delay, seq, frame))


if __name__ == "__main__":
    main()

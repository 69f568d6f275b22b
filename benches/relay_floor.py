#!/usr/bin/env python3
"""The kernel's share of moving bytes through one process on loopback, as a floor for a
gateway's CPU per GiB: a sender pushes the bytes to a relay that reads each buffer and writes
it on to a sink (what a gateway does with a body, minus everything else). Prints the relay's
CPU seconds per GiB. Sender and sink are forked, so only the relay's CPU is counted.

    python3 benches/relay_floor.py [GiB=4] [buffer bytes=1048576]
"""
import os
import resource
import socket
import sys
import time

GIB = 1 << 30
total = int(float(sys.argv[1]) * GIB) if len(sys.argv) > 1 else 4 * GIB
bufsize = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20


def listener():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s


sink_l, relay_l = listener(), listener()


def sink():
    c, _ = sink_l.accept()
    mv = memoryview(bytearray(1 << 20))
    while c.recv_into(mv):
        pass


def sender():
    c = socket.create_connection(relay_l.getsockname())
    data, sent = os.urandom(1 << 20), 0
    while sent < total:
        c.sendall(data)
        sent += len(data)
    c.close()


pids = []
for f in (sink, sender):
    pid = os.fork()
    if pid == 0:
        f()
        os._exit(0)
    pids.append(pid)
inp, _ = relay_l.accept()
out = socket.create_connection(sink_l.getsockname())
mv = memoryview(bytearray(bufsize))
r0, t0, moved = resource.getrusage(resource.RUSAGE_SELF), time.time(), 0
while True:
    n = inp.recv_into(mv)
    if not n:
        break
    out.sendall(mv[:n])
    moved += n
r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.time()
out.close()
for p in pids:
    os.waitpid(p, 0)
g = moved / GIB
user, system = (r1.ru_utime - r0.ru_utime) / g, (r1.ru_stime - r0.ru_stime) / g
print(
    f"relay: {g:.2f} GiB in {t1 - t0:.2f} s ({moved / (t1 - t0) / 1e6:.0f} MB/s), buffer {bufsize} B: "
    f"user {user:.3f}, system {system:.3f}, total {user + system:.3f} s/GiB"
)

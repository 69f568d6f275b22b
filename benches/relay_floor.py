#!/usr/bin/env python3
"""The kernel's share of moving bytes through one process on loopback, as a floor for a
gateway's CPU per GiB: a sender pushes the bytes to a relay that reads each buffer and writes
it on to a sink (what a gateway does with a body, minus everything else). Prints the relay's
CPU seconds per GiB. Sender and sink are forked, so only the relay's CPU is counted.

    python3 benches/relay_floor.py [GiB=4] [buffer bytes=1048576] [sender MB/s, 0 = unpaced]
        [SO_RCVLOWAT bytes of the relay's input]

A gateway moves bytes at the database's rate, which is far below what loopback takes, and the
kernel's work per byte rises as the rate falls (each wake-up finds fewer bytes): the third
argument paces the sender (in 2 MiB writes, the size of a GET's read-ahead window; a PUT's
input comes as the client sends it) so that the floor can be measured at the rate the gateway
saw. The sender writes 2 MiB at a time paced or not (1 MiB until 2026-12-01). The fourth sets SO_RCVLOWAT, so that a
read wakes the relay only once that much has arrived (fewer wake-ups: the lowest floor found).
"""
import os
import resource
import socket
import sys
import time

GIB = 1 << 30
total = int(float(sys.argv[1]) * GIB) if len(sys.argv) > 1 else 4 * GIB
bufsize = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20
rate = float(sys.argv[3]) * 1e6 if len(sys.argv) > 3 else 0.0
lowat = int(sys.argv[4]) if len(sys.argv) > 4 else 0
BURST = 2 << 20


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
    data, sent, start = os.urandom(BURST), 0, time.monotonic()
    while sent < total:
        c.sendall(data)
        sent += len(data)
        if rate:
            ahead = sent / rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
    c.close()


pids = []
for f in (sink, sender):
    pid = os.fork()
    if pid == 0:
        f()
        os._exit(0)
    pids.append(pid)
inp, _ = relay_l.accept()
if lowat:
    inp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, lowat)
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
    f"relay: {g:.2f} GiB in {t1 - t0:.2f} s ({moved / (t1 - t0) / 1e6:.0f} MB/s), buffer {bufsize} B, "
    f"sender {'unpaced' if not rate else f'paced at {rate / 1e6:.0f} MB/s'}, SO_RCVLOWAT {lowat or 'unset'}: "
    f"user {user:.3f}, system {system:.3f}, total {user + system:.3f} s/GiB"
)

"""Writes a synthetic trace of STEPS steps, each 100 (step, layer) scope instances launching one kernel
each: 23 KB per step. For checking that reading and converting a trace take bounded memory.

usage: make_big_trace.py OUT STEPS"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_seeds import event, header, record, s  # noqa: E402


def main():
    path, steps = sys.argv[1], int(sys.argv[2])
    seq = corr = 0
    t = 1000
    with open(path, "wb") as out:
        out.write(header())
        out.write(record(1, s("max_depth") + s("64")))
        out.write(record(2, struct.pack("<I", 3) + s("step")))
        out.write(record(2, struct.pack("<I", 4) + s("layer")))
        out.write(record(4, struct.pack("<I", 1) + s("_Z4gemmPf")))
        for _ in range(steps):
            events, activity = [], []
            for _ in range(100):
                seq += 2
                layer = (1 << 48) | seq
                corr += 1
                events += [event(2, 1, 3, t, layer - 1), event(2, 1, 4, t + 10, layer),
                           event(3, 1, 2, t + 100, 0), event(3, 1, 1, t + 110, 0)]
                activity += [record(11, struct.pack("<QQQ", corr, t + 20, t + 30)),
                             record(12, struct.pack("<QQ", corr, layer)),
                             record(5, struct.pack("<QQQI3I3I5I", corr, t + 40, t + 90, 1, 64, 1, 1, 256, 1, 1,
                                                   40, 512, 0, 0, 7))]
                t += 200
            out.write(record(3, struct.pack("<I", len(events)) + b"".join(events)))
            out.write(b"".join(activity))
            out.write(record(13, struct.pack("<QQ", 0, 0)))
        out.write(record(17, struct.pack("<Q", 0)))


if __name__ == "__main__":
    main()

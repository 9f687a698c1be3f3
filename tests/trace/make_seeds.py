"""Writes fuzz seeds for the trace reader into tests/trace/corpus: a trace with one record of every
type (the format of src/trace/format.hpp, written independently of the C++ writer), and small
defective files. Run it again when the format changes; the corpus is committed."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = b"CUSCOPE-TRACE\n\0\0"


def header(version=1):
    return MAGIC + struct.pack("<II", version, 24)


def record(kind, payload):
    return struct.pack("<II", kind, len(payload)) + payload


def s(text):
    b = text.encode()
    return struct.pack("<I", len(b)) + b


def event(kind, slot, arg, ns, value):
    return struct.pack("<IIQQ", kind | (slot << 8), arg, ns, value)


def summary_head(device, gpu_timing, activity, notes, clock="CLOCK_MONOTONIC"):
    """A Summary record's payload up to its optional tails: statuses, notes, peaks (none), 1 step of
    1 recorded, 400 ns of wall time, the session's other counts 0."""
    out = s(device) + s(gpu_timing) + s(activity) + s("not requested") + s(clock)
    out += struct.pack("<I", len(notes)) + b"".join(s(n) for n in notes)
    return out + struct.pack("<dddd", 0, 0, 0, 0) + s("") + struct.pack("<14Q", 1, 1, 400, *([0] * 11))


def all_records():
    instance = (1 << 48) | 1
    out = header()
    out += record(1, s("max_depth") + s("2"))
    out += record(1, s("start_ns") + s("1000"))
    out += record(1, s("rank") + s("3"))
    out += record(1, s("world_size") + s("4"))
    out += record(2, struct.pack("<I", 3) + s("step"))
    out += record(2, struct.pack("<I", 4) + s("tokens"))
    events = [event(1, 1, 0, 1000, 4242), event(2, 1, 3, 1100, instance), event(2, 1, 3, 1150, instance),
              event(2, 1, 3, 1160, instance), event(3, 1, 0xFFFFFFFF, 1170, 0), event(4, 1, 4, 1200, 0),
              event(5, 1, 0, 1210, 0), event(6, 1, 9, 0, 41), event(3, 1, 2, 1250, 0), event(3, 1, 1, 1300, 0),
              event(6, 0, 9, 0, 42)]  # node 42: made on a thread with no scope state (slot 0)
    out += record(3, struct.pack("<I", len(events)) + b"".join(events))
    out += record(4, struct.pack("<I", 1) + s("_Z4gemmPf"))
    bad_name = b"k\xff\xc0\x80\xed\xa0\x80\"\\\x01"  # not UTF-8, overlong, surrogate, quote, backslash, control
    out += record(4, struct.pack("<I", 2) + struct.pack("<I", len(bad_name)) + bad_name)
    out += record(3, struct.pack("<I", 1) + event(4, 1, 4, 1201, struct.unpack("<Q", struct.pack("<d", float("nan")))[0]))
    out += record(11, struct.pack("<QQQ", 7, 1110, 1120))
    out += record(12, struct.pack("<QQ", 7, instance))
    out += record(5, struct.pack("<QQQI3I3I5I", 7, 1130, 1140, 1, 64, 1, 1, 256, 1, 1, 40, 512, 0, 0, 7))
    out += record(5, struct.pack("<QQQI3I3I5I", 7, 1131, 1139, 2, 1, 1, 1, 32, 1, 1, 16, 0, 0, 0, 7))
    out += record(19, struct.pack("<QQ", 141, 41))  # graph node 41 cloned as 141
    out += record(19, struct.pack("<QQI", 142, 42, 5))  # 42 cloned as 142, into exec 5 (the optional tail)
    out += record(20, struct.pack("<IIQQ", 5, 2, 141, 142))  # exec 5's nodes
    out += record(21, struct.pack("<IQIQQ", 5, 6, 2, 41, 42))  # exec 5 updated (correlation 6) from 41, 42
    out += record(5, struct.pack("<QQQI3I3I5IQI", 7, 1132, 1138, 1, 64, 1, 1, 256, 1, 1, 40, 512, 0, 0, 7, 141, 9))
    out += record(6, struct.pack("<QQQQBII", 7, 1141, 1145, 4096, 0, 0, 7))
    # The same with its memory kinds' tail: pageable source, device destination.
    out += record(6, struct.pack("<QQQQBIIBB", 7, 1141, 1145, 4096, 0, 0, 7, 1, 3))
    out += record(7, struct.pack("<QQQQII", 7, 1146, 1147, 512, 0, 7))
    out += record(8, struct.pack("<QQQ", 8, 1150, 1160))
    out += record(9, struct.pack("<QQQQBI", 7, 1148, 0xABC000, 1 << 20, 1, 0))
    out += record(10, struct.pack("<QQ", 1161, 1162))
    out += record(13, struct.pack("<QQ", 0, 0))
    out += record(15, struct.pack("<QQB", 1310, 1, 1))
    out += record(22, struct.pack("<QB", 1315, 0))  # recording switched off (set_enabled(false))
    out += record(22, struct.pack("<QB", 1320, 1))  # and on again
    out += record(23, struct.pack("<Q", 1325))  # CUPTI attached again (a detach between windows)
    out += record(14, b"")
    out += record(18, struct.pack("<QIII", 5000, 2, 3, 3))
    out += record(16, summary_head("no GPU", "off", "off", ["a note"]))
    out += record(17, struct.pack("<Q", 0))
    return out


def summary_with_tails():
    """A summary with both optional tails: the NVTX spans' (none, and its three counts) and cuscope's
    own processing (buffers, ns), as writers since 2026-11-27 write it."""
    summary = summary_head("NVIDIA H200 (sm_90)", "projected", "on", [], clock="TSC")
    summary += struct.pack("<I", 0) + struct.pack("<3Q", 0, 0, 0)
    summary += struct.pack("<2Q", 3, 4567)
    return header() + record(16, summary) + record(17, struct.pack("<Q", 0))


def main():
    corpus = os.path.join(HERE, "corpus")
    os.makedirs(corpus, exist_ok=True)
    full = all_records()
    seeds = {
        "all_records.cuscope": full,
        "empty_trace.cuscope": header() + record(17, struct.pack("<Q", 0)),
        "summary_tails.cuscope": summary_with_tails(),
        "truncated.cuscope": full[: len(full) // 2],
        "version2.cuscope": header(2) + record(17, struct.pack("<Q", 0)),
        "not_a_trace.json": b'{"traceEvents": []}\n',
    }
    for name, data in seeds.items():
        with open(os.path.join(corpus, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()

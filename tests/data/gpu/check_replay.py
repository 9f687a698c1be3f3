#!/usr/bin/env python3
"""CI's guard of what an H100 and an H200 showed: replays traces recorded there
(tests/data/gpu/README.md) through `cuscope json` and `cuscope show`, and asserts the attribution the
GPU run reported, exactly.

usage: check_replay.py CUSCOPE_CLI DATA_DIR
"""
import json
import subprocess
import sys

# Per trace: the diagnostics that must be zero, then {range path: {field: value}}. Fields: calls,
# self_kernels / kernels (inclusive) / kernel_ns / busy_ns (inclusive), htod/dtoh/dtod bytes (self),
# memset_count / memset_bytes, syncs / sync_ns, alloc_count / alloc_bytes / free_count / free_bytes /
# peak_bytes (self), events / events_ns (calls timed by CUDA events, their total), projected /
# projected_ns (calls with a projected span, its total), sync_finding (the range has the
# synchronization finding), graph ({capture-time path: kernels}), by_kernel ({kernel name: calls}, self).
# A range path mapped to None must not be in the report. Counts are known from the
# programs' code (tests/gpu/*.cu, cuda/transformer_demo.cu); times are the recording GPU's, replayed
# exactly.
MUST_BE_ZERO = ["dropped_records", "zero_timestamp_records", "unresolved_records", "unknown_records",
                "graph_kernels_unknown_node", "incomplete_at_exit", "trace_records_dropped",
                "graph_kernels_after_update", "graph_exec_updates_unmapped", "launch_notes_lost",
                "allocations_untracked", "gpu_event_failures"]

H200_PAGE = 2 << 20  # the H200's cuMemGetAllocationGranularity (minimum), the VMM test's page

EXPECT = {
    # cuscope_demo, 20 steps after 3 warm-up steps (its phase table: 13 kernels a step, 5 of them
    # its own, 8 cuBLAS).
    "h100-demo.cuscope": {
        "step": dict(calls=20, kernels=260, kernel_ns=1760779, busy_ns=1760779),
        "step/load_batch": dict(calls=20, kernels=0, htod=20 * 1024 * 1024),
        "step/norm_1": dict(calls=20, kernels=20, kernel_ns=76479),
        "step/attention": dict(calls=20, kernels=100, self_kernels=0, kernel_ns=917705),
        "step/attention/qkv_proj": dict(calls=20, kernels=20, kernel_ns=159139),
        "step/attention/scores": dict(calls=20, kernels=60, kernel_ns=654950),
        "step/attention/o_proj": dict(calls=20, kernels=20, kernel_ns=103616),
        "step/residual_1": dict(calls=20, kernels=20, kernel_ns=53313),
        "step/norm_2": dict(calls=20, kernels=20, kernel_ns=75934),
        "step/mlp": dict(calls=20, kernels=80, self_kernels=0, kernel_ns=581092),
        "step/mlp/gate_up_proj": dict(calls=20, kernels=40, kernel_ns=300098),
        "step/mlp/silu_mul": dict(calls=20, kernels=20, kernel_ns=115842),
        "step/mlp/down_proj": dict(calls=20, kernels=20, kernel_ns=165152),
        "step/residual_2": dict(calls=20, kernels=20, kernel_ns=56256),
    },
    # tests/gpu "kernel counts per range are exact": 4 steps of 3 + 5 kernels, and the warm-up kernel.
    "h100-kernel-counts.cuscope": {
        "counted": dict(calls=4, self_kernels=0, kernels=32, kernel_ns=27200),
        "counted/three": dict(calls=4, kernels=12, kernel_ns=10464),
        "counted/five": dict(calls=4, kernels=20, kernel_ns=16736),
        "(unscoped)": dict(kernels=1),
    },
    # "kernels on two streams from two threads go to their own scopes": 7 and 11 kernels.
    "h100-two-threads.cuscope": {
        "thread_a": dict(calls=1, kernels=7),
        "thread_b": dict(calls=1, kernels=11),
        "(unscoped)": dict(kernels=1),
    },
    # "a kernel launched with cuLaunchKernel is attributed".
    "h100-culaunchkernel.cuscope": {
        "driver_launch": dict(calls=1, kernels=1, kernel_ns=864),
    },
    # "a captured graph replayed 100 times": 6 kernels a replay, by capture-time path.
    "h100-graph-replay.cuscope": {
        "decode": dict(calls=100, kernels=600, kernel_ns=622026,
                       graph={"capture/layer/attention": 300, "capture/layer": 200, "capture": 100}),
        "capture/layer/attention": dict(calls=1, kernels=0),
    },
    # "cudaGraphExecUpdate: later replays follow the updating graph's capture scopes" (commit 177fcb7, which
    # traces exec updates): 10 replays before the update under v1, 10 after under v2.
    "h100-graph-exec-update.cuscope": {
        "decode": dict(calls=20, kernels=20, kernel_ns=21249, graph={"v1": 10, "v2": 10}),
    },
    # "copy and set bytes are exact per direction": 1 MiB up, 1/4 down, 1/16 device to device (the
    # trace of 2026-11-24; the test since 2026-11-27 also copies 1/8 down with cudaMemcpyAsync, and its
    # traces carry which copies blocked: a trace recorded since needs dtoh = 1/4 + 1/8 here).
    "h100-copies.cuscope": {
        "copies": dict(calls=1, htod=1 << 20, dtoh=(1 << 20) // 4, dtod=(1 << 20) // 16, memset_bytes=4096),
    },
    # "stream waits and event queries are attributed, never left unresolved".
    "h100-stream-waits.cuscope": {
        "waits": dict(calls=1, kernels=200, syncs=200),
    },
    # "a hundred CUDA-calling threads: every kernel counted, none dropped": 10 kernels each.
    "h100-hundred-threads.cuscope": {
        "threaded": dict(calls=100, kernels=1000, kernel_ns=903636),
    },
    # The H200's, launch attribution (tests/data/gpu/README.md). "mapped memory: each cuMemMap an
    # allocation at its address, each cuMemUnmap its free": 4 pages of the granularity (2 MiB) mapped
    # and set in grow, unmapped in shrink, seen by callbacks (no memory records); warm_up's kernel
    # and its and settled()'s synchronizes outside.
    "h200-vmm.cuscope": {
        "grow": dict(calls=1, kernels=0, alloc_count=4, alloc_bytes=4 * H200_PAGE, peak_bytes=4 * H200_PAGE,
                     memset_count=1, memset_bytes=4 * H200_PAGE, free_count=0),
        "shrink": dict(calls=1, kernels=0, free_count=4, free_bytes=4 * H200_PAGE, alloc_count=0),
        "(unscoped)": dict(kernels=1, syncs=2),
    },
    # "without synchronization and memory records, kernels stay exact and the rest is left out"
    # (CUSCOPE_SYNC_RECORDS=0, CUSCOPE_MEMORY_RECORDS=0): 100 times a kernel on each of two streams,
    # one 1 MiB set, the two stream synchronizes, the allocation and its free seen by callbacks.
    "h200-lean.cuscope": {
        "lean": dict(calls=1, kernels=200, kernel_ns=123477, memset_count=1, memset_bytes=1 << 20, syncs=2,
                     sync_ns=5673, alloc_count=1, alloc_bytes=1 << 20, free_count=1, free_bytes=1 << 20,
                     peak_bytes=1 << 20),
        "(unscoped)": dict(kernels=1, syncs=2),
    },
    # "under the defaults a loop that waits for the GPU every step gets the synchronization finding":
    # 10 steps of one 0.2 ms kernel and a stream synchronize seen by its callback, timed by projected
    # spans (one kernel a step: its kernel's time).
    "h200-sync-finding.cuscope": {
        "waits_each_step": dict(calls=10, kernels=10, kernel_ns=2006003, syncs=10, sync_ns=2044924,
                                sync_finding=True, events=0, projected=10, projected_ns=2006003),
        "(unscoped)": dict(kernels=1, syncs=2),
    },
    # "CUSCOPE_EVENTS=auto: where CUPTI traces, scopes record no CUDA events; GPU time is the projected
    # span": 10 scopes of two 0.2 ms kernels on one stream, the warm-up kernel and one synchronize
    # outside.
    "h200-events-auto.cuscope": {
        "auto_timed": dict(calls=10, kernels=20, kernel_ns=4027346, events=0, projected=10, projected_ns=4037266),
        "(unscoped)": dict(kernels=1, syncs=1),
    },
    # "a one-kernel scope timed by CUPTI's event timestamps agrees with its kernel time"
    # (CUSCOPE_EVENT_TIMESTAMPS=cupti): 5 scopes of one 2 ms kernel, each timed by its events' device
    # timestamps; outside, the warm-up kernel, spin_kernel's first launch and the 5 ms kernel.
    "h200-event-timestamps.cuscope": {
        "single": dict(calls=5, kernels=5, kernel_ns=10003612, events=5, events_ns=10016604),
        "(unscoped)": dict(kernels=3, kernel_ns=5002093),
    },
    # "a conditional node's body kernels: counted as graph kernels without their launch": 10 launches
    # of a graph whose if-node body holds one kernel. As on the H100 (CUDA 13.0), the body's 10 kernel
    # records came with correlation id 0 and no launch: graph_kernels_no_launch, in no range.
    "h200-conditional.cuscope": {
        "run": dict(calls=10, kernels=0, events=10, graph={}),
        "loop": dict(calls=1, kernels=0),
        "loop/body": dict(calls=1, kernels=0),
        "(unscoped)": dict(kernels=0, syncs=1),
    },
    # "a graph built by hand takes the scope open at each cudaGraphAddKernelNode, replayed from another
    # thread": two kernel nodes added in build/node_a and build, 10 replays in worker on another thread.
    "h200-graph-by-hand.cuscope": {
        "worker": dict(calls=10, kernels=20, kernel_ns=15968, graph={"build/node_a": 10, "build": 10}),
        "build": dict(calls=1, kernels=0),
        "build/node_a": dict(calls=1, kernels=0),
        "(unscoped)": dict(kernels=0, syncs=2),
    },
    # "warm-up steps' GPU work is left out and counted" (CUSCOPE_WARMUP=2, CUSCOPE_ACTIVE=3): 6 steps
    # of one scope with two kernels, no warm-up kernel before them; steps 2 to 4 recorded, the two
    # warm-up steps' 4 kernels traced and left out, the last step paused. The scopes have no
    # stream: no CUDA events (projected spans only).
    "h200-warmup-window.cuscope": {
        "windowed_step": dict(calls=3, self_kernels=6, kernels=6, kernel_ns=3329, busy_ns=3329, events=0,
                              projected=3, projected_ns=27072,
                              by_kernel={"(anonymous namespace)::empty_kernel()": 6}),
        "(unscoped)": None,
    },
    # "a repeated window traces its warm-up and active steps only, exactly, by either attribution"
    # (CUSCOPE_WAIT=1, CUSCOPE_WARMUP=1, CUSCOPE_ACTIVE=1, CUSCOPE_REPEAT=2): 8 steps of one scope
    # with a 100,000-cycle spin_kernel and an empty_kernel; steps wait, warm-up, active, wait,
    # warm-up, active, then paused. The two active steps' 4 kernels, the spin kernels included
    # (still running when the step ends and CUPTI pauses); the two warm-up steps' 4 left out. The
    # case runs a session per attribution into one trace path: this file is its second session's,
    # external correlation (tests/data/gpu/README.md).
    "h200-repeated-window.cuscope": {
        "cycled_step": dict(calls=2, self_kernels=4, kernels=4, kernel_ns=103263, busy_ns=103263, events=0,
                            projected=2, projected_ns=105952,
                            by_kernel={"(anonymous namespace)::spin_kernel(long long)": 2,
                                       "(anonymous namespace)::empty_kernel()": 2}),
        "(unscoped)": None,
    },
}

# The report's own fields per trace: device (those written before 177fcb7 by a test session, ended
# by a reset rather than at exit, name none), gpu_timing, activity_status, and diagnostics that must
# have a given value.
H200 = "NVIDIA H200 (sm_90)"
# The activity status without synchronization and memory records, under launch attribution.
SEEN_BY_CALLBACKS = ("on, synchronizes and allocations seen by callbacks, without their records "
                     "(CUSCOPE_SYNC_RECORDS=0, CUSCOPE_MEMORY_RECORDS=0)")
# GPU timing under CUSCOPE_EVENTS=auto where CUPTI traces: projected spans, no CUDA events.
PROJECTED = ("projected: each call's span of GPU work as CUPTI traces it, no CUDA events (CUSCOPE_EVENTS=auto; "
             "'always' adds them)")
# CUPTI's status with a step window that pauses it.
PAUSED = "on, paused outside the step window"
EXPECT_REPORT = {
    "h100-graph-exec-update.cuscope": dict(device="NVIDIA H100 80GB HBM3 (sm_90)"),
    "h200-vmm.cuscope": dict(device=H200, activity_status="on, allocations seen by callbacks, without memory "
                             "records (CUSCOPE_MEMORY_RECORDS=0)"),
    "h200-lean.cuscope": dict(device=H200, activity_status=SEEN_BY_CALLBACKS),
    "h200-sync-finding.cuscope": dict(device=H200, gpu_timing=PROJECTED, activity_status=SEEN_BY_CALLBACKS),
    "h200-events-auto.cuscope": dict(device=H200, gpu_timing=PROJECTED, activity_status="on"),
    "h200-event-timestamps.cuscope": dict(
        device=H200, activity_status="on",
        gpu_timing="on, device timestamps from CUPTI (CUSCOPE_EVENT_TIMESTAMPS=cupti)"),
    "h200-conditional.cuscope": dict(device=H200, diagnostics=dict(graph_kernels_no_launch=10)),
    "h200-graph-by-hand.cuscope": dict(device=H200),
    # The step window: steps counted, those recorded, the first recorded one (wait + warm-up), and
    # the scopes and GPU records left outside it (known from the programs' code).
    "h200-warmup-window.cuscope": dict(
        device=H200, gpu_timing="on", activity_status=PAUSED, steps=6, recorded_steps=3, window_start_step=2,
        diagnostics=dict(outside_window_records=4, outside_window_scopes=3)),
    "h200-repeated-window.cuscope": dict(
        device=H200, gpu_timing="on", activity_status=PAUSED, steps=8, recorded_steps=2, window_start_step=2,
        notes=[], diagnostics=dict(outside_window_records=4, outside_window_scopes=6)),
}

# `cuscope show` of the demo: the total line (the H100 run's table said "GPU busy 0 ns": fixed).
SHOW_DEMO_TOTAL = "total: host 10.5 ms in top-level ranges — kernel time 1.76 ms — GPU busy 1.76 ms"


def field(r, name):
    s, t = r["self"], r["total"]
    return {
        "calls": lambda: r["calls"],
        "self_kernels": lambda: s["kernel_calls"],
        "kernels": lambda: t["kernel_calls"],
        "kernel_ns": lambda: t["kernel_ns"],
        "busy_ns": lambda: t["gpu_busy_ns"],
        "htod": lambda: s["memcpy"]["HtoD"]["bytes"],
        "dtoh": lambda: s["memcpy"]["DtoH"]["bytes"],
        "dtod": lambda: s["memcpy"]["DtoD"]["bytes"],
        "memset_bytes": lambda: s["memset_bytes"],
        "memset_count": lambda: s["memset_count"],
        "syncs": lambda: s["sync_count"],
        "sync_ns": lambda: s["sync_ns"],
        "alloc_count": lambda: s["alloc_count"],
        "alloc_bytes": lambda: s["alloc_bytes"],
        "free_count": lambda: s["free_count"],
        "free_bytes": lambda: s["free_bytes"],
        "peak_bytes": lambda: s["peak_bytes"],
        "events": lambda: r["gpu"]["count"],
        "events_ns": lambda: r["gpu"]["total_ns"],
        "projected": lambda: r["gpu_projected"]["count"],
        "projected_ns": lambda: r["gpu_projected"]["total_ns"],
        "sync_finding": lambda: any(f["id"] == "synchronization" for f in r["findings"]),
        "graph": lambda: {g["path"]: g["kernel_calls"] for g in r["graph"]},
        "by_kernel": lambda: {k["name"]: k["duration"]["count"] for k in r["kernels"]},
    }[name]()


def check_projected(trace, ranges, fail):
    """Each call's projected span (first GPU operation's start to the last one's end): for ranges
    whose every call ran one kernel and nothing else, it is that kernel's time exactly; for ranges
    whose every call was also timed by CUDA events, it is never longer than the events' time (it
    leaves out their idle lead-in). Returns how many ranges each rule checked."""
    one_op = both = 0
    for r in ranges:
        t, proj, ev = r["total"], r["gpu_projected"], r["gpu"]
        copies = sum(c["count"] for c in t["memcpy"].values()) + t["memset_count"]
        if r["calls"] > 0 and t["kernel_calls"] == r["calls"] == proj["count"] and copies == 0:
            one_op += 1
            if proj["total_ns"] != t["kernel_ns"]:
                fail(f"{trace}: {r['path']}: projected {proj['total_ns']} ns, not its one kernel a call's "
                     f"{t['kernel_ns']} ns")
        if r["calls"] > 0 and ev["count"] == r["calls"] == proj["count"]:
            both += 1
            if proj["total_ns"] > ev["total_ns"] or proj["max_ns"] > ev["max_ns"]:
                fail(f"{trace}: {r['path']}: projected total/max {proj['total_ns']}/{proj['max_ns']} ns over the "
                     f"CUDA events' {ev['total_ns']}/{ev['max_ns']} ns")
    return one_op, both


def main():
    cli, data = sys.argv[1], sys.argv[2]
    failures = 0

    def fail(msg):
        nonlocal failures
        failures += 1
        print(f"check_replay: FAILED: {msg}")

    one_op_ranges = both_ranges = 0
    for trace, ranges in EXPECT.items():
        path = f"{data}/{trace}"
        p = subprocess.run([cli, "json", path], capture_output=True, text=True)
        if p.returncode != 0:
            fail(f"cuscope json {trace} exited {p.returncode}: {p.stderr.strip()}")
            continue
        report = json.loads(p.stdout)
        for d in MUST_BE_ZERO:
            if report["diagnostics"].get(d, 0) != 0:
                fail(f"{trace}: diagnostics.{d} = {report['diagnostics'][d]}, not 0")
        for name, want in EXPECT_REPORT.get(trace, {}).items():
            if name == "diagnostics":
                for d, n in want.items():
                    if report["diagnostics"][d] != n:
                        fail(f"{trace}: diagnostics.{d} = {report['diagnostics'][d]}, not {n}")
            elif report[name] != want:
                fail(f"{trace}: {name} '{report[name]}', not '{want}'")
        by_path = {r["path"]: r for r in report["ranges"][1:]}
        for rpath, fields in ranges.items():
            r = by_path.get(rpath)
            if fields is None:
                if r is not None:
                    fail(f"{trace}: a range '{rpath}', where none must be")
                continue
            if r is None:
                fail(f"{trace}: no range '{rpath}'")
                continue
            for name, want in fields.items():
                got = field(r, name)
                if got != want:
                    fail(f"{trace}: {rpath} {name} = {got}, not {want}")
        print(f"check_replay: {trace}: {len(ranges)} ranges checked")
        one_op, both = check_projected(trace, report["ranges"][1:], fail)
        one_op_ranges += one_op
        both_ranges += both
    # The projected span (gpu_projected) against what the GPUs measured otherwise.
    print(f"check_replay: projected span equals kernel time in {one_op_ranges} one-kernel ranges, "
          f"is within the CUDA-event time in {both_ranges} ranges timed both ways")
    if one_op_ranges == 0 or both_ranges == 0:
        fail("the projected span was compared with nothing (no one-kernel range, or none timed both ways)")
    p = subprocess.run([cli, "show", f"{data}/h100-demo.cuscope"], capture_output=True, text=True)
    if SHOW_DEMO_TOTAL not in p.stdout.splitlines():
        fail(f"cuscope show h100-demo.cuscope: no line '{SHOW_DEMO_TOTAL}'")
    if "device: NVIDIA H100 80GB HBM3 (sm_90)" not in p.stdout:
        fail("cuscope show h100-demo.cuscope: the device is not named")
    print("check_replay: " + ("all passed" if failures == 0 else f"{failures} failed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

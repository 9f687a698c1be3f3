#!/usr/bin/env python3
"""Guards the model against unintended change: replays every trace here (H100 and H200) through
`cuscope json` and compares the JSON, byte for byte, with the report committed in golden/ when the
model was last changed on purpose. A diff prints the first differing lines of each report.

usage: check_golden.py CUSCOPE_CLI DATA_DIR [--update]
  --update  rewrite golden/*.json from the current build (after a change meant to alter a report:
            say in the commit which numbers moved and why)
"""
import difflib
import pathlib
import subprocess
import sys


def main():
    args = [a for a in sys.argv[1:] if a != "--update"]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    cli, data = args[0], pathlib.Path(args[1])
    update = "--update" in sys.argv[1:]
    traces = sorted(data.glob("*.cuscope"))
    if not traces:
        print(f"check_golden: no traces in {data}", file=sys.stderr)
        return 1
    failed = 0
    for trace in traces:
        golden = data / "golden" / (trace.stem + ".json")
        p = subprocess.run([cli, "json", str(trace)], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"FAIL {trace.name}: cuscope json exited {p.returncode}: {p.stderr.strip()}")
            failed += 1
            continue
        if update:
            golden.write_text(p.stdout)
            print(f"wrote {golden}")
            continue
        if not golden.exists():
            print(f"FAIL {trace.name}: no committed report {golden} (run with --update and commit it)")
            failed += 1
            continue
        want = golden.read_text()
        if p.stdout == want:
            print(f"ok   {trace.name}: {len(want)} bytes identical")
            continue
        failed += 1
        print(f"FAIL {trace.name}: the replayed report differs from {golden.name}")
        diff = difflib.unified_diff(want.splitlines(), p.stdout.splitlines(), "committed", "now", lineterm="", n=1)
        for i, line in enumerate(diff):
            if i == 40:
                print("  ...")
                break
            print("  " + line)
    print(f"{len(traces) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

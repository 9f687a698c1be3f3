#!/usr/bin/env python3
"""Every Catch2 case name of a test binary can be run and reported: fails when one cannot.

    check_case_names.py BINARY

A name holding ';' is split in two by catch_discover_tests (CMake lists), and neither half names a
case. A name whose first ': ' ends past column 70 makes Catch2's console reporter (v2) indent the
wrapped lines of its header past its width of 80: it aborts the whole binary when it prints that
header (a failure, a warning), hiding the failure it was about to print. Prints each offending
name and exits 1; 0 when there is none.

Never: run the cases themselves.
"""
import subprocess
import sys

MAX_COLON_END = 70


def problems(names):
    out = []
    for name in names:
        if ";" in name:
            out.append(f"holds ';' (CTest would split it): {name}")
        colon = name.find(": ")
        if colon != -1 and colon + 2 > MAX_COLON_END:
            out.append(f"first ': ' ends at column {colon + 2}, past {MAX_COLON_END} "
                       f"(Catch2's reporter would abort on its header): {name}")
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    # Catch2 v2 exits with the number of names it listed (at most 255), not with a status: whether
    # it listed is told by the names.
    listed = subprocess.run([argv[1], "--list-test-names-only"], capture_output=True, text=True)
    names = [line for line in listed.stdout.splitlines() if line.strip()]
    if not names:
        print(f"check_case_names.py: {argv[1]} --list-test-names-only lists no case "
              f"({listed.stderr.strip() or 'nothing on standard error'})")
        return 1
    found = problems(names)
    for p in found:
        print(p)
    print(f"{len(names)} case names, {len(found)} that cannot be run or reported as they are")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

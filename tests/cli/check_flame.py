#!/usr/bin/env python3
"""`cuscope flame` on a crafted report: every box's width, place and colour against the report's
numbers, the tooltips, what is too narrow to draw; with --chromium, the SVG rendered by headless
Chromium (Debian's `chromium`) and the screenshot's pixels checked: each box's colour is where the
SVG puts it. --picture PNG keeps that screenshot (the picture in README.md and docs/cli.md, docs/flame.png).

usage: check_flame.py CUSCOPE WORK_DIR [--chromium [--picture PNG]]"""
import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reports  # noqa: E402
from reports import check, fail  # noqa: E402

cli, work = sys.argv[1:3]
chromium = "--chromium" in sys.argv
picture = sys.argv[sys.argv.index("--picture") + 1] if "--picture" in sys.argv else None
if picture:
    picture = os.path.abspath(picture)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
SVG = "{http://www.w3.org/2000/svg}"
MS = 1_000_000


# A training step as a user's report shows it; "prefetch" runs on a thread beside the step, so its
# two children sum to more than itself; "log" and its child are too narrow to draw at 1200 px.
verdict = {"bound": "memory-bound", "reason": "DRAM at 87% of peak while SM at 12%"}
tree = {
    "step": {"calls": 10, "host_ns": 1000 * MS, "gpu_ns": 950 * MS, "kernel_ns": 900 * MS, "children": {
        "data <io & aug>": {"calls": 10, "host_ns": 80 * MS},
        "forward": {"calls": 10, "host_ns": 350 * MS, "gpu_ns": 340 * MS, "kernel_ns": 330 * MS, "children": {
            "attention": {"calls": 10, "host_ns": 200 * MS, "gpu_ns": 195 * MS, "kernel_ns": 190 * MS,
                          "busy": (190 * MS, 200 * MS), "verdict": verdict, "children": {
                              "qkv": {"calls": 10, "host_ns": 70 * MS, "kernel_ns": 68 * MS},
                              "softmax": {"calls": 10, "host_ns": 110 * MS, "kernel_ns": 100 * MS}}},
            "mlp": {"calls": 10, "host_ns": 130 * MS, "gpu_ns": 125 * MS, "kernel_ns": 120 * MS}}},
        "backward": {"calls": 10, "host_ns": 480 * MS, "gpu_ns": 470 * MS, "kernel_ns": 460 * MS, "children": {
            "mlp_grad": {"calls": 10, "host_ns": 250 * MS, "kernel_ns": 240 * MS},
            "attention_grad": {"calls": 10, "host_ns": 210 * MS, "kernel_ns": 200 * MS}}},
        "optimizer": {"calls": 10, "host_ns": 70 * MS, "kernel_ns": 60 * MS},
        "log": {"calls": 10, "host_ns": MS // 10, "children": {"flush": {"calls": 1, "host_ns": MS // 20}}}}},
    "prefetch": {"calls": 5, "host_ns": 200 * MS, "children": {
        "read": {"calls": 5, "host_ns": 150 * MS}, "decode": {"calls": 5, "host_ns": 150 * MS}}},
}
reports.write("report.json", tree)
value_of = {"host": lambda r: r["host"]["total_ns"], "kernel": lambda r: r["total"]["kernel_ns"]}
report = reports.report(tree)
ranges = report["ranges"]


def expected_boxes(metric, width=1200.0, margin=10.0):
    """path -> (x, y, w) by the rule docs/cli.md states; and the number of ranges too narrow."""
    value = value_of[metric]
    boxes, narrow = {}, 0
    total = sum(value(ranges[c]) for c in ranges[0]["children"])
    boxes[""] = (margin, 34, width)

    def subtree(i):
        return sum(1 + subtree(c) for c in ranges[i]["children"] if value(ranges[c]) > 0)

    def place(i, v, x, w, depth):
        nonlocal narrow
        kids = ranges[i]["children"]
        whole = max(v, sum(value(ranges[c]) for c in kids))
        for c in kids:
            cv = value(ranges[c])
            cw = w * cv / whole if whole else 0
            if cv == 0:
                continue
            if cw < 0.5:
                narrow += 1 + subtree(c)
            else:
                boxes[ranges[c]["path"]] = (x, 34 + 20 * depth, cw)
                place(c, cv, x, cw, depth + 1)
            x += cw

    place(0, total, margin, width, 1)
    return boxes, narrow, total


def drawn(svg_path):
    root = ET.parse(svg_path).getroot()
    out = {}
    for g in root.iter(SVG + "g"):
        rect = g.find(SVG + "rect")
        out[g.get("data-path")] = {"x": float(rect.get("x")), "y": float(rect.get("y")),
                                   "w": float(rect.get("width")), "fill": rect.get("fill"),
                                   "title": g.find(SVG + "title").text, "value": int(g.get("data-value")),
                                   "label": (g.find(SVG + "text").text if g.find(SVG + "text") is not None else None)}
    footer = [t.text for t in root.iter(SVG + "text") if t.get("class") == "footer"]
    return root, out, footer


for metric in ("host", "kernel"):
    svg = f"flame-{metric}.svg"
    r = subprocess.run([cli, "flame", "--metric", metric, "report.json", "-o", svg], capture_output=True, text=True)
    check(r.returncode == 0, f"cuscope flame --metric {metric} exited {r.returncode}: {r.stderr}")
    root, boxes, footer = drawn(svg)
    want, narrow, total = expected_boxes(metric)
    check(root.get("data-total") == str(total), f"{metric}: total {root.get('data-total')}, expected {total}")
    check(set(boxes) == set(want), f"{metric}: boxes {sorted(boxes)}, expected {sorted(want)}")
    for path, (x, y, w) in want.items():
        b = boxes[path]
        check(abs(b["x"] - x) <= 0.006 and b["y"] == y and abs(b["w"] - w) <= 0.006,
              f"{metric}: {path!r} drawn at x={b['x']} y={b['y']} w={b['w']}, expected x={x:.3f} y={y} w={w:.3f}")
        if path:
            check(b["value"] == value_of[metric](next(r for r in ranges if r["path"] == path)), f"{path} value")
    expected_footer = [f"{narrow} ranges narrower than 0.5 px not drawn"] if narrow else []
    check(footer == expected_footer, f"{metric}: footer {footer}, expected {expected_footer}")
    print(f"ok: --metric {metric}: {len(want)} boxes at the widths of the report, {narrow} too narrow, counted")

_, boxes, _ = drawn("flame-host.svg")
check(boxes["step/forward"]["w"] == 1200 * 350 / 1200 and boxes["prefetch/read"]["w"] == 200 * 150 / 300,
      "host widths: forward 350 px, prefetch's children share its 200 px")
attention = boxes["step/forward/attention"]["title"].split("\n")
check(attention == ["step/forward/attention", "host time: 200 ms (16.7% of all)", "calls: 10",
                    "host: 200 ms total, 20.0 ms mean", "GPU: 195 ms total, 19.5 ms mean",
                    "kernels: 1 launch, 190 ms, GPU busy 95.0%", "memory-bound: DRAM at 87% of peak while SM at 12%"],
      f"attention's tooltip: {attention}")
check(boxes["step/forward/attention"]["label"] == "attention" and boxes[""]["label"] == "all",
      "labels: the range's name, 'all' for the top row")
check(boxes["step/data <io & aug>"]["label"] == "data <io …", "a label cut to its box, its name escaped")
check(boxes["step/data <io & aug>"]["fill"] != boxes["step/forward"]["fill"], "ranges of other names get other colours")
print("ok: tooltips carry the range's numbers and its verdict; labels and colours")

r = subprocess.run([cli, "flame", "report.json"], capture_output=True, text=True)
check(r.returncode == 2 and r.stderr.startswith("cuscope flame: -o OUT is required\n\nusage: cuscope flame"),
      f"flame without -o: {r.returncode} {r.stderr}")
r = subprocess.run([cli, "flame", "--metric", "wall", "report.json", "-o", "x.svg"], capture_output=True, text=True)
check(r.returncode == 2 and r.stderr.startswith("cuscope flame: --metric 'wall' is not host, gpu or kernel"),
      f"flame --metric wall: {r.returncode} {r.stderr}")
r = subprocess.run([cli, "flame", "missing.json", "-o", "x.svg"], capture_output=True, text=True)
check(r.returncode == 1 and r.stderr.startswith("cuscope flame: missing.json: cannot open") and not os.path.exists("x.svg"),
      f"flame of a missing file: {r.returncode} {r.stderr}")
print("ok: flame's bad command lines and bad input")

# A tree deeper than any session records (a report read from a file may hold one): rows past 300
# are counted, not drawn.
chain = {}
node = chain
for depth in range(400):
    node["r"] = {"calls": 1, "host_ns": MS, "children": {}}
    node = node["r"]["children"]
reports.write("deep.json", chain)
deep = subprocess.run([cli, "flame", "deep.json", "-o", "deep.svg"], capture_output=True, text=True)
check(deep.returncode == 0, f"flame of a 400-deep chain: exit {deep.returncode}: {deep.stderr}")
root, deep_boxes, footer = drawn("deep.svg")
check(len(deep_boxes) == 301 and footer == ["100 ranges deeper than 300 rows not drawn"],
      f"a 400-deep chain: {len(deep_boxes)} boxes, footer {footer}")
print("ok: a 400-deep chain: rows past 300 counted, not drawn")

if not chromium:
    sys.exit(0)


def read_png(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA PNG, with Python's zlib alone."""
    data = open(path, "rb").read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
            check(depth == 8 and colour_type in (2, 6) and interlace == 0, f"PNG kind {depth} {colour_type}")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    bpp = 3 if colour_type == 2 else 4
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


browser = shutil.which("chromium")
check(browser is not None, "chromium is not installed (cmake/setup.sh installs Debian's chromium)")
root = ET.parse("flame-host.svg").getroot()
width, height = int(root.get("width")), int(root.get("height"))
shot = os.path.abspath("flame.png")
r = subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
                    "--force-device-scale-factor=1", f"--user-data-dir={os.path.abspath('profile')}",
                    f"--screenshot={shot}", f"--window-size={width},{height}",
                    "file://" + os.path.abspath("flame-host.svg")], capture_output=True, text=True, timeout=120)
check(r.returncode == 0 and os.path.exists(shot), f"chromium exited {r.returncode}: {r.stderr[-2000:]}")
w, h, pixels = read_png(shot)
check((w, h) == (width, height), f"screenshot is {w}x{h}, expected {width}x{height}")
checked = 0
for path, b in boxes.items():
    if b["w"] < 8:
        continue
    rgb = tuple(int(v) for v in b["fill"][4:-1].split(","))
    # Near the box's top right corner: inside it, away from its label.
    x, y = int(b["x"] + b["w"] - 3), int(b["y"] + 3)
    got = pixels[y][x]
    check(all(abs(g - e) <= 2 for g, e in zip(got, rgb)), f"{path!r}: pixel ({x},{y}) is {got}, its box is {rgb}")
    checked += 1
check(checked >= 12, f"only {checked} boxes checked")
check(pixels[height - 2][width - 2] == (255, 255, 255), "the background is white")
# The label "step" in black: dark pixels in its first characters (fonts-dejavu-core, from setup.sh).
step = boxes["step"]
dark = sum(1 for y in range(int(step["y"]) + 3, int(step["y"]) + 17) for x in range(int(step["x"]) + 3, int(step["x"]) + 30)
           if max(pixels[y][x]) < 110)
check(dark >= 20, f"the label 'step' is not drawn ({dark} dark pixels)")
print(f"ok: headless Chromium draws the SVG: {checked} boxes in their colours where the SVG puts them")
if picture:
    shutil.copyfile(shot, picture)
    print(f"kept the screenshot as {picture}")

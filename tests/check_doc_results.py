#!/usr/bin/env python3
"""The figures of README.md and docs/ against the committed files they come from. Two checks:
every results file a page cites (a bench/results/*.json or a validation/*.log, in a link, in
backticks or in prose) exists in the tree; and every figure tests/doc_figures.txt lists is written
on its page as listed and matches its file (a JSON value rounded to the digits the page shows, a
log's line, or a code block's every line). Never edits a page, never runs a benchmark, never
guesses which file a figure not listed comes from. Usage: check_doc_results.py SOURCE_DIR
[FIGURES]. Exit 0 when every cited file exists and every listed figure matches, 1 naming each
that does not."""
import ast
import json
import pathlib
import re
import sys

# A path through bench/results/ or validation/, or any link to a .json or .log (a page in
# docs/validation/ links its logs by bare name).
CITED = re.compile(r"[\w./\-]*(?:bench/results|validation)/[\w.\-]+\.(?:json|log)\b"
                   r"|(?<=\]\()[\w./\-]+\.(?:json|log)(?=[)#])")
# A number as pages write it: 1,663 or 19.8 or 16.
NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
# A key of the WHERE column, with an optional scale: "report.snapshot÷1e6", "scope.traced#cv×100",
# "paired.transformer.defaults_over_without#min".
SCALED_KEY = re.compile(r"^(?P<key>.+?)(?:(?P<op>[×÷])(?P<by>[\d.e+]+))?$")


def missing(md, root):
    for number, line in enumerate(md.read_text().split("\n"), 1):
        for cited in CITED.findall(line):
            from_page = (md.parent / cited).resolve()
            from_root = (root / cited.lstrip("./")).resolve()
            if not any(p.is_file() and root in p.parents for p in (from_page, from_root)):
                yield f"{md.relative_to(root)}:{number}: '{cited}': no such file"


def one_space(text):
    return " ".join(text.split())


def json_value(data, key):
    """A value of a results JSON: a path "a > b", a measurement's or target's key, or a top key."""
    field = "value"
    if "#" in key:  # a row's other field: "#cv", or a paired figure's rounds' "#min" and "#max"
        key, field = key.rsplit("#", 1)
    if " > " in key:
        for part in key.split(" > "):
            data = data[part]
        return data
    for row in data.get("measurements", []):
        if row["key"] == key:
            return row[field]
    for row in data.get("targets", []):
        if row["key"] == key:
            return row["measured" if field == "value" else field]
    return data[key]


def rounds_to(value, written):
    decimals = len(written.split(".")[1]) if "." in written else 0
    return abs(value - float(written.replace(",", ""))) <= 0.5 * 10**-decimals + 1e-9 * abs(value)


def json_problems(figure, path, where):
    numbers, keys = NUMBER.findall(figure), [k.strip() for k in where.split(",")]
    if len(numbers) != len(keys):
        yield f"{len(numbers)} numbers but {len(keys)} keys"
        return
    data = json.loads(path.read_text())
    for written, scaled in zip(numbers, keys):
        parts = SCALED_KEY.match(scaled)
        try:
            value = float(json_value(data, parts["key"]))
        except (KeyError, TypeError):
            yield f"{path.name} has no '{parts['key']}'"
            continue
        if parts["op"]:
            by = float(parts["by"])
            value = value * by if parts["op"] == "×" else value / by
        if not rounds_to(value, written):
            yield f"{written} is not {parts['key']} ({value:g} in {path.name})"


def excerpt_problems(page_text, figure, path):
    lines = page_text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.rstrip() == figure]
    if not starts:
        yield "no code-block line starts the excerpt"
        return
    held = {line.rstrip() for line in path.read_text(errors="replace").split("\n")}
    for line in lines[starts[0]:]:
        if line.startswith("```"):
            return
        if line.strip() and line.rstrip() not in held:
            yield f"'{line.strip()[:60]}' is not in {path.name}"


def fields(row):
    """PAGE | FIGURE | FILE | WHERE, where FIGURE may hold " | " itself (a table row)."""
    page, rest = row.split(" | ", 1)
    return (page.strip(), *(part.strip() for part in rest.rsplit(" | ", 2)))


def figure_problems(root, row):
    page, figure, cited, where = fields(row)
    page_path, path = root / page, root / cited
    if not page_path.is_file() or not path.is_file():
        yield f"no such file: {page if not page_path.is_file() else cited}"
        return
    page_text = page_path.read_text()
    if where == "excerpt":
        yield from excerpt_problems(page_text, figure, path)
        return
    if one_space(figure) not in one_space(page_text):
        yield "the page does not write it"
    elif where.startswith('"'):
        if ast.literal_eval(where) not in path.read_text(errors="replace"):
            yield f"{cited} does not hold {where}"
    else:
        yield from json_problems(figure, path, where)


def listed_figures(figures):
    for number, line in enumerate(figures.read_text().split("\n"), 1):
        if line.strip() and not line.startswith("#"):
            yield number, line


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    figures = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else root / "tests/doc_figures.txt"
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    cited = sum(len(CITED.findall(md.read_text())) for md in pages)
    absent = [problem for md in pages for problem in missing(md, root)]
    rows = list(listed_figures(figures))
    wrong = [f"{figures.name}:{number}: {fields(row)[0]}: '{fields(row)[1][:50]}': {problem}"
             for number, row in rows for problem in figure_problems(root, row)]
    for problem in absent + wrong:
        print(problem)
    print(f"{len(pages)} pages, {cited} citations of results files, {len(absent)} missing; "
          f"{len(rows)} listed figures, {len(wrong)} problems")
    return 1 if absent or wrong or cited == 0 or not rows else 0


if __name__ == "__main__":
    sys.exit(main())

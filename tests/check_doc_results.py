#!/usr/bin/env python3
"""Every results file that README.md or docs/ cites (a bench/results/*.json or a validation/*.log, in a
link, in backticks or in prose) exists in the tree: a figure must never point at a file that is gone.
Never judges the figures themselves. Usage: check_doc_results.py SOURCE_DIR. Exit 0 when every cited
file exists, 1 naming each that does not."""
import pathlib
import re
import sys

# A path through bench/results/ or validation/, or any link to a .json or .log (a page in
# docs/validation/ links its logs by bare name).
CITED = re.compile(r"[\w./\-]*(?:bench/results|validation)/[\w.\-]+\.(?:json|log)\b"
                   r"|(?<=\]\()[\w./\-]+\.(?:json|log)(?=[)#])")


def missing(md, root):
    for number, line in enumerate(md.read_text().split("\n"), 1):
        for cited in CITED.findall(line):
            from_page = (md.parent / cited).resolve()
            from_root = (root / cited.lstrip("./")).resolve()
            if not any(p.is_file() and root in p.parents for p in (from_page, from_root)):
                yield f"{md.relative_to(root)}:{number}: '{cited}': no such file"


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    cited = sum(len(CITED.findall(md.read_text())) for md in pages)
    absent = [problem for md in pages for problem in missing(md, root)]
    for problem in absent:
        print(problem)
    print(f"{len(pages)} pages, {cited} citations of results files, {len(absent)} missing")
    return 1 if absent or cited == 0 else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Every relative link in README.md and docs/ (Markdown files) names a file that exists, and every
#anchor a heading of that file (GitHub's slugs). Never follows http(s) links or reads code blocks.
Usage: check_doc_links.py SOURCE_DIR. Exit 0 when all resolve, 1 naming each that does not."""
import pathlib
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def prose_lines(text):
    """The lines of a Markdown file outside fenced code blocks."""
    fenced = False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield line


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    return {slug(line.lstrip("#")) for line in prose_lines(path.read_text()) if line.startswith("#")}


def broken_links(md, root):
    for number, line in enumerate(prose_lines(md.read_text()), 1):
        line = re.sub(r"`[^`]*`", "", line)
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (md.parent / file_part).resolve() if file_part else md
            if not resolved.is_file() or root not in resolved.parents:
                yield f"{md.relative_to(root)}: '{target}': no such file"
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                yield f"{md.relative_to(root)}: '{target}': no heading with that anchor"


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    broken = [problem for md in pages for problem in broken_links(md, root)]
    for problem in broken:
        print(problem)
    print(f"{len(pages)} pages, {len(broken)} broken links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

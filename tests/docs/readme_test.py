#!/usr/bin/python3
"""The README a newcomer reads, and the docs pages it links, stay usable:
README.md is at most 300 lines and its first commands are the set-up and the
test command (CI runs the latter); every relative link in README.md and docs/
names a file that exists (and a heading that exists, for #anchors); every page
directly in docs/ opens with a contents list that links each of its sections.
Usage: readme_test.py REPO_ROOT"""

import os
import re
import sys

MAX_README_LINES = 300
failures = []

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def fail(what):
    failures.append(what)


def strip_code(lines):
    """Lines outside fenced code blocks, with their 1-based numbers."""
    out, fenced = [], False
    for i, ln in enumerate(lines, 1):
        if ln.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append((i, ln))
    return out


def slug(text):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    with open(path, encoding="utf-8") as f:
        for _, ln in strip_code(f.read().splitlines()):
            # An explicit HTML anchor (<a id="x"></a>) is a target too: GitHub keeps it.
            out.update(re.findall(r'<a\s+(?:id|name)="([^"]+)"', ln))
            m = HEADING.match(ln)
            if not m:
                continue
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def check_links(path, repo):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    rel = os.path.relpath(path, repo)
    for num, ln in strip_code(lines):
        ln = re.sub(r"`[^`]*`", "", ln)  # code spans are not links
        ln = re.sub(r"<!--.*?-->", "", ln)  # nor is what a comment holds (it is not rendered)
        for target in LINK.findall(ln):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(dest):
                fail(f"{rel}:{num}: link to {target}: {os.path.relpath(dest, repo)} does not exist")
                continue
            if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                fail(f"{rel}:{num}: link to {target}: no heading with anchor #{anchor}")


def check_readme(repo):
    path = os.path.join(repo, "README.md")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if len(lines) > MAX_README_LINES:
        fail(f"README.md has {len(lines)} lines, more than {MAX_README_LINES}: move detail to docs/")
    # The first fenced block's first two commands: set-up, then the tests.
    commands, fenced = [], False
    for ln in lines:
        if ln.lstrip().startswith("```"):
            if fenced:
                break
            fenced = True
            continue
        if fenced and ln.strip() and not ln.lstrip().startswith("#"):
            commands.append(ln.strip())
    if len(commands) < 2:
        fail("README.md: the first code block must hold the set-up and the test commands")
        return
    if not commands[0].startswith("scripts/setup.sh"):
        fail(f"README.md: the first command is '{commands[0]}', not the set-up (scripts/setup.sh ...)")
    if not re.match(r"^scripts/test\.sh(\s|$)", commands[1]):
        fail(f"README.md: the second command is '{commands[1]}', not the tests (scripts/test.sh)")


def check_contents(path, repo):
    """The page opens with a summary and a contents list linking each of its ## sections."""
    rel = os.path.relpath(path, repo)
    with open(path, encoding="utf-8") as f:
        lines = [ln for _, ln in strip_code(f.read().splitlines())]
    sections = [slug(m.group(2)) for m in map(HEADING.match, lines) if m and len(m.group(1)) == 2]
    try:
        start = next(i for i, ln in enumerate(lines) if re.match(r"^##\s+contents\s*$", ln, re.I))
    except StopIteration:
        fail(f"{rel}: no '## Contents' list")
        return
    listed = []
    for ln in lines[start + 1:]:
        if ln.startswith("#"):
            break
        listed += re.findall(r"\]\(#([^)]+)\)", ln)
    missing = [s for s in sections if s != "contents" and s not in listed]
    if not listed:
        fail(f"{rel}: the contents list links no section")
    if missing:
        fail(f"{rel}: the contents list leaves out {', '.join('#' + s for s in missing)}")
    first = next((i for i, ln in enumerate(lines) if ln.startswith("## ")), len(lines))
    if first != start or not any(ln.strip() and not ln.startswith("#") for ln in lines[:start]):
        fail(f"{rel}: a one-paragraph summary, then the contents list, must open the page")


def main():
    repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    check_readme(repo)
    docs = os.path.join(repo, "docs")
    pages = sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md")) if os.path.isdir(docs) else []
    if not pages:
        fail("docs/ holds no pages")
    for page in pages:
        check_contents(page, repo)
    md = [os.path.join(repo, "README.md")]
    for root, _, names in os.walk(docs):
        md += [os.path.join(root, n) for n in sorted(names) if n.endswith(".md")]
    for path in md:
        check_links(path, repo)
    for f in failures:
        print("FAIL:", f)
    print("readme_test:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: GPL-2.0
"""The documentation check of `rkprobes test` (host phase).

Three checks, each a list of problems (empty when it passes):

- links: every link in README.md, docs/**, results/** and Documentation/** resolves inside the
  repository: markdown inline and reference links, autolinks and bare URLs outside code; rst
  hyperlinks (from docutils' own parse) and kernel-style path references
  (`Documentation/....rst`, which the kernel's automarkup turns into links: those may name an
  upstream page, so they resolve in the repository or in the pristine tree). A URL with a scheme
  leaves the repository and fails; a markdown link to `file.md#anchor` needs the heading.
- readme: README.md has fewer than README_MAX_LINES lines.
- rst: the design page RST_PAGES parse with docutils without any warning (docutils is Debian's
  python3-docutils; without it the check fails and says how to install it). The pages use plain
  docutils constructs only, no Sphinx or kernel-only directives such as `.. kernel-doc::`.

Run alone: `python3 -m scripts.rkprobes_lib.doccheck` from the repository's top.
"""

import io
import re
import sys
from pathlib import Path

from . import common

README_MAX_LINES = 250
RST_PAGES = ("Documentation/trace/kprobes-rust.rst",)
LINKED_DIRS = ("docs", "results", "Documentation")
# Debian's python3-docutils, for an interpreter (pyenv, a venv) that does not see it.
DEBIAN_DIST_PACKAGES = Path("/usr/lib/python3/dist-packages")

SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
MD_FENCE_RE = re.compile(r"^\s*(```|~~~)")
MD_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
MD_INLINE_RE = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
MD_REFDEF_RE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
MD_AUTOLINK_RE = re.compile(r"<([a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]+)>")
BARE_URL_RE = re.compile(r"\b(?:https?|ftp)://[^\s<>()`]+")
KERNEL_DOC_PATH_RE = re.compile(r"(?<![\w/.-])(Documentation/[\w./-]+\.rst)\b")


def _docutils():
    try:
        import docutils.core  # noqa: F401
        import docutils.nodes  # noqa: F401
    except ImportError:
        if (DEBIAN_DIST_PACKAGES / "docutils").is_dir() and str(DEBIAN_DIST_PACKAGES) not in sys.path:
            sys.path.append(str(DEBIAN_DIST_PACKAGES))
            return _docutils()
        return None
    import docutils
    return docutils


def _files(repo):
    files = [repo / "README.md"] if (repo / "README.md").is_file() else []
    for d in LINKED_DIRS:
        files += sorted(p for p in (repo / d).rglob("*") if p.suffix in (".md", ".rst") and p.is_file())
    return files


def _slug(heading):
    """GitHub's anchor of a markdown heading."""
    text = MD_CODE_SPAN_RE.sub(lambda m: m.group(2), heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _md_anchors(path):
    anchors, seen, fenced = set(), {}, False
    for ln in path.read_text(errors="replace").splitlines():
        if MD_FENCE_RE.match(ln):
            fenced = not fenced
        elif not fenced and re.match(r"^#{1,6}\s", ln):
            slug = _slug(ln.lstrip("#"))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _md_links(path):
    """(line number, target) of each link in a markdown file, code blocks and spans left out."""
    links, fenced = [], False
    for no, ln in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if MD_FENCE_RE.match(ln):
            fenced = not fenced
            continue
        if fenced:
            continue
        text = MD_CODE_SPAN_RE.sub("", ln)
        found = [m.group(1) for m in MD_INLINE_RE.finditer(text)]
        found += [m.group(1) for m in MD_AUTOLINK_RE.finditer(text)]
        m = MD_REFDEF_RE.match(text)
        if m:
            found.append(m.group(1))
            text = ""
        rest = MD_AUTOLINK_RE.sub("", MD_INLINE_RE.sub("", text))
        found += BARE_URL_RE.findall(rest)
        links += [(no, t) for t in found]
    return links


def _rst_links(path, du):
    """(line number, target) of each hyperlink docutils finds, and each kernel-style path."""
    src = path.read_text(errors="replace")
    links = []
    if du is not None:
        from docutils import core, nodes
        tree = core.publish_doctree(src, source_path=str(path), settings_overrides={
            "report_level": 5, "halt_level": 5, "warning_stream": io.StringIO(),
            "file_insertion_enabled": False, "raw_enabled": False})
        walk = tree.findall if hasattr(tree, "findall") else tree.traverse
        for node in walk(nodes.reference):
            if node.get("refuri"):
                line, up = node.line, node.parent
                while line is None and up is not None:
                    line, up = up.line, up.parent
                links.append((line or 0, node["refuri"]))
    for no, ln in enumerate(src.splitlines(), 1):
        links += [(no, ("kernel-path", m.group(1))) for m in KERNEL_DOC_PATH_RE.finditer(ln)]
    return links


def check_links(repo=None, pristine=None):
    repo = Path(repo or common.REPO).resolve()
    pristine = Path(pristine or common.PRISTINE)
    du = _docutils()
    problems, count = [], 0
    anchors = {}
    for f in _files(repo):
        rel = f.relative_to(repo)
        links = _md_links(f) if f.suffix == ".md" else _rst_links(f, du)
        for no, target in links:
            count += 1
            where = f"{rel}:{no}"
            if isinstance(target, tuple):
                doc = target[1]
                if not (repo / doc).is_file() and not (pristine / doc).is_file():
                    problems.append(f"{where}: {doc} is neither in the repository nor in the pristine tree "
                                    f"({pristine})")
                continue
            if SCHEME_RE.match(target) or target.startswith("//"):
                problems.append(f"{where}: {target} leaves the repository")
                continue
            path, _, frag = target.partition("#")
            if not path:
                dest = f
            elif path.startswith("/"):
                problems.append(f"{where}: {target} is an absolute path")
                continue
            else:
                dest = (f.parent / path).resolve()
            if dest != repo and repo not in dest.parents:
                problems.append(f"{where}: {target} leaves the repository")
            elif not dest.exists():
                problems.append(f"{where}: {target} does not exist")
            elif frag and dest.suffix == ".md":
                if dest not in anchors:
                    anchors[dest] = _md_anchors(dest)
                if frag not in anchors[dest]:
                    problems.append(f"{where}: {target}: no heading #{frag} in {dest.relative_to(repo)}")
    return problems, count


def check_readme(repo=None):
    repo = Path(repo or common.REPO)
    n = len((repo / "README.md").read_text(errors="replace").splitlines())
    problems = [] if n < README_MAX_LINES else [f"README.md has {n} lines, at most {README_MAX_LINES - 1} allowed"]
    return problems, n


def check_rst(repo=None):
    repo = Path(repo or common.REPO)
    du = _docutils()
    if du is None:
        return [f"docutils is missing for {sys.executable}: install Debian's python3-docutils "
                "(scripts/rkprobes setup does), or `pip install docutils` for this interpreter"], None
    from docutils import core, utils
    problems = []
    for page in RST_PAGES:
        stream = io.StringIO()
        try:
            core.publish_doctree((repo / page).read_text(), source_path=page, settings_overrides={
                "report_level": utils.Reporter.WARNING_LEVEL, "halt_level": utils.Reporter.SEVERE_LEVEL + 1,
                "warning_stream": stream, "file_insertion_enabled": False, "raw_enabled": False})
        except Exception as e:  # noqa: BLE001 - any failure to parse is the check's failure
            stream.write(f"{page}: docutils failed: {e}\n")
        problems += [ln for ln in stream.getvalue().splitlines() if ln.strip()]
    return problems, du.__version__


def run():
    """All three checks: (passed, failed, note), note holding one line per check and the problems."""
    results = []
    links, count = check_links()
    results.append((links, f"links: {count} checked in README.md, docs/, results/, Documentation/"))
    readme, n = check_readme()
    results.append((readme, f"README.md: {n} lines (under {README_MAX_LINES})"))
    rst, version = check_rst()
    results.append((rst, f"rst: {', '.join(RST_PAGES)} parsed by docutils {version}" if version
                    else "rst: not parsed"))
    passed = sum(1 for p, _ in results if not p)
    failed = len(results) - passed
    lines = [f"{'ok' if not p else 'FAILED'}: {what}" for p, what in results]
    summary = "; ".join(lines)
    details = [f"  {ln}" for p, _ in results for ln in p]
    return passed, failed, "\n".join([summary] + details)


def main():
    passed, failed, note = run()
    print(note)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

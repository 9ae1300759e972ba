# SPDX-License-Identifier: GPL-2.0
"""`rkprobes check-layout`: the import graph of the Rust core, and its cycles.

The core is the logic files `kernel/kprobes/*.rs` (pure, host-tested) and the kernel glue
`kernel/kprobes/glue/*.rs`. A file names another through `super::<file>` or `crate::<file>`
(and, in the glue, `crate::glue::<file>` or `super::<file>`); comments are not edges. The
design wants no cycle: each logic file builds on files below it, the glue on the logic, never
back (DESIGN.md; issue 37). Cycles still to be split are listed in KNOWN_CYCLES; the check
fails on a cycle not listed there, and on a listed one that is gone (so the list only shrinks).
"""

import re
import sys

from . import common

CORE = common.REPO / "kernel" / "kprobes"

# Import cycles allowed for now, each the sorted set of files in one strongly connected
# component. Empty since glue/platform.rs was split (issue 37): keep it so.
KNOWN_CYCLES = []

def _strip_comments(src):
    return re.sub(r"//[^\n]*", "", src)


def modules():
    """{module name: source} of the logic and glue files."""
    out = {}
    for path in sorted(CORE.glob("*.rs")) + sorted((CORE / "glue").glob("*.rs")):
        rel = path.relative_to(CORE).with_suffix("")
        name = "::".join(rel.parts)
        if name == "kprobes_rust":
            continue  # the crate root mounts every file
        out[name] = _strip_comments(path.read_text())
    return out


def edges(mods):
    """{module: set of modules it names}."""
    out = {m: set() for m in mods}
    for m, src in mods.items():
        in_glue = m.startswith("glue::")
        for kind, first, second in re.findall(r"\b(crate|super)::([a-z_0-9]+)(?:::([a-z_0-9]+))?", src):
            if kind == "crate":
                target = f"glue::{second}" if first == "glue" and second else first
            elif in_glue:
                target = f"glue::{first}"
            else:
                target = first
            if target in mods and target != m:
                out[m].add(target)
        if in_glue:
            # `use super::{a, b}` groups
            for group in re.findall(r"\bsuper::\{([^}]*)\}", src):
                for name in re.findall(r"\b([a-z_0-9]+)\b", group):
                    if f"glue::{name}" in mods and f"glue::{name}" != m:
                        out[m].add(f"glue::{name}")
    return out


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(tuple(sorted(comp)))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def check():
    """(problems, report lines)."""
    graph = edges(modules())
    found = cycles(graph)
    lines = [f"{m} -> {', '.join(sorted(t)) or '-'}" for m, t in sorted(graph.items())]
    known = [tuple(sorted(c)) for c in KNOWN_CYCLES]
    problems = [f"new import cycle: {' <-> '.join(c)}" for c in found if c not in known]
    problems += [f"listed cycle gone (take it out of KNOWN_CYCLES): {' <-> '.join(c)}" for c in known
                 if c not in found]
    lines += [f"cycle ({'known, to split' if c in known else 'NEW'}): {' <-> '.join(c)}" for c in found]
    return problems, lines


def add_args(p):
    p.add_argument("--edges", action="store_true", help="print every module's edges, not only the verdict")


def cmd_check_layout(args):
    problems, lines = check()
    for ln in lines if args.edges else [ln for ln in lines if ln.startswith("cycle")]:
        print(ln)
    if problems:
        raise common.Failure("layout check failed:\n  " + "\n  ".join(problems))
    n = len(modules())
    if KNOWN_CYCLES:
        common.info(f"layout: no new import cycle among {n} files ({len(KNOWN_CYCLES)} known, to split)")
    else:
        common.info(f"layout: no import cycle among the {n} logic and glue files")
    return 0


def test_row(res):
    problems, lines = check()
    known = sum(1 for ln in lines if ln.startswith("cycle"))
    res.add("host: layout, import cycles of kernel/kprobes (scripts/rkprobes check-layout)",
            int(not problems), int(bool(problems)),
            note="; ".join(problems) if problems else
            (f"no new cycle; {known} known, listed to split" if known else "no cycle"))

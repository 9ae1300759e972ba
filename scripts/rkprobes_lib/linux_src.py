# SPDX-License-Identifier: GPL-2.0
"""`--linux-src DIR`: build, test and run on a kernel tree the user already has.

DIR is a git tree of Linux 6.12.y. Instead of the cache's prepared tree (pristine + overlay),
the commands apply the exported series (export.py) there with `git am`, on a branch `rkprobes`
started from the commit DIR had checked out the first time, and build from DIR into build
directories of its own under the cache. When the repository's series changes, the branch is
started again from that commit and the new series applied. A patch that does not apply stops
the command with its name and git's reason, and leaves DIR as it was (`git am --abort`).
"""

import hashlib
import json
import re
import subprocess
import tempfile
from pathlib import Path

from . import cli, common, export
from .common import Failure, info

BRANCH = "rkprobes"


def add_arg(p):
    p.add_argument("--linux-src", default=None, metavar="DIR",
                   help="a git tree of Linux 6.12.y to build from instead of the cache's copy of Debian's source: "
                   f"the series of `rkprobes export` is applied there with git am, on a branch '{BRANCH}'")
    cli.checks(p, use_from_args, chain=True)


def _git(src, *args, check=True, **kw):
    r = subprocess.run(["git", "-C", str(src), *args], capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise Failure(f"git {' '.join(args)} in {src} failed: {(r.stderr or r.stdout).strip()[-600:]}")
    return r


def problem(src):
    """Why `src` cannot be used as --linux-src, or None."""
    if not (src / "Makefile").is_file():
        return "it has no top-level Makefile"
    mk = (src / "Makefile").read_text(errors="replace")
    if not (re.search(r"^VERSION = 6$", mk, re.M) and re.search(r"^PATCHLEVEL = 12$", mk, re.M)):
        return "its Makefile is not Linux 6.12"
    if _git(src, "rev-parse", "--git-dir", check=False).returncode != 0:
        return "it is not a git tree (git init; git add -A; git commit makes one)"
    return None


def use_from_args(args):
    """cli.checks hook: with --linux-src, refuse an unusable tree and point the commands at it."""
    if args.linux_src is None:
        return
    src = Path(args.linux_src).resolve()
    why = problem(src)
    if why:
        raise cli.UsageError(f"--linux-src {args.linux_src}: {why}; valid: a git tree of Linux 6.12.y")
    use(src)


def use(src):
    """Build from `src` from now on (tree.prepare() applies the series there)."""
    common.LINUX_SRC = src
    common.TREE = src
    common.BUILD_ROOT = common.CACHE / "build-src" / hashlib.sha256(str(src).encode()).hexdigest()[:12]


def _state_path(src):
    return Path(_git(src, "rev-parse", "--absolute-git-dir").stdout.strip()) / "rkprobes-linux-src.json"


def prepare():
    """Apply the current series to common.LINUX_SRC unless it is there already; returns its head."""
    src = common.LINUX_SRC
    state_path = _state_path(src)
    try:
        state = json.loads(state_path.read_text())
    except (OSError, ValueError):
        state = {}
    head = _git(src, "rev-parse", "HEAD").stdout.strip()
    commits = export.plan()
    digest = hashlib.sha256(repr([(c[1], c[2], c[3] and c[3].read_bytes(),
                                   sorted((d, (common.REPO / s).read_bytes()) for d, s in c[4].items()))
                                  for c in commits]).encode()).hexdigest()
    if state.get("series") == digest and state.get("head") == head:
        return head
    if _git(src, "status", "--porcelain", "--untracked-files=no").stdout.strip():
        raise Failure(f"--linux-src {src}: the tree has uncommitted changes; commit or stash them first")
    base = state.get("base") if state.get("head") == head else head
    with tempfile.TemporaryDirectory(prefix="rkprobes-series-") as tmp:
        patches = export.export(Path(tmp))[1:]
        info(f"--linux-src {src}: applying {len(patches)} patches with git am on branch '{BRANCH}' from {base[:12]}")
        _git(src, "checkout", "-q", "-B", BRANCH, base)
        name, email = export._identity()
        r = subprocess.run(["git", "-C", str(src), "-c", f"user.name={name}", "-c", f"user.email={email}", "am", "-q",
                            *map(str, patches)], capture_output=True, text=True)
        if r.returncode != 0:
            out = r.stdout + r.stderr
            m = re.search(r"Patch failed at (\d+) (.*)", out)
            _git(src, "am", "--abort", check=False)
            first = f"patch {m.group(1)} '{m.group(2)}'" if m else "a patch"
            reason = next((ln for ln in out.splitlines() if ln.startswith(("error:", "Applying"))), out.strip()[:300])
            raise Failure(f"--linux-src {src}: {first} of the series does not apply to {base[:12]} "
                          f"({reason}); the tree is left at that commit on branch '{BRANCH}'")
    head = _git(src, "rev-parse", "HEAD").stdout.strip()
    state_path.write_text(json.dumps({"base": base, "head": head, "series": digest}))
    return head

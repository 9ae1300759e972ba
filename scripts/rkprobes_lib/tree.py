# SPDX-License-Identifier: GPL-2.0
"""The prepared tree: pristine 6.12 + the patch series + the overlay.

Preparing is idempotent and incremental: a file of the tree is written only
when its content must change, so re-running never double-applies a patch and
an unchanged overlay leaves every mtime alone (the next build stays
incremental). What was applied is recorded in the tree's state file; files
the overlay or the series no longer touch go back to their pristine content.
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import common
from .common import Failure, info

PATCHES = common.REPO / "scripts" / "patches"
STATE = common.TREE / ".rkprobes-state.json"

# Repository directories that mirror kernel paths and land unchanged in the tree.
OVERLAY_DIRS = ("kernel", "arch", "rust", "samples", "Documentation")
# Repository files that land elsewhere: the overlay's entry points.
OVERLAY_FILES = {"Kconfig": "kernel/kprobes/Kconfig", "Kbuild": "kernel/kprobes/Kbuild"}
# Host-only files inside the mirrored directories never enter the kernel tree.
HOST_ONLY_SUFFIXES = (".md", ".toml", ".lock")


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _repo_files():
    """Files of the repository (tracked, or untracked and not ignored) under `dirs`."""
    try:
        out = subprocess.run(["git", "-C", str(common.REPO), "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard", "--"] + list(OVERLAY_DIRS),
                             capture_output=True, check=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = [str(p.relative_to(common.REPO)) for d in OVERLAY_DIRS
                 for p in (common.REPO / d).rglob("*") if p.is_file()]
    return [f for f in files if (common.REPO / f).is_file() and not f.endswith(HOST_ONLY_SUFFIXES)
            and "/fuzz/" not in f]


def overlay_manifest():
    """Map tree path -> repository path for every overlay file."""
    manifest = {f: f for f in _repo_files()}
    for src, dst in OVERLAY_FILES.items():
        if (common.REPO / src).is_file():
            manifest[dst] = src
    return manifest


def series_names():
    series = PATCHES / "series"
    if not series.is_file():
        return []
    names = [ln.strip() for ln in series.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    for n in names:
        if not (PATCHES / n).is_file():
            raise Failure(f"scripts/patches/series names {n}, which does not exist")
    return names


def patched_paths(patch_text):
    paths = []
    for ln in patch_text.splitlines():
        if ln.startswith("+++ "):
            p = ln[4:].split("\t")[0].strip()
            paths.append(p.split("/", 1)[1] if "/" in p else p)
    return paths


def _write_if_changed(dst, data):
    """Write `data` to `dst` only when it differs; returns True when written."""
    try:
        if dst.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".rkprobes-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, dst)
    return True


def _restore_pristine(rel):
    src = common.PRISTINE / rel
    dst = common.TREE / rel
    if src.is_file():
        _write_if_changed(dst, src.read_bytes())
    elif dst.exists():
        dst.unlink()


def _apply_series(names, old_paths):
    """Apply the series to pristine copies of the files it touches, then sync them into the tree."""
    texts = {n: (PATCHES / n).read_text() for n in names}
    touched = sorted({p for t in texts.values() for p in patched_paths(t)})
    with tempfile.TemporaryDirectory(prefix="rkprobes-patch-") as tmp:
        work = Path(tmp)
        for rel in touched:
            src = common.PRISTINE / rel
            if src.is_file():
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, work / rel)
        for n in names:
            r = subprocess.run(["patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch",
                                "-d", str(work), "-i", str(PATCHES / n)], capture_output=True, text=True)
            if r.returncode != 0:
                raise Failure(f"scripts/patches/{n} does not apply to pristine {common.KERNEL_VERSION}:\n"
                              + r.stdout[-1500:] + r.stderr[-500:])
        changed = [rel for rel in touched if _write_if_changed(common.TREE / rel, (work / rel).read_bytes())]
    for rel in set(old_paths) - set(touched):
        _restore_pristine(rel)
    return touched, changed


def prepare():
    """Bring the prepared tree up to date with the repository. Call with the build lock held.
    With --linux-src, the series is applied to the user's tree instead (linux_src.py)."""
    if common.LINUX_SRC:
        from . import linux_src  # linux_src imports export, which imports this module

        return {"linux_src": linux_src.prepare()}
    if not (common.TREE / "Makefile").is_file():
        info(f"creating the prepared tree {common.TREE} from the pristine one (about a minute)")
        tmp = common.TREE.with_name("tree.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        r = subprocess.run(["cp", "-a", str(common.PRISTINE), str(tmp)])
        if r.returncode != 0:
            raise Failure(f"copying {common.PRISTINE} failed; is the disk full?")
        (tmp / ".rkprobes-unpacked").unlink(missing_ok=True)
        shutil.rmtree(common.TREE, ignore_errors=True)
        tmp.rename(common.TREE)
    try:
        state = json.loads(STATE.read_text())
    except (OSError, ValueError):
        state = {"patches": {}, "patched_paths": [], "overlay": {}}

    names = series_names()
    want = {n: _sha((PATCHES / n).read_bytes()) for n in names}
    want_order = names
    if want != state.get("patches") or want_order != state.get("patch_order"):
        touched, changed = _apply_series(names, state.get("patched_paths", []))
        state.update(patches=want, patch_order=want_order, patched_paths=touched)
        info(f"patch series: {len(names)} patch(es), {len(changed)} file(s) changed in the tree")
    patched = set(state.get("patched_paths", []))

    manifest = overlay_manifest()
    clash = sorted(patched & set(manifest))
    if clash:
        raise Failure("these files are both overlaid and patched; keep one: " + ", ".join(clash))
    written = 0
    for dst, src in manifest.items():
        if _write_if_changed(common.TREE / dst, (common.REPO / src).read_bytes()):
            written += 1
    gone = [rel for rel in state.get("overlay", {}) if rel not in manifest]
    for rel in gone:
        _restore_pristine(rel)
    if any(rel.startswith("rust/kernel/") and rel.endswith(".rs") for rel in gone):
        # Kbuild does not rebuild a crate that lost a source file when no file it still lists
        # changed (rust/kernel/kprobes.rs becoming rust/kernel/kprobes/mod.rs left every build
        # directory with the old kernel crate): a newer crate root makes each compile it again.
        os.utime(common.TREE / "rust" / "kernel" / "lib.rs")
    state["overlay"] = {dst: True for dst in manifest}
    STATE.write_text(json.dumps(state, indent=1, sort_keys=True))
    if written or gone:
        info(f"overlay: {len(manifest)} file(s), {written} updated, {len(gone)} removed")
    return state

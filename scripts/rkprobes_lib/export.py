# SPDX-License-Identifier: GPL-2.0
"""`rkprobes export`: the overlay and the patch series as a `git format-patch` series.

The series is made in a git repository of the pristine 6.12 source (one commit, kept in the
cache): each patch of scripts/patches/ becomes a commit, in the order of EXPORT_ORDER, together
with the overlay files it hooks into the build (WITH_PATCH); overlay files no patch hooks are
commits of their own (ALONE). Every overlay file must land in exactly one commit. The commits
are signed off by the repository's git identity; a patch that names the upstream commit it
backports ("Linux commit <sha>") gets the stable-style line `commit <sha> upstream.` first.
`git format-patch --cover-letter` writes the series, and the cover letter says what, why, the
numbers (results/README.md's latest bench) and how to test.

`check(res)` (a row of `rkprobes test`) exports to a scratch directory, applies the series with
`git am` to a fresh clone of the pristine repository, compares the result file for file with
the tree the overlay builds (pristine + series + overlay), and runs checkpatch.pl --strict on
every patch: 0 errors, warnings listed.
"""

import fcntl
import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

from . import cli, common, tree
from .common import Failure, info

BASE_REPO = common.CACHE / "export" / "pristine.git-tree"
BASE_TAG = f"v{common.KERNEL_VERSION}"
SUBJECT_MAX = 75
COVER = "0000-cover-letter.txt"

# Overlay files (tree paths, prefixes) committed with the patch that hooks them into the build.
WITH_PATCH = {
    "0001": ("kernel/kprobes/",),
    "0005": ("Documentation/trace/kprobes-rust.rst",),
    "0100": ("rust/kernel/kprobes/", "rust/helpers/kprobes.c"),
    "0101": ("samples/rust/rust_kprobe.rs", "samples/rust/rust_kretprobe.rs"),
    "0102": ("Documentation/rust/kprobes.rst",),
    "0104": ("rust/kernel/sync/rcu.rs", "rust/helpers/rcu.c"),
    "0105": ("rust/kernel/percpu.rs",),
    "0107": ("rust/kernel/ftrace.rs", "rust/kernel/preempt.rs", "rust/helpers/ftrace.c", "rust/helpers/preempt.c"),
    "0200": ("arch/x86/lib/", "arch/x86/tools/"),
    "0201": ("arch/x86/kernel/kprobes/",),
    "0202": ("arch/arm64/kernel/probes/",),
    "0203": ("arch/riscv/kernel/probes/",),
    "0204": ("arch/loongarch/kernel/probes/",),
    "0206": ("arch/s390/",),
    "0207": ("arch/powerpc/",),
}
# Overlay files that nothing builds yet (host-tested only): a commit each, (key, subject, prefixes, body).
# None since the s390 and powerpc arch layers got their build patches (0206, 0207).
ALONE = []
# The commits in order: upstream fixes and C infrastructure first, then the Rust abstractions the
# core uses, the decoder, the core, the arch layers, samples, the other arches' Rust support, docs.
# Patches that touch the same file keep the order of scripts/patches/series (their context).
EXPORT_ORDER = ["0003", "0004", "0007", "0008", "0205", "0002", "0100", "0103", "0104", "0105", "0106", "0107",
                "0200", "0001", "0201", "0202", "0203", "0204", "0101", "0300", "0301", "0302", "0303", "0305",
                "0306", "0206", "0207", "0304", "0102", "0005", "0009", "0006"]


def add_args(p):
    p.add_argument("--base", default=BASE_TAG,
                   help=f"the kernel the series is for, named in the cover letter: v6.12 or v6.12.N (default "
                   f"{BASE_TAG}, the Debian source it is made against)")
    p.add_argument("-o", "--output", default="rkprobes-series", metavar="DIR",
                   help="directory the series is written to (default ./rkprobes-series; emptied of *.patch first)")
    cli.checks(p, _check_args)


def _check_args(args):
    if not re.fullmatch(r"v6\.12(\.\d+)?", args.base):
        raise cli.UsageError(f"unsupported --base {args.base}: the series is for Linux 6.12.y; valid values: v6.12, "
                             f"v6.12.N (default {BASE_TAG})")


def _git(repo, *args, check=True, **kw):
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise Failure(f"git {' '.join(args)} in {repo} failed (exit {r.returncode}): "
                      f"{(r.stderr or r.stdout).strip()[-800:]}")
    return r.stdout


def _identity():
    name = _git(common.REPO, "config", "user.name", check=False).strip() or "rkprobes"
    email = _git(common.REPO, "config", "user.email", check=False).strip() or "rkprobes@localhost"
    return name, email


def _git_env(repo):
    name, email = _identity()
    return ["-c", f"user.name={name}", "-c", f"user.email={email}"]


def base_repo():
    """The git repository of the pristine source, made once: one commit tagged BASE_TAG."""
    if (BASE_REPO / ".git").is_dir() and _git(BASE_REPO, "tag", "-l", BASE_TAG, check=False).strip():
        return BASE_REPO
    info(f"making a git repository of the pristine source in {BASE_REPO} (once; a few minutes)")
    tmp = BASE_REPO.with_name(BASE_REPO.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["cp", "-a", str(common.PRISTINE), str(tmp)]).returncode != 0:
        raise Failure(f"copying {common.PRISTINE} failed; is the disk full?")
    (tmp / ".rkprobes-unpacked").unlink(missing_ok=True)
    _git(tmp, "init", "-q")
    _git(tmp, "add", "-A", "-f")
    _git(tmp, *_git_env(tmp), "commit", "-q", "-m", f"Linux {common.KERNEL_VERSION}\n\nDebian's linux-source-6.12 "
         f"({common.SOURCE_TARBALL.name}), unchanged.")
    _git(tmp, "tag", BASE_TAG)
    shutil.rmtree(BASE_REPO, ignore_errors=True)
    tmp.rename(BASE_REPO)
    return BASE_REPO


def _patch_message(path):
    """(subject, body) of a scripts/patches/ file: its first line, then the text up to the diff."""
    text = path.read_text()
    head = re.split(r"^(?:--- a/|diff --git )", text, maxsplit=1, flags=re.M)[0]
    lines = head.rstrip().splitlines()
    body = "\n".join(lines[1:]).strip()
    m = re.search(r"Linux commit ([0-9a-f]{12,40})", body)
    if m:
        body = f"commit {m.group(1)} upstream.\n\n{body}"
    return lines[0].strip(), body


def plan():
    """The commits: a list of (key, subject, body, patch path or None, overlay {tree path: repo path})."""
    names = {n[:4]: n for n in tree.series_names()}
    manifest = tree.overlay_manifest()
    claimed = {}
    for key, prefixes in list(WITH_PATCH.items()) + [(k, p) for k, _, p, _ in ALONE]:
        for dst in manifest:
            if dst.startswith(prefixes):
                if dst in claimed:
                    raise Failure(f"export: {dst} is claimed by {claimed[dst]} and {key}; fix WITH_PATCH/ALONE in "
                                  "scripts/rkprobes_lib/export.py")
                claimed[dst] = key
    unclaimed = sorted(set(manifest) - set(claimed))
    if unclaimed:
        raise Failure("export: no commit takes these overlay files; add them to WITH_PATCH or ALONE in "
                      "scripts/rkprobes_lib/export.py: " + ", ".join(unclaimed))
    missing = sorted(set(names) - set(EXPORT_ORDER))
    if missing:
        raise Failure("export: these patches of scripts/patches/series are not in EXPORT_ORDER of "
                      "scripts/rkprobes_lib/export.py: " + ", ".join(names[k] for k in missing))
    commits = []
    alone = {k: (s, b) for k, s, _, b in ALONE}
    for key in EXPORT_ORDER:
        files = {dst: manifest[dst] for dst, k in sorted(claimed.items()) if k == key}
        if key in alone:
            if files:
                commits.append((key, *alone[key], None, files))
            continue
        if key not in names:
            if files:
                raise Failure(f"export: {', '.join(files)} go with patch {key}, which is not in the series")
            continue
        path = tree.PATCHES / names[key]
        commits.append((key, *_patch_message(path), path, files))
    for key, subject, *_ in commits:
        if len(subject) > SUBJECT_MAX:
            raise Failure(f"export: the subject of {key} is {len(subject)} characters, over {SUBJECT_MAX}: {subject}")
    return commits


def make_commits(repo, commits):
    """Commit `commits` on a branch `rkprobes` from BASE_TAG in `repo`; returns the branch's head."""
    _git(repo, "checkout", "-q", "-f", "-B", "rkprobes", BASE_TAG)
    _git(repo, "clean", "-q", "-fdx")
    name, email = _identity()
    for key, subject, body, patch, files in commits:
        if patch:
            r = subprocess.run(["patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch", "-F0",
                                "-d", str(repo), "-i", str(patch)], capture_output=True, text=True)
            if r.returncode != 0:
                raise Failure(f"export: {patch.name} does not apply in the export order after the commits before it:\n"
                              + (r.stdout + r.stderr)[-1500:])
        for dst, src in files.items():
            (repo / dst).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(common.REPO / src, repo / dst)
        # -f: Debian's .gitignore ignores everything at the top level of its source.
        paths = list(files) + (tree.patched_paths(patch.read_text()) if patch else [])
        _git(repo, "add", "-f", "-A", "--", *paths)
        msg = f"{subject}\n\n{body}\n\nSigned-off-by: {name} <{email}>\n" if body else \
            f"{subject}\n\nSigned-off-by: {name} <{email}>\n"
        _git(repo, *_git_env(repo), "commit", "-q", "-F", "-", input=msg)
    return _git(repo, "rev-parse", "HEAD").strip()


def _headline_numbers():
    """The README's headline numbers (one bench run), links reduced to their text."""
    text = (common.REPO / "README.md").read_text()
    m = re.search(r"^## Headline numbers\n(.*?)(?=^## )", text, re.M | re.S)
    if not m:
        return "See the project's README.md, \"Headline numbers\"."
    body = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).strip()
    return "\n".join(ln for ln in body.splitlines() if ln.startswith("|") or not ln.startswith("!"))


def cover_letter(commits, base):
    subject = "kprobes: a Rust kprobes core, its arch layers and kernel::kprobes"
    n_files = sum(len(c[4]) for c in commits)
    body = f"""This series adds a Rust implementation of the kprobes core
(kernel/kprobes/, built instead of kernel/kprobes.c with CONFIG_KPROBES_RUST=y),
Rust arch layers for x86_64, arm64, riscv and loongarch
(CONFIG_KPROBES_RUST_ARCH=y), the safe `kernel::kprobes` abstraction with
samples, and the Rust support ppc64le and s390 need to build the core.
With both options off the kernel is upstream's, byte for byte in kprobes.

Why: kprobes runs in the breakpoint handler, under text_mutex and RCU, with
hand-kept invariants about aggregates, optimization and disarming; the Rust
core states them in types, and two upstream bugs it found are fixed in C too
(patches 1 and 2).

Base: Linux {base} (made against Debian's linux-source-6.12,
{common.KERNEL_VERSION}). {len(commits)} patches, {n_files} new files. Toolchain:
rustc 1.96 and bindgen 0.73 with LLVM/clang 22 (LLVM=-22).

Numbers (QEMU -icount, C against Rust; the project's README.md):
{_headline_numbers()}

How to test:
  tools/testing/kunit/kunit.py run --arch=x86_64 --make_options LLVM=1 \\
      --kunitconfig=<the project>/tools/testing/rkprobes/kunit/kprobes-rust
or, with the project: scripts/rkprobes test --linux-src <this tree>.
The design is in Documentation/trace/kprobes-rust.rst (patch "docs: trace").
"""
    return subject, body


@contextmanager
def _repo_lock():
    """One export at a time per cache: they share the pristine repository's work tree."""
    BASE_REPO.parent.mkdir(parents=True, exist_ok=True)
    with open(BASE_REPO.parent / "export.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def export(out_dir, base=BASE_TAG):
    """Write the series to `out_dir`; returns the list of patch files (cover letter first)."""
    commits = plan()
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in [*out_dir.glob("*.patch"), out_dir / COVER]:
        old.unlink(missing_ok=True)
    with _repo_lock():
        repo = base_repo()
        head = make_commits(repo, commits)
        _git(repo, "format-patch", "-q", "--cover-letter", "--thread=shallow", "--no-signature",
             f"--base={BASE_TAG}", "-o", str(out_dir), f"{BASE_TAG}..{head}")
    generated = out_dir / "0000-cover-letter.patch"
    subject, body = cover_letter(commits, base)
    text = generated.read_text().replace("*** SUBJECT HERE ***", subject).replace("*** BLURB HERE ***", body.rstrip())
    # Not *.patch, so that `git am DIR/*.patch` applies the patches alone (git am stops at a cover
    # letter: "Patch is empty"); `git send-email DIR/*` still sends it first.
    cover = out_dir / COVER
    cover.write_text(text)
    generated.unlink()
    return [cover] + sorted(out_dir.glob("*.patch"))


def cmd_export(args):
    out = Path(args.output).resolve()
    files = export(out, args.base)
    for f in files:
        print(f"  {f.name}")
    info(f"export: {len(files) - 1} patches and a cover letter ({COVER}) in {out}; apply with "
         f"`git am {out}/*.patch` on a {args.base} tree, send with `git send-email {out}/*`")
    return 0


def expected_tree(dest):
    """Write into `dest` every file the prepared tree changes from pristine (series and overlay), as
    it has it; returns the set of those paths."""
    names = tree.series_names()
    touched = sorted({p for n in names for p in tree.patched_paths((tree.PATCHES / n).read_text())})
    for rel in touched:
        if (common.PRISTINE / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(common.PRISTINE / rel, dest / rel)
    for n in names:
        r = subprocess.run(["patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch", "-d", str(dest),
                            "-i", str(tree.PATCHES / n)], capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure(f"scripts/patches/{n} does not apply to pristine {common.KERNEL_VERSION}")
    manifest = tree.overlay_manifest()
    for dst, src in manifest.items():
        (dest / dst).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(common.REPO / src, dest / dst)
    return set(touched) | set(manifest)


def _checkpatch(tree_dir, patch):
    """(errors, warnings, the warning and error lines) of checkpatch.pl --strict on one patch."""
    r = subprocess.run(["perl", "scripts/checkpatch.pl", "--strict", "--no-color", "--show-types", str(patch)],
                       cwd=str(tree_dir), capture_output=True, text=True)
    m = re.search(r"^total: (\d+) errors, (\d+) warnings", r.stdout, re.M)
    if not m:
        return 1, 0, [f"checkpatch printed no total: {(r.stdout + r.stderr).strip()[-300:]}"]
    lines = [ln for ln in r.stdout.splitlines() if re.match(r"^(ERROR|WARNING):", ln)]
    return int(m.group(1)), int(m.group(2)), lines


def check(res):
    """The row of `rkprobes test`: the series applies with git am, equals the overlay tree, and
    checkpatch --strict finds no error."""
    name = "export: git am of the series on pristine 6.12, tree equal to the overlay's, checkpatch --strict"
    with tempfile.TemporaryDirectory(prefix="rkprobes-export-") as tmp:
        tmp = Path(tmp)
        try:
            files = export(tmp / "series")
        except Failure as e:
            res.add(name, failed=1, note=str(e))
            return
        patches = files[1:]
        am = tmp / "am"
        with _repo_lock():
            _git(common.REPO, "clone", "-q", "--no-checkout", str(base_repo()), str(am))
        _git(am, "checkout", "-q", "-b", "am", BASE_TAG)
        name_, email = _identity()
        r = subprocess.run(["git", "-C", str(am), "-c", f"user.name={name_}", "-c", f"user.email={email}", "am",
                            "-q", *map(str, patches)], capture_output=True, text=True)
        if r.returncode != 0:
            first = re.search(r"Patch failed at \d+ (.*)", r.stdout + r.stderr)
            res.add(name, failed=1, note=f"git am stopped at {first.group(1) if first else '?'}:\n"
                    + (r.stdout + r.stderr)[-1200:])
            return
        changed = set(_git(am, "diff", "--name-only", BASE_TAG, "HEAD").split())
        expected_dir = tmp / "expected"
        want = expected_tree(expected_dir)
        problems = [f"only in the overlay tree: {p}" for p in sorted(want - changed)]
        problems += [f"only in the series: {p}" for p in sorted(changed - want)]
        problems += [f"differs: {p}" for p in sorted(want & changed)
                     if (am / p).read_bytes() != (expected_dir / p).read_bytes()]
        errors, warnings, notes = 0, 0, []
        for p in patches:
            e, w, lines = _checkpatch(am, p)
            errors += e
            warnings += w
            notes += [f"{p.name[:40]}: {ln}" for ln in lines]
        if errors:
            problems.append(f"checkpatch --strict: {errors} error(s)")
        for ln in notes:
            print(f"  checkpatch {ln}", flush=True)
        summary = (f"{len(patches)} patches applied with git am; {len(changed)} files equal to the overlay tree's; "
                   f"checkpatch --strict: {errors} errors, {warnings} warnings")
        res.add(name, int(not problems), int(bool(problems)),
                note="\n".join([summary] + problems + notes[:40]) if problems or notes else summary)

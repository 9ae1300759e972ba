# SPDX-License-Identifier: GPL-2.0
"""The `.kunitconfig` of each KUnit suite, checked with upstream's own tool.

tools/testing/rkprobes/kunit/<name>/.kunitconfig lets a kernel developer run the project's
KUnit suites with upstream's `tools/testing/kunit/kunit.py run --kunitconfig=DIR`, in the
prepared tree or their own tree with the series applied. `test` runs `kunit.py config` on each
(x86_64, our LLVM and rustc as make options, a scratch build directory): upstream's tool makes
the .config with olddefconfig and fails when an option of the .kunitconfig did not stick, which
is what would make `kunit.py run` build a kernel without the suite.
"""

import subprocess
import sys

from . import common, kbuild, tree

DIR = common.REPO / "tools" / "testing" / "rkprobes" / "kunit"
# .kunitconfig -> the implementation it needs in the tree (its options name the rest).
NEEDS = {"kprobes-rust": "rust", "kprobes-rust-arch": "rust-arch", "insn-decoder": "rust"}


def configs():
    return sorted(p.parent for p in DIR.glob("*/.kunitconfig"))


def check_one(path, arch="x86_64"):
    """`kunit.py config` with `path`; returns (ok, the last lines of its output)."""
    bdir = common.CACHE / "build" / f"kunitconfig-{path.name}"
    bdir.parent.mkdir(parents=True, exist_ok=True)
    make_options = [v for v in kbuild.make_vars(arch) if not v.startswith("ARCH=")]
    cmd = [sys.executable, "tools/testing/kunit/kunit.py", "config", f"--build_dir={bdir}",
           f"--kunitconfig={path}", f"--arch={arch}"] + [f"--make_options={m}" for m in make_options]
    r = subprocess.run(cmd, cwd=str(common.TREE), env=kbuild.make_env(), capture_output=True, text=True)
    out = (r.stdout + r.stderr).strip().splitlines()
    return r.returncode == 0, out[-6:]


def run_all(res, arch="x86_64"):
    """A row per .kunitconfig: upstream's kunit.py keeps every option it asks for."""
    with common.build_lock():
        tree.prepare()
        for path in configs():
            name = f"kunitconfig {path.relative_to(common.REPO)}: kunit.py config --arch={arch}"
            why = common.rust_unavailable_reason(arch, NEEDS.get(path.name, "c"))
            if why:
                res.add(name, skipped=1, note=why)
                continue
            ok, tail = check_one(path, arch)
            res.add(name, int(ok), int(not ok),
                    note="every option kept after olddefconfig" if ok else "\n".join(tail))

# SPDX-License-Identifier: GPL-2.0
"""The initramfs of a QEMU boot: static busybox, an /init script, kernel modules."""

import gzip
import shutil
import subprocess
from pathlib import Path

from .common import Failure

BUSYBOX = Path("/bin/busybox")


def pack(bdir, name, init, modules, files=None):
    """Write `bdir/<name>.cpio.gz` (gzip'd newc cpio) and return its path.

    `init` becomes /init; each path of `modules` lands in /lib/modules/ under its own name;
    `files` maps a path in the initramfs to the file to put there; directories it names are made.
    """
    root = bdir / name
    shutil.rmtree(root, ignore_errors=True)
    for d in ("bin", "dev", "proc", "sys", "lib/modules"):
        (root / d).mkdir(parents=True)
    if not BUSYBOX.is_file():
        raise Failure(f"{BUSYBOX} is missing: apt-get install busybox-static (or scripts/rkprobes setup)")
    shutil.copy2(BUSYBOX, root / "bin" / "busybox")
    shutil.copy2(init, root / "init")
    (root / "init").chmod(0o755)
    for ko in modules:
        shutil.copy2(ko, root / "lib" / "modules" / Path(ko).name)
    for dest, src in (files or {}).items():
        (root / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, root / dest)
    files = subprocess.run(["find", ".", "-mindepth", "1"], cwd=root, capture_output=True, check=True).stdout
    r = subprocess.run(["cpio", "-o", "-H", "newc", "-R", "0:0", "--quiet"], cwd=root, input=files,
                       capture_output=True)
    if r.returncode != 0:
        raise Failure("cpio failed: " + r.stderr.decode(errors="replace"))
    out = bdir / f"{name}.cpio.gz"
    out.write_bytes(gzip.compress(r.stdout, compresslevel=1))
    return out

# SPDX-License-Identifier: GPL-2.0
"""The initramfs of a QEMU boot: static busybox, an /init script, kernel modules."""

import gzip
import shutil
import struct
import subprocess
from pathlib import Path

from . import common
from .common import Failure

# The host's (x86_64) static busybox, from Debian's busybox-static.
BUSYBOX = Path("/bin/busybox")
# The other arches' static busybox: Debian's busybox-static of the guest's architecture,
# which `scripts/rkprobes setup` downloads (not installs) and unpacks here.
BUSYBOX_CACHE = common.CACHE / "busybox"

# What each guest's busybox must be: ELF e_machine, ELF data encoding ("little"/"big"),
# and a name for messages (as `file` prints it). All are 64-bit.
BUSYBOX_ELF = {
    "x86_64": (62, "little", "x86-64"),
    "arm64": (183, "little", "ARM aarch64"),
    "riscv": (243, "little", "RISC-V"),
    "loongarch": (258, "little", "LoongArch"),
    "ppc64": (21, "little", "64-bit PowerPC"),
    "s390": (22, "big", "IBM S/390"),
}
_PT_INTERP = 3


def busybox_path(arch):
    """Where the static busybox for `arch` (a key of common.ARCHES) is."""
    return BUSYBOX if arch == "x86_64" else BUSYBOX_CACHE / arch / "busybox"


def _program_headers(f, e):
    """(p_type, p_offset, p_filesz) of each program header of the 64-bit ELF file `f`
    (positioned anywhere), `e` its struct byte order."""
    f.seek(32)
    e_phoff, = struct.unpack(e + "Q", f.read(8))
    f.seek(54)
    e_phentsize, e_phnum = struct.unpack(e + "HH", f.read(4))
    for i in range(e_phnum):
        f.seek(e_phoff + i * e_phentsize)
        p_type, _flags, p_offset, _vaddr, _paddr, p_filesz = struct.unpack(e + "IIQQQQ", f.read(40))
        yield p_type, p_offset, p_filesz


def elf_interp(path):
    """The ELF interpreter (PT_INTERP) the 64-bit little-endian executable `path` names, or None."""
    try:
        with open(path, "rb") as f:
            if f.read(6) != b"\x7fELF\x02\x01":
                return None
            for p_type, p_offset, p_filesz in list(_program_headers(f, "<")):
                if p_type == _PT_INTERP:
                    f.seek(p_offset)
                    return f.read(p_filesz).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


def elf_problem(path, arch):
    """None if `path` is a statically linked 64-bit ELF executable for `arch`, else what is wrong."""
    machine, order, what = BUSYBOX_ELF[arch]
    try:
        with open(path, "rb") as f:
            ident = f.read(16)
            if len(ident) < 16 or ident[:4] != b"\x7fELF":
                return f"{path} is not an ELF file"
            if ident[4] != 2:
                return f"{path} is not a 64-bit ELF file (EI_CLASS {ident[4]})"
            got = {1: "little", 2: "big"}.get(ident[5], f"unknown ({ident[5]})")
            if got != order:
                return f"{path} is {got}-endian, not {order}-endian as {arch} ({what})"
            e = "<" if order == "little" else ">"
            e_type, e_machine = struct.unpack(e + "HH", f.read(4))
            if e_machine != machine:
                return f"{path} is for ELF machine {e_machine}, not {machine} ({what}, {arch})"
            if e_type not in (2, 3):  # ET_EXEC, or ET_DYN for a static-pie
                return f"{path} is not an executable (e_type {e_type})"
            for p_type, _, _ in list(_program_headers(f, e)):
                if p_type == _PT_INTERP:
                    return f"{path} is dynamically linked (it has a PT_INTERP); a static busybox is needed"
    except OSError as ex:
        return f"{path} cannot be read: {ex.strerror}"
    except struct.error:
        return f"{path} is a truncated ELF file"
    return None


def busybox_problem(arch):
    """None if the static busybox for `arch` is in place, else what is wrong with it."""
    if arch not in BUSYBOX_ELF:
        return f"no busybox is known for arch {arch}; valid values: {', '.join(BUSYBOX_ELF)}"
    path = busybox_path(arch)
    if not path.is_file():
        what = "busybox-static" if arch == "x86_64" else f"the {arch} busybox-static"
        return f"{path} is missing ({what} is not provisioned)"
    return elf_problem(path, arch)


def pack(bdir, name, init, modules, files=None, arch="x86_64"):
    """Write `bdir/<name>.cpio.gz` (gzip'd newc cpio) and return its path.

    `init` becomes /init; each path of `modules` lands in /lib/modules/ under its own name;
    `files` maps a path in the initramfs to the file to put there; directories it names are made.
    /bin/busybox is the static busybox of `arch` (a key of common.ARCHES), the guest's.
    """
    problem = busybox_problem(arch)
    if problem and arch != "x86_64":
        # Fetched on first use; `scripts/rkprobes setup` fetches every arch's.
        from . import setup
        setup.provision_busybox(arch)
        problem = busybox_problem(arch)
    if problem:
        raise Failure(f"no static busybox for the {arch} initramfs: {problem}; fix: scripts/rkprobes setup")
    root = bdir / name
    shutil.rmtree(root, ignore_errors=True)
    for d in ("bin", "dev", "proc", "sys", "lib/modules"):
        (root / d).mkdir(parents=True)
    shutil.copy2(busybox_path(arch), root / "bin" / "busybox")
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

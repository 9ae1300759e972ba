# SPDX-License-Identifier: GPL-2.0
"""`rkprobes setup`: install, idempotently, what a fresh Debian bookworm machine lacks.

Everything comes from Debian (bookworm, bookworm-security, bookworm-backports
for QEMU 10.0) and crates.io (bindgen-cli); nothing else is downloaded.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

from . import common
from .common import Failure, info

APT_PACKAGES = [
    "rustc-web", "cargo-web", "rust-web-src",
    "clang-22", "lld-22", "llvm-22", "libclang-22-dev",
    "bc", "flex", "bison", "libelf-dev", "libssl-dev", "cpio", "kmod", "busybox-static",
    "make", "patch", "xz-utils", "gzip", "binutils", "python3",
    "linux-source-6.12",
]
# Pinned: the tree the project is an overlay on.
APT_PINS = {"linux-source-6.12": "6.12.117-1~deb12u1"}
# QEMU 10.0 from bookworm-backports: bookworm's 7.2 cannot boot loongarch directly.
# qemu-system-misc pulls in qemu-system-s390x; it is named so that it is checked.
BACKPORTS_PACKAGES = ["qemu-system-x86", "qemu-system-arm", "qemu-system-misc", "qemu-system-ppc",
                      "qemu-system-s390x"]
BACKPORTS_SOURCE = Path("/etc/apt/sources.list.d/rkprobes-bookworm-backports.sources")
BINDGEN_VERSION = "0.73.2"


def _out(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _dpkg_version(pkg):
    out = _out(["dpkg-query", "-W", "-f=${Status}\t${Version}", pkg])
    status, _, version = out.partition("\t")
    return version if status.endswith("installed") and "not-installed" not in status else None


def _missing_packages():
    missing = [p for p in APT_PACKAGES if _dpkg_version(p) is None
               or (p in APT_PINS and _dpkg_version(p) != APT_PINS[p])]
    missing_bpo = []
    for p in BACKPORTS_PACKAGES:
        v = _dpkg_version(p)
        if v is None or not re.search(r":10\.", v):
            missing_bpo.append(p)
    return missing, missing_bpo


def bindgen_path():
    return common.find_tool("bindgen", common.cargo_bin_dirs())


def host_cargo():
    """The host toolchain's cargo (rustup's, with clippy and rustfmt), not Debian's cargo-web."""
    return common.find_tool("cargo", common.cargo_bin_dirs())


def check():
    """Return a list of (problem, fix) found on this machine."""
    problems = []
    missing, missing_bpo = _missing_packages()
    if missing:
        problems.append((f"Debian packages missing or at the wrong version: {' '.join(missing)}",
                         "scripts/rkprobes setup"))
    if missing_bpo:
        problems.append((f"QEMU 10.0 from bookworm-backports missing: {' '.join(missing_bpo)}",
                         "scripts/rkprobes setup"))
    checks = [
        ([common.RUSTC, "--version"], r"^rustc 1\.96\.", "rustc 1.96 at /usr/bin/rustc (Debian rustc-web)"),
        (["clang" + common.LLVM_SUFFIX, "--version"], r"version 22\.", "clang 22 (Debian clang-22)"),
        (["ld.lld" + common.LLVM_SUFFIX, "--version"], r"LLD 22\.", "lld 22 (Debian lld-22)"),
        (["qemu-system-x86_64", "--version"], r"version 10\.", "QEMU 10 (bookworm-backports)"),
    ]
    for cmd, pattern, what in checks:
        if not re.search(pattern, _out(cmd), re.M):
            problems.append((f"{what} not found ({' '.join(cmd)} printed: "
                             f"{_out(cmd).strip()[:80] or 'nothing'})", "scripts/rkprobes setup"))
    rustc_v, src_v = _dpkg_version("rustc-web"), _dpkg_version("rust-web-src")
    if rustc_v and src_v and rustc_v != src_v:
        problems.append((f"rust-web-src {src_v} does not match rustc-web {rustc_v}",
                         "apt-get install rustc-web rust-web-src (same version)"))
    sysroot = _out([common.RUSTC, "--print", "sysroot"]).strip() or "/usr"
    if not Path(sysroot, "lib/rustlib/src/rust/library/core/src/lib.rs").is_file():
        problems.append(("the Rust core library sources (rust-web-src) are missing",
                         "apt-get install rust-web-src"))
    bg = bindgen_path()
    if not bg or not re.search(r"bindgen 0\.73\.", _out([bg, "--version"])):
        problems.append((f"bindgen-cli 0.73 not found (found: {bg or 'none'})",
                         f"cargo install --locked bindgen-cli@{BINDGEN_VERSION}"))
    cargo = host_cargo()
    if not cargo:
        problems.append(("no host cargo (rustup toolchain) for the host workspace",
                         "install the rustup toolchain with clippy and rustfmt"))
    else:
        for sub in ("clippy", "fmt"):
            if not _out([cargo, sub, "--version"]).strip():
                problems.append((f"'cargo {sub}' is not available in {cargo}",
                                 f"rustup component add {'clippy' if sub == 'clippy' else 'rustfmt'}"))
    if not common.SOURCE_TARBALL.is_file():
        problems.append((f"{common.SOURCE_TARBALL} is missing",
                         f"apt-get install linux-source-6.12={APT_PINS['linux-source-6.12']}"))
    elif not _pristine_ok():
        problems.append((f"the pristine tree {common.PRISTINE} is not unpacked", "scripts/rkprobes setup"))
    return problems


def _pristine_ok():
    mk = common.PRISTINE / "Makefile"
    if not (common.PRISTINE / ".rkprobes-unpacked").is_file() or not mk.is_file():
        return False
    text = mk.read_text(errors="replace")
    return "VERSION = 6" in text and "PATCHLEVEL = 12" in text and "SUBLEVEL = 117" in text


def _apt(args):
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get"] + args
    info("$ " + " ".join(cmd))
    r = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"'{' '.join(cmd)}' failed (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


def _install_packages():
    missing, missing_bpo = _missing_packages()
    if not missing and not missing_bpo:
        return
    if os.geteuid() != 0:
        raise Failure("setup must install Debian packages and needs root: run it as root "
                      "(or with sudo). Missing: " + " ".join(missing + missing_bpo))
    if missing_bpo and not BACKPORTS_SOURCE.exists() and not _backports_enabled():
        info(f"enabling bookworm-backports in {BACKPORTS_SOURCE}")
        BACKPORTS_SOURCE.write_text(
            "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\n"
            "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    info("installing Debian packages (a few minutes on a fresh machine)")
    _apt(["update"])
    if missing:
        _apt(["install", "-y", "--no-install-recommends"]
             + [f"{p}={APT_PINS[p]}" if p in APT_PINS else p for p in missing])
    if missing_bpo:
        _apt(["install", "-y", "--no-install-recommends", "-t", "bookworm-backports"] + missing_bpo)


def _backports_enabled():
    for p in list(Path("/etc/apt").glob("sources.list.d/*")) + [Path("/etc/apt/sources.list")]:
        try:
            if "bookworm-backports" in p.read_text():
                return True
        except OSError:
            pass
    return False


def _install_bindgen():
    bg = bindgen_path()
    if bg and re.search(r"bindgen 0\.73\.", _out([bg, "--version"])):
        return
    cargo = host_cargo() or shutil.which("cargo")
    if not cargo:
        raise Failure("no cargo to install bindgen-cli with; install the rustup toolchain or cargo-web")
    info(f"installing bindgen-cli {BINDGEN_VERSION} from crates.io (about 3 minutes)")
    r = subprocess.run([cargo, "install", "--locked", f"bindgen-cli@{BINDGEN_VERSION}"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"cargo install bindgen-cli failed:\n{r.stderr[-3000:]}")


def unpack_pristine():
    """Unpack linux-source-6.12 once into the cache (atomically: a half unpack is never used)."""
    if _pristine_ok():
        return
    common.CACHE.mkdir(parents=True, exist_ok=True)
    tmp = common.CACHE / "unpack.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(common.PRISTINE, ignore_errors=True)
    tmp.mkdir()
    info(f"unpacking {common.SOURCE_TARBALL} into {common.PRISTINE} (about a minute)")
    r = subprocess.run(["tar", "-xf", str(common.SOURCE_TARBALL), "-C", str(tmp)])
    if r.returncode != 0:
        raise Failure(f"unpacking {common.SOURCE_TARBALL} failed; is the disk full? (df -h {common.CACHE})")
    (tmp / "linux-source-6.12").rename(common.PRISTINE)
    tmp.rmdir()
    (common.PRISTINE / ".rkprobes-unpacked").write_text(common.KERNEL_VERSION + "\n")
    if not _pristine_ok():
        raise Failure(f"{common.SOURCE_TARBALL} is not Linux {common.KERNEL_VERSION}; "
                      f"apt-get install linux-source-6.12={APT_PINS['linux-source-6.12']}")


def ensure(quiet=True):
    """Called by the other commands: set up only when something is missing."""
    problems = check()
    if problems:
        info("the machine lacks: " + "; ".join(p for p, _ in problems) + " -- running setup")
        cmd_setup(None)
    elif not quiet:
        info("setup: everything is in place")


def cmd_setup(args):
    if args is not None and args.check:
        problems = check()
        for p, fix in problems:
            common.error(f"{p}\n    fix: {fix}")
        if problems:
            return 1
        info("setup check: everything is in place")
        return 0
    _install_packages()
    _install_bindgen()
    if common.SOURCE_TARBALL.is_file():
        unpack_pristine()
    problems = check()
    if problems:
        raise Failure("setup finished but the machine is still not right:\n"
                      + "\n".join(f"  - {p}\n    fix: {fix}" for p, fix in problems))
    info(f"setup: toolchain checked (rustc 1.96, clang/lld 22, bindgen 0.73, QEMU 10); "
         f"Linux {common.KERNEL_VERSION} unpacked in {common.PRISTINE}")
    return 0


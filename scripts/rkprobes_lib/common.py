# SPDX-License-Identifier: GPL-2.0
"""Paths, the arch table, messages and process helpers shared by all commands."""

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("RKPROBES_CACHE", Path.home() / ".cache" / "rkprobes"))
KERNEL_VERSION = "6.12.117"
SOURCE_TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
PRISTINE = CACHE / "linux-source-6.12"
TREE = CACHE / "tree"
# Where build directories go; --linux-src (linux_src.py) sets both to the user's tree and its own.
BUILD_ROOT = CACHE / "build"
LINUX_SRC = None
CONFIGS = REPO / "tools" / "testing" / "rkprobes" / "configs"

# The implementations of kprobes one tree builds, in the order they are run, compared (each
# non-C one against C) and tabled; each has a fragment configs/impl-<impl>.config.
IMPLS = ("c", "rust", "rust-arch")
IMPL_DESCRIPTIONS = {
    "c": "upstream C core and C arch",
    "rust": "Rust core, upstream C arch",
    "rust-arch": "Rust core and Rust arch layer (x86_64, arm64, riscv, loongarch, ppc64, s390)",
}
# How check lines and notes name an implementation beside C.
IMPL_LABELS = {"c": "C", "rust": "Rust", "rust-arch": "rust-arch"}
# The arches with a Rust arch layer (CONFIG_KPROBES_RUST_ARCH): the only ones --impl rust-arch builds on.
RUST_ARCH_ARCHES = ("x86_64", "arm64", "riscv", "loongarch", "ppc64", "s390")
# The Kconfig symbol that selects the Rust arch layer; rust-arch is buildable once the tree defines it.
RUST_ARCH_KCONFIG = "KPROBES_RUST_ARCH"
# Build configurations: a fragment under tools/testing/rkprobes/configs/ each, or a variant below.
# The debug checkers `rkprobes stress --debug` can build in, a fragment debug-<name>.config each.
DEBUG_CONFIGS = ("lockdep", "kasan", "kmemleak", "ubsan", "list", "faults")
CONFIG_NAMES = (("kunit", "run", "bench", "kunit-noftrace", "kunit-debugassert", "kunit-tools", "preempt") + tuple(f"kunit-{d}" for d in DEBUG_CONFIGS)
                + tuple(f"preempt-{d}" for d in DEBUG_CONFIGS))
# Variants of a configuration: name -> (the configuration whose fragments it starts from, the
# fragments applied after them). kunit-noftrace: the KUnit kernel without the function tracer
# (`rkprobes test --no-ftrace`); kunit-tools: the KUnit kernel with perf events, BPF and IPv4, for
# perf, bpftrace and the kselftests of `rkprobes test --tools`; kunit-<debug>: the KUnit kernel with one debug checker
# (`rkprobes stress --debug`); preempt: the KUnit kernel with full preemption, preemptible RCU and
# the hang detectors, preempt-<debug> that with one debug checker (`stress --config preempt`).
CONFIG_VARIANTS = {"kunit-noftrace": ("kunit", ("noftrace.config",)),
                   "kunit-debugassert": ("kunit", ("debugassert.config",)),
                   "kunit-tools": ("kunit", ("tools.config",)),
                   "preempt": ("kunit", ("preempt.config",)),
                   **{f"kunit-{d}": ("kunit", (f"debug-{d}.config",)) for d in DEBUG_CONFIGS},
                   **{f"preempt-{d}": ("kunit", ("preempt.config", f"debug-{d}.config")) for d in DEBUG_CONFIGS}}

# The crate root of the Rust core; its presence is what makes --impl rust buildable.
RUST_CORE_ROOT = REPO / "kernel" / "kprobes" / "kprobes_rust.rs"

LLVM_SUFFIX = "-22"
RUSTC = "/usr/bin/rustc"
RUSTDOC = "/usr/bin/rustdoc"
LIBCLANG_PATH = "/usr/lib/llvm-22/lib"


# What samples/rust/rust_minimal.rs prints when it is built in: the proof
# that Rust code runs on an arch whose Rust support comes from our patches.
RUST_MINIMAL_LINE = "Rust minimal sample (init)"


class Arch:
    """How to build one architecture and boot it under QEMU."""

    def __init__(self, name, karch, qemu, image, console, qemu_args, kunit_cases,
                 make_goals=("all",), kunit_console_lines=()):
        self.name = name
        self.karch = karch
        self.qemu = qemu
        self.image = image
        self.console = console
        self.qemu_args = qemu_args
        # Cases of upstream's kprobes_test this arch runs (the stacktrace
        # cases need ARCH_CORRECT_STACKTRACE_ON_KRETPROBE).
        self.kunit_cases = kunit_cases
        # What `make` builds: "all" unless the arch's default image cannot
        # be made with the LLVM toolchain (the image QEMU boots must be built).
        self.make_goals = make_goals
        # Lines the KUnit boot must print besides the KTAP results.
        self.kunit_console_lines = kunit_console_lines


ARCHES = {
    "x86_64": Arch("x86_64", "x86_64", "qemu-system-x86_64", "arch/x86/boot/bzImage",
                   "ttyS0", ["-bios", "qboot.rom"], 7),
    "arm64": Arch("arm64", "arm64", "qemu-system-aarch64", "arch/arm64/boot/Image",
                  "ttyAMA0", ["-machine", "virt", "-cpu", "max,pauth-impdef=on"], 7),
    "riscv": Arch("riscv", "riscv", "qemu-system-riscv64", "arch/riscv/boot/Image",
                  "ttyS0", ["-machine", "virt", "-cpu", "rv64", "-bios",
                            "/usr/share/qemu/opensbi-riscv64-generic-fw_dynamic.bin"], 5),
    "loongarch": Arch("loongarch", "loongarch", "qemu-system-loongarch64", "vmlinux",
                      "ttyS0", ["-machine", "virt", "-cpu", "max"], 5),
    # ppc64le on the pseries machine (as kunit's qemu_configs/powerpc.py,
    # little-endian); vmlinux is booted directly because the zImage wrapper
    # needs GNU binutils for powerpc.
    "ppc64": Arch("ppc64", "powerpc", "qemu-system-ppc64", "vmlinux",
                  "hvc0", ["-machine", "pseries", "-cpu", "power8"], 5,
                  make_goals=("vmlinux",), kunit_console_lines=(RUST_MINIMAL_LINE,)),
    "s390": Arch("s390", "s390", "qemu-system-s390x", "arch/s390/boot/bzImage",
                 "ttyS0", ["-machine", "s390-ccw-virtio", "-cpu", "qemu"], 7,
                 kunit_console_lines=(RUST_MINIMAL_LINE,)),
}


class Failure(Exception):
    """A step failed; the message says what and how to fix it."""


_tty = sys.stdout.isatty()


def info(msg):
    print(f"rkprobes: {msg}", flush=True)


def error(msg):
    print(f"rkprobes: error: {msg}", file=sys.stderr, flush=True)


def banner(msg):
    line = "=" * min(78, max(20, len(msg) + 8))
    print(f"\n{line}\n=== {msg}\n{line}", flush=True)


def impls_help():
    """The implementations with their descriptions, for help texts and refusals."""
    return "; ".join(f"{i}: {IMPL_DESCRIPTIONS[i]}" for i in IMPLS)


def check_impl_name(impl):
    """Refuse an implementation name that is none of IMPLS, listing the valid ones."""
    if impl not in IMPLS:
        raise Failure(f"unsupported --impl {impl or repr(impl)}; valid values: {impls_help()}")


def ordered_impls(impls):
    """`impls` in the order of IMPLS: C first, then rust, then rust-arch."""
    return [i for i in IMPLS if i in impls]


def non_c_impls(impls):
    """The implementations of `impls` that are compared against C, in the order of IMPLS."""
    return [i for i in ordered_impls(impls) if i != "c"]


def impl_label(impl):
    return IMPL_LABELS.get(impl, impl)


def rust_core_present():
    return RUST_CORE_ROOT.is_file()


def rust_arch_present():
    """Whether the tree defines the Rust arch layer's switch (config KPROBES_RUST_ARCH): in the
    overlay's Kconfig (kernel/kprobes/Kconfig), a Kconfig file under its kernel/ or arch/, or an
    upstream edit of scripts/patches/."""
    pattern = re.compile(rf"^\+?\s*(?:menu)?config\s+{RUST_ARCH_KCONFIG}\s*$", re.M)
    candidates = [REPO / "Kconfig"]
    for d in ("kernel", "arch"):
        candidates += sorted((REPO / d).rglob("Kconfig*"))
    candidates += sorted((REPO / "scripts" / "patches").glob("*.patch"))
    for path in candidates:
        try:
            if pattern.search(path.read_text(errors="replace")):
                return True
        except OSError:
            continue
    return False


# Arches the Rust core cannot build for yet, and why (empty: it builds on every
# arch). x86_64, riscv, loongarch, ppc64 and s390 take the rethook kretprobe
# path, arm64 the objpool one.
RUST_CORE_MISSING = {}


def impl_arches(impl):
    """The arches `impl` is built on, whatever this tree holds yet."""
    if impl == "rust":
        return [a for a in ARCHES if a not in RUST_CORE_MISSING]
    if impl == "rust-arch":
        return [a for a in ARCHES if a in RUST_ARCH_ARCHES]
    return list(ARCHES)


def valid_combinations():
    """What --impl and --arch allow together, as text: `c on x86_64, arm64, ...; rust on ...`."""
    return "; ".join(f"{i} on {', '.join(impl_arches(i))}" for i in IMPLS)


def rust_unavailable_reason(arch, impl="rust"):
    """Why `--impl impl` cannot be built for `arch`, or None when it can (always None for c)."""
    if impl == "c":
        return None
    if impl not in IMPLS:
        return f"{impl!r} is not an implementation; valid values: {impls_help()}"
    if impl == "rust-arch" and arch not in RUST_ARCH_ARCHES:
        return (f"the Rust arch layer (CONFIG_{RUST_ARCH_KCONFIG}) exists for "
                f"{', '.join(RUST_ARCH_ARCHES)} only, not {arch}")
    if not rust_core_present():
        return (f"the Rust kprobes core is not in this tree yet ({RUST_CORE_ROOT.relative_to(REPO)} "
                "does not exist)")
    if impl == "rust-arch":
        if not rust_arch_present():
            return (f"the Rust arch layer is not in this tree yet (no Kconfig file of the overlay and no "
                    f"patch of scripts/patches/ defines config {RUST_ARCH_KCONFIG})")
        return None
    return RUST_CORE_MISSING.get(arch)


def require_impl_available(impl, arch="x86_64"):
    """Refuse, before any setup or build step, an implementation `arch` cannot build."""
    check_impl_name(impl)
    why = rust_unavailable_reason(arch, impl)
    if not why:
        return
    if impl == "rust":
        raise Failure(f"--impl rust on {arch}: {why}, so there is nothing to build with "
                      f"CONFIG_KPROBES_RUST=y. Use --impl c. Valid combinations: {valid_combinations()}.")
    raise Failure(f"--impl {impl} on {arch}: {why}, so there is nothing to build with CONFIG_KPROBES_RUST=y "
                  f"and CONFIG_{RUST_ARCH_KCONFIG}=y. Valid combinations: {valid_combinations()}.")


def compare_with_c(res, arch, impls, runs, compare, compare_name, banner_text=None):
    """Compare C's results on `arch` with each non-C implementation's: `compare(res, arch, runs,
    other)` for each, or a skipped row `compare_name(arch, other)` saying why it cannot run.
    `banner_text(other)`, if given, prints a banner before each comparison."""
    others = non_c_impls(impls)
    if not others:
        res.add(compare_name(arch, "rust"), skipped=1,
                note=f"not compared: only the {impls[0] if impls else 'no'} implementation was run")
    for other in others:
        if "c" not in impls:
            res.add(compare_name(arch, other), skipped=1,
                    note=f"not compared: only the {impls[0]} implementation was run" if len(impls) == 1
                    else "not compared: the c implementation was not run")
            continue
        if banner_text:
            banner(banner_text(other))
        compare(res, arch, runs, other)


def default_impls():
    """What `test` and `bench` run without --impl: c; rust when the Rust core is in the tree;
    rust-arch when the Rust x86 arch layer is too (on arches without it, `test` reports it as
    skipped with the reason)."""
    if not rust_core_present():
        return ["c"]
    if rust_unavailable_reason("x86_64", "rust-arch") is None:
        return ["c", "rust", "rust-arch"]
    return ["c", "rust"]


def find_tool(name, extra_dirs=()):
    for d in extra_dirs:
        cand = Path(d) / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which(name)


def cargo_bin_dirs():
    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    return [home / "bin"]


def fmt_secs(secs):
    secs = int(secs)
    return f"{secs // 60}m{secs % 60:02d}s" if secs >= 60 else f"{secs}s"


def run_logged(cmd, log_path, env=None, cwd=None, label="", progress=None, timeout=None):
    """Run `cmd`, write all of its output to `log_path`, show progress.

    `progress(line)` may return a short text describing the current step;
    it is shown at most every few seconds (a rewritten line on a terminal,
    a line every 30 s otherwise). Returns the exit code.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    last_shown = 0.0
    interval = 2.0 if _tty else 30.0
    current = ""
    with open(log_path, "w", errors="replace") as log:
        log.write("$ " + " ".join(str(c) for c in cmd) + "\n")
        log.flush()
        proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, cwd=cwd, text=True, errors="replace", bufsize=1)
        try:
            for line in proc.stdout:
                log.write(line)
                if progress:
                    step = progress(line)
                    if step:
                        current = step
                now = time.monotonic()
                if now - last_shown >= interval:
                    last_shown = now
                    status = f"  [{fmt_secs(now - start)}] {label} {current}"[:100]
                    if _tty:
                        print("\r" + status.ljust(100), end="", flush=True)
                    else:
                        print(status, flush=True)
                if timeout and now - start > timeout:
                    proc.kill()
                    log.write(f"\nrkprobes: killed after {timeout}s\n")
                    break
            proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    if _tty:
        print("\r" + " " * 100 + "\r", end="", flush=True)
    return proc.returncode


def tail(path, lines=40):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)"


_lock_depth = 0


@contextmanager
def build_lock():
    """Serialise tree preparation and kernel builds: one at a time on this machine.

    Re-entrant within one process, so a command can hold it across several builds (a kernel
    and the module built against it) without another build slipping in between. The lock file is
    one per machine and user, not per cache: builds in two caches would share the two cores too.
    """
    global _lock_depth
    if _lock_depth:
        _lock_depth += 1
        try:
            yield
        finally:
            _lock_depth -= 1
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    lock_path = Path(tempfile.gettempdir()) / f"rkprobes-build-{os.getuid()}.lock"
    with open(lock_path, "w") as f, _build_queue_ticket(lock_path.with_suffix(".queue")) as first:
        try:
            # First come, first served: flock alone lets a later waiter win, and so would taking
            # a lock that was just released while an older waiter sleeps between its polls.
            if not first():
                raise BlockingIOError
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            info("another rkprobes build holds the build lock; waiting for it")
            start = last = time.monotonic()
            while not first():
                time.sleep(1)
                if time.monotonic() - last >= 60:
                    last = time.monotonic()
                    info(f"  [{fmt_secs(last - start)}] still waiting for the build lock: {first.ahead()} ahead "
                         "in the queue")
            fcntl.flock(f, fcntl.LOCK_EX)
        _lock_depth = 1
        try:
            yield
        finally:
            _lock_depth = 0


@contextmanager
def _build_queue_ticket(queue):
    """A ticket in the build queue; yields a function telling whether it is the oldest live one."""
    queue.mkdir(exist_ok=True)
    # RKPROBES_LOCK_PRIORITY=high: ahead of every ordinary ticket ('!' sorts before digits), for
    # a run that must not wait behind a queue of others; first come, first served among them.
    # =urgent ('!!' sorts before '!' and a digit): ahead of those too, for the one run that
    # must end before a deadline (a session's last verification) when every run is 'high'.
    prefix = {"high": "!", "urgent": "!!"}.get(os.environ.get("RKPROBES_LOCK_PRIORITY", ""), "")
    ticket = queue / f"{prefix}{time.time_ns():020d}-{os.getpid()}"
    ticket.touch()

    def first():
        for t in sorted(queue.iterdir()):
            if t == ticket:
                return True
            try:
                os.kill(int(t.name.split("-")[1]), 0)
            except (ProcessLookupError, ValueError, IndexError):
                t.unlink(missing_ok=True)
                continue
            except PermissionError:
                pass
            return False
        return True

    def ahead():
        """How many tickets are older than ours (the holder included)."""
        return sum(1 for t in queue.iterdir() if t.name < ticket.name)

    first.ahead = ahead

    try:
        yield first
    finally:
        ticket.unlink(missing_ok=True)


def kunit_parse(ktap, json_path):
    """Run upstream's `kunit.py parse` on a KTAP log, echoing its report.

    Returns (the parsed JSON or None when it wrote none, the finished process).
    """
    json_path.unlink(missing_ok=True)
    kunit_py = TREE / "tools" / "testing" / "kunit" / "kunit.py"
    r = subprocess.run([sys.executable, str(kunit_py), "parse", f"--json={json_path}", str(ktap)],
                       capture_output=True, text=True)
    print(r.stdout, end="", flush=True)
    try:
        return json.loads(json_path.read_text()), r
    except (OSError, ValueError):
        return None, r

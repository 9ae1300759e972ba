# SPDX-License-Identifier: GPL-2.0
"""`rkprobes build`: configure and build one kernel out of tree.

One build directory per (arch, implementation, configuration) under
$CACHE/build/, so switching between them costs nothing. The .config is
made from fragments (the configuration, the arch's console, the
implementation switch) with olddefconfig, as kunit.py does, and every
option a fragment asks for is checked afterwards. After the build, the
objects say which implementation was built (c, rust or rust-arch), so one
is never taken silently for another.
"""

import hashlib
import os
import re
import shutil
import subprocess

from . import cli, common, linux_src, setup, tree
from .common import Failure, info


def add_build_args(p, default_config):
    cli.add_impl(p, default_help="c")
    cli.add_arch(p)
    cli.add_config(p, common.CONFIG_NAMES, default_config)
    cli.add_debug(p, help_extra="Builds the configuration <config>-<checker> (kunit or preempt with the checker)")
    cli.checks(p, _check_build_args)
    linux_src.add_arg(p)


def _check_build_args(args):
    args.config = build_config(args.config, args.debugs[0] if args.debugs else None)


def build_config(config, debug):
    """The configuration `build --config config --debug debug` builds."""
    if debug is None:
        return config
    name = f"{config}-{debug}"
    if name not in common.CONFIG_NAMES:
        raise cli.UsageError(f"--debug {debug} --config {config}: a debug checker is built into the kunit or preempt "
                             f"kernel only; valid values of --config with --debug: kunit, preempt")
    return name


def build_dir(arch, impl, config):
    return common.BUILD_ROOT / f"{arch}-{impl}-{config}"


# Per arch with a Rust arch layer: the kprobes arch directory, upstream's C objects there that the
# Rust arch layer replaces, and the Rust arch layer's glue object there.
ARCH_LAYER = {
    "x86_64": ("arch/x86/kernel/kprobes", ("core.o", "opt.o", "ftrace.o"), "rust_glue.o"),
    "arm64": ("arch/arm64/kernel/probes", ("kprobes.o",), "rust_glue.o"),
    "riscv": ("arch/riscv/kernel/probes", ("kprobes.o",), "rust_glue.o"),
    # loongarch's, ppc64's and s390's kprobes.c are in arch/<arch>/kernel, whose Makefile builds
    # probes/rust_glue.o.
    "loongarch": ("arch/loongarch/kernel", ("kprobes.o",), "rust_glue.o"),
    "ppc64": ("arch/powerpc/kernel", ("kprobes.o", "optprobes.o", "kprobes-ftrace.o"), "rust_glue.o"),
    "s390": ("arch/s390/kernel", ("kprobes.o",), "rust_glue.o"),
}


# What `rkprobes` leaves at the top of a build directory beside Kbuild's output (test initramfs images,
# console logs, out-of-tree test modules, results): not copied into a seeded build directory.
TEST_OUTPUTS = ("rkprobes-*", "*-initramfs", "*.cpio.gz", "*.log", "*.json", "*.txt", "kselftest-cases",
                ".rkprobes-config")
# What differs between implementations in a build: removed from a seeded copy, so Kbuild makes
# them afresh and _check_impl never sees the other implementation's leftovers.
# The arch layer's part: its directory, or where that is all of arch/<arch>/kernel (loongarch,
# ppc64, s390) the directory's archive and the objects of either layer.
IMPL_OBJECTS = ("kernel/kprobes.o", "kernel/.kprobes.o.cmd", "kernel/kprobes") + tuple(
    p for d, _, _ in ARCH_LAYER.values()
    for p in ((f"{d}/built-in.a", f"{d}/kprobes.o", f"{d}/.kprobes.o.cmd", f"{d}/probes")
              if d.endswith("/kernel") else (d,)))


def _seed(arch, impl, config, bdir):
    """Start a new build directory as a copy of a built one of the same arch and configuration
    for another implementation, so the build is incremental: Kbuild's per-option dependencies
    (include/config/) rebuild what the implementation switch touches, the Rust core or upstream's
    kernel/kprobes.o, the Rust crates and what includes them, and not the rest of the kernel.
    Returns the name of the directory copied, or None when there was none. Called under the
    build lock, so the copied directory is not being built."""
    if (bdir / ".config").exists():
        return None
    image = common.ARCHES[arch].image
    for other in common.IMPLS:
        src = build_dir(arch, other, config)
        if other == impl or not (src / image).is_file() or not (src / ".rkprobes-config").is_file():
            continue
        tmp = bdir.with_name(bdir.name + ".seeding")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(bdir, ignore_errors=True)
        top = shutil.ignore_patterns(*TEST_OUTPUTS)
        shutil.copytree(src, tmp, symlinks=True,
                        ignore=lambda d, names: top(d, names) if d == os.fspath(src) else ())
        for rel in IMPL_OBJECTS:
            path = tmp / rel
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        tmp.rename(bdir)
        return src.name
    return None


def make_vars(arch):
    bindgen = setup.bindgen_path() or "bindgen"
    return [f"ARCH={common.ARCHES[arch].karch}", f"LLVM={common.LLVM_SUFFIX}",
            f"RUSTC={common.RUSTC}", f"HOSTRUSTC={common.RUSTC}", f"RUSTDOC={common.RUSTDOC}",
            f"BINDGEN={bindgen}"]


def make_env():
    env = dict(os.environ, LIBCLANG_PATH=common.LIBCLANG_PATH)
    env.pop("MAKEFLAGS", None)
    return env


def _fragments(arch, impl, config):
    """The fragments of one build: config, arch and impl ones, then `<config>-<arch>.config`
    when it exists (what one configuration needs, or can leave out, on one arch only). A variant
    of common.CONFIG_VARIANTS takes its base configuration's and then its own."""
    base, variant = common.CONFIG_VARIANTS.get(config, (config, ()))
    names = [f"{base}.config", f"arch-{arch}.config", f"impl-{impl}.config"]
    paths = [common.CONFIGS / n for n in names]
    extra = common.CONFIGS / f"{base}-{arch}.config"
    paths += ([extra] if extra.is_file() else []) + [common.CONFIGS / n for n in variant]
    for p in paths:
        if not p.is_file():
            raise Failure(f"missing config fragment {p.relative_to(common.REPO)}")
    return paths


def _wanted_options(text):
    wanted = {}
    for ln in text.splitlines():
        m = re.match(r"^(CONFIG_\w+)=(.*)$", ln.strip())
        if m:
            wanted[m.group(1)] = m.group(2)
        m = re.match(r"^# (CONFIG_\w+) is not set$", ln.strip())
        if m:
            wanted[m.group(1)] = None
    return wanted


def _check_config(bdir, wanted):
    have = _wanted_options((bdir / ".config").read_text())
    wrong = []
    for opt, val in wanted.items():
        got = have.get(opt)
        if got != val:
            wrong.append(f"{opt}: wanted {val or 'not set'}, got {got or 'not set'}")
    return wrong


def configure(arch, impl, config, bdir):
    frags = _fragments(arch, impl, config)
    text = "".join(f"# {p.name}\n{p.read_text()}\n" for p in frags)
    stamp = hashlib.sha256((text + " ".join(make_vars(arch))).encode()).hexdigest()
    stamp_file = bdir / ".rkprobes-config"
    if (bdir / ".config").is_file() and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return
    bdir.mkdir(parents=True, exist_ok=True)
    info(f"configuring {bdir.name} from {', '.join(p.name for p in frags)}")
    (bdir / ".config").write_text(text)
    cmd = ["make", "-C", str(common.TREE), f"O={bdir}"] + make_vars(arch) + ["olddefconfig"]
    rc = common.run_logged(cmd, bdir / "config.log", env=make_env(), label="olddefconfig")
    if rc != 0:
        stamp_file.unlink(missing_ok=True)
        raise Failure(f"configuring failed: {' '.join(cmd)}\n--- tail of {bdir / 'config.log'}:\n"
                      + common.tail(bdir / "config.log"))
    wrong = _check_config(bdir, _wanted_options(text))
    if wrong:
        stamp_file.unlink(missing_ok=True)
        hint = ""
        if any(w.startswith("CONFIG_RUST:") for w in wrong):
            hint = ("\nCONFIG_RUST did not stick: the Rust toolchain was not accepted. See why with:\n  make -C "
                    f"{common.TREE} O={bdir} {' '.join(make_vars(arch))} rustavailable")
        elif any(w.startswith(f"CONFIG_{common.RUST_ARCH_KCONFIG}: wanted y") for w in wrong):
            hint = (f"\nCONFIG_{common.RUST_ARCH_KCONFIG} did not stick: the prepared tree has no such option, "
                    "or its dependencies (CONFIG_KPROBES_RUST, X86_64) are not met.")
        raise Failure("the configuration does not have what its fragments ask for:\n  "
                      + "\n  ".join(wrong) + hint)
    stamp_file.write_text(stamp)


def _progress(line):
    m = re.match(r"^\s+([A-Z][A-Z0-9_-]{1,10})\s+(\S+)", line)
    return f"{m.group(1)} {m.group(2)}" if m else None


def _make_goals(arch, bdir):
    """`all`, or the arch's own goals plus `modules` when the configuration has modules."""
    goals = list(common.ARCHES[arch].make_goals)
    if goals != ["all"] and "CONFIG_MODULES=y" in (bdir / ".config").read_text().splitlines():
        goals.append("modules")
    return goals


def build(arch, impl, config, quiet_if_fresh=False):
    """Prepare the tree and build; returns the build directory."""
    if arch not in common.ARCHES:
        raise Failure(f"unsupported --arch {arch}; valid values: {', '.join(common.ARCHES)}")
    common.check_impl_name(impl)
    if config not in common.CONFIG_NAMES:
        raise Failure(f"unsupported --config {config}; valid values: {', '.join(common.CONFIG_NAMES)}")
    common.require_impl_available(impl, arch)
    setup.ensure()
    bdir = build_dir(arch, impl, config)
    with common.build_lock():
        tree.prepare()
        seed = _seed(arch, impl, config, bdir)
        if seed:
            info(f"{bdir.name} starts as a copy of {seed}: the build is incremental")
        configure(arch, impl, config, bdir)
        cmd = ["make", "-C", str(common.TREE), f"O={bdir}"] + make_vars(arch) + [f"-j{os.cpu_count() or 2}"]
        cmd += _make_goals(arch, bdir)
        info(f"building {bdir.name} (log: {bdir / 'build.log'})")
        import time
        start = time.monotonic()
        rc = common.run_logged(cmd, bdir / "build.log", env=make_env(), label=bdir.name, progress=_progress)
        secs = time.monotonic() - start
    if rc != 0:
        raise Failure(f"kernel build failed (exit {rc}): {' '.join(cmd)}\n"
                      f"--- tail of {bdir / 'build.log'}:\n" + common.tail(bdir / "build.log", 50))
    image = bdir / common.ARCHES[arch].image
    if not image.is_file():
        raise Failure(f"the build finished but {image} is missing")
    info(f"built {bdir.name} in {common.fmt_secs(secs)}: {image}")
    _check_impl(bdir, impl, arch)
    return bdir


def _archive_members(path):
    """The file names of the members of the archive `path` (`llvm-ar t`; thin archives such as
    Kbuild's built-in.a list their members' paths, reduced here to file names), or None when
    there is no such archive."""
    if not path.is_file():
        return None
    cmd = [f"llvm-ar{common.LLVM_SUFFIX}", "t", str(path)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise Failure(f"cannot list {path}: {' '.join(cmd)}: {e}")
    if r.returncode != 0:
        raise Failure(f"cannot list {path}: {' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    return {os.path.basename(ln.strip()) for ln in r.stdout.splitlines() if ln.strip()}


def _arch_objects(bdir, arch):
    """Which of the arch layer's objects the build holds: {name: built}, and how that was decided.
    The directory's built-in.a says what was linked, whatever stale objects an earlier configuration
    of the same build directory left beside it; without it, the files themselves."""
    kdir_name, c_objs, rust_obj = ARCH_LAYER[arch]
    kdir = bdir / kdir_name
    names = c_objs + (rust_obj,)
    members = _archive_members(kdir / "built-in.a")
    if members is not None:
        return {n: n in members for n in names}, f"members of {kdir_name}/built-in.a"
    return {n: (kdir / n).is_file() for n in names}, f"files in {kdir_name}/"


def _check_impl(bdir, impl, arch="x86_64"):
    """Make sure the kernel holds the implementation asked for, never silently another one.

    c: kernel/kprobes.o. rust: the Rust core's crate object and no kernel/kprobes.o, and on an
    arch with a Rust arch layer upstream's C arch layer (x86_64: core.o in
    arch/x86/kernel/kprobes/built-in.a; arm64, riscv: kprobes.o in
    arch/<arch>/kernel/probes/built-in.a; loongarch: kprobes.o in arch/loongarch/kernel/built-in.a).
    rust-arch: the same core, and in that directory the Rust arch layer's glue object where
    upstream's C objects it replaces are not built.
    """
    c_obj = bdir / "kernel" / "kprobes.o"
    rust_obj = bdir / "kernel" / "kprobes" / "kprobes_rust.o"
    if impl == "c" and not c_obj.is_file():
        raise Failure(f"--impl c built, but {c_obj} is missing")
    if impl in ("rust", "rust-arch") and (c_obj.is_file() or not rust_obj.is_file()):
        raise Failure(f"--impl {impl} built, but kernel/kprobes.o exists={c_obj.is_file()}, "
                      f"kernel/kprobes/kprobes_rust.o exists={rust_obj.is_file()}")
    if impl == "rust" and arch in ARCH_LAYER:
        have, how = _arch_objects(bdir, arch)
        c_objs = ARCH_LAYER[arch][1]
        if not have[c_objs[0]]:
            raise Failure(f"--impl rust built, but upstream's C arch layer is not: {c_objs[0]} is not among the "
                          f"{how} (a Rust arch layer build, CONFIG_{common.RUST_ARCH_KCONFIG}=y?)")
    if impl == "rust-arch":
        if arch not in ARCH_LAYER:
            raise Failure(f"--impl rust-arch built for {arch}, which has no Rust arch layer")
        have, how = _arch_objects(bdir, arch)
        _, c_objs, glue = ARCH_LAYER[arch]
        wrong = [f"{n} built" for n in c_objs if have[n]]
        if not have[glue]:
            wrong.append(f"{glue} not built")
        if wrong:
            raise Failure(f"--impl rust-arch built, but the arch layer is not the Rust one: "
                          f"{', '.join(wrong)} (judged by the {how})")


def cmd_build(args):
    build(args.arch, args.impls[0] if args.impls else "c", args.config)
    return 0


def build_external_modules(arch, bdir, name, sources, modules, fail_on_warnings=False):
    """Build out-of-tree modules against the kernel in `bdir`, under the build lock.

    `sources` (paths) are copied into `bdir/<name>/`, which is built with M=; the log is
    `bdir/<name>-module.log`. Returns the paths of `modules` (.ko names); raises Failure with
    the command and the log tail when the build fails or one of them is missing, and, with
    `fail_on_warnings`, when the compiler warned.
    """
    mdir = bdir / name
    log = bdir / f"{name.removeprefix('rkprobes-')}-module.log"
    with common.build_lock():
        shutil.rmtree(mdir, ignore_errors=True)
        mdir.mkdir(parents=True)
        for src in sources:
            shutil.copy2(src, mdir / src.name)
        cmd = ["make", "-C", str(common.TREE), f"O={bdir}", f"M={mdir}"] + make_vars(arch) + ["modules"]
        info(f"building {', '.join(modules)} against {bdir.name} (log: {log})")
        rc = common.run_logged(cmd, log, env=make_env(), label=", ".join(modules))
    kos = [mdir / m for m in modules]
    if rc != 0 or not all(k.is_file() for k in kos):
        raise Failure(f"building {', '.join(modules)} failed (exit {rc}): {' '.join(cmd)}\n"
                      f"--- tail of {log}:\n" + common.tail(log))
    if fail_on_warnings:
        warnings = [ln for ln in log.read_text(errors="replace").splitlines() if "warning:" in ln]
        if warnings:
            raise Failure(f"{', '.join(modules)} build with warnings:\n" + "\n".join(warnings[:20]))
    return kos

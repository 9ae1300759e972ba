# SPDX-License-Identifier: GPL-2.0
"""`rkprobes run`: boot one arch with upstream's kprobes samples and show kprobes at work."""

import re

from . import common, initramfs, kbuild, qemu
from .common import Failure, banner, info

INIT = common.REPO / "tools" / "testing" / "rkprobes" / "initramfs" / "run-init.sh"
# The arches whose upstream kprobes have optprobes: there the optimization section must run.
OPTPROBE_ARCHES = ("x86_64", "ppc64")
# The arches whose ring buffer refuses a record from a breakpoint probe's handler (an NMI there,
# without ARCH_HAVE_NMI_SAFE_CMPXCHG): the guest checks the p: event's hits in kprobe_profile.
P_EVENT_IN_PROFILE_ARCHES = ("riscv",)


def run_config(arch):
    """The configuration of the kernel `run` boots. x86_64 and riscv build their own (run.config;
    riscv's leaves out the function tracer, see run-riscv.config); the other arches boot their
    KUnit kernel with KUnit off, which has everything `run` needs (kunit-<arch>.config)."""
    return "run" if arch in ("x86_64", "riscv") else "kunit"


SAMPLE_MODULES = ["samples/kprobes/kprobe_example.ko", "samples/kprobes/kretprobe_example.ko",
                  "samples/rust/rust_kprobe.ko", "samples/rust/rust_kretprobe.ko"]


def make_initramfs(bdir, arch):
    """Static busybox, our /init and the sample modules (which the build must have)."""
    kos = [bdir / m for m in SAMPLE_MODULES]
    for m, ko in zip(SAMPLE_MODULES, kos):
        if not ko.is_file():
            raise Failure(f"the build has no {m}; do the configuration's fragments set its CONFIG_SAMPLE_* =m?")
    return initramfs.pack(bdir, "run-initramfs", INIT, kos, arch=arch)


def default_impl(arch):
    """The most Rust the tree builds for `arch` (the last of `test`'s defaults it can build)."""
    return next(i for i in reversed(common.default_impls()) if not common.rust_unavailable_reason(arch, i))


def cmd_run(args):
    arch = args.arch
    impl = args.impls[0] if args.impls else default_impl(arch)
    if args.impls is None and impl == "c":
        info("the Rust core is not in the tree yet: running the C implementation")
    config = run_config(arch)
    bdir = kbuild.build(arch, impl, config)
    initrd = make_initramfs(bdir, arch)
    log = bdir / "run-console.log"
    append = ("loglevel=4 panic=-1" + (" kunit.enable=0" if config == "kunit" else "")
              + (" rkprobes.p_event_hits=profile" if arch in P_EVENT_IN_PROFILE_ARCHES else ""))
    timeout = args.timeout or (300 if arch == "x86_64" else 600)
    text = qemu.boot(arch, bdir, append, log, lambda t: "RKPROBES-DONE" in t, timeout,
                     initrd=initrd, label=f"run {arch}/{impl}")
    banner(f"kprobes at work: {arch}, {impl} implementation of the core")
    steps = []
    shown = False
    for ln in text.splitlines():
        ln = ln.rstrip("\r")
        if ln.startswith("### "):
            shown = True
            print(f"\n--- {ln[4:]}")
            continue
        m = re.match(r"^RKPROBES-STEP (\S+) (OK|FAIL) (.*)$", ln)
        if m:
            steps.append(m.groups())
            print(f"    [{m.group(2)}] {m.group(3)}")
            continue
        m = re.match(r"^RKPROBES-SKIP (\S+) (.*)$", ln)
        if m:
            name, why = m.groups()
            if name == "optimization" and arch in OPTPROBE_ARCHES:
                steps.append((name, "FAIL", f"skipped on {arch}, which has optprobes: {why}"))
            else:
                steps.append((name, "SKIP", why))
            print(f"    [{steps[-1][1]}] {steps[-1][2]}")
            continue
        if ln == "RKPROBES-DONE":
            break
        if shown:
            print(f"    {ln}")
    failed = [s for s in steps if s[1] == "FAIL"]
    skipped = [s for s in steps if s[1] == "SKIP"]
    banner("run summary")
    for name, status, what in steps:
        print(f"  {status:4}  {name}: {what}")
    if not steps:
        raise Failure(f"the guest reported no steps; see {log}")
    if failed:
        raise Failure(f"{len(failed)} step(s) failed: " + ", ".join(s[0] for s in failed) + f" (console: {log})")
    passed = len(steps) - len(skipped)
    info(f"all {passed} steps passed" + (f", {len(skipped)} skipped (SKIP above, with the reason)" if skipped else "")
         + f" (console: {log})")
    return 0

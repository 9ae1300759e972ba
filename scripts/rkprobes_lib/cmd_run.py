# SPDX-License-Identifier: GPL-2.0
"""`rkprobes run`: boot x86_64 with upstream's kprobes samples and show kprobes at work."""

import re

from . import common, initramfs, kbuild, qemu
from .common import Failure, banner, info

INIT = common.REPO / "tools" / "testing" / "rkprobes" / "initramfs" / "run-init.sh"
SAMPLE_MODULES = ["samples/kprobes/kprobe_example.ko", "samples/kprobes/kretprobe_example.ko",
                  "samples/rust/rust_kprobe.ko", "samples/rust/rust_kretprobe.ko"]


def make_initramfs(bdir):
    """Static busybox, our /init and the sample modules (which the build must have)."""
    kos = [bdir / m for m in SAMPLE_MODULES]
    for m, ko in zip(SAMPLE_MODULES, kos):
        if not ko.is_file():
            raise Failure(f"the build has no {m}; is CONFIG_SAMPLE_KPROBES=m in run.config?")
    return initramfs.pack(bdir, "initramfs", INIT, kos)


def cmd_run(args):
    # The default is the last of the defaults `test` runs: the most of kprobes in Rust.
    impl = args.impl or common.default_impls()[-1]
    common.require_impl_available(impl)
    if args.impl is None and impl == "c":
        info("the Rust core is not in the tree yet: running the C implementation")
    bdir = kbuild.build("x86_64", impl, "run")
    initrd = make_initramfs(bdir)
    log = bdir / "run-console.log"
    text = qemu.boot("x86_64", bdir, "loglevel=4 panic=-1", log, lambda t: "RKPROBES-DONE" in t,
                     args.timeout, initrd=initrd, label=f"run x86_64/{impl}")
    banner(f"kprobes at work: x86_64, {impl} implementation of the core")
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
        if ln == "RKPROBES-DONE":
            break
        if shown:
            print(f"    {ln}")
    failed = [s for s in steps if s[1] != "OK"]
    banner("run summary")
    for name, status, what in steps:
        print(f"  {status:4}  {name}: {what}")
    if not steps:
        raise Failure(f"the guest reported no steps; see {log}")
    if failed:
        raise Failure(f"{len(failed)} step(s) failed: " + ", ".join(s[0] for s in failed) + f" (console: {log})")
    info(f"all {len(steps)} steps passed (console: {log})")
    return 0

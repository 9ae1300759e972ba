# SPDX-License-Identifier: GPL-2.0
"""The x86 behaviour suite of `rkprobes test`: a probed site must behave as unprobed.

For each x86_64 implementation (c, rust, rust-arch): build the KUnit kernel,
build the KUnit module rkprobes_x86suite.ko (tools/testing/rkprobes/x86suite/)
against it, boot it with a busybox initramfs whose /init loads the module,
and parse the suite's KTAP. Each case runs one asm site (an instruction class
the x86 kprobes emulate, single-step, boost, optimize or refuse) unprobed,
then probed with a pre_handler, with pre and post handlers, and optimized
where the kernel optimizes it, and expects the same registers, flags and
memory, and one handler run per execution. Case xs_optimizable prints which
sites were optimized; the result row names them.
"""

import re

from . import common, initramfs, kbuild, qemu
from .common import Failure

XS_DIR = common.REPO / "tools" / "testing" / "rkprobes" / "x86suite"
INIT = XS_DIR / "x86suite-init.sh"
# The sites first: the suite uses their symbols.
MODULES = ("rkprobes_x86sites.ko", "rkprobes_x86suite.ko")
SUITE = "rkprobes_x86suite"
ARCHES = ("x86_64",)
# The kernel's built-in suites already ran in the KUnit boot: run only ours here.
APPEND = f"panic=-1 kunit.filter_glob={SUITE}"
NOTE_RE = re.compile(r"#\s*(\w+): xs: ([^=]+)=(.*)$")


def expected_cases():
    """The cases rkprobes_x86suite.c declares, in order: a case that does not run is a failure."""
    src = (XS_DIR / "rkprobes_x86suite.c").read_text()
    return re.findall(r"^\s*KUNIT_CASE\((\w+)\)", src, re.M)


def build_module(arch, bdir):
    """Build the module out of tree against the kernel in `bdir`; returns the .ko paths."""
    sources = [f for f in sorted(XS_DIR.iterdir())
               if f.name == "Kbuild" or f.suffix in (".c", ".h", ".S")]
    return kbuild.build_external_modules(arch, bdir, "rkprobes-x86suite", sources, MODULES,
                                         fail_on_warnings=True)


def _console_segment(text):
    """The console between the init's XS-BEGIN and XS-DONE markers, without timestamps."""
    lines = []
    inside = False
    for ln in text.splitlines():
        ln = re.sub(r"^\[\s*\d+\.\d+\]\s?", "", ln.rstrip("\r"))
        if ln == "XS-BEGIN":
            inside = True
        elif ln == "XS-DONE":
            break
        elif inside:
            lines.append(ln)
    return lines


def _cases(data):
    found = {}

    def walk(group):
        for case in group.get("test_cases", []):
            if group.get("name") == SUITE:
                found[case["name"]] = case["status"]
        for sub in group.get("sub_groups", []):
            walk(sub)

    walk(data)
    return found


def notes(lines):
    """{ "<case>.<key>": value } from the suite's "# <case>: xs: <key>=<value>" lines."""
    out = {}
    for ln in lines:
        m = NOTE_RE.search(ln)
        if m:
            out[f"{m.group(1)}.{m.group(2)}"] = m.group(3).strip()
    return out


def run(res, arch, impl, timeout):
    """Build, boot and parse one implementation; adds one result row, returns its notes or None."""
    name = f"x86 suite {arch}/{impl}: {SUITE}"
    cases = expected_cases()
    try:
        bdir = kbuild.build(arch, impl, "kunit")
        kos = build_module(arch, bdir)
        initrd = initramfs.pack(bdir, "x86suite-initramfs", INIT, kos)
    except Failure as e:
        res.add(name, failed=len(cases), note=str(e))
        return None
    log = bdir / "x86suite-console.log"
    boot_error = None
    try:
        text = qemu.boot(arch, bdir, APPEND, log, lambda t: "XS-DONE" in t, timeout, initrd=initrd,
                         label=f"x86 suite {arch}/{impl}")
    except Failure as e:
        # A crash or a hang: still report what the cases printed before it.
        boot_error = str(e)
        text = log.read_text(errors="replace") if log.is_file() else ""
    lines = _console_segment(text)
    seg = bdir / "x86suite-ktap.log"
    seg.write_text("\n".join(lines) + "\n")
    parsed, _ = common.kunit_parse(seg, bdir / "x86suite.json")
    status = _cases(parsed) if parsed is not None else {}
    passed = sum(1 for c in cases if status.get(c) == "PASS")
    skipped = sum(1 for c in cases if status.get(c) == "SKIP")
    failed = len(cases) - passed - skipped
    seen = notes(lines)
    optimized = seen.get("xs_optimizable.optimized", "(not printed)")
    note = (f"{passed}/{len(cases)} cases passed, {skipped} skipped; optimized: {optimized} "
            f"(console: {log})")
    if boot_error:
        failed = max(failed, 1)
        note = "the boot did not finish: " + boot_error + "\n" + note
    insmod = re.search(r"^XS-INSMOD (\d+)$", "\n".join(lines), re.M)
    if not insmod or insmod.group(1) != "0":
        note += f"; insmod rkprobes_x86suite.ko exited {insmod.group(1) if insmod else '(never returned)'}"
        failed = max(failed, 1)
    for c in cases:
        st = status.get(c, "DID NOT RUN")
        if st == "SKIP":
            reason = next((m.group(1) for ln in lines
                           for m in [re.match(rf"^\s*ok \d+ {c} # SKIP (.*)$", ln)] if m), "")
            note += f"\n  SKIP: {c}: {reason}"
        elif st != "PASS":
            note += f"\n  {st}: {c}"
    # KUnit prints a failed expectation as a header line and the values and message below it.
    failures = [" / ".join(x.strip() for x in lines[i:i + 5])
                for i, ln in enumerate(lines) if re.search(r"(ASSERTION|EXPECTATION) FAILED", ln)]
    for ln in failures[:20]:
        note += f"\n    {ln}"
    res.add(name, passed, failed, skipped, note)
    return seen


def run_all(res, arch, impls, timeout):
    """The x86 behaviour suite on `arch` for each of `impls`."""
    if arch not in ARCHES:
        res.add(f"x86 suite {arch}", skipped=1, note="the x86 behaviour suite runs on x86_64 only")
        return
    for impl in impls:
        common.banner(f"x86 behaviour suite on {arch}, {impl} implementation")
        run(res, arch, impl, timeout)

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

from . import common, kbuild, ktapsuite
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


def notes(lines):
    """{ "<case>.<key>": value } from the suite's "# <case>: xs: <key>=<value>" lines."""
    return ktapsuite.keyed_values(lines, NOTE_RE)


def run(res, arch, impl, timeout):
    """Build, boot and parse one implementation; adds one result row, returns its notes or None."""
    name = f"x86 suite {arch}/{impl}: {SUITE}"
    cases = expected_cases()
    try:
        b = ktapsuite.boot(arch, impl, SUITE, "x86suite", "XS", INIT, build_module, APPEND,
                           timeout, f"x86 suite {arch}/{impl}")
    except Failure as e:
        res.add(name, failed=len(cases), note=str(e))
        return None
    seen = notes(b.lines)
    optimized = seen.get("xs_optimizable.optimized", "(not printed)")
    passed, failed, skipped, note = ktapsuite.summarize(
        b, cases, "rkprobes_x86suite.ko", "XS", f"; optimized: {optimized}")
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

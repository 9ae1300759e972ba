# SPDX-License-Identifier: GPL-2.0
"""The arch behaviour suites of `rkprobes test`: a probed site must behave as unprobed.

On x86_64 (tools/testing/rkprobes/x86suite/), arm64 and riscv (tools/testing/rkprobes/stepsuite/), for
each implementation (c, rust, rust-arch): build the KUnit kernel, build the suite's two modules
(the assembly sites and the KUnit module) against it, boot it with a busybox initramfs whose
/init loads them, and parse the suite's KTAP. Each case runs one asm site (an instruction class
the arch's kprobes emulate or simulate, single-step, boost, optimize or refuse) unprobed, then
probed with a pre_handler and with pre and post handlers (and on x86 optimized where the kernel
optimizes it), and expects the same registers, flags and memory, and one handler run per
execution. On x86, case xs_optimizable prints which sites were optimized; the result row names
them.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from . import common, kbuild, ktapsuite
from .common import Failure

TESTING = common.REPO / "tools" / "testing" / "rkprobes"


@dataclass(frozen=True)
class Suite:
    """One arch's behaviour suite."""
    label: str          # result rows: "<label> <arch>/<impl>: <name>"
    dir: Path
    modules: tuple      # the sites first: the suite uses their symbols
    name: str           # the KUnit suite
    stem: str           # file names in the build directory
    marker: str         # the /init's console markers
    prefix: str         # the cases' "# <case>: <prefix>: <key>=<value>" notes
    source: str         # the C file that lists the cases (KUNIT_CASE)

    @property
    def init(self):
        return self.dir / f"{self.stem}-init.sh"

    @property
    def append(self):
        # The kernel's built-in suites already ran in the KUnit boot: run only ours here.
        return f"panic=-1 kunit.filter_glob={self.name}"

    def expected_cases(self):
        """The cases the suite's source declares, in order: a case that does not run is a failure."""
        src = (self.dir / self.source).read_text()
        return re.findall(r"^\s*KUNIT_CASE\((\w+)\)", src, re.M)

    def notes(self, lines):
        """{ "<case>.<key>": value } from the suite's "# <case>: <prefix>: <key>=<value>" lines."""
        return ktapsuite.keyed_values(lines, re.compile(rf"#\s*(\w+): {self.prefix}: ([^=]+)=(.*)$"))


SUITES = {
    "x86_64": Suite("x86 suite", TESTING / "x86suite", ("rkprobes_x86sites.ko", "rkprobes_x86suite.ko"),
                    "rkprobes_x86suite", "x86suite", "XS", "xs", "rkprobes_x86suite.c"),
    "arm64": Suite("arm64 suite", TESTING / "stepsuite", ("rkprobes_a64sites.ko", "rkprobes_a64suite.ko"),
                   "rkprobes_a64suite", "a64suite", "AS", "ss", "a64suite.c"),
    "riscv": Suite("riscv suite", TESTING / "stepsuite", ("rkprobes_rvsites.ko", "rkprobes_rvsuite.ko"),
                   "rkprobes_rvsuite", "rvsuite", "RS", "ss", "rvsuite.c"),
}


def build_module(suite):
    """A builder of the suite's modules, out of tree against the kernel in `bdir`."""
    def build(arch, bdir):
        sources = [f for f in sorted(suite.dir.iterdir())
                   if f.name == "Kbuild" or f.suffix in (".c", ".h", ".S")]
        return kbuild.build_external_modules(arch, bdir, f"rkprobes-{suite.stem}", sources, suite.modules,
                                             fail_on_warnings=True)
    return build


def run(res, suite, arch, impl, timeout):
    """Build, boot and parse one implementation; adds one result row, returns its notes or None."""
    name = f"{suite.label} {arch}/{impl}: {suite.name}"
    cases = suite.expected_cases()
    try:
        b = ktapsuite.boot(arch, impl, suite.name, suite.stem, suite.marker, suite.init, build_module(suite),
                           suite.append, timeout, f"{suite.label} {arch}/{impl}")
    except Failure as e:
        res.add(name, failed=len(cases), note=str(e))
        return None
    seen = suite.notes(b.lines)
    extra = ""
    if arch == "x86_64":
        extra = f"; optimized: {seen.get('xs_optimizable.optimized', '(not printed)')}"
    passed, failed, skipped, note = ktapsuite.summarize(b, cases, suite.modules[-1], suite.marker, extra)
    res.add(name, passed, failed, skipped, note)
    return seen


def run_all(res, arch, impls, timeout):
    """The behaviour suite of `arch` for each of `impls`."""
    suite = SUITES.get(arch)
    if not suite:
        res.add(f"arch suite {arch}", skipped=1,
                note=f"no arch behaviour suite for {arch} (they exist for {', '.join(SUITES)})")
        return
    for impl in impls:
        common.banner(f"{suite.label.split()[0]} behaviour suite on {arch}, {impl} implementation")
        run(res, suite, arch, impl, timeout)

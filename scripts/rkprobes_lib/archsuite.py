# SPDX-License-Identifier: GPL-2.0
"""The arch behaviour suites of `rkprobes test`: a probed site must behave as unprobed.

On x86_64 (tools/testing/rkprobes/x86suite/) and on arm64, riscv, loongarch, ppc64 and s390, the
step suites (tools/testing/rkprobes/stepsuite/), for each implementation (c, rust, rust-arch where
the arch has it): build the KUnit kernel, build the suite's two modules (the assembly sites and the
KUnit module) against it, boot it with a busybox initramfs whose /init loads them (x86suite-init.sh;
the step suites share stepsuite-init.sh, which loads whichever sites and suite the initramfs holds),
and parse the suite's KTAP. Each case runs one asm site (an instruction class the arch's kprobes
emulate or simulate, single-step, boost, optimize or refuse) unprobed, then probed with a
pre_handler and with pre and post handlers (and on x86 optimized where the kernel optimizes it), and
expects the same registers, flags and memory, and one handler run per execution; a refused site
expects register_kprobe()'s errno. On x86, case xs_optimizable prints which sites were optimized;
the result row names them. Cases that fail for a cause outside kprobes (EXPECTED_FAILURES) are
expected failures there, printed and counted as XFAIL.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from . import common, kbuild, ktapsuite, qemu
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
    init: Path          # the initramfs's /init: loads the modules between <marker>-BEGIN and -DONE

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


STEPSUITE = TESTING / "stepsuite"

# Cases that fail on every implementation, C's included, for a cause outside kprobes, and only
# where that cause holds: (arch, QEMU accelerator) -> (cases, why). Each is an expected failure
# (XFAIL): it still runs, its reason is printed in every run, and it is counted apart from the
# passes and the skips; one that passes is an UNEXPECTED PASS and fails its row (the cause may be
# gone: take the case off).
#
# Where the failure may take the guest down (crashes=True), the suite lists those cases last and
# boots with oops=panic: an oops in one ends the boot at once instead of leaving the CPU's kprobe
# state behind for the next case to hang on (a 600 s timeout). The expected failures that did not
# run are then XFAIL too, each named with the case the guest went down in; a case that is not
# expected to fail and did not run still fails the row.
S390_PER_BRANCH = ("sz_brc", "sz_brcl", "sz_brct", "sz_cgrj", "sz_bcr", "sz_bc", "sz_cgrb")
EXPECTED_FAILURES = {
    ("s390", "tcg"): (S390_PER_BRANCH,
                      "QEMU TCG raises the PER instruction-fetch event of a stepped conditional "
                      "branch one instruction late, so the step resumes past where it should, on "
                      "C as on Rust (docs/findings/qemu-s390x-per-late-after-branch.md)",
                      True),
}


def expected_failures(arch):
    """({ case: why } of the cases of `arch`'s suite expected to fail under this QEMU, and whether
    they may take the guest down)."""
    cases, why, crashes = EXPECTED_FAILURES.get((arch, qemu.accelerator(arch)), ((), None, False))
    return {c: f"{why}; {qemu.version(arch)}" for c in cases}, crashes


def step_suite(arch_label, short):
    """A step suite of stepsuite/: `<short>sites.S` and `<short>suite.c`, KUnit suite
    `rkprobes_<short>suite`; the /init and its marker are the same for every arch."""
    return Suite(f"{arch_label} suite", STEPSUITE, (f"rkprobes_{short}sites.ko", f"rkprobes_{short}suite.ko"),
                 f"rkprobes_{short}suite", f"{short}suite", "SS", "ss", f"{short}suite.c",
                 STEPSUITE / "stepsuite-init.sh")


SUITES = {
    "x86_64": Suite("x86 suite", TESTING / "x86suite", ("rkprobes_x86sites.ko", "rkprobes_x86suite.ko"),
                    "rkprobes_x86suite", "x86suite", "XS", "xs", "rkprobes_x86suite.c",
                    TESTING / "x86suite" / "x86suite-init.sh"),
    "arm64": step_suite("arm64", "a64"),
    "riscv": step_suite("riscv", "rv"),
    "loongarch": step_suite("loongarch", "la"),
    "ppc64": step_suite("ppc64", "ppc"),
    "s390": step_suite("s390", "s390"),
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
    expected, crashes = expected_failures(arch)
    append = suite.append + (" oops=panic" if crashes else "")
    try:
        b = ktapsuite.boot(arch, impl, suite.name, suite.stem, suite.marker, suite.init, build_module(suite),
                           append, timeout, f"{suite.label} {arch}/{impl}")
    except Failure as e:
        res.add(name, failed=len(cases), note=str(e))
        return None
    seen = suite.notes(b.lines)
    extra = ""
    if arch == "x86_64":
        extra = f"; optimized: {seen.get('xs_optimizable.optimized', '(not printed)')}"
    unknown = sorted(set(expected) - set(cases))
    if unknown:
        res.add(name, failed=1, note=f"archsuite.py expects failures of cases {suite.source} does not have: "
                f"{', '.join(unknown)}")
        return seen
    passed, failed, skipped, xfailed, note = ktapsuite.summarize(b, cases, suite.modules[-1], suite.marker,
                                                                 extra, expected, crashes)
    res.add(name, passed, failed, skipped, note, xfail=xfailed)
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


def check_row(res):
    """A host row: the step suites' summary of an expected failure that takes the guest down.

    The summary of made-up boots (ktapsuite.summarize) must count a guest gone down in an expected
    failure of an arch marked crashes=True as XFAIL only when every case that did not report is an
    expected failure, and fail the row otherwise; and each such arch's suite must list those cases
    last, or the cases after them would not run."""
    problems = []
    cases = ["a", "b", "x", "y", "z"]
    expected = {c: "why" for c in ("x", "y", "z")}

    def summary(status, boot_error, crashes=True, expect=expected):
        b = ktapsuite.Boot(Path("/dev/null"), Path("/dev/null"), "illegal operation: 0001 ilc:1 [#1]\n",
                           ["SS-INSMOD 0"] if boot_error is None else [], status, boot_error)
        return ktapsuite.summarize(b, cases, "m.ko", "SS", "", expect, crashes)[:4]

    down = "QEMU exited (code 0) before the guest finished"
    checks = (
        ("a guest gone down in an expected failure, the rest expected too",
         summary({"a": "PASS", "b": "PASS", "x": "FAIL"}, down), (2, 0, 0, 3)),
        ("the same where the failure is not marked as one that may crash",
         summary({"a": "PASS", "b": "PASS", "x": "FAIL"}, down, crashes=False), (2, 2, 0, 1)),
        ("a guest gone down before an expected failure",
         summary({"a": "PASS"}, down), (1, 4, 0, 0)),
        ("a guest gone down in an expected failure with a case after it that is not",
         summary({"a": "PASS", "b": "PASS", "x": "FAIL"}, down, expect={"x": "why", "z": "why"}), (2, 2, 0, 1)),
        ("an expected failure that passes", summary({"a": "PASS", "b": "PASS", "x": "FAIL", "y": "PASS",
                                                     "z": "FAIL"}, None), (2, 1, 0, 2)),
    )
    for what, got, want in checks:
        if got != want:
            problems.append(f"{what}: (passed, failed, skipped, xfail) {got}, wanted {want}")
    for (arch, _accel), (crashing, _why, crashes) in EXPECTED_FAILURES.items():
        order = SUITES[arch].expected_cases()
        if crashes and order[-len(crashing):] != sorted(crashing, key=order.index):
            problems.append(f"{SUITES[arch].source}: the expected failures that may take the guest down "
                            f"({', '.join(crashing)}) are not its last cases")
    res.add("host: step suites: an expected failure that takes the guest down", int(not problems),
            int(bool(problems)), note="; ".join(problems) if problems else
            f"{len(checks)} made-up boots summarized as expected; the crashing expected failures are last")

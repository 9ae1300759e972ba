# SPDX-License-Identifier: GPL-2.0
"""`rkprobes test`: host checks, decoder checks, then KUnit in QEMU per (arch, impl).

The implementations are c (upstream C core and C arch), rust (Rust core,
upstream C arch) and rust-arch (Rust core and Rust arch layer, x86_64 only);
without --impl, c and rust. On every arch it also runs our conformance suite
on each implementation and diffs the transcript of each non-C one against
C's (conformance.py), and upstream's ftrace kselftests of kprobes
(kselftest.py); on x86_64, arm64, riscv and loongarch the arch behaviour suite
(archsuite.py).

Every step runs even when an earlier one failed; the summary lists each step
and the run ends with one line `N passed, N failed, N skipped, N xfail`, counting
test cases (cargo tests, KUnit cases) and single checks (clippy, fmt, the
decoder's differential run); skipped and xfail only when not 0 (xfail: the arch
suites' expected failures, archsuite.EXPECTED_FAILURES).
"""

import json
import os
import re
import subprocess

from . import (archsuite, cli, clitable, cmd_stress, common, conformance, doccheck, export, kbuild, kselftest,
               kunitconfigs, layout, nokprobe, qemu, setup, tracetools, workflows)
from .common import Failure, banner, info

# Suites of our own that the KUnit configuration builds, besides upstream's
# kprobes_test: a suite that silently stopped being built must fail the run.
EXPECTED_SUITES = {"x86_64": ("rust_insn_decoder",)}
EXPECTED_SUITES_ALL = ("rust_doctests_kernel",)

HOST_DIR = common.REPO / "tools" / "testing" / "rkprobes" / "host"
FLAGS_CHECK = HOST_DIR / "core" / "kernel-flags-check.sh"
DECODER_PKG = "rkprobes-x86-insn"


def add_args(p):
    """The options of `test` besides the shared --arch and --impl."""
    p.add_argument("--host-only", action="store_true", help="only the host checks (cargo test, clippy, fmt)")
    p.add_argument("--decoder", action="store_true", help="only the x86 decoder checks")
    p.add_argument("--no-ftrace", action="store_true",
                   help="also run the KUnit step (kprobes_test, doctests) of each implementation on a KUnit "
                   "kernel without CONFIG_FUNCTION_TRACER (configuration kunit-noftrace: "
                   "configs/noftrace.config on top of the kunit fragments), so its probes take the int3 path, "
                   "not ftrace; extra summary rows 'kunit ARCH/IMPL (no ftrace)'")
    p.add_argument("--debug-assertions", action="store_true",
                   help="only the Rust builds on a KUnit kernel with CONFIG_RUST_DEBUG_ASSERTIONS and "
                   "CONFIG_RUST_OVERFLOW_CHECKS (configuration kunit-debugassert): kprobes_test, the doctests, "
                   "and the hit-path check, which names any panic path reachable from a probe hit")
    p.add_argument("--conformance", action="store_true",
                   help="only our conformance suite (tools/testing/rkprobes/conformance/) in the KUnit kernel "
                   "of each implementation, and each non-C transcript against C's; on "
                   + ", ".join(conformance.ARCHES))
    p.add_argument("--kselftest", action="store_true",
                   help="only upstream's ftrace kselftests of kprobes (ftracetest on "
                   "tools/testing/selftests/ftrace/test.d/kprobe/, copied from the pristine source into the "
                   "initramfs) in the KUnit kernel of each implementation, and each non-C one against C")
    p.add_argument("--tools", action="store_true",
                   help="only the tracing users' tools, x86_64: perf (probe -a at a function, at function+offset and "
                   "at its return, -l, stat over a workload, -d) and bpftrace 0.17 (kprobe:, kretprobe:, an offset "
                   "kprobe, arg2, retval), the host's binaries copied with their libraries into the initramfs of a "
                   "KUnit kernel with perf events, BPF and IPv4 (configuration kunit-tools), hit counts checked "
                   "against the workload's reads and each non-C one against C's; then the ftrace kselftests in "
                   "that kernel, where kretprobe_maxactive.tc has its inet_csk_accept")
    p.add_argument("--archsuite", "--x86suite", dest="archsuite", action="store_true",
                   help="only the arch behaviour suite (x86_64: tools/testing/rkprobes/x86suite/, each emulated, "
                   "boosted, optimized or refused instruction class; arm64, riscv, loongarch: the step suites of "
                   "tools/testing/rkprobes/stepsuite/, each simulated, stepped or refused class; probed and "
                   "unprobed, results compared) in the KUnit kernel of each implementation")
    p.add_argument("--no-stress", action="store_true",
                   help="leave out the short SMP stress (x86_64: `rkprobes stress --duration 10 --toggles "
                   "optimization --config kunit` for each implementation: the KUnit kernels, 4 vCPUs on one "
                   "QEMU thread; a boot of about 15 s per implementation)")
    p.add_argument("--timeout", type=int, default=600, help="seconds one QEMU boot may take (default 600)")
    p.add_argument("--shard", default=None, metavar="K/N",
                   help="run only shard K of N of the steps (every N-th step from the K-th: host checks, KUnit per "
                   "arch and implementation, each suite per arch, the decoder, kunitconfig and export checks), so "
                   "N machines together run what `test` runs; with the same --arch and --impl on each")
    cli.checks(p, _check_shard)


def _check_shard(args):
    if args.shard is None:
        return
    m = re.fullmatch(r"(\d+)/(\d+)", args.shard)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise cli.UsageError(f"--shard {args.shard}: give K/N with 1 <= K <= N, such as 1/3, 2/3, 3/3")
    args.shard = (int(m.group(1)), int(m.group(2)))


class Results:
    def __init__(self):
        self.rows = []  # (status, name, passed, failed, skipped, xfail, note)

    def add(self, name, passed=0, failed=0, skipped=0, note="", xfail=0):
        """One row. `xfail`: cases that failed as expected (archsuite.EXPECTED_FAILURES), counted
        apart: neither passed, nor failed, nor skipped."""
        status = "FAIL" if failed else ("SKIP" if skipped and not passed and not xfail else "PASS")
        self.rows.append((status, name, passed, failed, skipped, xfail, note))
        if status == "SKIP":
            print(f"\n*** SKIPPED: {name}: {note} ***\n", flush=True)
        elif status == "FAIL":
            print(f"\n*** FAILED: {name}: {note} ***\n", flush=True)
        elif xfail:
            print(f"\n*** EXPECTED FAILURES (XFAIL): {name}: {note} ***\n", flush=True)

    def totals(self):
        return tuple(sum(r[i] for r in self.rows) for i in (2, 3, 4, 5))


def _cargo(args, label, log):
    cargo = setup.host_cargo()
    if not cargo:
        raise Failure("no host cargo; run scripts/rkprobes setup")
    cmd = [cargo] + args
    info("$ cargo " + " ".join(args))
    env = dict(os.environ, RKPROBES_LINUX_SRC=str(common.PRISTINE))
    rc = common.run_logged(cmd, log, cwd=str(common.REPO), label=label, env=env)
    return rc, log.read_text(errors="replace")


def _host_crates():
    return sorted(p.parent.name for p in HOST_DIR.glob("*/Cargo.toml"))


def host_checks(res, packages=None):
    logs = common.CACHE / "logs"
    if not _host_crates():
        res.add("host: cargo workspace", skipped=1, note="no host crates in tools/testing/rkprobes/host yet")
        return
    sel = ["--workspace"] if packages is None else sum((["-p", p] for p in packages), [])
    what = "workspace" if packages is None else ",".join(packages)
    rc, out = _cargo(["test"] + sel, "cargo test", logs / "cargo-test.log")
    passed = sum(int(m) for m in re.findall(r"test result: \w+\. (\d+) passed", out))
    failed = sum(int(m) for m in re.findall(r"test result: \w+\. \d+ passed; (\d+) failed", out))
    ignored = sum(int(m) for m in re.findall(r"; (\d+) ignored", out))
    if rc != 0 and failed == 0:
        failed = 1
    res.add(f"host: cargo test ({what})", passed, failed, ignored,
            note="" if rc == 0 else f"exit {rc}; tail of {logs / 'cargo-test.log'}:\n" + "\n".join(out.splitlines()[-30:]))
    rc, out = _cargo(["clippy"] + sel + ["--all-targets", "--", "-D", "warnings"], "cargo clippy",
                     logs / "cargo-clippy.log")
    res.add(f"host: cargo clippy -D warnings ({what})", int(rc == 0), int(rc != 0),
            note="" if rc == 0 else _diagnostics(out))
    rc, out = _cargo(["fmt", "--all", "--", "--check", "--color", "never"], "cargo fmt", logs / "cargo-fmt.log")
    res.add("host: cargo fmt --check", int(rc == 0), int(rc != 0),
            note="" if rc == 0 else "\n".join(out.splitlines()[-30:]))


def doc_check(res):
    """Links, README length and the rst design page (doccheck.py), as one row."""
    passed, failed, note = doccheck.run()
    res.add("host: documentation links, README length, rst", passed, failed, note=note)


def _diagnostics(out):
    """The compiler's error and warning lines with their locations, not the progress noise."""
    keep = [ln for ln in out.splitlines() if re.match(r"^(error|warning)(\[|:)|^\s+--> ", ln)]
    return "\n".join(keep[:30]) or "\n".join(out.splitlines()[-30:])


def _has_bin(package, binary):
    cargo = setup.host_cargo()
    r = subprocess.run([cargo, "metadata", "--no-deps", "--format-version", "1"], cwd=str(common.REPO),
                       capture_output=True, text=True)
    if r.returncode != 0:
        return False
    for pkg in json.loads(r.stdout)["packages"]:
        if pkg["name"] == package:
            return any(t["name"] == binary and "bin" in t["kind"] for t in pkg["targets"])
    return False


def decoder_difftest(res):
    """Compare the Rust decoder's lengths with objdump over the x86_64 vmlinux."""
    name = "decoder: insn-difftest against objdump on the x86_64 vmlinux"
    if not _has_bin(DECODER_PKG, "insn-difftest"):
        res.add(name, skipped=1, note=f"the {DECODER_PKG} package has no insn-difftest binary yet")
        return
    try:
        bdir = kbuild.build("x86_64", "c", "kunit")
    except Failure as e:
        res.add(name, failed=1, note=f"could not build the vmlinux to compare against: {e}")
        return
    log = common.CACHE / "logs" / "insn-difftest.log"
    rc, out = _cargo(["run", "--release", "-q", "-p", DECODER_PKG, "--bin", "insn-difftest", "--",
                      str(bdir / "vmlinux")], "insn-difftest", log)
    m = re.search(r"^(\d+) instructions, (\d+) mismatches$", out, re.M)
    if m:
        print(m.group(0), flush=True)
    ok = rc == 0 and m and int(m.group(2)) == 0
    res.add(name, int(bool(ok)), int(not ok),
            note=m.group(0) if m else "no summary line; tail:\n" + "\n".join(out.splitlines()[-20:]))


def _strip_prefix(line):
    return re.sub(r"^\[\s*\d+\.\d+\]\s?", "", line.rstrip("\r\n"))


def ktap_done(text):
    """True once the top-level KTAP plan has all its results."""
    plan = None
    results = 0
    for ln in text.splitlines():
        ln = _strip_prefix(ln)
        m = re.match(r"^1\.\.(\d+)$", ln)
        if m and plan is None:
            plan = int(m.group(1))
        elif plan is not None and re.match(r"^(not )?ok \d+", ln):
            results += 1
    return plan is not None and results >= plan


def _count_cases(group, out):
    for case in group.get("test_cases", []):
        out.append((group.get("name", "?"), case["name"], case["status"]))
    for sub in group.get("sub_groups", []):
        _count_cases(sub, out)


def compile_fail_doctests(bdir):
    """The kernel crate's `compile_fail` doctests, as rustdoc judged them in the build.

    They never become KUnit cases: rustdoc checks them while the build generates the doctests
    (patch 0103), and its report is kept in rust/test/doctests/kernel.log. Returns (passed,
    failed, note); the kprobes API's own must be among the passed.
    """
    log = bdir / "rust" / "test" / "doctests" / "kernel.log"
    if not log.is_file():
        return 0, 1, f"no rustdoc report at {log} (is patch 0103 applied?)"
    verdicts = re.findall(r"^test (\S+) - .* - compile fail \.\.\. (\w+)$", log.read_text(errors="replace"), re.M)
    passed = sum(1 for _, v in verdicts if v == "ok")
    failed = len(verdicts) - passed
    # The kprobes API: rust/kernel/kprobes/*.rs (rust/kernel/kprobes.rs before it was split).
    ours = sum(1 for f, v in verdicts if re.search(r"(^|/)kprobes(\.rs|/\w+\.rs)$", f) and v == "ok")
    note = f"compile_fail doctests: {passed} refused by the compiler as expected ({ours} in kernel::kprobes)"
    if not ours:
        failed += 1
        note += "; none of kernel::kprobes was checked"
    if failed:
        note += f"; see {log}"
    return passed, failed, note


def _check_no_ftrace(bdir):
    """Refuse a kunit-noftrace build whose .config still has the function tracer after
    olddefconfig: its probes would take the ftrace path, which --no-ftrace is there to avoid."""
    have = [ln for ln in (bdir / ".config").read_text().splitlines() if ln.startswith("CONFIG_FUNCTION_TRACER=")]
    if have:
        raise Failure(f"{bdir / '.config'} has {have[0]} although configs/noftrace.config turns it off: "
                      "something selects the function tracer, so this is not a kernel without ftrace")
    return "CONFIG_FUNCTION_TRACER not set in .config (checked)"


def kunit(res, arch, impl, timeout, config="kunit"):
    """The KUnit step on one build; config "kunit-noftrace" (--no-ftrace) is the same kernel
    without the function tracer, its rows marked "(no ftrace)"."""
    a = common.ARCHES[arch]
    what = f"{arch}/{impl}" + {"kunit-noftrace": " (no ftrace)",
                               "kunit-debugassert": " (debug assertions)"}.get(config, "")
    name = f"kunit {what}: kprobes_test"
    try:
        bdir = kbuild.build(arch, impl, config)
        ftrace_note = _check_no_ftrace(bdir) if config == "kunit-noftrace" else ""
        log = bdir / "kunit-console.log"
        console = qemu.boot(arch, bdir, "kunit_shutdown=reboot", log, ktap_done, timeout,
                            label=f"KUnit {what}")
    except Failure as e:
        res.add(name, failed=a.kunit_cases, note=str(e))
        return
    jpath = bdir / "kunit.json"
    data, r = common.kunit_parse(log, jpath)
    if data is None:
        res.add(name, failed=a.kunit_cases, note=f"kunit.py parse produced no results:\n{r.stdout[-1500:]}{r.stderr[-800:]}")
        return
    cases = []
    _count_cases(data, cases)
    kp = [c for c in cases if c[0] == "kprobes_test"]
    passed = sum(1 for c in cases if c[2] == "PASS")
    failed = sum(1 for c in cases if c[2] not in ("PASS", "SKIP"))
    skipped = sum(1 for c in cases if c[2] == "SKIP")
    kp_pass = sum(1 for c in kp if c[2] == "PASS")
    note = f"kprobes_test {kp_pass}/{len(kp)} passed, {a.kunit_cases} expected on {arch}"
    if ftrace_note:
        note += f"; {ftrace_note}"
    cf_pass, cf_fail, cf_note = compile_fail_doctests(bdir)
    passed += cf_pass
    failed += cf_fail
    note += f"; {cf_note}"
    if len(kp) < a.kunit_cases:
        failed += a.kunit_cases - len(kp)
        note += f"; only {len(kp)} kprobes_test cases ran"
    suites = {c[0] for c in cases}
    for suite in EXPECTED_SUITES.get(arch, ()) + EXPECTED_SUITES_ALL:
        if suite not in suites:
            failed += 1
            note += f"; suite {suite} did not run"
    # Console lines the arch must print in this boot (e.g. the built-in
    # rust_minimal sample where Rust support is ours): one check each.
    for want in a.kunit_console_lines:
        if want in console:
            passed += 1
            note += f"; console has {want!r}"
        else:
            failed += 1
            note += f"; the console lacks {want!r}"
    for c in cases:
        if c[2] != "PASS":
            note += f"\n  {c[2]}: {c[0]}.{c[1]}"
    res.add(f"kunit {what}: {', '.join(sorted({c[0] for c in cases})) or 'no suite'}",
            passed, failed, skipped, note)


def flags_check(res, arch, impl, config="kunit"):
    """kernel-flags-check.sh on the KUnit build just booted: the core type-checks with this
    arch's kernel flags, and no function reachable from a probe hit is probeable."""
    name = f"kernel-flags check {arch}/{impl}" + (" (debug assertions)" if config == "kunit-debugassert" else "") \
        + ": type-check, hit path unprobeable"
    bdir = kbuild.build_dir(arch, impl, config)
    if not (bdir / common.ARCHES[arch].image).is_file():
        res.add(name, failed=1, note=f"no build in {bdir}")
        return
    log = bdir / "kernel-flags-check.log"
    info(f"$ {FLAGS_CHECK.relative_to(common.REPO)} {bdir}")
    rc = common.run_logged(["sh", str(FLAGS_CHECK), str(bdir), common.RUSTC], log, label="kernel-flags check")
    out = log.read_text(errors="replace")
    lines = [ln for ln in out.splitlines() if ln.startswith(("kernel-flags check", "hit-path check"))]
    for ln in lines:
        print(ln, flush=True)
    summary = next((ln for ln in lines if ln.startswith("hit-path check (")), "no hit-path summary")
    res.add(name, int(rc == 0), int(rc != 0),
            note=summary if rc == 0 else f"exit {rc} (log: {log}):\n" + "\n".join(out.splitlines()[-25:]))


def cmd_test(args):
    res = Results()
    arches = args.arches
    impls = args.impls or common.default_impls()
    setup.ensure()

    # --conformance, --kselftest, --archsuite, --tools: that one step alone.
    only = [m for flag, m in ((args.conformance, conformance), (args.kselftest, kselftest),
                              (args.archsuite, archsuite), (args.tools, tracetools)) if flag]
    if only:
        for arch in arches:
            only[0].run_all(res, arch, [i for i in impls if not common.rust_unavailable_reason(arch, i)],
                            args.timeout)
        return _summary(res)

    if args.debug_assertions:
        for arch in arches:
            for impl in [i for i in impls if i != "c"]:
                why = common.rust_unavailable_reason(arch, impl)
                if why:
                    res.add(f"kunit {arch}/{impl} (debug assertions)", skipped=1, note=why)
                    continue
                banner(f"KUnit on {arch}, {impl} implementation, with Rust debug assertions")
                kunit(res, arch, impl, args.timeout, config="kunit-debugassert")
                flags_check(res, arch, impl, config="kunit-debugassert")
        return _summary(res)

    if args.decoder:
        banner("x86 decoder checks")
        host_checks(res, packages=[DECODER_PKG]) if (HOST_DIR / "x86-insn").is_dir() else \
            res.add("decoder: host tests", skipped=1, note="the decoder package is not in the tree yet")
        decoder_difftest(res)
        return _summary(res)

    units = full_plan(args, arches, impls)
    if args.shard:
        k, n = args.shard
        mine = shard(units, k, n)
        info(f"shard {k}/{n}: {len(mine)} of the {len(units)} steps of this test: " + ", ".join(u[0] for u in mine))
        units = mine
    for _, run in units:
        run(res)
    return _summary(res)


def host_phase(res, args, impls):
    banner("host checks: cargo test, clippy, fmt, layout, documentation, command line, shards, step suites")
    host_checks(res)
    layout.test_row(res)
    doc_check(res)
    clitable.test_row(res)
    shard_check(res)
    archsuite.check_row(res)
    workflows.test_row(res)
    if "rust" not in impls and not args.impls:
        res.add("kunit: --impl rust", skipped=1,
                note=f"the Rust core is not in the tree yet ({common.RUST_CORE_ROOT.relative_to(common.REPO)} "
                "missing); only the C implementation is tested")


def kunit_step(res, args, arch, impl):
    why = common.rust_unavailable_reason(arch, impl)
    if why:
        res.add(f"kunit {arch}/{impl}", skipped=1, note=why)
        return
    banner(f"KUnit on {arch}, {impl} implementation")
    kunit(res, arch, impl, args.timeout)
    flags_check(res, arch, impl)
    if args.no_ftrace:
        banner(f"KUnit on {arch}, {impl} implementation, without the function tracer")
        kunit(res, arch, impl, args.timeout, config="kunit-noftrace")


def full_plan(args, arches, impls):
    """The steps of `test` (without an only-one-part flag), in order: (name, run(res)) each.
    --host-only keeps the first; --shard K/N runs every N-th from the K-th (shard())."""
    units = [("host checks", lambda res: host_phase(res, args, impls))]
    if args.host_only:
        return units
    for arch in arches:
        booted = [i for i in impls if not common.rust_unavailable_reason(arch, i)]
        units += [(f"kunit {arch}/{impl}", lambda res, a=arch, i=impl: kunit_step(res, args, a, i)) for impl in impls]
        units += [(f"{m.__name__.rsplit('.', 1)[1]} {arch}",
                   lambda res, m=m, a=arch, b=booted: m.run_all(res, a, b, args.timeout))
                  for m in (conformance, archsuite, nokprobe, kselftest)]
        units.append((f"stress {arch}", lambda res, a=arch, b=booted: stress_short(res, a, b, args.no_stress)))
    if "x86_64" in arches:
        units.append(("decoder difftest", lambda res: (banner("x86 decoder: differential test against objdump"),
                                                       decoder_difftest(res))))
        units.append(("kunitconfig x86_64", lambda res: (banner("the .kunitconfig files with upstream's kunit.py"),
                                                         kunitconfigs.run_all(res))))
        units.append(("perf and bpftrace x86_64", lambda res: res.add(
            "perf and bpftrace x86_64: not in the default run", skipped=1,
            note="`scripts/rkprobes test --tools` runs them, and the kselftests in a kernel with CONFIG_INET: a "
            "second kernel per implementation and bpftrace's LLVM in a 230 MB initramfs (docs/testing.md)")))
    units.append(("export", lambda res: (banner("export: the series with git am, the tree, checkpatch"),
                                         export.check(res))))
    return units


def shard(units, k, n):
    """Shard `k` of `n` (1-based) of `units`: every n-th from the k-th, so each shard gets a share
    of every arch's steps."""
    return units[k - 1::n]


def shard_check(res):
    """The shards of `test --shard K/N` together run what `test` runs, each step once, for N = 1..6
    and the plans of x86_64 alone and of every arch with every implementation."""
    problems, plans = [], 0
    for arches, impls in ((["x86_64"], common.default_impls()), (list(common.ARCHES), list(common.IMPLS))):
        args = type("Args", (), dict(host_only=False, impls=None, timeout=600, no_stress=False, no_ftrace=False))()
        names = [u[0] for u in full_plan(args, arches, impls)]
        if len(set(names)) != len(names):
            problems.append(f"the plan of {','.join(arches)} names a step twice")
        for n in range(1, 7):
            plans += 1
            parts = [[u[0] for u in shard(full_plan(args, arches, impls), k, n)] for k in range(1, n + 1)]
            union = [x for part in parts for x in part]
            if sorted(union) != sorted(names):
                problems.append(f"{','.join(arches)} in {n} shards: the union is not the full run "
                                f"(missing {sorted(set(names) - set(union))}, twice {len(union) - len(set(union))})")
            if n <= len(names) and not all(parts):
                problems.append(f"{','.join(arches)} in {n} shards: a shard is empty")
    res.add("host: test --shard K/N: the shards' union is the full run, each step once",
            int(not problems), int(bool(problems)),
            note="; ".join(problems) if problems else f"{plans} splits checked (N = 1..6, x86_64 and --arch all "
            "--impl all)")


def stress_short(res, arch, impls, leave_out):
    """The short form of `rkprobes stress` (cmd_stress.run_short), a row per implementation."""
    if leave_out:
        res.add(f"stress {arch}", skipped=1, note="left out by --no-stress")
        return
    if arch != cmd_stress.ARCH:
        res.add(f"stress {arch}", skipped=1, note=f"runs on {cmd_stress.ARCH} only for now")
        return
    banner(f"short SMP stress on {arch}: {', '.join(impls)}")
    for name, passed, failed, note in cmd_stress.run_short(impls):
        res.add(name, passed, failed, note=note)


def _summary(res):
    banner("summary")
    for status, name, p, f, s, x, note in res.rows:
        counts = _counts(p, f, s, x)
        print(f"  {status:4}  {name} ({counts})")
        if (status != "PASS" or x) and note:
            for ln in note.splitlines()[:12 + x]:
                print(f"          {ln}")
        elif note and status == "PASS":
            print(f"          {note.splitlines()[0]}")
    print(_counts(*res.totals()), flush=True)
    return 1 if res.totals()[1] else 0


def _counts(passed, failed, skipped, xfail):
    return (f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else "")
            + (f", {xfail} xfail" if xfail else ""))

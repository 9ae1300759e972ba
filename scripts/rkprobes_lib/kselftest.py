# SPDX-License-Identifier: GPL-2.0
"""Upstream's ftrace kselftests of kprobes in `rkprobes test`, on each implementation.

For each implementation: boot the KUnit kernel (configs/kunit-<arch>.config
gives it modules, debugfs, ftrace, kprobe events, the trace-printk sample
module and KALLSYMS_ALL) again with a busybox initramfs holding upstream's
tools/testing/selftests/ftrace/ftracetest, test.d/functions and the cases
of test.d/kprobe/, copied at test time from the pristine source, never kept
in the repository. The initramfs's /init (tools/testing/rkprobes/kselftest/)
runs `ftracetest --logdir /tmp/... test.d/kprobe` under busybox sh (under Debian's
dash where setup.GUEST_SHELL says busybox sh cannot run it) and prints
ftracetest's own output, its exit code and the logs of the cases that did
not end as expected. Each case's result is parsed from ftracetest's
"[n] <description>\\t[RESULT]" lines, n being the case's place in the list
the init passes to ftracetest: test.d/kprobe/*.tc sorted, as ftracetest
orders them itself, less the cases LEFT_OUT names for the arch.

Once every implementation has run, each non-C one must pass every case C
passes; cases that do not pass on both (UNSUPPORTED for a missing feature,
UNRESOLVED, XFAIL, a failure on both) are listed, not failed.
"""

import json
import re

from . import common, initramfs, kbuild, qemu, setup
from .common import Failure

FTRACE_DIR = common.PRISTINE / "tools" / "testing" / "selftests" / "ftrace"
CASES_DIR = "test.d/kprobe"
INIT = common.REPO / "tools" / "testing" / "rkprobes" / "kselftest" / "kselftest-init.sh"
# kprobe_module.tc loads this sample with modprobe (CONFIG_SAMPLE_TRACE_PRINTK=m).
SAMPLE_MODULES = ("samples/trace_printk/trace-printk.ko",)
# Where an arch cannot run every case, on C as on Rust (README, "Conformance and kselftests per
# arch"): the cases it leaves out, with why. Printed in every run; a case left out counts as
# skipped.
LEFT_OUT = {
    "s390": (("kprobe_insn_boundary.tc",),
             "left out: it brings the kernel down, on C too (after the out-of-line step of its probe on "
             "a jne in kernel_clone that is not taken, execution goes on 2 bytes past the next "
             "instruction), and the cases after it would not run"),
    "loongarch": (("kprobe_insn_boundary.tc",),
                  "left out: it turns ftrace off for the rest of the boot, on C too, and the cases after it "
                  "fail: its breakpoint probe on kernel_clone+4, the second NOP of the function's ftrace "
                  "site (MCOUNT_INSN_SIZE is 4, so the core takes it for an ordinary instruction), is "
                  "where ftrace_make_call() writes its bl when the kprobe on ftrace at +0 is enabled, "
                  "and finding no NOP there it reports an ftrace bug"),
}

# The kernel's built-in KUnit suites already ran in the KUnit boot.
APPEND = "panic=-1 kunit.enable=0"
RESULTS = ("PASS", "FAIL", "UNRESOLVED", "UNTESTED", "UNSUPPORTED", "XFAIL", "UNDEFINED")
PASSED = ("PASS", "XFAIL")
FAILED = ("FAIL", "UNDEFINED")
CASE_RE = re.compile(r"^\[(\d+)\]\s?(.*?)\s*\[(" + "|".join(RESULTS) + r")\]$")
CASE_START_RE = re.compile(r"^\[(\d+)\]\s?(.*)$")
SUMMARY_RE = re.compile(r"^# of ([a-z() ]+):\s+(\d+)$")
# Cases that fail on every implementation, C included, when the kernel lacks a config option:
# case file -> (the option, why). Without the option they are XFAILs with that reason, counted
# with the passes (never skipped); any other failure fails the implementation's row. Networking would add about a sixth to the KUnit kernel's
# build, for one case whose probes (kretprobes with and without maxactive) other cases cover.
KNOWN_FAILURES = {"kretprobe_maxactive.tc": ("CONFIG_INET", "its probes are on inet_csk_accept, "
                                             "which only a kernel with CONFIG_INET has")}
# The same for one arch: (the cases, the option, why, what the case's log must show for the
# failure to be excused; without it the case fails the row).
RISCV_ENTRY_CASES = (
    "add_and_remove.tc", "busy_check.tc", "kprobe_args.tc", "kprobe_args_char.tc",
    "kprobe_args_comm.tc", "kprobe_args_string.tc", "kprobe_args_symbol.tc", "kprobe_args_syntax.tc",
    "kprobe_args_type.tc", "kprobe_args_user.tc", "kprobe_args_vfs.tc", "kprobe_eventname.tc",
    "kprobe_ftrace.tc", "kprobe_module.tc", "kprobe_multiprobe.tc", "kprobe_syntax_errors.tc",
    "kretprobe_args.tc", "kretprobe_entry_arg.tc", "kretprobe_return_suffix.tc", "probepoint.tc",
    "profile.tc")
# Cases that end UNRESOLVED (counted skipped) on every build for want of something in the kernel
# image: case file -> (what System.map must lack for the reason to hold, the reason). Printed with
# the case; when System.map has it after all, the note says the UNRESOLVED is unexplained.
UNRESOLVED_REASONS = {"kprobe_eventname.tc": (".isra.", "its last part probes a function with a GCC .isra. "
                                              "suffix; clang, which builds these kernels, makes no such clones, so "
                                              "/proc/kallsyms has none")}
ARCH_KNOWN_FAILURES = {
    "riscv": (RISCV_ENTRY_CASES, "CONFIG_KPROBES_ON_FTRACE",
              "riscv 6.12 has no kprobes on ftrace: the case's first event is on a traced function's "
              "entry, its ftrace call, which the core refuses (-EINVAL)", "write error: Invalid argument"),
}


def cases():
    """The case files, in ftracetest's order (`find | sort` with LC_ALL=C)."""
    return sorted(p.name for p in (FTRACE_DIR / CASES_DIR).glob("*.tc"))


def run_order(arch):
    """The cases `arch` runs, in the order ftracetest is given them."""
    every, out = cases(), LEFT_OUT.get(arch, ((), None))[0]
    unknown = [c for c in out if c not in every]
    if unknown:
        raise Failure(f"kselftest.py names cases upstream does not have: {', '.join(unknown)}")
    return [c for c in every if c not in out]


def _files(bdir, order):
    """What the initramfs holds of upstream's ftrace selftests: its path there -> the file; and
    /ftrace/cases, the cases the init passes to ftracetest, one a line, in that order."""
    files = {"ftrace/ftracetest": FTRACE_DIR / "ftracetest",
             "ftrace/test.d/functions": FTRACE_DIR / "test.d" / "functions"}
    for name in cases():
        files[f"ftrace/{CASES_DIR}/{name}"] = FTRACE_DIR / CASES_DIR / name
    listing = bdir / "kselftest-cases"
    listing.write_text("".join(f"{name}\n" for name in order))
    files["ftrace/cases"] = listing
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise Failure("upstream's ftrace selftests are not in the pristine source: missing "
                      + ", ".join(missing))
    return files


def _clean(line):
    line = re.sub(r"^\[\s*\d+\.\d+\]\s?", "", line.rstrip("\r\n").replace("\r", ""))
    return re.sub(r"\x1b\[[0-9;]*[mK]", "", line)


def _segment(lines, start, end):
    out, inside = [], False
    for ln in lines:
        if ln == start:
            inside = True
        elif ln == end:
            break
        elif inside:
            out.append(ln)
    return out


def _logs(lines):
    """{ file: text } of the logs the init printed between "RKK-LOG <file>" and RKK-LOG-END."""
    logs, name, buf = {}, None, []
    for ln in lines:
        m = re.match(r"^RKK-LOG (\S+)$", ln)
        if m:
            name, buf = m.group(1), []
        elif ln == "RKK-LOG-END" and name:
            logs[name] = "\n".join(buf)
            name = None
        elif name:
            buf.append(ln)
    return logs


def parse(text):
    """{ n: (description, result) }, { summary name: count }, exit code or None, the logs, and
    the case that had started without a result (n, description) or None."""
    lines = [_clean(ln) for ln in text.splitlines()]
    logs = _logs(lines)
    # ftracetest's log file has its output without console noise; the console is the
    # fallback when the boot did not get that far.
    source = logs["ftracetest.log"].splitlines() if "ftracetest.log" in logs else \
        _segment(lines, "RKK-BEGIN", "RKK-DONE")
    results, summary, running = {}, {}, None
    for ln in source:
        m = CASE_RE.match(ln)
        if m:
            results[int(m.group(1))] = (m.group(2), m.group(3))
            running = None
            continue
        # On the console, kernel messages can split a case's line before its result.
        m = re.search(r"\[(" + "|".join(RESULTS) + r")\]$", ln)
        if m and running:
            results[running[0]] = (running[1], m.group(1))
            running = None
            continue
        m = CASE_START_RE.match(ln)
        if m and int(m.group(1)) not in results:
            running = (int(m.group(1)), m.group(2))
        m = SUMMARY_RE.match(ln)
        if m:
            summary[m.group(1)] = int(m.group(2))
    exit_code = next((int(m.group(1)) for m in (re.match(r"^RKK-EXIT (\d+)$", ln) for ln in lines) if m), None)
    return results, summary, exit_code, logs, running


def _case_log(logs, n, case):
    """Case `n`'s log ("<n>-<case>-log." plus mktemp's random suffix), if any."""
    return next((t for f, t in logs.items() if f.startswith(f"{n}-{case}-log.")), None)


def _what(arch, impl, config):
    """arch/impl, with the configuration when it is not the KUnit kernel's."""
    return f"{arch}/{impl}" + ("" if config == "kunit" else f" ({config})")


def run(res, arch, impl, timeout, config="kunit"):
    """Build, boot and parse one implementation; adds one result row, returns { case: result }
    or None when nothing ran."""
    # names: the cases run, numbered by ftracetest in this order; every case, in results.
    everyone = cases()
    name = f"ftrace kselftests {_what(arch, impl, config)}: {CASES_DIR}"
    try:
        names = run_order(arch)
        bdir = kbuild.build(arch, impl, config)
        kos = [bdir / m for m in SAMPLE_MODULES if (bdir / m).is_file()]
        files = _files(bdir, names) | setup.guest_shell_files(arch)
        initrd = initramfs.pack(bdir, "kselftest-initramfs", INIT, kos, files=files, arch=arch)
    except Failure as e:
        res.add(name, failed=len(everyone) or 1, note=str(e))
        return None
    log = bdir / "kselftest-console.log"
    boot_error = None
    try:
        text = qemu.boot(arch, bdir, APPEND, log, lambda t: "RKK-DONE" in t, timeout, initrd=initrd,
                         label=f"ftrace kselftests {_what(arch, impl, config)}")
    except Failure as e:
        boot_error = str(e)
        text = log.read_text(errors="replace") if log.is_file() else ""
    return report(res, arch, impl, bdir, text, log, boot_error, timeout, kos, config)


def report(res, arch, impl, bdir, text, log, boot_error=None, timeout=None, kos=True, config="kunit"):
    """The result row of one boot's console `text` (the build's .config in `bdir` says which
    expected failures are excused); writes bdir/kselftest-results.json and returns
    { case: result }, or None when nothing ran. Separate from run() so that a kept console log
    can be tallied again."""
    everyone = cases()
    names = run_order(arch)
    name = f"ftrace kselftests {_what(arch, impl, config)}: {CASES_DIR}"
    parsed, summary, exit_code, logs, running = parse(text)
    results = {}
    print(f"\nftrace kselftests {_what(arch, impl, config)} (upstream {CASES_DIR}, {len(everyone)} cases):", flush=True)
    if arch in setup.GUEST_SHELL:
        print(f"  ftracetest runs under Debian's dash on {arch}: {setup.GUEST_SHELL[arch]}", flush=True)
    for n, case in enumerate(names, 1):
        desc, status = parsed.get(n, ("", "DID NOT RUN"))
        results[case] = status
        print(f"  {status:11} [{n}] {case}{': ' + desc if desc else ''}", flush=True)
    left_out, why = LEFT_OUT.get(arch, ((), None))
    for case in left_out:
        results[case] = "LEFT OUT"
        print(f"  {'LEFT OUT':11} {case}", flush=True)
    if left_out:
        print(f"  on {arch}, {', '.join(left_out)}: {why}", flush=True)
    counts = {r: sum(1 for s in results.values() if s == r) for r in RESULTS + ("DID NOT RUN", "LEFT OUT")}
    config = (bdir / ".config").read_text().splitlines()
    excused = {c: (opt, why) for c, (opt, why) in KNOWN_FAILURES.items() if f"{opt}=y" not in config}
    arch_cases, opt, why, sign = ARCH_KNOWN_FAILURES.get(arch, ((), None, None, None))
    if opt and f"{opt}=y" not in config:
        for c in arch_cases:
            if c in names and sign in (_case_log(logs, names.index(c) + 1, c) or ""):
                excused.setdefault(c, (opt, why))
    known = sorted(c for c, s in results.items() if s in FAILED and c in excused)
    failures = sorted(c for c, s in results.items() if s in FAILED and c not in excused)
    not_run = sorted(c for c, s in results.items() if s == "DID NOT RUN")
    # An expected failure (a KNOWN_FAILURES case on a kernel without its option, on every build)
    # is an XFAIL with its reason, counted with the passes as ftracetest counts its own XFAILs.
    passed = counts["PASS"] + counts["XFAIL"] + len(known)
    skipped = counts["UNSUPPORTED"] + counts["UNRESOLVED"] + counts["UNTESTED"] + counts["LEFT OUT"]
    failed = len(failures) + len(not_run)

    symbols = (bdir / "System.map").read_text(errors="replace") if (bdir / "System.map").is_file() else ""
    # UNRESOLVED cases with a reason that holds in this kernel: case -> the reason.
    explained = {c: UNRESOLVED_REASONS[c][1] for c, s in results.items() if s == "UNRESOLVED"
                 and c in UNRESOLVED_REASONS and symbols and UNRESOLVED_REASONS[c][0] not in symbols}

    def listed(r):
        # An excused failure is listed as the XFAIL it counts as, with ftracetest's own result.
        who = [c + (f": no {UNRESOLVED_REASONS[c][0]} function in this clang-built kernel" if c in explained else "")
               for c in sorted(results) if results[c] == r and c not in known]
        return f"{len(who)} {r}" + (f" ({'; '.join(who)})" if r not in PASSED else "") if who else ""

    xfails = [f"{c}: ftracetest {results[c]}, expected without {excused[c][0]}" for c in known]
    note = (", ".join(x for x in [listed(r) for r in RESULTS + ("DID NOT RUN", "LEFT OUT") if counts[r]]
                      + ([f"{len(xfails)} XFAIL ({'; '.join(xfails)})"] if xfails else []) if x)
            + f" of {len(everyone)}; ftracetest exit {exit_code if exit_code is not None else '(none)'}"
            + f" (console: {log})")
    if not kos:
        note += f"; no {', '.join(SAMPLE_MODULES)} in the build: kprobe_module.tc cannot load it"
    if boot_error:
        failed = max(failed, 1)
        where = (f"case [{running[0]}] {names[running[0] - 1] if running[0] <= len(names) else '?'} "
                 "had started and not ended" if running else "no case was running")
        limit = "within the time limit" in boot_error or "did not finish within" in boot_error
        note = ((f"ftracetest did not finish within the {timeout}s limit per boot (--timeout): " if limit
                 else "the boot did not finish: ") + f"{where}\n{boot_error}\n{note}")
        print(f"ftrace kselftests {arch}/{impl}: the boot did not finish; {where}", flush=True)
    else:
        want_exit = 1 if any(s in FAILED for s in results.values()) else 0
        if exit_code != want_exit:
            failed += 1
            note += f"; ftracetest exited {exit_code}, its results say {want_exit}"
        if summary and summary.get("passed") != counts["PASS"]:
            failed += 1
            note += f"; ftracetest's summary says {summary.get('passed')} passed, {counts['PASS']} parsed"
    if left_out:
        note += f"\n  on {arch}, {', '.join(left_out)}: {why}"
    for c in sorted(c for c, s in results.items() if s == "UNRESOLVED"):
        lack, why = UNRESOLVED_REASONS.get(c, (None, None))
        if c in explained:
            note += f"\n  UNRESOLVED (counted skipped, on every build): {c}: {why}"
        else:
            note += f"\n  UNRESOLVED (counted skipped), no known reason: {c}" + (
                f" (System.map has {lack!r} symbols, so the known reason does not hold)" if lack else "")
    for c in known:
        note += f"\n  XFAIL ({results[c]}, expected without {excused[c][0]} on every build): {c}: {excused[c][1]}"
    for c in failures + not_run:
        note += f"\n  {results[c]}: {c}"
    for c in failures:
        case_log = _case_log(logs, names.index(c) + 1, c)
        if case_log:
            print(f"--- ftracetest's log of {c} on {impl}:\n{case_log}\n---", flush=True)
            note += "\n    " + "\n    ".join(case_log.splitlines()[-8:])
    data = {"impl": impl, "results": results, "summary": summary, "exit": exit_code,
            "logs": {c: _case_log(logs, n, c) for n, c in enumerate(names, 1) if _case_log(logs, n, c)}}
    (bdir / "kselftest-results.json").write_text(json.dumps(data, indent=1, sort_keys=True))
    res.add(name, passed, failed, skipped, note)
    return results if parsed else None


def compare_name(arch, other, config="kunit"):
    """The result row of the comparison of C with `other`."""
    where = arch + ("" if config == "kunit" else f" ({config})")
    return f"ftrace kselftests {where}: {common.impl_label(other)} passes the cases C passes"


def compare(res, arch, runs, other, config="kunit"):
    """Every case that passes on C must pass on `other`; one result row."""
    name = compare_name(arch, other, config)
    label = common.impl_label(other)
    c, o = runs.get("c"), runs.get(other)
    if not c or not o:
        missing = [i for i in ("c", other) if not runs.get(i)]
        res.add(name, skipped=1, note=f"not compared: no results from {', '.join(missing)} "
                "(not run, or its boot failed)")
        return
    lost = [f"{k}: C {c[k]}, {label} {o.get(k, 'DID NOT RUN')}" for k in sorted(c)
            if c[k] == "PASS" and o.get(k) != "PASS"]
    gained = [f"{k}: C {c[k]}, {label} {o[k]}" for k in sorted(o) if o[k] == "PASS" and c.get(k) != "PASS"]
    other_diffs = [f"{k}: C {c.get(k)}, {label} {o.get(k)}" for k in sorted(set(c) | set(o))
                   if c.get(k) != o.get(k) and "PASS" not in (c.get(k), o.get(k))]
    neither = [f"{k} ({c[k]})" for k in sorted(c) if c[k] != "PASS" and c[k] == o.get(k)]
    n_pass = sum(1 for s in c.values() if s == "PASS")
    note = f"{n_pass} cases pass on C, {n_pass - len(lost)} of them on {label}"
    if neither:
        note += "; not passed on either, same result: " + ", ".join(neither)
    for what, items in (("passed on C, not on " + label, lost), ("passed on " + label + ", not on C", gained),
                        ("other differences", other_diffs)):
        if items:
            note += f"\n  {what}: " + "; ".join(items)
            print(f"ftrace kselftests {arch}: {what}: " + "; ".join(items), flush=True)
    res.add(name, int(not lost), int(bool(lost)), note=note)


def _table(arch, runs, impls, config="kunit"):
    names = cases()
    width = max(len(n) for n in names)
    print(f"\nftrace kselftests {arch}" + ("" if config == "kunit" else f" ({config})") + ", per case:", flush=True)
    print("  " + f"{'case':<{width}}  " + "  ".join(f"{i:<11}" for i in impls), flush=True)
    for n in names:
        print("  " + f"{n:<{width}}  " + "  ".join(f"{(runs.get(i) or {}).get(n, '-'):<11}" for i in impls),
              flush=True)


def run_all(res, arch, impls, timeout, config="kunit"):
    """The kselftests on `arch` for each of `impls`, then C against each other one; in the KUnit
    kernel, or in the kernel of `config` (`test --tools`: kunit-tools, which has CONFIG_INET)."""
    runs = {}
    for impl in impls:
        common.banner(f"ftrace kselftests ({CASES_DIR}) on {arch}, {impl} implementation"
                      + ("" if config == "kunit" else f", configuration {config}"))
        runs[impl] = run(res, arch, impl, timeout, config)
    _table(arch, runs, impls, config)
    common.compare_with_c(res, arch, impls, runs, lambda r, a, n, o: compare(r, a, n, o, config),
                          lambda a, o: compare_name(a, o, config))

# SPDX-License-Identifier: GPL-2.0
"""The conformance suite of `rkprobes test`: the same KUnit cases on each implementation.

For each implementation: build the KUnit kernel (on x86_64 it also has
modules, an initramfs, debugfs, ftrace and kprobe events for this suite:
configs/kunit-x86_64.config), build the KUnit module
rkprobes_conformance.ko and its target module (tools/testing/rkprobes/conformance/)
against it, boot it with a busybox initramfs whose /init loads the suite,
and parse the suite's KTAP. Each case also prints the values it observed
as transcript lines "# <case>: rkc: <key>=<value>"; once they have run,
the C transcript is diffed against the one of each other implementation
(rust, rust-arch) and every key whose value differs is named. Cases skipped
on one side are left out of the diff, and said so.

The transcript also holds what the kernel log said: for each case, key
"<case>.log", the log lines between the previous KTAP result and the case's
own, reduced to its `kprobes: ` lines and its WARN splats; and "boot.log",
the `kprobes: ` lines of the boot before the suite. A splat is reduced to the
function that holds the WARN in the source (its file:line looked up in the
prepared tree: a kernel/kprobes.c function on the C core; on the Rust core
the kprobes_helpers.c helper rkp_warn_<that function>, whose prefix is
dropped) and the WARN's own message, so a WARN or message one core misses
fails the diff.
"""

import json
import re

from . import common, kbuild, ktapsuite
from .common import Failure

CONF_DIR = common.REPO / "tools" / "testing" / "rkprobes" / "conformance"
INIT = CONF_DIR / "conformance-init.sh"
MODULES = ("rkprobes_conformance.ko", "rkprobes_conf_target.ko")
SUITE = "rkprobes_conformance"
# The arches whose KUnit kernel has what the suite needs (modules, debugfs, kprobe events:
# configs/kunit-<arch>.config) and whose probe sites rkc.h knows.
ARCHES = ("x86_64", "arm64", "riscv", "loongarch", "ppc64", "s390")
# The kernel's built-in suites already ran in the KUnit boot: run only ours here.
APPEND = f"panic=-1 kunit.filter_glob={SUITE}"
TRANSCRIPT_RE = re.compile(r"#\s*(\w+): rkc: ([^=]+)=(.*)$")
KTAP_RESULT_RE = re.compile(r"^\s*(?:not )?ok \d+ (\w+)")
WARNING_RE = re.compile(r"^WARNING: CPU: \d+ PID: \d+ at (?:(\S+):(\d+) )?(\S+?)\+0x")
CUT_HERE = "------------[ cut here ]------------"
# The helpers of the Rust core that hold the WARNs of kernel/kprobes.c (kprobes_helpers.c).
WARN_HELPER_PREFIX = "rkp_warn_"
# The two helpers of the objpool kretprobe path named before that rule.
WARN_HELPER_ALIASES = {"kretprobe_no_cursor": "kretprobe_find_ret_addr",
                       "kretprobe_frame_mismatch": "__kretprobe_trampoline_handler"}
FUNC_DEF_RE = re.compile(r"^[A-Za-z_][^;#]*?\b([A-Za-z_]\w*)\s*\(")


def expected_cases():
    """The cases rkc_main.c declares, in order: a case that does not run is a failure."""
    src = (CONF_DIR / "rkc_main.c").read_text()
    return re.findall(r"^\s*KUNIT_CASE\((\w+)\)", src, re.M)


def build_modules(arch, bdir):
    """Build both modules out of tree against the kernel in `bdir`; returns the .ko paths."""
    sources = [f for f in sorted(CONF_DIR.iterdir()) if f.name == "Kbuild" or f.suffix in (".c", ".h")]
    return kbuild.build_external_modules(arch, bdir, "rkprobes-conformance", sources, MODULES,
                                         fail_on_warnings=True)


def _mask(line):
    """Addresses and symbol offsets/sizes masked, so both boots print the same line."""
    line = re.sub(r"\b[0-9a-f]{16}\b", "ADDR", line)
    return re.sub(r"\+0x[0-9a-f]+/0x[0-9a-f]+", "+OFF/SIZE", line)


def _enclosing_function(path, lineno):
    """The C function whose body holds line `lineno` of `path` (None if unknown)."""
    try:
        src = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for i in range(min(lineno, len(src)) - 1, -1, -1):
        ln = src[i]
        if ln.rstrip().endswith(";"):
            continue
        m = FUNC_DEF_RE.match(ln)
        if m:
            return m.group(1)
    return None


def warn_site(file, line, func):
    """The kernel/kprobes.c function a WARN belongs to, from the splat's file:line (C inlines
    static functions that hold WARNs). The Rust core's WARNs are each in a helper of their own,
    named in the splat: that name is taken as it is, since the prepared tree the file:line would
    be looked up in may hold another revision's kprobes_helpers.c by then (a build of another
    worktree in the same cache)."""
    name = None
    if file and line and not (func or "").startswith(WARN_HELPER_PREFIX):
        name = _enclosing_function(common.TREE / file, int(line))
    name = name or func
    if name.startswith(WARN_HELPER_PREFIX):
        name = name[len(WARN_HELPER_PREFIX):]
        name = WARN_HELPER_ALIASES.get(name, name)
    return name


def log_items(lines):
    """The `kprobes: ` lines and WARN sites (with their messages) among `lines`, in order."""
    items, pending = [], None
    for ln in lines:
        if ln == CUT_HERE:
            pending = []
            continue
        m = WARNING_RE.match(ln)
        if m:
            site = "WARN " + warn_site(*m.groups())
            if pending:
                site += ": " + " / ".join(_mask(x) for x in pending)
            items.append(site)
            pending = None
        elif pending is not None:
            # A WARN's own message comes between "cut here" and "WARNING:".
            pending.append(ln.strip())
        elif ln.startswith("kprobes: "):
            items.append(_mask(ln))
    return items


def case_logs(lines, cases):
    """{ "<case>.log": items } for each case with a KTAP result, from the lines before it."""
    out, chunk = {}, []
    for ln in lines:
        m = KTAP_RESULT_RE.match(ln)
        if m and m.group(1) in cases:
            out[f"{m.group(1)}.log"] = " | ".join(log_items(chunk))
            chunk = []
        elif re.match(r"^\s*# Subtest: ", ln) or re.match(r"^\s*KTAP version", ln):
            chunk = []
        else:
            chunk.append(ln)
    return out


def boot_log(text):
    """{ "boot.log": the `kprobes: ` lines and WARN sites of the boot before the suite ran }."""
    before = []
    for ln in text.splitlines():
        ln = re.sub(r"^\[\s*\d+\.\d+\]\s?", "", ln.rstrip("\r"))
        if ln == "RKC-BEGIN":
            break
        before.append(ln)
    return {"boot.log": " | ".join(log_items(before))}


def transcript(lines):
    """{ "<case>.<key>": value } from the suite's transcript lines."""
    return ktapsuite.keyed_values(lines, TRANSCRIPT_RE, strip=str.rstrip)


def run(res, arch, impl, timeout):
    """Build, boot and parse one implementation; adds one result row, returns its data or None."""
    name = f"conformance {arch}/{impl}: {SUITE}"
    cases = expected_cases()
    try:
        b = ktapsuite.boot(arch, impl, SUITE, "conformance", "RKC", INIT, build_modules, APPEND,
                           timeout, f"conformance {arch}/{impl}")
    except Failure as e:
        res.add(name, failed=len(cases), note=str(e))
        return None
    status, lines, text, bdir = b.status, b.lines, b.text, b.bdir
    skips = ktapsuite.skip_reasons(lines)
    skipped_names = [c for c in cases if status.get(c) == "SKIP"]
    passed, failed, skipped, _, note = ktapsuite.summarize(
        b, cases, "rkprobes_conformance.ko", "RKC",
        f" ({', '.join(skipped_names)})" if skipped_names else "")
    script = transcript(lines)
    logs = {**boot_log(text), **case_logs(lines, cases)}
    script.update(logs)
    data = {"impl": impl, "status": status, "skips": skips, "transcript": script,
            "log_keys": sorted(logs)}
    (bdir / "conformance-transcript.json").write_text(json.dumps(data, indent=1, sort_keys=True))
    res.add(name, passed, failed, skipped, note)
    return data


def compare_name(arch, other):
    """The result row of the comparison of C with `other`."""
    return f"conformance {arch}: C and {common.impl_label(other)} transcripts identical"


def compare(res, arch, runs, other="rust"):
    """Diff the C transcript against the one of `other` (rust, rust-arch); one result row."""
    name = compare_name(arch, other)
    label = common.impl_label(other)
    c, o = runs.get("c"), runs.get(other)
    if not c or not o:
        missing = [i for i in ("c", other) if not runs.get(i)]
        res.add(name, skipped=1, note=f"not compared: no transcript from {', '.join(missing)} "
                "(not run, or its boot failed)")
        return
    one_sided = sorted({case for case, st in c["status"].items() if st == "SKIP"}
                       ^ {case for case, st in o["status"].items() if st == "SKIP"})
    def keep(key):
        return key.split(".", 1)[0] not in one_sided
    ct = {k: v for k, v in c["transcript"].items() if keep(k)}
    rt = {k: v for k, v in o["transcript"].items() if keep(k)}
    diffs = []
    for key in sorted(set(ct) | set(rt), key=lambda k: (k.split(".", 1)[0], k)):
        cv, rv = ct.get(key, "(missing)"), rt.get(key, "(missing)")
        if cv != rv:
            diffs.append(f"{key}: C={cv!r} {label}={rv!r}")
    nlog = sum(1 for k in ct if k.endswith(".log"))
    note = f"{len(ct)} C keys ({nlog} of them log keys), {len(rt)} {label} keys"
    if one_sided:
        note += "; not compared (skipped on one core only): " + ", ".join(one_sided)
    if diffs:
        print(f"\nconformance: C and {label} transcripts differ:", flush=True)
        for d in diffs:
            print(f"  {d}", flush=True)
        note = f"{len(diffs)} key(s) differ: " + "; ".join(d.split(":", 1)[0] for d in diffs) \
            + "\n" + "\n".join(diffs) + "\n" + note
    if not ct or not rt:
        diffs.append("empty transcript")
        note = "a transcript is empty: " + note
    res.add(name, int(not diffs), int(bool(diffs)), note=note)


def run_all(res, arch, impls, timeout):
    """The conformance suite on `arch` for each of `impls`, then C against each other one."""
    if arch not in ARCHES:
        res.add(f"conformance {arch}", skipped=1,
                note=f"the conformance suite runs on {', '.join(ARCHES)} only so far: the KUnit kernel of "
                f"{arch} has no modules, debugfs or kprobe events yet (no configs/kunit-{arch}.config)")
        return
    runs = {}
    for impl in impls:
        common.banner(f"conformance suite on {arch}, {impl} implementation")
        runs[impl] = run(res, arch, impl, timeout)
    common.compare_with_c(
        res, arch, impls, runs, compare, compare_name,
        banner_text=lambda other: f"conformance: C against {common.impl_label(other)} on {arch}")

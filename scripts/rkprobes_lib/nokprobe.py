# SPDX-License-Identifier: GPL-2.0
"""The probe-every-symbol check of `rkprobes test`.

For each implementation: list every function symbol of the kprobes core's
objects in the KUnit build (llvm-nm) with, for each, whether it is reachable
from a probe hit (the call graph of tools/testing/rkprobes/host/core/hitpath-check.py),
boot that kernel with a busybox initramfs holding the list and
rkprobes_nokprobe.ko (tools/testing/rkprobes/nokprobe/), and register a kprobe
on each symbol there. Every function reachable from a probe hit must be
refused with -EINVAL. Once they have run, the names C and each other
implementation (rust, rust-arch) both define must be refused by both or by
neither; a difference fails unless EXPECTED_DIFFERENCES lists it with its reason.
"""

import re
import subprocess
import sys

from . import common, initramfs, kbuild, qemu
from .common import Failure

DIR = common.REPO / "tools" / "testing" / "rkprobes" / "nokprobe"
INIT = DIR / "nokprobe-init.sh"
MODULE = "rkprobes_nokprobe.ko"
CHECK = common.REPO / "tools" / "testing" / "rkprobes" / "host" / "core" / "hitpath-check.py"
# The arches whose KUnit kernels this check boots (modules, debugfs, an initramfs); the build-time
# hit-path check covers the others. Not riscv: there every function of the core starts with an
# ftrace site, which riscv 6.12 cannot probe, so every symbol is refused on every build (58/58 on
# C, 216/216 on rust-arch, 2026-11-27) and the check could not fail. loongarch and s390 probe
# ftrace sites through ftrace (KPROBES_ON_FTRACE), so there an unprotected function would be
# accepted; ppc64 6.12 built by clang has no KPROBES_ON_FTRACE.
ARCHES = ("x86_64", "arm64", "loongarch", "ppc64", "s390")
APPEND = "panic=-1 kunit.enable=0"
EINVAL = -22
# Names both cores define that one refuses and the other accepts, with the reason (for C
# against any other implementation).
EXPECTED_DIFFERENCES = {}


def symbol_list(bdir):
    """Runs the hit-path check's call graph on the build; returns (path of the list, its output)."""
    out = bdir / "nokprobe-symbols.txt"
    out.unlink(missing_ok=True)
    r = subprocess.run([sys.executable, str(CHECK), "--symbols", str(out), str(bdir)],
                       capture_output=True, text=True)
    if not out.is_file():
        raise Failure(f"{CHECK.name} wrote no symbol list:\n{r.stdout}{r.stderr}")
    return out, (r.stdout + r.stderr).strip()


def _parse(text):
    results, dups = {}, {}
    for ln in text.splitlines():
        ln = re.sub(r"^\[\s*\d+\.\d+\]\s?", "", ln.rstrip("\r"))
        m = re.match(r"^RKN (\S+) (-?\d+)$", ln)
        if m:
            results[m.group(1)] = int(m.group(2))
        m = re.match(r"^RKN-DUP (\S+) (\d+)$", ln)
        if m:
            dups[m.group(1)] = int(m.group(2))
    return results, dups


def run(res, arch, impl, timeout):
    """Build, boot and check one implementation; adds one result row, returns its data or None."""
    name = f"probe every core symbol {arch}/{impl}"
    try:
        bdir = kbuild.build(arch, impl, "kunit")
        syms_path, check_out = symbol_list(bdir)
        kos = kbuild.build_external_modules(arch, bdir, "rkprobes-nokprobe",
                                            [DIR / "Kbuild", DIR / "rkprobes_nokprobe.c"], (MODULE,),
                                            fail_on_warnings=True)
        initrd = initramfs.pack(bdir, "nokprobe-initramfs", INIT, kos, files={"symbols": syms_path}, arch=arch)
    except Failure as e:
        res.add(name, failed=1, note=str(e))
        return None
    symbols = {}
    for ln in syms_path.read_text().splitlines():
        sym, hit = ln.split()
        symbols[sym] = hit == "hit"
    log = bdir / "nokprobe-console.log"
    boot_error = None
    try:
        text = qemu.boot(arch, bdir, APPEND, log, lambda t: "RKN-DONE" in t, timeout, initrd=initrd,
                         label=f"probe every symbol {arch}/{impl}")
    except Failure as e:
        boot_error = str(e)
        text = log.read_text(errors="replace") if log.is_file() else ""
    results, dups = _parse(text)
    hit = sorted(s for s, h in symbols.items() if h)
    wrong = [f"{s}: {results[s] if s in results else 'not probed'}" for s in hit
             if results.get(s) != EINVAL]
    missing = [s for s in symbols if s not in results]
    refused = {s for s, r in results.items() if r != 0}
    errnos = {}
    for s in refused:
        errnos[results[s]] = errnos.get(results[s], 0) + 1
    summary = (f"{len(results)}/{len(symbols)} function symbols probed, {len(refused)} refused ("
               + ", ".join(f"{n} with {e}" for e, n in sorted(errnos.items())) + "); "
               f"{len(hit) - len(wrong)}/{len(hit)} reachable from a probe hit refused with -EINVAL")
    print(f"nokprobe {arch}/{impl}: {summary}", flush=True)
    note = summary + f" (console: {log})"
    failed = len(wrong)
    if wrong:
        note += "\n  reachable from a probe hit but not refused with -EINVAL: " + "; ".join(wrong)
        print(f"nokprobe {arch}/{impl}: NOT refused: " + "; ".join(wrong), flush=True)
    if boot_error or missing:
        failed = max(failed, 1)
        note += (f"\n  the boot did not finish: {boot_error}" if boot_error else "") \
            + (f"\n  {len(missing)} symbols never probed, first: {', '.join(sorted(missing)[:5])}"
               if missing else "")
    if dups:
        note += f"\n  names not exactly once in kallsyms (left out of the comparison): {', '.join(sorted(dups))}"
    res.add(name, len(hit) - len(wrong), failed, note=note)
    return {"symbols": symbols, "results": results, "dups": dups, "check": check_out}


def compare_name(arch, other):
    """The result row of the comparison of C with `other`."""
    return f"probe every core symbol {arch}: C and {common.impl_label(other)} refuse the same"


def compare(res, arch, runs, other="rust"):
    """The names C and `other` (rust, rust-arch) both define: refused by both or by neither."""
    name = compare_name(arch, other)
    label = common.impl_label(other)
    c, o = runs.get("c"), runs.get(other)
    if not c or not o:
        missing = [i for i in ("c", other) if not runs.get(i)]
        res.add(name, skipped=1, note=f"not compared: no results from {', '.join(missing)}")
        return
    dups = set(c["dups"]) | set(o["dups"])
    common_names = sorted((set(c["results"]) & set(o["results"])) - dups)
    c_ref = {s for s in common_names if c["results"][s] != 0}
    r_ref = {s for s in common_names if o["results"][s] != 0}
    width = max(len("C"), len(label))
    print(f"\nnokprobe {arch}: {len(common_names)} function names in both cores (C and {label})", flush=True)
    print(f"  refused on {'C':<{width}} ({len(c_ref)}): {' '.join(sorted(c_ref))}", flush=True)
    print(f"  refused on {label:<{width}} ({len(r_ref)}): {' '.join(sorted(r_ref))}", flush=True)
    diffs, expected = [], []
    for s in sorted(c_ref ^ r_ref):
        line = f"{s}: C {c['results'][s]}, {label} {o['results'][s]}"
        if s in EXPECTED_DIFFERENCES:
            expected.append(f"{line} (expected: {EXPECTED_DIFFERENCES[s]})")
        else:
            diffs.append(line)
    errno_diffs = [f"{s}: C {c['results'][s]}, {label} {o['results'][s]}" for s in sorted(c_ref & r_ref)
                   if c["results"][s] != o["results"][s]]
    for d in diffs:
        print(f"  DIFFERENT: {d}", flush=True)
    for d in expected + errno_diffs:
        print(f"  note: {d}", flush=True)
    note = (f"{len(common_names)} names in both cores, {len(c_ref)} refused on C, {len(r_ref)} on {label}, "
            f"{len(diffs)} unexpected differences")
    if expected:
        note += f", {len(expected)} listed ones"
    if errno_diffs:
        note += "\n  refused by both with different errnos: " + "; ".join(errno_diffs)
    if diffs:
        note += "\n  " + "\n  ".join(diffs)
    if not common_names:
        diffs.append("no common names")
    res.add(name, int(not diffs), int(bool(diffs)), note=note)


def run_all(res, arch, impls, timeout):
    """The check on `arch` for each of `impls`, then C against each other one."""
    if arch not in ARCHES:
        res.add(f"probe every core symbol {arch}", skipped=1,
                note=f"runs on {', '.join(ARCHES)} only (riscv refuses every function entry of the core, an "
                "ftrace site, so the check could not fail there); the build-time hit-path check covers it")
        return
    runs = {}
    for impl in impls:
        common.banner(f"probe every core symbol on {arch}, {impl} implementation")
        runs[impl] = run(res, arch, impl, timeout)
    common.compare_with_c(res, arch, impls, runs, compare, compare_name)

# SPDX-License-Identifier: GPL-2.0
"""`rkprobes stress --scenario NAME`: targeted scenarios beside the general stress mix.

Each scenario is its own module and /init under tools/testing/rkprobes/stress/<dir>/, booted
with 4 vCPUs on one QEMU thread like the stress, on the configuration it names (the `preempt`
kernel by default: full preemption, preemptible RCU, hang detectors; `--debug kasan` adds KASAN).

kretprobe-batch (issue 37): batches of 64 lone int3 kretprobes registered with one
register_kretprobes() and unregistered with one unregister_kretprobes() while every other vCPU
calls the probed functions; a kprobe on rethook_free() wakes a SCHED_FIFO hog on the registrar's
CPU right behind the first pool freed in each unregistration, so a grace period can end there.
An implementation that frees a kretprobe's pool while its int3 and hash entry still lead to it
lets a hitter take an instance from a freed rethook: a KASAN report on a KASAN kernel (and a
corrupted pool or an oops without it). It passes when the console has no splat, every batch
registered, the probes fired, the text is back byte for byte and kprobes/list is empty.

kretprobe-grow (issue 40): 256 kthreads each sleep inside one kretprobed function at once, in
waves, with the default maxactive (10 on 4 vCPUs): a kretprobe with C's fixed pool, one with
grow_max 1024, then an r: event of kprobe_events with debug.kretprobe-grow 0 and 1024. Printed
per build and phase: entries, returns the handler saw, nmissed. It passes when every wave's
returns and misses add up to its entries; the instance pools allocated are all freed; the fixed
pool misses as many as C's (when c ran too); and, on the Rust builds, the growing pool misses at
most 1% over the phase and none after its first wave, as does the r: event with the sysctl set
(its waves run one by one, kprobe_profile read after each).
On c, grow_max and the sysctl do not exist for the core: its grow phase must miss as its fixed one.
"""

import re
import time

from . import cli, common, initramfs, kbuild, qemu
from .common import Failure, banner, info

STRESS_DIR = common.REPO / "tools" / "testing" / "rkprobes" / "stress"


class Scenario:
    def __init__(self, name, subdir, sources, module, arches, config, marker, checks, about, analyse=None):
        self.name = name
        self.dir = STRESS_DIR / subdir
        self.sources = sources
        self.module = module
        self.arches = arches
        self.config = config
        self.marker = marker
        self.checks = checks
        self.about = about
        # analyse(result, impl) -> (lines to print, problems), for a scenario with its own figures.
        self.analyse = analyse


SCENARIOS = {
    "kretprobe-batch": Scenario(
        "kretprobe-batch", "kretbatch", ("Kbuild", "rkb_main.c", "rkb_funcs.S", "rkb_funcs.h"), "rkprobes_kretbatch.ko",
        ("x86_64",), "preempt", "RKB", ("text", "registered", "fired"),
        "batches of 64 lone int3 kretprobes (un)registered under hits, a hog preempting the registrar "
        "right behind the first rethook_free() of each unregistration"),
    "kretprobe-grow": Scenario(
        "kretprobe-grow", "kretgrow", ("Kbuild", "rkg_main.c"), "rkprobes_kretgrow.ko",
        ("x86_64", "arm64"), "kunit", "RKG", ("freed",),
        "256 kthreads sleeping inside one kretprobed function (default maxactive) in waves: a fixed pool, "
        "grow_max 1024, and an r: event with debug.kretprobe-grow 0 and 1024; returns, entries, nmissed",
        analyse=lambda r, impl: analyse_kretgrow(r, impl)),
}
# Base configurations a scenario can boot; with --debug X, the variant <base>-X.
BASES = ("preempt", "kunit")


def config_for(scenario, base, debug):
    """The build configuration of one scenario run."""
    base = base or scenario.config
    if base not in BASES:
        raise cli.UsageError(f"--scenario {scenario.name} --config {base}: a scenario boots one of "
                             f"{', '.join(BASES)}; valid values of --config: {', '.join(BASES)}")
    return f"{base}-{debug}" if debug else base


class Result:
    def __init__(self, impl, config, text, log, secs, boot_error, scenario):
        self.impl, self.config, self.log, self.secs, self.boot_error = impl, config, log, secs, boot_error
        m = scenario.marker
        lines = [re.sub(r"^\[\s*\d+\.\d+\]\s?", "", ln.rstrip("\r")) for ln in text.splitlines()]
        self.lines = lines
        self.splats = [ln for ln in lines for label, rx in SPLATS if rx.search(ln)]
        self.values, self.checks = {}, {}
        self.done = any(ln.strip() == f"{m}-DONE" for ln in lines)
        for ln in lines:
            mm = re.search(rf"\b{m} (\S+) ?(.*)$", ln)
            if not mm:
                continue
            kind, rest = mm.group(1), mm.group(2)
            if kind == "check":
                f = rest.split()
                if len(f) >= 2:
                    self.checks[f[0]] = (f[1] == "ok", " ".join(f[2:]))
            elif kind in ("start", "result"):
                self.values.update({k: v for k, _, v in (x.partition("=") for x in rest.split()) if v})
            else:
                self.values[kind] = rest.strip()

    def problems(self, scenario):
        out = []
        if self.boot_error:
            out.append("the boot did not finish: " + self.boot_error.splitlines()[0])
        if not self.done:
            out.append(f"no {scenario.marker}-DONE marker")
        if self.splats:
            out.append(f"{len(self.splats)} splat line(s) in the console, first: {self.splats[0].strip()}")
        for name in scenario.checks:
            ok, detail = self.checks.get(name, (None, "not reported"))
            if not ok:
                out.append(f"check {name} {'FAILED' if ok is False else 'missing'}: {detail}")
        for key in ("rmmod", "listed"):
            if self.values.get(key) != "0":
                out.append(f"{key}: {self.values.get(key, 'not reported')} (0 expected)")
        # Reported by an /init that scans kmemleak when the kernel has it (--debug kmemleak).
        if self.values.get("kmemleak-objects", "0") != "0":
            out.append(f"kmemleak: {self.values['kmemleak-objects']} unreferenced object(s) after the rmmod")
        if scenario.analyse:
            out += scenario.analyse(self, self.impl)[1]
        if self.values.get("trigger") not in (None, "0"):
            out.append(f"the trigger kprobe on rethook_free() could not be registered ({self.values['trigger']}): "
                       "the hog never ran where the window is")
        return out


# The line of '=' that opens (and closes) a KASAN report. A report from the int3 handler (NMI
# context on x86) can stop the guest after this first line, before its "BUG: KASAN:" line.
KASAN_BANNER = r"^={60,}$"
# Console lines that fail a scenario (the stress's, KASAN's "BUG: KASAN" among them).
SPLATS = [re.compile(p) for p in (r"WARNING:", r"BUG:", r"Oops", r"Kernel panic", r"general protection fault",
                                  r"rcu: INFO: .* detected stalls", r"UBSAN:", r"INFO: task .* blocked for more",
                                  KASAN_BANNER)]
SPLATS = [(rx.pattern, rx) for rx in SPLATS]


def _kasan_stuck(text):
    """A KASAN report has begun and the console has printed nothing for a while after it: the
    guest is not coming back (the boot then ends instead of waiting for its time-out)."""
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if re.search(KASAN_BANNER, ln.strip())]
    if not starts:
        return False
    now = time.monotonic()
    if _kasan_stuck.seen is None or _kasan_stuck.seen[0] != len(lines):
        _kasan_stuck.seen = (len(lines), now)
    return now - _kasan_stuck.seen[1] > 60


_kasan_stuck.seen = None


def run_one(scenario, impl, arch, config, duration, timeout, cpus, tcg_args, append):
    _kasan_stuck.seen = None
    with common.build_lock():
        bdir = kbuild.build(arch, impl, config)
        kos = kbuild.build_external_modules(arch, bdir, f"rkprobes-{scenario.dir.name}",
                                            [scenario.dir / n for n in scenario.sources], [scenario.module],
                                            fail_on_warnings=True)
        initrd = initramfs.pack(bdir, f"{scenario.dir.name}-initramfs", scenario.dir / "init.sh", kos, arch=arch)
        log = bdir / f"scenario-{scenario.name}-console.log"
        start = time.monotonic()
        boot_error = None
        marker = f"{scenario.marker}-DONE"
        try:
            text = qemu.boot(arch, bdir, f"{append} rkb_duration={duration}", log,
                             lambda t: marker in t or "Kernel panic" in t or _kasan_stuck(t), timeout,
                             initrd=initrd,
                             extra=["-smp", str(cpus)] + tcg_args, label=f"{scenario.name} {arch}/{impl}")
        except Failure as e:
            boot_error = str(e)
            text = log.read_text(errors="replace") if log.is_file() else ""
        secs = time.monotonic() - start
    return Result(impl, config, text, log, secs, boot_error, scenario)


def report(scenario, r, arch):
    banner(f"scenario {scenario.name} {arch}/{r.impl} ({r.config} kernel)")
    print(f"  {scenario.about}")
    print(f"  boot: {common.fmt_secs(r.secs)} (console: {r.log})")
    if r.values:
        print("  " + ", ".join(f"{k} {v}" for k, v in r.values.items()))
    for name in scenario.checks:
        ok, detail = r.checks.get(name, (None, "not reported"))
        print(f"    {'ok' if ok else 'FAIL' if ok is False else '--':4} {name}: {detail}")
    if scenario.analyse:
        for ln in scenario.analyse(r, r.impl)[0]:
            print(f"  {ln}")
    for ln in r.splats[:8]:
        print(f"    splat: {ln.strip()}")
    problems = r.problems(scenario)
    print(f"  result: {'PASS' if not problems else 'FAIL'}")
    for p in problems:
        print(f"    - {p}")
    return problems


def cmd_scenario(name, arch, impls, duration, timeout, base, debugs, cpus, tcg_args, append):
    """Runs scenario `name` on each implementation (and each --debug checker); raises Failure
    naming what failed."""
    scenario = SCENARIOS[name]
    if arch not in scenario.arches:
        raise cli.UsageError(f"--scenario {name} --arch {arch}: the scenario runs on {', '.join(scenario.arches)} "
                             f"only (its probed functions are written for those); valid values of --arch: "
                             f"{', '.join(scenario.arches)}")
    configs = [config_for(scenario, base, d) for d in (debugs or [None])]
    problems, summary, c_fixed = [], [], {}
    for config in configs:
        for impl in impls:
            banner(f"scenario {name}: {arch}, building and booting {impl} ({config} kernel)")
            try:
                r = run_one(scenario, impl, arch, config, duration, timeout, cpus, tcg_args, append)
            except Failure as e:
                common.error(f"{impl}: {e}")
                problems.append(f"{impl} ({config}): could not be built: {str(e).splitlines()[0]}")
                summary.append(f"  FAIL  {name} {arch}/{impl} ({config}): could not be built")
                continue
            ps = report(scenario, r, arch)
            if scenario.analyse:
                fixed = kretgrow_phases(r).get("fixed")
                if impl == "c" and fixed:
                    c_fixed[config] = fixed
                elif fixed and config in c_fixed and _missed(fixed) != _missed(c_fixed[config]):
                    ps.append(f"the fixed pool missed {_missed(fixed)} over the phase, C {_missed(c_fixed[config])}")
                    print(f"    - {ps[-1]}")
                figures = "; ".join(
                    f"{ph}: {_entries(w)} entries, {_returns(w)} returns, {_missed(w)} missed"
                    for ph, w in kretgrow_phases(r).items())
            else:
                figures = f"cycles {r.values.get('cycles', '?')}, hog runs {r.values.get('hog_runs', '?')}"
            problems += [f"{impl} ({config}): {p} (console: {r.log})" for p in ps]
            summary.append(f"  {'FAIL' if ps else 'PASS':4}  {name} {arch}/{impl} ({config} kernel): "
                           f"{figures}, boot {common.fmt_secs(r.secs)}")
    banner(f"scenario {name} summary")
    print("\n".join(summary))
    if problems:
        raise Failure(f"scenario {name} failed ({len(problems)} problem(s)):\n  " + "\n  ".join(problems))
    info(f"scenario {name} passed on {arch}: {', '.join(impls)} ({', '.join(configs)} kernel)")
    return 0


# ---- kretprobe-grow: the waves of each phase, from "RKG wave <phase> <i> entries=E returns=R missed=M"
WAVE_RE = re.compile(r"\bRKG wave (\S+) (\d+) entries=(\d+) returns=(-?\d+) missed=(-?\d+)( timeout)?")
EVENT_RE = re.compile(r"\bRKG event (\S+) (.*)$")
EVENT_WAVE_RE = re.compile(r"\bRKG event-wave (\S+) (\d+) returns=(-?\d+) missed=(-?\d+)")
# "RKG timeline <phase> <i> all_in=Tus allocs=K: num@+us/entries-+us ...": when the worker began
# each rethook_alloc() of a wave, how many calls were inside the function then, and when it
# published the pool (0 on C, which has no such step).
TIMELINE_RE = re.compile(r"\bRKG timeline (\S+) (\d+) (all_in=.*)$")
# "RKG kicks <phase> <i> irq_work: +us/entries@cpuN ... | worker: +us/entries@cpuN ...": when the
# irq_work that queues the worker ran (on the kicking CPU) and when the worker's function began.
KICKS_RE = re.compile(r"\bRKG kicks (\S+) (\d+) (irq_work.*)$")


def kretgrow_phases(r):
    """{phase: [(entries, returns, missed, timed_out), ...]} of the module's phases (not plain)."""
    phases = {}
    for ln in r.lines:
        m = WAVE_RE.search(ln)
        if m and m.group(1) != "plain":
            phases.setdefault(m.group(1), []).append(
                (int(m.group(3)), int(m.group(4)), int(m.group(5)), bool(m.group(6))))
    return phases


def _entries(waves):
    return sum(w[0] for w in waves)


def _returns(waves):
    return sum(w[1] for w in waves)


def _missed(waves):
    return sum(w[2] for w in waves)


def _plain_waves(r):
    """The plain phases' waves, in order (one run of them per r: event)."""
    out = []
    for ln in r.lines:
        m = WAVE_RE.search(ln)
        if m and m.group(1) == "plain":
            out.append((int(m.group(3)), int(m.group(4)), int(m.group(5)), bool(m.group(6))))
    return out


def analyse_kretgrow(r, impl):
    """The figures of one kretprobe-grow boot and what is wrong with them."""
    lines, problems = [], []
    phases = kretgrow_phases(r)
    for want in ("fixed", "grow"):
        if want not in phases:
            problems.append(f"phase {want}: no waves reported")
    for ph, waves in phases.items():
        lines.append(f"{ph:6} waves {len(waves)}: entries {_entries(waves)}, returns seen by the handler "
                     f"{_returns(waves)}, nmissed {_missed(waves)} (per wave: "
                     f"{' '.join(str(w[2]) for w in waves)})")
        for i, (e, ret, miss, timed_out) in enumerate(waves, 1):
            if timed_out:
                problems.append(f"phase {ph} wave {i}: the sleepers did not all get in and out in time")
            if ret + miss != e:
                problems.append(f"phase {ph} wave {i}: {ret} returns + {miss} missed != {e} entries")
    fixed, grow = phases.get("fixed"), phases.get("grow")
    events = {}
    for ln in r.lines:
        m = EVENT_RE.search(ln)
        if m:
            events[m.group(1)] = m.group(2)
            lines.append(f"r: event {m.group(1)}: {m.group(2)}")
    ev = {k: dict(x.partition("=")[::2] for x in v.split() if "=" in x) for k, v in events.items()}
    ev_waves = {}
    for ln in r.lines:
        m = EVENT_WAVE_RE.search(ln)
        if m:
            ev_waves.setdefault(m.group(1), []).append(int(m.group(4)))
    for name, misses in ev_waves.items():
        lines.append(f"r: event {name}, nmissed per wave: {' '.join(map(str, misses))}")
    for ln in r.lines:
        m = TIMELINE_RE.search(ln)
        if m:
            lines.append(f"pools allocated in wave {m.group(2)} of {m.group(1)} (instances@time since the "
                         f"wake-up/calls inside by then-published at): {m.group(3)}")
        m = KICKS_RE.search(ln)
        if m:
            lines.append(f"worker asked for and run in wave {m.group(2)} of {m.group(1)} (time since the "
                         f"wake-up/calls inside by then@CPU): {m.group(3)}")
    if impl == "c":
        if fixed and grow and _missed(grow) != _missed(fixed):
            problems.append(f"C ignores grow_max, but its grow phase missed {_missed(grow)}, "
                            f"its fixed phase {_missed(fixed)}")
    elif grow:
        total, missed = _entries(grow), _missed(grow)
        if total and missed * 100 > total:
            problems.append(f"growing pool: {missed} of {total} calls missed, more than 1%")
        late = [i for i, w in enumerate(grow, 1) if i > 1 and w[2]]
        if late:
            problems.append(f"growing pool: misses after the first wave, in wave(s) {late}")
        g = ev.get("grow")
        if g is None or "missed" not in g:
            problems.append("r: event with debug.kretprobe-grow: not run")
        else:
            hits, miss = int(g.get("hits", 0)), int(g["missed"])
            if miss * 100 > hits + miss:
                problems.append(f"r: event with debug.kretprobe-grow 1024: {miss} of {hits + miss} missed, "
                                "more than 1%")
            late = [i for i, m in enumerate(ev_waves.get("grow", []), 1) if i > 1 and m]
            if late:
                problems.append(f"r: event with debug.kretprobe-grow 1024: misses after the first wave, in "
                                f"wave(s) {late}")
    return lines, problems

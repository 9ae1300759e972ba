# SPDX-License-Identifier: GPL-2.0
"""`rkprobes stress`: kprobes under SMP load on x86_64, C against Rust (issue 16, first slice).

For each implementation: build the `bench` kernel (SMP without preemption, so that probes are
also boosted; modules, debugfs, ftrace, kprobe events and optprobes), or with `--config kunit`
the KUnit kernel (SMP too, with preemption and DEBUG_KERNEL; the short stress of `rkprobes test`
boots it, as `test` builds it anyway), build our stress module (tools/testing/rkprobes/stress/) against it, boot it
under QEMU with 4 vCPUs and parse the "RKS" lines.

QEMU runs the 4 vCPUs on one host thread by default (`--tcg single`). With a thread per vCPU
(`--tcg multi`, QEMU's default) a vCPU can keep running code another vCPU has already
rewritten: QEMU's multi-threaded TCG can run stale code after another vCPU's store to a code
page (QEMU issue https://gitlab.com/qemu-project/qemu/-/work_items/4669, Linux guests oopsing
on an int3 at an ftrace site). Here it shows as an int3 trapped, again and again and on every
vCPU, at a probe address whose byte already reads back as the original instruction: upstream C
oopses on it (no kprobe there any more), and a build whose kprobe is still registered but
disabled runs its handler. The module reports such traps as "orphan-int3" (a die notifier). The module hits its probed functions from a
bound kthread on every CPU and from a per-CPU hrtimer, while a registrar kthread registers,
unregisters, enables and disables single probes (an aggregate of two kprobes, a kretprobe with
maxactive 2, an optimizable kprobe, a kprobe on an ftrace site) and a batch of 128, and the
/init (stress-init.sh) toggles kprobes/enabled and the optimization sysctl and churns
kprobe_events and loads and unloads rks_target.ko, on which a churn thread of the module registers
probes (ftrace-based, int3, kretprobe, init text: GONE when the module goes) while it starts tasks
that exit inside a kretprobe'd function. Then a quiet phase counts hits exactly, and the module checks that its handlers
only ran while their probe was allowed to, that everything was unregistered and that the text
of every probed function is back byte for byte.

Per implementation it prints the operations, the hits (handlers against nmissed and calls), the
checks, kprobes/list after the module is gone and the kernel log's WARNING/BUG/Oops/`kprobes:`
lines; then a table of the `kprobes:` messages of every build beside C's. It fails, naming what,
on a violation, a failed check, a splat, or a boot that did not reach RKS-DONE.
"""

import re
import time

from . import cli, common, initramfs, kbuild, qemu, stress_scenarios
from .common import Failure, banner, info

STRESS_DIR = common.REPO / "tools" / "testing" / "rkprobes" / "stress"
MODULE_SOURCES = ("Kbuild", "rks_main.c", "rks_fill.S", "rks_fill.h", "rks_churn.c", "rks_churn.h",
                  "rks_target.c")
MODULE = "rkprobes_stress.ko"
# The module /init loads and unloads while the stress module probes it.
TARGET_MODULE = "rks_target.ko"
INIT = STRESS_DIR / "stress-init.sh"
# `--race`: the kprobes/enabled race of upstream 6.12 (race-init.sh), on the KUnit kernel.
RACE_INIT = STRESS_DIR / "race-init.sh"
RACE_ITERATIONS = 20
RACE_CONFIG = "kunit"
# Why --race skips C: a run of it on upstream C, and what it showed.
RACE_C_SKIP = ("upstream 6.12 C leaves the int3 of a probe found queued for unoptimizing by a global disarm, and "
               "oopses (\"Oops: int3\") once that probe is removed while kprobes are globally disabled: iteration "
               "15 of 20 in the run of 2026-11-26 04:31 UTC, QEMU with one TCG thread; see the README, "
               "\"The kprobes/enabled race\"")
# `--scenario ftrace-aggr` (issue 41): a mix of everyday kprobes users with its own /init and report,
# beside the scenarios of stress_scenarios.py (which boot a module of their own).
FTRACE_AGGR = "ftrace-aggr"
FTRACE_AGGR_ABOUT = ("issue 41: p:/r: kprobe events on vfs_read, vfs_write, do_sys_openat2 and kernel_clone, "
                     "upstream's samples kprobe_example.ko symbol=vfs_read and kretprobe_example.ko func=vfs_read "
                     "loaded and unloaded, kprobes/enabled and the optimization sysctl toggled every 0.2 s, a "
                     "read/fork load; 2 vCPUs, the KUnit kernel with the hung-task and soft-lockup detectors "
                     "(docs/findings/ftrace-aggregate-disarm.md)")
FTRACE_AGGR_INIT = STRESS_DIR / "ftrace-aggr-init.sh"
FTRACE_AGGR_CONFIG = "kunit"
FTRACE_AGGR_CPUS = 2
FTRACE_AGGR_SAMPLES = ("samples/kprobes/kprobe_example.ko", "samples/kprobes/kretprobe_example.ko")
# A hang panics (the stacks are printed first) instead of running into the boot's time limit; the
# /init sets a hung-task timeout of rkh_hung_timeout seconds.
FTRACE_AGGR_APPEND = "hung_task_panic=1 softlockup_panic=1 rkh_hung_timeout=20"
# Seconds a boot may take on top of --duration: about 15 s of boot and checks, up to 60 s for the
# loops to stop.
FTRACE_AGGR_BOOT_MARGIN = 240
# A guest whose console stays silent this long is hung (its toggle loop logs a line every 0.2 s):
# the hang upstream 6.12 reaches keeps the CPUs busy patching ftrace sites, where neither the
# hung-task nor the soft-lockup detector reports; QEMU is then stopped.
FTRACE_AGGR_SILENCE = 60
# The checks ftrace-aggr-init.sh prints ("RKH check <name> ok|FAIL <detail>").
FTRACE_AGGR_CHECKS = ("writes", "list", "ftrace", "enabled")
FTRACE_AGGR_LOOPS = ("events", "modules", "toggles", "load")
# Console lines that name a failure of the scenario, first one first: (label, regex).
FTRACE_AGGR_FAILURES = [
    ("disarm", re.compile(r"Failed to (?:dis)?arm kprobe-ftrace.*|Failed to (?:un)?register kprobe-ftrace.*")),
    ("WARNING", re.compile(r"WARNING:.*")),
    ("global disable", re.compile(r"Kprobes globally disabled, but failed.*")),
    ("write", re.compile(r"RKH first-failure .*")),
    ("hung task", re.compile(r"INFO: task .* blocked for more than .*")),
    ("soft lockup", re.compile(r"watchdog: BUG: soft lockup.*")),
    ("RCU stall", re.compile(r"rcu: INFO: .* detected stalls.*|rcu_.* self-detected stall.*")),
    ("BUG", re.compile(r"BUG:.*")),
    ("Oops", re.compile(r"Oops.*")),
    ("panic", re.compile(r"Kernel panic.*")),
    ("stuck loops", re.compile(r"RKH stuck loops .*")),
]
ARCH = "x86_64"
# The arches the stress boots (`--arch`): the module and its /init are arch-neutral but for the
# x86 die notifier; where kprobes has no optprobes the /init says so and the [OPTIMIZED] check
# is skipped, loudly.
STRESS_ARCHES = ("x86_64", "arm64", "ppc64", "s390")
# The arches of the ftrace-aggr scenario (their KUnit kernels have the kprobes samples, kprobe
# events and the hang detectors): kprobes on ftrace on x86_64 and loongarch; arm64 has none in
# 6.12, so there every probe of the mix is a breakpoint (aggregates, but no ftrace ops).
FTRACE_AGGR_ARCHES = ("x86_64", "arm64", "loongarch")
# Arches whose kprobes have optprobes but never optimize a probe in module text, where the
# stress's rks_opt_target is: the sysctl is toggled as elsewhere, the [OPTIMIZED] check is
# skipped, loudly, with why.
MODULE_TEXT_NOT_OPTIMIZED = {
    "ppc64": "powerpc 6.12 optimizes no probe in module text: its detour buffers (optinsn_slot) are in kernel "
             "text, out of a branch's 32 MiB reach from module addresses (0xc008...), on C as on Rust",
}
# The configurations the stress can boot (both have CONFIG_SMP; see the module docstring), and
# the one `rkprobes stress` builds by default.
CONFIGS = ("bench", "kunit", "preempt")
CONFIG = "bench"
# The short stress of `rkprobes test`: the KUnit kernel that `test` has built already, its
# KUnit suites not run at boot.
SHORT_CONFIG = "kunit"
SHORT_APPEND = "kunit.enable=0"
CPUS = 4
# Every message to the console (KERN_INFO included), so a splat is seen as it happens; /init
# writes its lines to /dev/kmsg (not rate-limited), so that the console never cuts one.
# RCU stall warnings are off until the kernel's own boot ends (rcu_end_inkernel_boot(), just
# before /init runs, when no probe exists yet) and on for everything the stress does: under one
# TCG thread the stop_machine() of ppc64's mark_initmem_nx() outlasts the 21 s stall timeout on
# upstream C's image (docs/findings/ppc64-c-boot-rcu-stall-single-tcg.md).
APPEND = "loglevel=7 panic=-1 printk.devkmsg=on rcupdate.rcu_cpu_stall_suppress_at_boot=1"
SHORT_DURATION = 10
DEFAULT_DURATION = 60
# Seconds a boot may take on top of --duration: booting 4 vCPUs under TCG, the quiet phase
# and the final checks (which wait up to 20 s for the optimizer).
BOOT_MARGIN = 600

# The checks the module prints ("RKS check <name> ok|FAIL <detail>"); a missing one fails.
MODULE_CHECKS = ("hits-within-calls", "quiet-agg_a", "quiet-agg_b", "quiet-kretprobe", "quiet-opt",
                 "quiet-ftrace", "quiet-batch", "unregistered", "text", "errors", "kretprobe-null",
                 "orphan-int3", "violations", "task-exit", "module-churn")
# The checks of the module's "faults" step, run where the kernel has fault injection (--debug
# faults): each kind of registration with its n-th allocation failed, n = 1, 2, ...
FAULT_KINDS = ("kprobe", "opt", "kretprobe", "ftrace", "batch", "batch-ftrace")
FAULT_CHECKS = tuple(f"faults-{k}" for k in FAULT_KINDS)
SINGLE_PROBES = ("agg_a", "agg_b", "kretprobe", "opt", "ftrace")
# Operations the stress must have performed at least once to count as a stress.
REQUIRED_OPS = ("register", "unregister", "enable", "disable", "batch-register", "batch-unregister")
# Console lines that fail a run: (label, regex).
SPLATS = [
    ("WARNING", re.compile(r"WARNING:")),
    ("BUG", re.compile(r"BUG:")),
    ("Oops", re.compile(r"Oops")),
    ("panic", re.compile(r"Kernel panic")),
    ("RCU stall", re.compile(r"rcu: INFO: .* detected stalls|rcu_.* self-detected stall")),
    ("general protection", re.compile(r"general protection fault")),
    # The debug configurations (--debug): lockdep and KASAN report as WARNING:/BUG: above.
    ("UBSAN", re.compile(r"UBSAN:")),
    ("kmemleak", re.compile(r"RKS kmemleak: unreferenced object")),
]
TOGGLE_MODES = ("both", "optimization", "none")
STRESS_ARCHES_WHY = ("the stress mix on x86_64, arm64, ppc64 and s390, --scenario ftrace-aggr also on loongarch; "
                     "no run of the stress has been made on riscv yet")
_RACE_ONLY = "--race is a run of its own"
# Flags that do not go together (cli.conflicts), and why.
CONFLICTS = [
    ("--race", "--debug", f"{_RACE_ONLY} on the plain {RACE_CONFIG} kernel; a checker runs with the stress mix "
     "or a --scenario"),
    ("--race", "--config", f"{_RACE_ONLY} and always boots the {RACE_CONFIG} kernel"),
    ("--race", "--toggles", f"{_RACE_ONLY} and switches kprobes/enabled and the optimization sysctl itself"),
    ("--race", "--tcg", f"{_RACE_ONLY} and runs its vCPUs on one TCG thread always"),
    ("--race", "--duration", f"{_RACE_ONLY} of {RACE_ITERATIONS} iterations, not of a time"),
    ("--race", "--scenario", f"{_RACE_ONLY}; give one of them"),
    ("--race", "--arch=arm64", "the race's probe sites (+9 of each function) are x86_64's"),
    ("--race", "--arch=ppc64", "the race's probe sites (+9 of each function) are x86_64's"),
    ("--race", "--arch=s390", "the race's probe sites (+9 of each function) are x86_64's"),
    ("--debug", "--config=bench", "a debug checker is built into the kunit or preempt kernel, not bench; give "
     "--config kunit or preempt, or leave --config out"),
    ("--scenario", "--config=bench", "a scenario boots the kunit or preempt kernel"),
    ("--scenario", "--toggles", "a scenario's /init does its own toggling; --toggles is the stress mix's"),
    ("--scenario=ftrace-aggr", "--debug", "ftrace-aggr boots its own kernel, the KUnit one with the kprobes samples"),
    ("--scenario=ftrace-aggr", "--config", "ftrace-aggr boots its own kernel, the KUnit one with the kprobes samples"),
    ("--scenario=ftrace-aggr", "--tcg", "ftrace-aggr runs its vCPUs on one TCG thread always"),
    ("--scenario=ftrace-aggr", "--arch=ppc64", "its kernel configuration (the kprobes samples, the hang "
     "detectors) is x86_64's, arm64's and loongarch's only for now"),
    ("--scenario=ftrace-aggr", "--arch=s390", "its kernel configuration (the kprobes samples, the hang "
     "detectors) is x86_64's, arm64's and loongarch's only for now"),
]
# The configuration whose /init runs the faults step (configs/debug-faults.config).
FAULTS_CONFIG = "kunit-faults"
# QEMU's TCG: one host thread for all vCPUs (single, our default), or one per vCPU (multi,
# QEMU's default, which runs stale code after cross-vCPU text changes: see the docstring).
TCG_MODES = {"multi": [], "single": ["-accel", "tcg,thread=single"]}
DEFAULT_TCG = "single"
KPROBES_MSG = re.compile(r"\bkprobes: (.*)$")
TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")


def add_args(p):
    cli.add_arch(p, arches=tuple(dict.fromkeys(STRESS_ARCHES + FTRACE_AGGR_ARCHES)), default=ARCH,
                 why=STRESS_ARCHES_WHY)
    cli.add_impl(p, multi=True, default_help="every one the tree builds for the arch: c, rust, rust-arch")
    p.add_argument("--duration", type=int, default=None,
                   help=f"seconds of the stress phase in each guest (default {DEFAULT_DURATION})")
    p.add_argument("--toggles", choices=TOGGLE_MODES, default=None,
                   help="which switches /init toggles during the stress: 'both': kprobes/enabled and "
                   "the optimization sysctl, each from its own loop; 'optimization': the sysctl only; 'none'. "
                   "Default: 'both' on the Rust builds and 'optimization' on c, which the run prints: "
                   "toggling kprobes/enabled beside the optimization sysctl and probes being (un)registered "
                   "crashes or stops upstream 6.12 C (an upstream race leaves an int3 without its kprobe, see "
                   "--race, which the Rust core fixes). Given explicitly, it applies to every build")
    p.add_argument("--timeout", type=int, default=None,
                   help=f"seconds one QEMU boot may take (default: duration + {BOOT_MARGIN})")
    p.add_argument("--tcg", choices=sorted(TCG_MODES), default=None,
                   help="QEMU TCG threading: 'single' (default): every vCPU on one host thread, taking turns "
                   "at translation-block boundaries; 'multi': a host thread per vCPU, truly concurrent, "
                   "where QEMU runs stale code after another vCPU rewrote it (QEMU issue 4669): int3 traps "
                   "at restored probe sites, an Oops on upstream C")
    cli.add_debug(p, multi=True, help_extra="Instead of --config, the KUnit (or with --config preempt the preempt) "
                  "kernel with the checker (lockdep: PROVE_LOCKING and "
                  "DEBUG_ATOMIC_SLEEP; kasan: generic KASAN; kmemleak: scanned after rmmod; ubsan: UBSAN and "
                  "the Rust overflow checks; list: DEBUG_LIST; faults: failslab and fail_page_alloc, with "
                  "kmemleak: after the stress, each kind of registration (kprobe, optimizable kprobe, "
                  "kretprobe, ftrace-site kprobe, batch of 4) with its n-th allocation failed, n = 1, 2, ...: "
                  "-ENOMEM, nothing left behind, usable afterwards); any report fails the run")
    p.add_argument("--race", action="store_true",
                   help="instead of the stress, the kprobes/enabled race (stress/race-init.sh): optimized kprobe "
                   f"events, the optimization sysctl and kprobes/enabled switched off together, the events "
                   f"removed, {RACE_ITERATIONS} times on the KUnit kernel with 4 vCPUs; passes when no int3 is "
                   "left behind (no Oops). Skipped, loudly, on c: upstream 6.12 oopses there")
    cli.add_config(p, CONFIGS, None, help_extra=f"Default {CONFIG}, or the scenario's: {CONFIG}: SMP, no "
                   "preemption, boosting; kunit: SMP with preemption and DEBUG_KERNEL, the kernel the short stress "
                   "of `rkprobes test` boots; preempt: kunit with full preemption, preemptible RCU and the hang "
                   "detectors. With --debug: kunit or preempt, plus the checker")
    p.add_argument("--scenario", choices=sorted([*stress_scenarios.SCENARIOS, FTRACE_AGGR]), default=None,
                   help="instead of the stress mix, one targeted scenario (tools/testing/rkprobes/stress/<dir>/): "
                   + "; ".join(f"{n}: {s.about}" for n, s in sorted(stress_scenarios.SCENARIOS.items()))
                   + f"; {FTRACE_AGGR}: {FTRACE_AGGR_ABOUT}")
    cli.conflicts(p, *CONFLICTS)
    cli.checks(p, _check_args)


def _check_args(args):
    """--duration and --timeout, resolved: args.duration, args.timeout (None: the run's default);
    the arch against what runs there."""
    if args.arch not in STRESS_ARCHES and args.scenario != FTRACE_AGGR:
        raise cli.UsageError(f"--arch {args.arch}: only --scenario {FTRACE_AGGR} runs there (its KUnit kernel has "
                             f"no stress module configuration yet); the stress mix runs on "
                             f"{', '.join(STRESS_ARCHES)}")
    scenario = stress_scenarios.SCENARIOS.get(args.scenario)
    if scenario and args.arch not in scenario.arches:
        raise cli.UsageError(f"--scenario {args.scenario} --arch {args.arch}: the scenario runs on "
                             f"{', '.join(scenario.arches)} only (its probed functions are written for those); "
                             f"valid values of --arch: {', '.join(scenario.arches)}")
    if args.duration is not None and args.duration < 1:
        raise cli.UsageError(f"--duration {args.duration}: the stress needs at least 1 second")
    args.duration = args.duration if args.duration is not None else DEFAULT_DURATION
    if not args.race and not args.scenario and args.timeout is not None and args.timeout <= args.duration:
        raise cli.UsageError(f"--timeout {args.timeout}: must be longer than --duration ({args.duration} s), "
                             "the boot runs the stress and then its checks")


def build_modules(arch, bdir):
    """Build rkprobes_stress.ko and rks_target.ko out of tree against the kernel in `bdir`;
    returns both .ko paths."""
    return kbuild.build_external_modules(arch, bdir, "rkprobes-stress",
                                         [STRESS_DIR / n for n in MODULE_SOURCES], [MODULE, TARGET_MODULE],
                                         fail_on_warnings=True)


def _kv(fields):
    out = {}
    for f in fields:
        k, sep, v = f.partition("=")
        if sep:
            out[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return out


def normalize_message(msg):
    """A `kprobes:` message with its numbers and addresses replaced, so that counts of the same
    message from different runs add up."""
    msg = re.sub(r"0x[0-9a-f]+|\b[0-9a-f]{16}\b", "ADDR", msg)
    return re.sub(r"\b\d+\b", "N", msg.strip())


class Run:
    """One boot of the stress, parsed from its console."""

    def __init__(self, impl, text, log, secs, boot_error=None, arch=ARCH):
        self.impl = impl
        self.arch = arch
        self.log = log
        self.secs = secs
        self.boot_error = boot_error
        self.faults_expected = False  # set for the --debug faults kernel
        self.start = {}
        self.ops = {}
        self.optime = {}        # ms spent in each kind of registrar operation
        self.hits = {}          # (phase, probe) -> {handler, post, entry, return, nmissed, calls}
        self.checks = {}        # name -> (ok, detail)
        self.values = {}        # "RKS <key> <int>" lines of the /init and the module
        self.shell = {}         # "RKS shell <key> <int>"
        self.listed = []        # kprobes/list after rmmod
        self.quiet_list = []
        self.faults = {}        # kind -> {runs, injected, failed, tolerated, errnos}
        self.churn_probes = {}  # probe on rks_target -> {attempts, registered, enoent, ...}
        self.churn_tasks = {}   # {started, exited, calls, entries, ...}
        self.churn_modules = {}  # {loaded, unloaded, init-probe-gone, ...}
        self.skipped = {}       # "RKS skipped <what>: <why>": steps the module left out on this build
        self.errors = []
        self.splats = {label: [] for label, _ in SPLATS}
        self.messages = {}      # normalized kprobes: message -> count
        self.end = False
        self.done = False
        for raw in text.splitlines():
            ln = TIMESTAMP.sub("", raw.rstrip("\r"))
            for label, rx in SPLATS:
                if rx.search(ln):
                    self.splats[label].append(ln)
            m = KPROBES_MSG.search(ln)
            if m:
                key = normalize_message(m.group(1))
                self.messages[key] = self.messages.get(key, 0) + 1
            if ln.strip() == "RKS-DONE":
                self.done = True
                continue
            m = re.search(r"\bRKS (\S+) ?(.*)$", ln)
            if m:
                self._line(m.group(1), m.group(2))

    def _line(self, kind, rest):
        f = rest.split()
        try:
            if kind == "start":
                self.start = _kv(f)
            elif kind == "ops":
                self.ops = _kv(f)
            elif kind == "optime":
                self.optime = _kv(f)
            elif kind == "hits":
                self.hits[(f[0], f[1])] = _kv(f[2:])
            elif kind == "check":
                self.checks[f[0]] = (f[1] == "ok", " ".join(f[2:]))
            elif kind == "shell":
                self.shell[f[0]] = int(f[1])
            elif kind == "listed":
                self.listed.append(rest)
            elif kind == "quiet-list":
                self.quiet_list.append(rest)
            elif kind == "faults":
                self.faults[f[0]] = _kv(f[1:])
            elif kind == "churn-probe":
                self.churn_probes[f[0]] = _kv(f[1:])
            elif kind == "churn-tasks":
                self.churn_tasks = _kv(f)
            elif kind == "churn-modules":
                self.churn_modules = _kv(f)
            elif kind == "skipped":
                what, _, why = rest.partition(": ")
                self.skipped[what] = why
            elif kind == "error":
                self.errors.append(rest)
            elif kind == "end":
                self.end = True
            elif len(f) == 1 and re.fullmatch(r"-?\d+", f[0]):
                self.values[kind] = int(f[0])
            else:
                self.values[kind] = rest
        except (IndexError, ValueError):
            self.errors.append(f"unparsable line: RKS {kind} {rest}")

    def problems(self):
        """What failed in this run, one string each; empty when it passed."""
        out = []
        if self.boot_error:
            out.append("the boot did not finish: " + qemu.failure_summary(self.boot_error))
        if not self.done:
            out.append("no RKS-DONE marker")
        if not self.start:
            out.append("the module never started (no RKS start line)")
        elif self.start.get("cpus") != CPUS:
            out.append(f"the guest had {self.start.get('cpus')} CPUs online, not {CPUS}")
        if self.values.get("insmod", 0) != 0 and "insmod" in self.values:
            out.append(f"insmod exited {self.values['insmod']}")
        if self.done and not self.end:
            out.append("the module's finish step never ended (no RKS end line)")
        for label, lines in self.splats.items():
            if lines:
                out.append(f"{len(lines)} {label} line(s) in the console, first: {lines[0].strip()}")
        for e in self.errors:
            out.append(f"error: {e}")
        for name, (ok, detail) in self.checks.items():
            if not ok:
                out.append(f"check {name} FAILED: {detail}")
        if not self.start or not self.done:
            # What a finished run must also show is not asked of a crashed or hung one.
            return out
        for name in MODULE_CHECKS + (FAULT_CHECKS if self.faults_expected else ()):
            if name not in self.checks:
                out.append(f"check {name} was not reported")
        if self.faults_expected and self.values.get("faults-done") != 1:
            out.append("the faults step did not end (no RKS faults-done; faults-unavailable: "
                       f"{self.values.get('faults-unavailable', 'no')})")
        if self.values.get("violations", 0):
            out.append(f"{self.values['violations']} handler run(s) while the probe was not registered+enabled")
        if self.values.get("stress-script") != "done":
            out.append("the registrar did not finish its script of one operation of each kind")
        for op in REQUIRED_OPS:
            if not self.ops.get(op):
                out.append(f"the registrar never did '{op}' (ops: {self.ops or 'not reported'})")
        for probe in SINGLE_PROBES:
            h = self.hits.get(("stress", probe), {})
            if not (h.get("handler") or h.get("entry")):
                out.append(f"probe {probe} was never hit during the stress phase")
        if self.values.get("no-optprobes") or self.arch in MODULE_TEXT_NOT_OPTIMIZED:
            pass  # report() says the check is skipped, and why
        elif self.values.get("quiet-optimized", 0) < 1:
            out.append("the probe on rks_opt_target was not [OPTIMIZED] in the quiet phase")
        for key in ("rmmod", "list-before-rmmod", "events-left"):
            if self.values.get(key) != 0:
                out.append(f"{key}: {self.values.get(key, 'not reported')} (0 expected)")
        # What kprobes/list held before insmod stays: ppc64 probes its rethook trampoline at boot.
        before = self.values.get("list-before-insmod", 0)
        if self.values.get("list-after-rmmod") != before:
            out.append(f"list-after-rmmod: {self.values.get('list-after-rmmod', 'not reported')} "
                       f"({before} expected, as before insmod)")
        for key in ("events-errors", "module-errors"):
            if self.shell.get(key, 0):
                out.append(f"{self.shell[key]} {key} in the /init loops")
        loops = {"both": ("enabled-toggles", "optimization-toggles"), "enabled": ("enabled-toggles",),
                 "optimization": ("optimization-toggles",)}.get(self.values.get("toggles"), ())
        m = self.churn_modules
        if self.values.get("toggles") not in ("both", "enabled") and m and m.get("exact") != m.get("loaded"):
            out.append(f"rks_target's own probe missed hits on {m.get('loaded', 0) - m.get('exact', 0)} of "
                       f"{m.get('loaded')} loads, with kprobes/enabled never toggled")
        for key in loops + ("events", "module-loads"):
            if not self.shell.get(key):
                out.append(f"the /init loop '{key}' did nothing")
        return out


def stress_one(impl, duration, timeout, toggles="both", tcg=DEFAULT_TCG, config=CONFIG, arch=ARCH):
    """Build, boot and parse one implementation; returns a Run (raises Failure when the kernel
    or the module cannot be built). Holds the build lock over the build and the boot: the boot
    runs 4 vCPUs on this machine's 2 cores."""
    with common.build_lock():
        bdir = kbuild.build(arch, impl, config)
        kos = build_modules(arch, bdir)
        initrd = initramfs.pack(bdir, "stress-initramfs", INIT, kos, arch=arch)
        log = bdir / "stress-console.log"
        start = time.monotonic()
        boot_error = None
        try:
            append = f"{APPEND} {SHORT_APPEND}" if config.startswith("kunit") else APPEND
            text = qemu.boot(arch, bdir, f"{append} rks_duration={duration} rks_toggles={toggles}", log,
                             lambda t: "RKS-DONE" in t,
                             timeout, initrd=initrd, extra=["-smp", str(CPUS)] + TCG_MODES[tcg],
                             label=f"stress {arch}/{impl}")
        except Failure as e:
            boot_error = str(e)
            text = log.read_text(errors="replace") if log.is_file() else ""
        secs = time.monotonic() - start
    run = Run(impl, text, log, secs, boot_error, arch)
    run.faults_expected = config == FAULTS_CONFIG
    return run


def _hits_table(run, phase):
    rows = [f"    {'probe':10} {'handler':>9} {'post':>9} {'entry':>9} {'return':>9} {'nmissed':>9} {'calls':>10}"]
    for probe in SINGLE_PROBES + ("batch",):
        h = run.hits.get((phase, probe))
        if h is None:
            rows.append(f"    {probe:10} not reported")
            continue
        rows.append(f"    {probe:10} " + " ".join(f"{h.get(k, '?'):>9}" for k in
                                                  ("handler", "post", "entry", "return", "nmissed"))
                    + f" {h.get('calls', '?'):>10}")
    return rows


def report(run, duration):
    """Print what one run did and found."""
    banner(f"stress {run.arch}/{run.impl}: {CPUS} vCPUs, {duration} s")
    print(f"  boot: {common.fmt_secs(run.secs)} (console: {run.log})")
    if run.start:
        print("  module: " + ", ".join(f"{k} {v}" for k, v in run.start.items())
              + f"; /init toggles: {run.values.get('toggles', '?')}")
    if run.ops:
        print("  operations (registrar): " + ", ".join(f"{k} {v}" for k, v in run.ops.items()))
    if run.optime:
        print("  time in the random operations after the script (ms; batch-enable: batch flips): "
              + ", ".join(f"{k} {v}" for k, v in run.optime.items()))
    if run.shell:
        print("  operations (/init): " + ", ".join(f"{k} {v}" for k, v in run.shell.items()))
    for phase, what in (("stress", "stress phase: handler runs, nmissed and calls of the probed function "
                         "(batch: sums over its 128 probes)"),
                        ("quiet", "quiet phase: every probe enabled, nothing else changing; "
                         "handler + nmissed must equal calls")):
        print(f"  {what}")
        for r in _hits_table(run, phase):
            print(r)
    if run.values.get("no-optprobes"):
        print(f"  SKIPPED on {run.arch}: the [OPTIMIZED] check of rks_opt_target's probe and the optimization "
              "sysctl toggles: no optprobes here (no /proc/sys/debug/kprobes-optimization)")
    elif run.arch in MODULE_TEXT_NOT_OPTIMIZED:
        print(f"  SKIPPED on {run.arch}: the [OPTIMIZED] check of rks_opt_target's probe (the sysctl is toggled): "
              f"{MODULE_TEXT_NOT_OPTIMIZED[run.arch]}")
    for what, why in run.skipped.items():
        print(f"  *** SKIPPED on {run.arch}/{run.impl}: {what}: {why} ***")
    if run.quiet_list:
        print("  kprobes/list in the quiet phase:")
        for ln in run.quiet_list:
            print(f"    {ln}")
    if run.churn_modules or run.churn_probes:
        m = run.churn_modules
        print(f"  module churn: rks_target loaded {m.get('loaded', '?')}, unloaded {m.get('unloaded', '?')}; "
              f"its init-text probe GONE at {m.get('init-probe-gone', '?')} exits; its own probe's hits "
              f"{m.get('hits', '?')} of {m.get('calls', '?')} calls ({m.get('exact', '?')} loads exact)")
        print("    probes of the churn thread on it (registration result, GONE at unregistration, handler runs):")
        for name, v in run.churn_probes.items():
            print(f"    {name:14} " + ", ".join(f"{k} {x}" for k, x in v.items()))
    if run.churn_tasks:
        print("  task churn (tasks exiting inside a kretprobe'd function): "
              + ", ".join(f"{k} {v}" for k, v in run.churn_tasks.items()))
    if run.faults:
        print("  faults step (registration with its n-th allocation failed, n = 1, 2, ... until none is "
              "injected; failed: returned an error, tolerated: registered anyway):")
        for kind in FAULT_KINDS:
            f = run.faults.get(kind)
            print(f"    {kind:10} " + (", ".join(f"{k} {v}" for k, v in f.items()) if f else "not reported"))
    print("  checks:")
    for name in MODULE_CHECKS + (FAULT_CHECKS if run.faults_expected else ()):
        ok, detail = run.checks.get(name, (None, "not reported" + ("" if run.done else " (the boot did not finish)")))
        print(f"    {'ok' if ok else '--' if ok is None and not run.done else 'FAIL':4} {name}: {detail}")
    listed = run.values.get("list-after-rmmod", "not reported")
    print(f"  kprobes/list after rmmod: {'empty' if listed == 0 else listed}"
          + (f" (before rmmod, lines of the module: {run.values.get('list-before-rmmod')})"))
    for ln in run.listed:
        print(f"    {ln}")
    counts = ", ".join(f"{len(lines)} {label}" for label, lines in run.splats.items())
    print(f"  console: {counts}; {sum(run.messages.values())} 'kprobes:' lines")
    for label, lines in run.splats.items():
        for ln in lines[:5]:
            print(f"    {label}: {ln.strip()}")
    if run.values.get("toggles") == "both" and any("Oops: int3" in ln for ln in run.splats["Oops"]):
        print("  note: an int3 Oops at a probed address after 'Kprobes globally disabled': the upstream 6.12 "
              "race (README, 'The kprobes/enabled race'; stress --race): a probe whose unoptimization is pending "
              "when kprobes/enabled goes to 0 is forced back to int3 but not disarmed, and unregistering it "
              "while kprobes are globally disarmed leaves that int3 without its kprobe. The Rust core disarms "
              "it (73e103e); with --tcg multi, QEMU can also run stale code. --toggles optimization leaves "
              "kprobes/enabled alone")
    problems = run.problems()
    print(f"  result: {'PASS' if not problems else 'FAIL'}")
    for p in problems:
        print(f"    - {p}")
    return problems


def messages_table(runs):
    """The `kprobes:` messages of every run, one row per message, one column per build."""
    impls = [r.impl for r in runs]
    keys = sorted({k for r in runs for k in r.messages})
    head = "| `kprobes:` message | " + " | ".join(common.impl_label(i) for i in impls) + " |"
    rows = [head, "|---|" + "---|" * len(impls)]
    for k in keys:
        rows.append(f"| {k} | " + " | ".join(str(r.messages.get(k, 0)) for r in runs) + " |")
    for key, label in (("enabled-toggles", "(kprobes/enabled toggled off and on, times)"),
                       ("optimization-toggles", "(optimization sysctl toggled off and on, times)")):
        rows.append(f"| {label} | " + " | ".join(str(r.shell.get(key, "not toggled" if r.done else "?"))
                                                for r in runs) + " |")
    notes = []
    c = next((r for r in runs if r.impl == "c"), None)
    if c:
        for r in runs:
            if r is c:
                continue
            only = [k for k in r.messages if k not in c.messages]
            missing = [k for k in c.messages if k not in r.messages]
            for k in only:
                notes.append(f"only on {common.impl_label(r.impl)}, never on C in this run: {k}")
            for k in missing:
                notes.append(f"only on C, never on {common.impl_label(r.impl)} in this run: {k}")
    return rows, notes


def run_impls(impls, duration, timeout, toggles="both", tcg=DEFAULT_TCG, config=CONFIG, arch=ARCH):
    """Stress each implementation; returns ({impl: Run}, {impl: why it could not be built}).
    `toggles` is one mode for every implementation or a dict of them per implementation."""
    runs, failed = {}, {}
    for impl in impls:
        banner(f"stress: {arch}, building and booting the {impl} implementation")
        try:
            mode = toggles.get(impl, "both") if isinstance(toggles, dict) else toggles
            runs[impl] = stress_one(impl, duration, timeout, mode, tcg, config, arch)
        except Failure as e:
            common.error(f"{impl}: {e}")
            failed[impl] = str(e).splitlines()[0]
    return runs, failed


def race_one(impl, arch, timeout):
    """One boot of race-init.sh; returns the list of problems (empty: passed)."""
    with common.build_lock():
        bdir = kbuild.build(arch, impl, RACE_CONFIG)
        initrd = initramfs.pack(bdir, "race-initramfs", RACE_INIT, [], arch=arch)
        log = bdir / "race-console.log"
        boot_error = None
        try:
            text = qemu.boot(arch, bdir, f"{APPEND} {SHORT_APPEND} rkr_iterations={RACE_ITERATIONS}", log,
                             lambda t: "RKR-DONE" in t or "Oops" in t or "Kernel panic" in t, timeout,
                             initrd=initrd, extra=["-smp", str(CPUS)] + TCG_MODES["single"],
                             label=f"race {arch}/{impl}")
        except Failure as e:
            boot_error = str(e).splitlines()[0]
            text = log.read_text(errors="replace") if log.is_file() else ""
    lines = [TIMESTAMP.sub("", ln.rstrip("\r")) for ln in text.splitlines()]
    survived = [int(m.group(1)) for ln in lines for m in [re.search(r"RKR survived (\d+)", ln)] if m]
    iters = [ln.split("RKR ", 1)[1] for ln in lines if "RKR iter" in ln and "events" in ln]
    problems = [f"{label}: {ln.strip()}" for ln in lines for label, rx in SPLATS if rx.search(ln)][:5]
    if boot_error:
        problems.append(f"the boot did not finish: {boot_error}")
    if not any("RKR-DONE" in ln for ln in lines):
        problems.append(f"no RKR-DONE: the guest survived {max(survived, default=0)} of {RACE_ITERATIONS} iterations")
    banner(f"race {arch}/{impl}: kprobes/enabled and the optimization sysctl off together, {RACE_ITERATIONS} times")
    print(f"  console: {log}")
    if iters:
        print(f"  first iteration: {iters[0]}; last: {iters[-1]}")
    print(f"  survived {max(survived, default=0)} of {RACE_ITERATIONS} iterations")
    print(f"  result: {'PASS' if not problems else 'FAIL'}")
    for p in problems:
        print(f"    - {p}")
    return problems


def cmd_race(args, arch, impls):
    problems = []
    for impl in impls:
        if impl == "c":
            banner(f"race {arch}/c: SKIPPED")
            print(f"  *** SKIPPED on c: {RACE_C_SKIP} ***")
            continue
        problems += [f"{impl}: {p}" for p in race_one(impl, arch, args.timeout or BOOT_MARGIN)]
    if problems:
        raise Failure(f"race failed ({len(problems)} problem(s)):\n  " + "\n  ".join(problems))
    info(f"race passed on {arch}: {', '.join(i for i in impls if i != 'c')} (c skipped: upstream oopses)")
    return 0


class ScenarioRun:
    """One boot of the ftrace-aggr scenario, parsed from its console."""

    def __init__(self, impl, text, log, secs, boot_error, arch=ARCH):
        self.impl, self.log, self.secs, self.boot_error, self.arch = impl, log, secs, boot_error, arch
        self.lines = [TIMESTAMP.sub("", ln.rstrip("\r")) for ln in text.splitlines()]
        self.failures = []      # (label, line), in console order
        self.checks = {}
        self.loops = {}         # name -> (iterations, errors)
        self.values = {}
        self.silent = boot_error is None and "RKH-DONE" not in text  # stopped for a silent console
        self.hung = []          # "INFO: task ..." lines
        self.done = False
        # The console's last line: where a guest that stopped printing stopped.
        self.last = next((ln for ln in reversed(self.lines) if ln.strip()), "")
        for ln in self.lines:
            for label, rx in FTRACE_AGGR_FAILURES:
                m = rx.search(ln)
                if m:
                    self.failures.append((label, m.group(0).strip()))
                    break
            if "blocked for more than" in ln or "RKH blocked " in ln:
                self.hung.append(ln.strip())
            if ln.strip().endswith("RKH-DONE"):
                self.done = True
                continue
            m = re.search(r"\bRKH (\S+) ?(.*)$", ln)
            if not m:
                continue
            kind, rest = m.groups()
            f = rest.split()
            if kind == "check" and len(f) >= 2:
                self.checks[f[0]] = (f[1] == "ok", " ".join(f[2:]))
            elif kind == "loop" and len(f) == 3:
                self.loops[f[0]] = (int(f[1]), int(f[2]))
            else:
                self.values.setdefault(kind, rest)

    def first_failure(self):
        """The first line of the console that names a failure, with its label, or None."""
        return self.failures[0] if self.failures else None

    def problems(self):
        out = []
        if self.boot_error:
            out.append("the boot did not finish: " + qemu.failure_summary(self.boot_error))
        first = self.first_failure()
        if first:
            out.append(f"first failure ({first[0]}): {first[1]}")
        if not self.done:
            out.append("no RKH-DONE marker" + (f": the console was silent for {FTRACE_AGGR_SILENCE} s, the guest "
                                               "hung" if self.silent else ""))
        if "stuck" in self.values:
            out.append(f"stuck {self.values['stuck']}")
        for name in FTRACE_AGGR_CHECKS:
            ok, detail = self.checks.get(name, (None, "not reported"))
            if not ok and self.done and "stuck" not in self.values:
                out.append(f"check {name} {'FAILED' if ok is False else 'not reported'}: {detail}")
        for name in FTRACE_AGGR_LOOPS:
            n, err = self.loops.get(name, (0, 0))
            if self.done and "stuck" not in self.values and not n:
                out.append(f"the /init loop '{name}' did nothing")
        return out


def _done_or_silent():
    """A `done` for qemu.boot: the guest printed RKH-DONE, or nothing for FTRACE_AGGR_SILENCE s."""
    seen = {"len": -1, "since": time.monotonic()}

    def done(text):
        if "RKH-DONE" in text:
            return True
        if len(text) != seen["len"]:
            seen["len"], seen["since"] = len(text), time.monotonic()
        return time.monotonic() - seen["since"] > FTRACE_AGGR_SILENCE
    return done


def ftrace_aggr_one(impl, arch, duration, timeout):
    """Build (the KUnit kernel), boot and parse one run of the ftrace-aggr scenario."""
    with common.build_lock():
        bdir = kbuild.build(arch, impl, FTRACE_AGGR_CONFIG)
        kos = [bdir / m for m in FTRACE_AGGR_SAMPLES]
        missing = [m for m, ko in zip(FTRACE_AGGR_SAMPLES, kos) if not ko.is_file()]
        if missing:
            raise Failure(f"the {FTRACE_AGGR_CONFIG} kernel has no {', '.join(missing)}: its fragments must set "
                          "CONFIG_SAMPLE_KPROBES=m and CONFIG_SAMPLE_KRETPROBES=m (configs/kunit-x86_64.config)")
        initrd = initramfs.pack(bdir, "ftrace-aggr-initramfs", FTRACE_AGGR_INIT, kos, arch=arch)
        log = bdir / "ftrace-aggr-console.log"
        start = time.monotonic()
        boot_error = None
        try:
            text = qemu.boot(arch, bdir, f"{APPEND} {SHORT_APPEND} {FTRACE_AGGR_APPEND} rkh_duration={duration}",
                             log, _done_or_silent(), timeout, initrd=initrd,
                             extra=["-smp", str(FTRACE_AGGR_CPUS)] + TCG_MODES["single"],
                             label=f"stress ftrace-aggr {arch}/{impl}")
        except Failure as e:
            boot_error = str(e)
            text = log.read_text(errors="replace") if log.is_file() else ""
        secs = time.monotonic() - start
    return ScenarioRun(impl, text, log, secs, boot_error, arch)


def report_ftrace_aggr(run, duration):
    banner(f"stress ftrace-aggr {run.arch}/{run.impl}: {FTRACE_AGGR_CPUS} vCPUs, {duration} s")
    print(f"  boot: {common.fmt_secs(run.secs)} (console: {run.log})")
    if run.arch == "arm64":
        print("  note: arm64 has no kprobes on ftrace in 6.12: every probe of the mix is a breakpoint, so the "
              "upstream bug this scenario reproduces (an aggregate disarmed through the wrong ftrace ops) cannot "
              "occur here; the run checks the same aggregates and switches on breakpoints")
    print(f"  detectors: hung-task timeout {run.values.get('hung-task-timeout', '?')} s, soft-lockup threshold "
          f"{run.values.get('softlockup-thresh', '?')} s (both panic)")
    print("  loops (iterations, errors): " + (", ".join(f"{k} {n}/{e}" for k, (n, e) in run.loops.items())
                                               or "none ended"))
    first = run.first_failure()
    print(f"  first failure: {f'{first[0]}: {first[1]}' if first else 'none'}")
    for label, ln in run.failures[1:8]:
        print(f"    then {label}: {ln}")
    if len(run.failures) > 8:
        print(f"    ... {len(run.failures) - 8} more")
    if "first-failure" in run.values:
        print(f"  first failed write: {run.values['first-failure']}")
    for ln in run.hung[:6]:
        print(f"  stuck task: {ln[:200]}")
    if "stuck" in run.values:
        print(f"  stuck {run.values['stuck']}")
    if not run.done:
        print(f"  the console's last line (a guest that stopped printing stopped there): {run.last.strip()[:160]}")
    funcs = [ln.split("RKH enabled-functions ", 1)[1] for ln in run.lines if "RKH enabled-functions " in ln]
    if funcs:
        print(f"  enabled_functions (count: the probed functions' lines), as it changed: {len(funcs)} changes, "
              f"largest count {max(int(f.split(':')[0]) for f in funcs)}; last: {funcs[-1][:160]}")
    print("  checks:")
    for name in FTRACE_AGGR_CHECKS:
        ok, detail = run.checks.get(name, (None, "not reported"))
        print(f"    {'ok' if ok else '--' if ok is None else 'FAIL':4} {name}: {detail}")
    problems = run.problems()
    print(f"  result: {'PASS' if not problems else 'FAIL'}")
    for p in problems:
        print(f"    - {p}")
    return problems


def cmd_ftrace_aggr(args, arch, impls, duration):
    timeout = args.timeout if args.timeout is not None else duration + FTRACE_AGGR_BOOT_MARGIN
    problems, summary = [], []
    for impl in impls:
        banner(f"stress ftrace-aggr: {arch}, building and booting the {impl} implementation")
        try:
            run = ftrace_aggr_one(impl, arch, duration, timeout)
        except Failure as e:
            common.error(f"{impl}: {e}")
            problems.append(f"{impl}: could not be built: {str(e).splitlines()[0]}")
            summary.append(f"  FAIL  stress ftrace-aggr {arch}/{impl}: could not be built")
            continue
        p = report_ftrace_aggr(run, duration)
        problems += [f"{impl}: {x} (console: {run.log})" for x in p]
        first = run.first_failure()
        summary.append(f"  {'FAIL' if p else 'PASS':4}  stress ftrace-aggr {arch}/{impl}: "
                       + (f"first failure {first[0]}: {first[1]}" if first else (p[0] if p else "clean"))
                       + f"; boot {common.fmt_secs(run.secs)}, console {run.log}")
    banner("stress ftrace-aggr summary")
    print("\n".join(summary))
    if problems:
        raise Failure(f"stress ftrace-aggr failed ({len(problems)} problem(s)):\n  " + "\n  ".join(problems))
    info(f"stress ftrace-aggr passed on {arch}: {', '.join(impls)}")
    return 0


def cmd_stress(args):
    arch = args.arch
    impls = common.ordered_impls(args.impls if args.impls is not None
                                 else [i for i in common.default_impls()
                                       if common.rust_unavailable_reason(arch, i) is None])
    duration = args.duration
    tcg = args.tcg or DEFAULT_TCG
    if args.scenario == FTRACE_AGGR:
        return cmd_ftrace_aggr(args, arch, impls, duration)
    if args.scenario:
        timeout = args.timeout if args.timeout is not None else duration + BOOT_MARGIN
        return stress_scenarios.cmd_scenario(args.scenario, arch, impls, duration, timeout, args.config,
                                             args.debugs, CPUS, TCG_MODES[tcg], f"{APPEND} {SHORT_APPEND}")
    if args.race:
        return cmd_race(args, arch, impls)
    timeout = args.timeout if args.timeout is not None else duration + BOOT_MARGIN
    configs = ([f"{args.config or 'kunit'}-{d}" for d in args.debugs] if args.debugs is not None
               else [args.config or CONFIG])
    problems, summary = [], []
    toggles = default_toggles(impls, args.toggles)
    for config in configs:
        runs, failed = run_impls(impls, duration, timeout, toggles, tcg, config, arch)
        problems += [f"{impl} ({config}): could not be built: {why}" for impl, why in failed.items()]
        for impl in impls:
            if impl in runs:
                problems += [f"{impl} ({config}): {p} (console: {runs[impl].log})"
                             for p in report(runs[impl], duration)]
        if runs:
            rows, notes = messages_table([runs[i] for i in impls if i in runs])
            banner(f"kprobes: messages in the kernel log, per build ({config} kernel)")
            print("\n".join(rows))
            for n in notes:
                print(f"- {n}")
        for impl in impls:
            r = runs.get(impl)
            status = "FAIL" if impl in failed or (r and r.problems()) else "PASS"
            what = failed.get(impl) or (f"{sum(v for k, v in r.ops.items() if k != 'errors')} registrar "
                                        f"operations, boot {common.fmt_secs(r.secs)}, console {r.log}"
                                        + "".join(f"; SKIPPED {w} (see above)" for w in r.skipped))
            summary.append(f"  {status:4}  stress {arch}/{impl} ({config} kernel): {what}")
    banner("stress summary")
    print("\n".join(summary))
    if problems:
        raise Failure(f"stress failed ({len(problems)} problem(s)):\n  " + "\n  ".join(problems))
    info(f"stress passed on {arch}: {', '.join(impls)} ({', '.join(configs)} kernel)")
    return 0


# Why upstream C is not given both toggles unless asked: the run that showed it.
C_BOTH_TOGGLES_STOPS = "results/stress/2026-11-29-0010-stress-600s-kasan-preempt.md"


def default_toggles(impls, asked):
    """The toggle mode per implementation: `asked` (--toggles) for all of them if given; by
    default 'both', but 'optimization' for upstream C, saying so loudly: under both toggles
    beside the registrar upstream 6.12 C stops (it crashes with the kprobes/enabled race,
    docs/findings/kprobes-enabled-race.md, and a 600 s run stopped silently after 304 cycles)."""
    if asked:
        return {impl: asked for impl in impls}
    modes = {impl: "both" for impl in impls}
    if "c" in modes:
        modes["c"] = "optimization"
        info("NOTE c: kprobes/enabled is NOT toggled on upstream C (--toggles optimization for it; the Rust "
             "builds toggle both): upstream 6.12 C does not survive both toggles beside the registrar "
             "(docs/findings/kprobes-enabled-race.md; a 600 s run of C stopped silently, "
             f"{C_BOTH_TOGGLES_STOPS}). Pass --toggles both to run C with both anyway")
    return modes


def run_short(impls, timeout=SHORT_DURATION + BOOT_MARGIN, toggles="optimization"):
    """The short stress for `rkprobes test`: SHORT_DURATION seconds per implementation.

    Returns one row per implementation, `(name, passed, failed, note)` (passed and failed are
    0 or 1), for `Results.add(name, passed, failed, note=note)`. Never raises for a failed run or
    build: that is a failed row. `toggles` is --toggles: by default "optimization", without
    kprobes/enabled, whose toggling can crash upstream C (an upstream race, see report() and
    --race); `rkprobes stress` toggles both by default.
    """
    rows = []
    impls = common.ordered_impls(impls)
    for impl in impls:
        name = f"stress {ARCH}/{impl} ({SHORT_DURATION} s, {CPUS} vCPUs, {toggles} toggles, {SHORT_CONFIG} kernel)"
        why = common.rust_unavailable_reason(ARCH, impl)
        if why:
            rows.append((name, 0, 1, why))
            continue
        runs, failed = run_impls([impl], SHORT_DURATION, timeout, toggles, config=SHORT_CONFIG)
        if impl in failed:
            rows.append((name, 0, 1, f"could not be built: {failed[impl]}"))
            continue
        run = runs[impl]
        problems = report(run, SHORT_DURATION)
        ops = sum(v for k, v in run.ops.items() if k != "errors")
        checks = sum(1 for ok, _ in run.checks.values() if ok)
        note = (f"{ops} registrar operations, {checks}/{len(MODULE_CHECKS)} checks ok, "
                f"violations {run.values.get('violations', '?')}, boot {common.fmt_secs(run.secs)} "
                f"(console: {run.log})")
        if problems:
            note = "; ".join(problems[:5]) + ("; ..." if len(problems) > 5 else "") + "\n" + note
        rows.append((name, int(not problems), int(bool(problems)), note))
    return rows

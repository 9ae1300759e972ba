# SPDX-License-Identifier: GPL-2.0
"""`rkprobes bench`: kprobes cost per hit, per registration and per probe in memory, C against Rust.

For each implementation (c, rust, and rust-arch when asked for): build the
`bench` kernel, build our benchmark module (tools/testing/rkprobes/bench/)
against it, boot it under QEMU TCG with `-icount shift=0,sleep=off` (the
guest TSC then counts guest instructions) as many times as --boots says, and
parse the module's "RKB" lines. One table `| case | C | Rust | Rust/C |`
(with rust-arch: `| case | C | Rust | Rust+arch | Rust/C | Rust+arch/C |`)
goes to the terminal and to $CACHE/bench/. Every cell is the median of all
repetitions of all boots, with the minimum and maximum beside it: that is
the spread.

The benchmark is not part of `rkprobes test`: its figures are goals, not
assertions. The run fails only when something could not be measured.
"""

import datetime
import re
import shutil
import statistics
import subprocess

from . import cli, common, initramfs, kbuild, qemu
from .common import Failure, banner, info

BENCH_DIR = common.REPO / "tools" / "testing" / "rkprobes" / "bench"
MODULE_SOURCES = ("Kbuild", "rkb_main.c", "rkb_fill.S", "rkb_fill.h", "rkb_bulk.c", "rkb_bulk.h", "rkb_mf.S",
                  "rkb_mf_mod.c")
MODULE = "rkprobes_bench.ko"
# The 10000 functions of the bulk registration rows, in a module of their own.
MF_MODULE = "rkprobes_bench_mf.ko"
INIT = BENCH_DIR / "bench-init.sh"
# One guest instruction is one nanosecond of guest time, and the guest
# never waits for the host's clock.
ICOUNT = ["-icount", "shift=0,sleep=off"]
# No KASLR, so that every boot puts the probes at the same addresses (the
# hash buckets they land in); no speculation mitigations, whose thunks are
# not what is being compared.
APPEND = "loglevel=4 nokaslr mitigations=off panic=-1"
# The arches whose benchmark sites and guest clock are known to work.
BENCH_ARCHES = ("x86_64",)
BENCH_ARCHES_WHY = "its probe sites are x86 NOPs and its clock the TSC under -icount"
NO_RUST = "n/a (Rust core not in tree)"
# Column headers; ratio columns are "<header>/C".
HEADERS = {"c": "C", "rust": "Rust", "rust-arch": "Rust+arch"}
# The columns every table has, run or not.
DEFAULT_COLUMNS = ("c", "rust")

# (key, label): per-hit cases, guest instructions per call above a bare call.
HIT_CASES = [
    ("kprobe-post", "kprobe + post handler, notrace fn: int3 + out-of-line step"),
    ("kprobe-jcc", "kprobe + post handler on a jcc: int3 + emulated conditional jump"),
    ("kprobe-call", "kprobe + post handler on a call rel32: int3 + emulated call"),
    ("kprobe-riprel", "kprobe + post handler on a RIP-relative mov: int3 + out-of-line step, displacement adjusted"),
    ("kprobe-boost", "kprobe, optimizer off: boosted if the build boosts"),
    ("kprobe-opt", "kprobe, after the optimizer ran"),
    ("kprobe-ftrace", "kprobe at an ftrace site"),
    ("kretprobe", "kretprobe (maxactive 16)"),
    ("kretprobe-grow", "kretprobe (maxactive 16), growing pool on (grow_max 1024; C ignores it)"),
    ("kprobe+kretprobe", "kprobe + kretprobe on the same function"),
    ("hash-1", "kprobe + post handler, 1 other probe registered"),
    ("hash-64", "kprobe + post handler, 64 other probes registered"),
    ("hash-4096", "kprobe + post handler, 4096 other probes registered"),
]
# The per-hit rows whose Rust/C goal is not 1.00: a growing kretprobe pool (issue 40, Rust only,
# opt-in) may cost a hit 5% more than C's fixed pool.
HIT_GOALS = {"kretprobe-grow": 1.05}
# The per-hit cases whose probe has a post handler (which keeps it on int3: neither boosted nor
# optimized), so the post handler must run on every hit.
POST_CASES = ("kprobe-post", "kprobe-jcc", "kprobe-call", "kprobe-riprel")
# (key, index of the times in the RKB reg line, label): guest ns per probe.
REG_CASES = [
    ("reg1", 0, "register_kprobe + unregister_kprobe, 1 probe"),
    ("regn100", 0, "register_kprobes, 100 probes (per probe)"),
    ("regn100", 1, "unregister_kprobes, 100 probes (per probe)"),
    ("regn1000", 0, "register_kprobes, 1000 probes (per probe)"),
    ("regn1000", 1, "unregister_kprobes, 1000 probes (per probe)"),
]
# The bulk registration rows (issue 19): (key, index, label, goal of Rust/C); by symbol name, one
# probe per function; "vmlinux": functions spread over the kernel's text (most of them ftrace
# sites), "module": rkb_mf_NNNN of the benchmark module (int3 probes).


def bulk_goal(n, unregister, optimizing=False):
    """The Rust/C goal of a bulk row, as decided in issue 37: 0.10 registering 1000 probes or
    more and unregistering 10000 or more; 0.40 unregistering 1000 to 9999 (there C's own freeing
    work, which the Rust core does as C does it, is about 0.11 of C's whole unregistration: the
    emptied detour pages' vfree() and the slab frees, profile of 2026-11-27); 1.00 below 1000.
    Unregistering optimized probes (the optimizer on): 1.00, as BULK_UNREG_OPT_NOTE says why."""
    if n < 1000 or (unregister and optimizing):
        return 1.00
    if unregister and n < 10000:
        return 0.40
    return 0.10


BULK_GOALS = "<= 0.10 registering 1000 probes or more and unregistering 10000 or more, <= 0.40 " \
             "unregistering 1000 with the optimizer off, <= 1.00 otherwise"
# Printed next to the unregistration row of optimized probes: why its goal is 1.00.
BULK_UNREG_OPT_NOTE = (
    "Unregistering 1000 optimized probes (goal 1.00): the timed call of either core only disables "
    "each probe, queues its aggregate for the optimizer and unlinks it; the unoptimizing, the "
    "breakpoint removal and the freeing run in the optimizer's work after the call, on both cores "
    "alike, so there is no batched text write or grace period for the Rust core to save inside it.")
# Printed next to the unregistration rows of 1000: the part of them that is C's own freeing work.
BULK_UNREG_1000_NOTE = (
    "Unregistering 1000 (goal 0.40): C's own freeing work, which the Rust core does as C does it (the "
    "emptied optprobe detour pages' vfree(), 209 guest instructions a probe, and the slab frees, 150), "
    "was 359 instructions a probe, 0.107 of C's whole unregistration (3366.6 guest ns a probe), in "
    "`scripts/rkprobes profile --impl rust-arch --bench-sequence --scope kernel --command "
    "\"bulk-unreg module 1000\"` of 2026-11-27 09:38-09:40 UTC at 419f8e6.")
BULK_CASES = [
    (f"bulk{k}{n}", i, f"{('register', 'unregister')[i]}_{'kretprobes' if k == 'r' else 'kprobes'}, {n} "
     f"{'vmlinux' if k == 'v' else 'module'} functions by name"
     f"{', optimization on' if k == 'o' else ''} (per probe)",
     bulk_goal(n, i == 1, k == "o"))
    for k, ns in (("v", (100, 1000, 10000)), ("m", (100, 1000, 10000)), ("r", (1000,)), ("o", (1000,)))
    for n in ns for i in (0, 1)
]
# (key, label): bytes per probe (slab + vmalloc + per-CPU).
MEM_CASES = [
    ("kprobe", "memory per kprobe with post handler (bytes)"),
    ("optprobe", "memory per optimized kprobe (bytes)"),
    ("kretprobe", "memory per kretprobe, maxactive 16 (bytes)"),
]


def add_bench_args(p):
    cli.add_arch(p, arches=BENCH_ARCHES, why=BENCH_ARCHES_WHY)
    cli.add_impl(p, multi=True, default_help="every one the tree builds: c, rust when the Rust core is in the tree, "
                 "rust-arch when the Rust x86 arch layer is too; a column each, each but c with a ratio to C")
    p.add_argument("--boots", type=int, default=2, help="boots of each kernel (default 2; the spread spans them)")
    p.add_argument("--reps", type=int, default=5, help="repetitions of each measurement per boot (1..16, default 5)")
    p.add_argument("--calls", type=int, default=1000, help="calls of the probed function per repetition (default 1000)")
    p.add_argument("--timeout", type=int, default=1200, help="seconds one QEMU boot may take (default 1200)")
    p.add_argument("--bulk-big", action="store_true",
                   help="add the bulk row of 10000 vmlinux functions (ftrace sites: C updates the call sites of "
                   "the whole kernel for every probe: the one run tried, which also validated every text symbol, had "
                   "not finished C's boot after 20 minutes of TCG)")
    p.add_argument("--no-bulk", action="store_true",
                   help="leave out the bulk registration rows (register_kprobes of 100 to 10000 functions by name, "
                   "run in the first boot only, the longest part of it)")
    cli.conflicts(p, ("--bulk-big", "--no-bulk", "--bulk-big adds a bulk row and --no-bulk leaves them all out"))
    cli.checks(p, _check_args)


def _check_args(args):
    if not 1 <= args.reps <= 16:
        raise cli.UsageError(f"--reps {args.reps}: valid values are 1..16")
    if args.boots < 1 or args.calls < 1:
        raise cli.UsageError(f"--boots {args.boots} --calls {args.calls}: each must be at least 1")


def build_modules(arch, bdir):
    """Build rkprobes_bench.ko and rkprobes_bench_mf.ko out of tree against the kernel in `bdir`;
    returns both .ko paths."""
    return kbuild.build_external_modules(arch, bdir, "rkprobes-bench",
                                         [BENCH_DIR / n for n in MODULE_SOURCES], [MODULE, MF_MODULE])


def make_initramfs(bdir, kos):
    """Static busybox, the bench /init and the benchmark modules."""
    return initramfs.pack(bdir, "bench-initramfs", INIT, kos)


def _ints(csv):
    return [int(v) for v in csv.split(",") if v]


class Boot:
    """What one boot measured, parsed from the RKB lines of its console."""

    def __init__(self, text, log):
        self.log = log
        self.calls = None
        self.boost = None
        self.bare = {}      # site -> [total per repetition]
        self.hit = {}       # case -> (site, [total per repetition])
        self.hits = {}      # case -> (pre handler, kretprobe handler, expected, post handler) runs
        self.boostable = {}
        self.path = {}      # case -> flags in kprobes/list
        self.reg = {}       # case -> (probes, [register totals], [unregister totals])
        self.mem = {}       # (case, phase) -> (kB slab, kB vmalloc, kB per-CPU, probes)
        self.calib = []
        self.count = {}     # case -> probes kprobes/list shows as [OPTIMIZED]
        self.errors = []
        self.messages = []
        self.bulk = {}      # "cand": [functions, step], "valid": [kept, candidates, failed, errno], case: [hits]
        for ln in text.splitlines():
            ln = ln.rstrip("\r")
            if "rkprobes_bench: " in ln and " RKB " not in ln:
                self.messages.append(ln.split("rkprobes_bench: ", 1)[1])
            m = re.search(r"\bRKB (\w+) ?(.*)$", ln)
            if m:
                self._line(m.group(1), m.group(2).split())

    def _line(self, kind, f):
        try:
            if kind == "config":
                kv = dict(x.split("=", 1) for x in f)
                self.calls = int(kv["calls"])
                self.boost = kv["boost"] == "1"
            elif kind == "bare":
                self.bare[f[0]] = _ints(f[1])
            elif kind == "hit":
                self.hit[f[0]] = (f[1], _ints(f[2]))
            elif kind == "hits":
                self.hits[f[0]] = tuple(int(x) for x in f[1:5])
            elif kind == "boostable":
                self.boostable[f[0]] = f[1] == "1"
            elif kind == "path":
                self.path[f[0]] = f[1] if len(f) > 1 else "-"
            elif kind == "reg":
                self.reg[f[0]] = (int(f[1]), _ints(f[2]), _ints(f[3]) if len(f) > 3 else [])
            elif kind == "mem":
                self.mem[(f[0], f[1])] = tuple(int(x) for x in f[2:5]) + (int(f[5]) if len(f) > 5 else 0,)
            elif kind == "count":
                self.count[f[0]] = int(f[1])
            elif kind in ("bulkcand", "bulkvalid"):
                self.bulk[kind[4:]] = [int(x) for x in f]
            elif kind == "bulkhits":
                self.bulk[f[0]] = [int(f[1])]
            elif kind == "calib":
                self.calib = _ints(f[1])
            elif kind == "error":
                self.errors.append(" ".join(f))
        except (IndexError, ValueError, KeyError):
            self.errors.append(f"unparsable line: RKB {kind} {' '.join(f)}")

    def hit_costs(self, case):
        """Instructions per call above a bare call of the same site, one per repetition."""
        if case not in self.hit or not self.calls:
            return None
        site, totals = self.hit[case]
        bare = self.bare.get(site)
        if not bare:
            return None
        base = statistics.median(bare)
        return [(t - base) / self.calls for t in totals]

    def hit_problem(self, case):
        """Why a per-hit figure is not to be trusted, or None."""
        if case not in self.hit:
            return "not measured"
        kp, krp, expected, post = self.hits.get(case, (0, 0, 0, 0))
        want_kp = not case.startswith("kretprobe")
        want_krp = "kretprobe" in case
        want_post = case in POST_CASES or case.startswith("hash-")
        if want_kp and kp != expected:
            return f"kprobe handler ran {kp} times, {expected} expected"
        if want_post and post != expected:
            return f"post handler ran {post} times, {expected} expected"
        if want_krp and krp != expected:
            return f"kretprobe handler ran {krp} times, {expected} expected"
        return None

    def reg_costs(self, case, index):
        if case not in self.reg:
            return None
        probes, reg, unreg = self.reg[case]
        totals = (reg, unreg)[index]
        return [t / probes for t in totals] if totals else None

    def mem_cost(self, case):
        before, after = self.mem.get((case, "before")), self.mem.get((case, "after"))
        if not before or not after or not after[3]:
            return None
        kb = sum(after[:3]) - sum(before[:3])
        return [kb * 1024 / after[3]]


def _path_note(boot, case):
    """Which path a per-hit case measured, as kprobes/list and the module saw it."""
    flags = boot.path.get(case, "?")
    note = flags.strip("[]").replace("][", ", ") if flags != "-" else "int3"
    if case == "kprobe-boost":
        note += ", boosted" if boot.boostable.get(case) else ", NOT boosted"
    if case == "kprobe-opt" and "[OPTIMIZED]" not in flags:
        note += ", NOT optimized"
    if case == "kprobe-ftrace" and "[FTRACE]" not in flags:
        note += ", NOT on ftrace"
    if case in POST_CASES and flags != "-":
        note += ", NOT plain int3"
    return note


class Column:
    """All boots of one implementation, reduced to cells."""

    def __init__(self, impl, boots):
        self.impl = impl
        self.boots = boots

    def _collect(self, get):
        values = []
        for b in self.boots:
            v = get(b)
            if v is None:
                return None
            values += v
        return values or None

    def values(self, kind, key):
        if kind == "hit":
            return self._collect(lambda b: None if b.hit_problem(key) else b.hit_costs(key))
        if kind == "bulk":
            # Measured in the first boot only (see measure()).
            case, index = key
            vals = [v for b in self.boots if case in b.reg for v in b.reg_costs(case, index) or []]
            return vals or None
        if kind == "reg":
            case, index = key
            return self._collect(lambda b: b.reg_costs(case, index))
        return self._collect(lambda b: b.mem_cost(key))

    def problem(self, kind, key):
        if kind == "hit":
            for b in self.boots:
                p = b.hit_problem(key)
                if p:
                    return p
        return None

    def path(self, case):
        notes = sorted({_path_note(b, case) for b in self.boots})
        return " / ".join(notes)


def _fmt(v):
    return f"{v:.0f}" if abs(v) >= 10000 else f"{v:.1f}"


def _cell(values):
    if values is None:
        return "not measured"
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return _fmt(med) if _fmt(lo) == _fmt(hi) else f"{_fmt(med)} ({_fmt(lo)}..{_fmt(hi)})"


def _hit_goal(label):
    """The Rust/C goal of a per-hit row, from its label (HIT_GOALS; 1.00 for the others)."""
    for key, lbl in HIT_CASES:
        if label.startswith(lbl + " (measured"):
            return HIT_GOALS.get(key, 1.00)
    return 1.00


def _over_one(r):
    """A ratio above 1 as text, with the digits that show it is above 1 (1.0035, not 1.00)."""
    for digits in (2, 4, 6):
        text = f"{r:.{digits}f}"
        if float(text) > 1.0:
            return text
    return repr(r)


def _spread(values):
    if not values:
        return None
    med = statistics.median(values)
    return (max(values) - min(values)) / abs(med) * 100 if med else 0.0


def shown_impls(impls):
    """The columns of the table: C and Rust always (a column that did not run says so), then
    rust-arch when it was asked for; in the order of common.IMPLS."""
    return common.ordered_impls(set(DEFAULT_COLUMNS) | set(impls))


def build_table(columns, boots, reps, calls, rust_absent, failed=None, impls=None):
    """The table rows and the notes under it, as lists of strings.

    One column per implementation of shown_impls(`impls`) (default: C and Rust), then one ratio
    column per non-C one against C. `rust_absent`: the Rust core was not in the tree when the run
    started, so the Rust columns say so instead of "not run". `failed`: impl -> why it could not
    be measured.
    """
    failed = failed or {}
    shown = shown_impls(impls or columns)
    others = common.non_c_impls(shown)

    def missing(impl):
        if impl in failed:
            return "FAILED: " + failed[impl][:60]
        return NO_RUST if impl != "c" and rust_absent else "not run"

    c = columns.get("c")
    cols = [(impl, columns.get(impl)) for impl in shown]
    rows = []
    spreads = {"hit": [], "reg": [], "mem": [], "bulk": []}
    ratios = {o: {"hit": [], "reg": [], "mem": [], "bulk": []} for o in others}

    def line(label, cells, ratio_cells):
        return "| " + " | ".join([label] + cells + ratio_cells) + " |"

    def row(label, kind, key):
        cells = []
        vals = {}
        for impl, col in cols:
            if col is None:
                cells.append(missing(impl))
                continue
            v = col.values(kind, key)
            vals[impl] = v
            problem = col.problem(kind, key)
            cells.append(f"error: {problem}" if problem else _cell(v))
            if v:
                spreads[kind].append((_spread(v), label, impl))
        ratio_cells = []
        for o in others:
            if vals.get("c") and vals.get(o):
                r = statistics.median(vals[o]) / statistics.median(vals["c"]) if statistics.median(vals["c"]) else None
                ratio_cells.append(f"{r:.2f}" if r is not None else "n/a")
                if r is not None:
                    ratios[o][kind].append((r, label))
            else:
                ratio_cells.append("n/a")
        rows.append(line(label, cells, ratio_cells))

    present = [(impl, col) for impl, col in cols if col]
    ref = present[0][1] if present else None
    rows.append(line("case", [HEADERS[i] for i in shown], [f"{HEADERS[o]}/C" for o in others]))
    rows.append("|" + "---|" * (1 + len(shown) + len(others)))
    bare_cells = []
    for impl, col in cols:
        if col is None:
            bare_cells.append(missing(impl))
            continue
        v = col._collect(lambda b: [t / b.calls for t in b.bare.get("target", [])] or None)
        bare_cells.append(_cell(v))
    rows.append(line("bare call of the notrace target (reference; instructions)", bare_cells,
                     ["n/a"] * len(others)))
    for key, label in HIT_CASES:
        path = ref.path(key) if ref else "?"
        paths = [(impl, col.path(key)) for impl, col in present]
        if len({p for _, p in paths}) > 1:
            path = "; ".join(f"{HEADERS[impl]}: {p}" for impl, p in paths)
        row(f"{label} (measured: {path})", "hit", key)
    for case, index, label in REG_CASES:
        row(label + " (guest ns, expedited RCU grace periods)", "reg", (case, index))
    for case, index, label, _ in BULK_CASES:
        # The rows that ran: none with --no-bulk, the 10000 vmlinux functions with --bulk-big.
        if any(col and any(case in b.reg for b in col.boots) for _, col in cols):
            row(label + " (guest ns, expedited RCU grace periods)", "bulk", (case, index))
    for key, label in MEM_CASES:
        if key == "optprobe" and ref:
            label += " (optimized: " + "/".join(sorted({str(b.count.get(key, "?")) for b in ref.boots})) + ")"
        elif key == "kretprobe" and ref:
            label += f" (measured: {ref.path('kretprobe-mem')})"
        row(label, "mem", key)

    notes = [f"Per-hit rows: guest instructions per call above a bare call, interrupts off, {calls} calls; "
             "registration rows: guest ns per probe (= instructions, plus any idle time the guest skips "
             "over), RCU grace periods expedited (/sys/kernel/rcu_expedited); "
             "memory rows: bytes per probe of Slab + VmallocUsed + Percpu (/proc/meminfo after "
             "vm.stat_refresh) before and after registering, each snapshot after every kmalloc cache gave back "
             "its empty slabs (kmem_cache_shrink()) and each \"before\" once the optimizer had freed the previous "
             "case's probes (issue 42: without that a row also counted the empty slabs that earlier cases left in "
             "reserve, which differ between the builds with the order they free in)."]
    notes.append(f"Each cell: median of {boots} boot(s) x {reps} repetition(s) (memory: 1 per boot; bulk rows: the "
                 f"first boot, {reps} repetition(s) of 100 probes, 1 of 1000 or more), with (min..max) when they differ.")
    for kind, what in (("hit", "per-hit"), ("reg", "registration"), ("bulk", "bulk registration"),
                       ("mem", "memory")):
        if spreads[kind]:
            worst = max(spreads[kind])
            notes.append(f"Spread, {what}: largest (max-min)/median is {worst[0]:.2f}% ({worst[2]}: {worst[1]}).")
    if spreads["hit"]:
        worst = max(spreads["hit"])[0]
        notes.append(f"Goal per-hit spread <= 1%: {'met' if worst <= 1.0 else 'MISSED'} ({worst:.2f}%).")
    for o in others:
        head = HEADERS[o]
        if not (c and columns.get(o)):
            pair_failed = [i for i in failed if i in ("c", o)]
            not_run = [i for i in ("c", o) if not columns.get(i) and i not in failed]
            why = ("the Rust core is not in the tree yet" if rust_absent and not columns.get(o) else
                   "; ".join(f"the {i} run failed" for i in pair_failed)
                   or ("only one implementation was run" if len(columns) <= 1 else
                       " and ".join(f"the {i}" for i in not_run) + " implementation was not run"))
            notes.append(f"{head}/C goals (per-hit, registration, memory <= 1.00): NOT MEASURED, {why}.")
        else:
            for kind, what in (("hit", "per-hit"), ("reg", "registration"), ("mem", "memory")):
                over = [f"{lbl} ({_over_one(r)})" for r, lbl in ratios[o][kind]
                        if r > 1.0 and not (kind == "hit" and _hit_goal(lbl) != 1.00)]
                notes.append(f"Goal {head}/C <= 1.00, {what}"
                             + (" (but the rows named below)" if kind == "hit" and HIT_GOALS else "") + ": "
                             + ("met" if not over else "MISSED: " + "; ".join(over)))
            for r, lbl in ratios[o]["hit"]:
                goal = _hit_goal(lbl)
                if goal != 1.00:
                    notes.append(f"Goal {head}/C <= {goal:.2f}, {lbl.split(' (measured')[0]}: "
                                 + ("met" if r <= goal else f"MISSED ({r:.2f})"))
            if ratios[o]["bulk"]:
                goals = {lbl: goal for _, _, lbl, goal in BULK_CASES}
                over = [f"{lbl} ({r:.2f} > {goals[lbl.split(' (guest ns')[0]]:.2f})" for r, lbl in ratios[o]["bulk"]
                        if r > goals[lbl.split(" (guest ns")[0]]]
                notes.append(f"Goal {head}/C, bulk registration ({BULK_GOALS}): "
                             + ("met" if not over else "MISSED: " + "; ".join(over)))
                if any("unregister" in lbl and ", 1000 " in lbl for _, lbl in ratios[o]["bulk"]):
                    notes.append(BULK_UNREG_1000_NOTE)
                if any("unregister" in lbl and "optimization on" in lbl for _, lbl in ratios[o]["bulk"]):
                    notes.append(BULK_UNREG_OPT_NOTE)
    for _, col in present:
        b = col.boots[0] if col.boots else None
        if b and "valid" in b.bulk:
            cand, valid = b.bulk.get("cand", ["?", "?"]), b.bulk["valid"]
            hits = ", ".join(f"{case} {b.bulk[case][0]}" for case, i, *_ in BULK_CASES if i == 0 and case in b.bulk)
            notes.append(f"Bulk rows ({col.impl}, boot 1): of {cand[0]} vmlinux text symbols every {cand[1]}th was a "
                         f"candidate; {valid[0]} of {valid[1]} registered alone (disabled) and were kept, {valid[2]} "
                         f"refused (first errno {valid[3]}); handler runs while the batches were armed: {hits}.")
    for _, col in present:
        if col.boots:
            boost = "yes" if all(b.boost for b in col.boots) else "NO"
            notes.append(f"Boosting compiled into the {col.impl} kernel (no CONFIG_PREEMPTION): {boost}.")
    for _, col in present:
        if col.boots and col.boots[0].calib:
            cal = [v for b in col.boots for v in b.calib]
            notes.append(f"Guest clock check ({col.impl}): 1000 NOPs took {min(cal)}..{max(cal)} units, so one unit "
                         "is one guest instruction" if min(cal) >= 1000 and max(cal) <= 1010 else
                         f"Guest clock check ({col.impl}): 1000 NOPs took {min(cal)}..{max(cal)} units: NOT one "
                         "unit per instruction, the figures are not instruction counts")
    return rows, notes


def _commit():
    r = subprocess.run(["git", "-C", str(common.REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    commit = r.stdout.strip() or "unknown"
    r = subprocess.run(["git", "-C", str(common.REPO), "status", "--porcelain", "--untracked-files=no"],
                       capture_output=True, text=True)
    return commit + (" (with uncommitted changes in the working tree)" if r.stdout.strip() else "")


def prepare(args, impl):
    """Build the kernel and the module; returns (build dir, initramfs)."""
    bdir = kbuild.build(args.arch, impl, "bench")
    return bdir, make_initramfs(bdir, build_modules(args.arch, bdir))


def measure(args, impl, bdir, initrd):
    """Boot --boots times and parse; returns the implementation's Column."""
    boots = []
    for n in range(1, args.boots + 1):
        log = bdir / f"bench-console-{n}.log"
        # The bulk rows run in the first boot only: they take longer than the rest together.
        bulk = " rkb_no_bulk=1" if args.no_bulk or n > 1 else (" rkb_bulk_big=1" if args.bulk_big else "")
        text = qemu.boot(args.arch, bdir, f"{APPEND} rkb_calls={args.calls} rkb_reps={args.reps}{bulk}", log,
                         lambda t: "RKB-DONE" in t, args.timeout, initrd=initrd, extra=ICOUNT,
                         label=f"bench {args.arch}/{impl} boot {n}/{args.boots}")
        boot = Boot(text, log)
        if boot.calls is None:
            raise Failure(f"bench {args.arch}/{impl}: the module never reported its configuration; see {log}\n"
                          + "\n".join(boot.messages[-20:]) + "\n--- tail of the console:\n"
                          + "".join(text.splitlines(True)[-30:]))
        boots.append(boot)
    return Column(impl, boots)


def cmd_bench(args):
    impls = args.impls or common.default_impls()
    impls = common.ordered_impls(impls)
    rust_absent = not common.rust_core_present()
    if "rust" not in impls and rust_absent:
        banner(f"Rust column: {NO_RUST}")
        print(f"*** The Rust kprobes core is not in this tree ({common.RUST_CORE_ROOT.relative_to(common.REPO)} "
              "is missing): only the C implementation is measured, the Rust column and Rust/C stay n/a. ***",
              flush=True)

    columns = {}
    failed = {}
    built = {}
    # Every build first, under one hold of the build lock, so that nobody else's build
    # lands between a kernel and its module; then the boots, which need no lock.
    with common.build_lock():
        for impl in impls:
            banner(f"benchmark: {args.arch}, building the {impl} implementation")
            try:
                built[impl] = prepare(args, impl)
            except Failure as e:
                # One implementation failing must not hide the other's figures.
                common.error(f"{impl}: {e}")
                failed[impl] = str(e).splitlines()[0]
    for impl, (bdir, initrd) in built.items():
        banner(f"benchmark: {args.arch}, {impl} implementation")
        try:
            columns[impl] = measure(args, impl, bdir, initrd)
        except Failure as e:
            common.error(f"{impl}: {e}")
            failed[impl] = str(e).splitlines()[0]

    rows, notes = build_table(columns, args.boots, args.reps, args.calls, rust_absent, failed, impls)
    now = datetime.datetime.now(datetime.timezone.utc)
    head = (f"kprobes benchmark, {args.arch}, Linux {common.KERNEL_VERSION}, `bench` configuration, "
            f"QEMU TCG {' '.join(ICOUNT)}; measured {now:%Y-%m-%d %H:%M} UTC at commit {_commit()}")
    text = "\n".join([head, ""] + rows + [""] + [f"- {n}" for n in notes]) + "\n"
    banner("kprobes benchmark")
    print(text, flush=True)
    out_dir = common.CACHE / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"bench-{args.arch}-{now:%Y%m%dT%H%M%SZ}.md"
    out.write_text(text)
    shutil.copy2(out, out_dir / f"bench-{args.arch}-latest.md")
    info(f"table written to {out} (and bench-{args.arch}-latest.md)")

    problems = [f"{impl}: {why}" for impl, why in failed.items()]
    for impl, col in columns.items():
        for b in col.boots:
            problems += [f"{impl}: {e} ({b.log})" for e in b.errors]
        for key, _ in HIT_CASES:
            p = col.problem("hit", key)
            if p:
                problems.append(f"{impl}: {key}: {p}")
        for b in col.boots:
            for m in b.messages:
                if "failed" in m or "error" in m.lower():
                    problems.append(f"{impl}: module: {m}")
    if problems:
        raise Failure("some cases could not be measured:\n  " + "\n  ".join(dict.fromkeys(problems)))
    return 0

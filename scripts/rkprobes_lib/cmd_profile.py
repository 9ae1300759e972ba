# SPDX-License-Identifier: GPL-2.0
"""`rkprobes profile`: where the kprobes core spends guest instructions, C against Rust.

Boots each implementation's benchmark kernel (the `bench` configuration and module of
`rkprobes bench`) once under QEMU TCG with `-icount shift=0,sleep=off` and TCG's own logging
(`-d in_asm,exec,nochain`, `-dfilter` limited to the core's functions), runs one command of
the benchmark module (default `regn 100`: register_kprobes and unregister_kprobes of 100
probes), and counts the guest instructions executed in each of the core's functions between
two reads of `kprobes/enabled` that bracket the command. The core is `kernel/kprobes.o` for C,
`kernel/kprobes/kprobes_rust.o` and `kprobes_helpers.o` for Rust (rust and rust-arch); what they
call elsewhere (arch code, kallsyms, the allocator) is not counted. With rust-arch the Rust arch
layer is part of the kprobes crate, so its functions are in kprobes_rust.o and are counted, where
C's arch code (arch/x86/kernel/kprobes/) is not. With `--scope kernel` every function of the
kernel and the module is counted instead: QEMU's logging is then switched on through its monitor
only around the command (the guest waits on its console until the host has done so), so the
trace holds the block listings of the whole boot but the executions of the command only.
With `--bench-sequence` the guest runs the benchmark's own /init, which hands the command over
to the same protocol where it reaches it (kernel parameter `rkb_profile`); `bulk-unreg KIND N`
there is the unregistration of the row `bulk KIND N` alone, its batch registered untraced just
before (a kernel-scope trace of C's registration of module functions would be far too large),
and the other bulk rows left out (QEMU runs unchained while it traces). A tool for finding
a gap the benchmark shows, not a benchmark itself: its output is the first place to look, not a
goal.
"""

import bisect
import collections
import re
import subprocess

from . import cli, common, cmd_bench, initramfs, kbuild, qemu
from .common import Failure, banner, info

CORE_OBJECTS = {"c": ["kernel/kprobes.o"],
                "rust": ["kernel/kprobes/kprobes_rust.o", "kernel/kprobes/kprobes_helpers.o"],
                "rust-arch": ["kernel/kprobes/kprobes_rust.o", "kernel/kprobes/kprobes_helpers.o"]}
# Read before and after the command: its function is the marker that brackets the window.
MARKER = "read_enabled_file_bool"
INIT = """#!/bin/busybox sh
# /init of `rkprobes profile` (generated): one command of the benchmark module.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
insmod /lib/modules/rkprobes_bench.ko calls=10 reps=1 || echo "RKP error insmod"
{warmup}
{wait_for_host}
cat /sys/kernel/debug/kprobes/enabled >/dev/null
echo "{command}" > /sys/kernel/debug/rkprobes_bench/ctl || echo "RKP error {command}"
cat /sys/kernel/debug/kprobes/enabled >/dev/null
echo RKP-PROFILE-STOP
dmesg | grep "RKB reg"
echo RKP-PROFILE-DONE
reboot -f
"""


def add_args(p):
    cli.add_arch(p, arches=("x86_64",), why="it profiles the benchmark module, whose probe sites are x86's")
    cli.add_impl(p, multi=True, default_help="c,rust; each but c compared with C")
    p.add_argument("--command", default="regn 100",
                   help="benchmark module command to profile (default 'regn 100'; also 'reg1', "
                        "'regn 1000', 'fill 64 post'; with --bench-sequence 'bulk module 1000', or "
                        "'bulk-unreg module 1000' for the unregistration of that batch alone)")
    p.add_argument("--top", type=int, default=25, help="functions listed per implementation (default 25)")
    p.add_argument("--warmup", action="store_true",
                   help="run the command once before the measured run (first-use costs such as "
                        "instruction-page allocation stay out; for commands that can run twice)")
    p.add_argument("--bench-sequence", action="store_true",
                   help="boot the benchmark's own /init (bench-init.sh, with its module parameters) "
                        "and trace the command where it runs there, after every case before it, so "
                        "the kernel is in the state `rkprobes bench` measured it in")
    p.add_argument("--scope", default="core", choices=("core", "kernel"),
                   help="count the core's own functions (default) or every function of the kernel and module")
    p.add_argument("--timeout", type=int, default=1800, help="seconds the QEMU boot may take (default 1800)")
    cli.conflicts(p, ("--warmup", "--bench-sequence", "the sequence is the warm-up"))
    cli.checks(p, _check_args)


def _check_args(args):
    args.impls = args.impls or ["c", "rust"]
    for impl in args.impls:
        why = common.rust_unavailable_reason(args.arch, impl)
        if why:
            raise cli.UsageError(f"--impl {impl} (profile's default c,rust): {why}; give --impl c")
    if args.top < 1:
        raise cli.UsageError(f"--top {args.top}: must be at least 1")
    if args.bench_sequence:
        if args.command not in bench_sequence_commands(cmd_bench.INIT.read_text()):
            raise cli.UsageError(f"--bench-sequence: {cmd_bench.INIT.name} never runs 'ctl {args.command}' "
                                 f"(a 'ctl' line of its own, or 'measure CASE SITE' of a 'hit' line); see "
                                 f"{cmd_bench.INIT}")


def _symbols(path, defined_only=False):
    cmd = [f"llvm-nm{common.LLVM_SUFFIX}", "-S" if not defined_only else "--defined-only", str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
    return r.stdout.splitlines()


def kernel_functions(bdir):
    """(start, size, name) of every function of vmlinux, sorted (module code counts as "?")."""
    funcs = []
    for ln in _symbols(bdir / "vmlinux"):
        f = ln.split()
        # Local labels (.L*) and sizeless symbols are not functions: they would cut one in two.
        if (len(f) == 4 and f[2] in ("t", "T", "W") and not f[3].startswith(("__pfx_", ".L"))
                and int(f[1], 16) > 0):
            funcs.append((int(f[0], 16), int(f[1], 16), f[3]))
    return sorted(funcs)


def core_functions(bdir, impl):
    """(start, size, name) of every function of the core in vmlinux, sorted."""
    names = set()
    for obj in CORE_OBJECTS[impl]:
        if not (bdir / obj).is_file():
            raise Failure(f"{bdir / obj} is missing: is {bdir.name} a {impl} build?")
        for ln in _symbols(bdir / obj, defined_only=True):
            f = ln.split()
            if len(f) == 3 and f[1] in ("t", "T", "W"):
                names.add(f[2])
    funcs = [f for f in kernel_functions(bdir) if f[2] in names]
    if not any(name == MARKER for _, _, name in funcs):
        raise Failure(f"{MARKER} is not among the core's functions in {bdir / 'vmlinux'}")
    return funcs


def _dfilter(funcs):
    """Merged address ranges for -dfilter (one per stretch of neighbouring functions)."""
    merged = []
    for start, size, _ in funcs:
        end = start + size
        if merged and start - merged[-1][1] <= 0x100:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return ",".join(f"0x{a:x}..0x{e - 1:x}" for a, e in merged)


# The low bits of a block's cflags: at most that many instructions (0: no limit).
CF_COUNT_MASK = 0x1ff


def parse_trace(path, funcs):
    """Instructions per function between the first and the last execution of MARKER.

    A block is listed (`IN:`) when translated and its executions are `Trace` lines naming pc and
    cflags. One pc can have several translations: under -icount a block is cut short at the end
    of an instruction budget, and its cflags then carry that count. So a block runs the full
    length listed for its pc, or the count in its cflags if that is smaller.
    """
    starts = [f[0] for f in funcs]

    def name(pc):
        i = bisect.bisect_right(starts, pc) - 1
        return funcs[i][2] if i >= 0 and pc < funcs[i][0] + funcs[i][1] else "?"

    marker = [(f[0], f[0] + f[1]) for f in funcs if f[2] == MARKER]
    if not marker:
        raise Failure(f"{path}: the marker {MARKER} is not among the profiled functions")
    mstart, mend = marker[0]

    # Executions are counted per (pc, cflags count) as they stream by, never stored one by one
    # (a kernel-scope trace has hundreds of millions): those since the latest marker wait in
    # `pending` and join `window` when the marker runs again.
    full = {}
    window, pending = collections.Counter(), collections.Counter()
    marks = 0
    pc, n = None, 0
    with open(path, errors="replace") as fh:
        for ln in fh:
            if ln.startswith("IN:"):
                pc, n = None, 0
                continue
            m = re.match(r"^0x([0-9a-f]{8,16}):\s", ln)
            if m:
                pc = int(m.group(1), 16) if pc is None else pc
                n += 1
                full[pc] = max(full.get(pc, 0), n)
                continue
            m = re.match(r"^Trace \d+: \S+ \[[0-9a-f]+/([0-9a-f]+)/[0-9a-f]+/([0-9a-f]+)\]", ln)
            if m:
                key = (int(m.group(1), 16), int(m.group(2), 16) & CF_COUNT_MASK)
                if mstart <= key[0] < mend:
                    marks += 1
                    window.update(pending)
                    pending.clear()
                elif marks:
                    pending[key] += 1
    if marks < 2:
        raise Failure(f"{path}: the marker {MARKER} ran {marks} time(s), expected a window")

    def length(key):
        pc, count = key
        return min(count, full[pc]) if count else full[pc]

    per = collections.Counter()
    missing = 0
    for key, times in window.items():
        if key[0] not in full:
            missing += times
            continue
        per[name(key[0])] += length(key) * times
    if missing:
        raise Failure(f"{path}: {missing} block execution(s) without a listing of their block")
    per.pop(MARKER, None)
    return per


def _short_names(syms):
    """Demangled names without the crate prefix and generic arguments, by mangled name
    (`_RINvNt...8register10arm_kprobe...` -> `register::arm_kprobe`); one llvm-cxxfilt run."""
    syms = list(syms)
    r = subprocess.run([f"llvm-cxxfilt{common.LLVM_SUFFIX}"], input="\n".join(syms), capture_output=True,
                       text=True)
    out = r.stdout.splitlines() if r.returncode == 0 else []
    if len(out) != len(syms):
        out = syms
    return {s: re.sub(r"^kprobes_rust::", "", d.split("::<")[0]) for s, d in zip(syms, out)}


def profile(args, impl):
    bdir = kbuild.build(args.arch, impl, "bench")
    kos = cmd_bench.build_modules(args.arch, bdir)
    funcs = core_functions(bdir, impl) if args.scope == "core" else kernel_functions(bdir)
    append = cmd_bench.APPEND
    if args.bench_sequence:
        init = cmd_bench.INIT
        append += f" rkb_profile={args.command.replace(' ', '_')}"
        if args.command in ("bulk vmlinux 10000", "bulk-unreg vmlinux 10000"):
            append += " rkb_bulk_big=1"  # the row of `bench --bulk-big`
        if args.scope == "kernel":
            append += " rkb_profile_wait=1"
    else:
        init = bdir / "profile-init.sh"
        wait = "echo RKP-PROFILE-START; read -r go" if args.scope == "kernel" else ""
        warmup = (f'echo "{args.command}" > /sys/kernel/debug/rkprobes_bench/ctl || echo "RKP error warm-up"'
                  if args.warmup else "")
        init.write_text(INIT.format(command=args.command, wait_for_host=wait, warmup=warmup))
    initrd = initramfs.pack(bdir, "profile-initramfs", init, kos)
    trace = bdir / "profile-trace.log"
    trace.unlink(missing_ok=True)
    on_line = None
    if args.scope == "core":
        extra = cmd_bench.ICOUNT + ["-d", "in_asm,exec,nochain", "-dfilter", _dfilter(funcs), "-D", str(trace)]
    else:
        sock = bdir / "profile-monitor.sock"
        sock.unlink(missing_ok=True)
        # Blocks are listed when translated, so listing (and unchained blocks) run from the
        # start; only the per-execution lines wait for the command.
        extra = cmd_bench.ICOUNT + ["-d", "in_asm,nochain", "-D", str(trace),
                                    "-monitor", f"unix:{sock},server=on,wait=off"]

        def switch_logging(ln, proc):
            if "RKP-PROFILE-START" in ln:
                qemu.monitor(sock, "log in_asm,exec,nochain")
                proc.stdin.write("go\n")
                proc.stdin.flush()
            elif "RKP-PROFILE-STOP" in ln:
                qemu.monitor(sock, "log none")
        on_line = switch_logging
    text = qemu.boot(args.arch, bdir, append, bdir / "profile-console.log",
                     lambda t: "RKP-PROFILE-DONE" in t, args.timeout, initrd=initrd, extra=extra,
                     label=f"profile {args.arch}/{impl}", on_line=on_line)
    errors = [ln for ln in text.splitlines() if "RKP error" in ln]
    if errors or "RKP-PROFILE-DONE" not in text:
        raise Failure(f"profile {impl}: the command did not run: " + "; ".join(errors or ["no RKP-PROFILE-DONE"])
                      + f"\nsee {bdir / 'profile-console.log'}")
    info(f"{impl}: trace {trace} ({trace.stat().st_size // 1024} KiB)")
    return parse_trace(trace, funcs)


def bench_sequence_commands(init):
    """The module commands bench-init.sh runs through ctl(): 'ctl ...' and, for each
    'hit CASE SITE SYMBOL', the 'measure CASE SITE' its hit() issues. A one-line loop
    'for V in WORDS; do ...; done' counts once per word, where WORDS may be a variable that
    the script sets to a quoted list (every value it is given anywhere)."""
    lists = collections.defaultdict(list)
    for name, value in re.findall(r'^\s*(\w+)="([^"$`]*)"\s*$', init, re.M):
        lists[name].extend(value.split())
    cmds = set()

    def add(stmt):
        words = stmt.split()
        if len(words) >= 2 and words[0] == "ctl":
            cmds.add(" ".join(words[1:]))
            if len(words) == 4 and words[1] == "bulk":
                # Its unregistration alone: ctl() registers the batch untraced ("split").
                cmds.add(" ".join(["bulk-unreg"] + words[2:]))
        elif len(words) == 4 and words[0] == "hit":
            cmds.add(f"measure {words[1]} {words[2]}")

    for line in init.splitlines():
        loop = re.fullmatch(r"\s*for (\w+) in ([^;]+); do (.*); done\s*", line)
        if not loop:
            for stmt in line.split(";"):
                add(stmt)
            continue
        var, words, body = loop.groups()
        values = []
        for w in words.split():
            values.extend(lists[w[1:]] if w.startswith("$") else [w])
        for v in values:
            for stmt in body.split(";"):
                add(re.sub(rf"\${var}\b|\${{{var}}}", v, stmt))
    return cmds


def cmd_profile(args):
    impls = args.impls
    results = {}
    for impl in common.ordered_impls(impls):
        banner(f"profile: {args.arch}, {impl} implementation, '{args.command}'")
        with common.build_lock():
            results[impl] = profile(args, impl)
    where = "the core's own functions" if args.scope == "core" else "the kernel"
    banner(f"guest instructions in {where} during '{args.command}'")
    for impl, per in results.items():
        print(f"{impl}: {sum(per.values())} instructions in {len(per)} functions")
        top = per.most_common(args.top)
        short = _short_names(sym for sym, _ in top)
        for sym, n in top:
            print(f"  {n:10d}  {short[sym]}")
    for other in common.non_c_impls(results):
        if "c" not in results:
            break
        c, r = (sum(results[i].values()) for i in ("c", other))
        head = cmd_bench.HEADERS[other]
        print(f"{head}/C, instructions in {where}: {r / c:.3f}" if c else f"{head}/C: n/a (C ran nothing)")
    return 0

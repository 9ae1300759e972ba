#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Proves from a kernel build that every function of the kprobes core reachable from a probe hit
is unprobeable, without trusting inlining or attributes.

usage: hitpath-check.py [--symbols OUT] <kernel build dir>

The objects are the core of that build: kernel/kprobes.o (C core) or kernel/kprobes/kprobes_rust.o
(kprobes_rust_fentry.o where the build gives the crate ftrace sites) and
kernel/kprobes/kprobes_helpers.o (Rust core). From their disassembly and relocations
(llvm-objdump) it builds the call graph of every function they define, walks it from the
probe-hit entry points (the functions C marks NOKPROBE_SYMBOL in kernel/kprobes.c, present in
this configuration), and fails if a reachable function of these objects is neither in section
`.kprobes.text` nor named by a `_kprobe_blacklist` entry, if an entry point is missing under its
C name, or if a reachable function calls a Rust panic path (in a build with debug assertions,
their UB checks are listed instead: see UB_CHECK_RE). Any out-of-line copy counts: a
helper the compiler chose not to inline is a function symbol of the object, so it shows up.

Edges are direct calls and jumps (resolved in the disassembly or through a relocation) and any
other relocation in a function's code that names a function (its address taken, e.g. a callback
passed on); indirect calls through data (handlers of the probes) lead out of the core.

With --symbols, also writes every function symbol the objects define (llvm-nm), one per line
as `<name> <hit|->`, `hit` for those reachable from a probe hit (but the EXCEPTIONS below,
probeable on both cores): the list the in-guest check (tools/testing/rkprobes/nokprobe/) tries
to probe.
"""

import argparse
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

OBJDUMP = "llvm-objdump-22"
NM = "llvm-nm-22"

# The probe-hit entry points: C's NOKPROBE_SYMBOLs of kernel/kprobes.c (6.12), by the config
# that builds them. A Rust core must define each under this exact name.
ROOTS_ALWAYS = ("get_kprobe", "aggr_pre_handler", "aggr_post_handler", "kprobes_inc_nmissed_count",
                "kprobe_exceptions_notify", "dump_kprobe")
ROOTS_OPTPROBES = ("opt_pre_handler",)
ROOTS_KRETPROBES = ("pre_handler_kretprobe",)
ROOTS_RETHOOK = ("kretprobe_rethook_handler",)
ROOTS_OBJPOOL = ("__kretprobe_trampoline_handler", "kretprobe_find_ret_addr", "kprobe_flush_task",
                 "free_rp_inst_rcu")
# NOKPROBE in C where they exist as functions; C's recycle_rp_inst and __kretprobe_find_ret_addr
# are static helpers a Rust core may inline, so they are roots only if present. The Rust core's
# handlers of a kretprobe whose pool may grow (issue 40) are installed where C's are, so they are
# roots where they exist.
ROOTS_OPTIONAL = ("recycle_rp_inst", "__kretprobe_find_ret_addr", "pre_handler_kretprobe_grow",
                  "kretprobe_rethook_handler_grow")
# With the Rust x86 arch layer (CONFIG_KPROBES_RUST_ARCH): the arch's entry points, called by the
# int3 and fault traps, by a detour and by ftrace (upstream's NOKPROBE_SYMBOLs of
# arch/x86/kernel/kprobes/{core,opt,ftrace}.c), and the emulators, which the hit path reaches
# through `p->ainsn.emulate_op` (an indirect call the graph cannot follow; Rust names, matched).
ROOTS_X86_ARCH = ("kprobe_int3_handler", "kprobe_fault_handler")
ROOTS_X86_OPTPROBES = ("optimized_callback",)
ROOTS_X86_FTRACE = ("kprobe_ftrace_handler",)
ROOT_PATTERN_X86_ARCH = re.compile(r"kprobe_emulate_")
# With the Rust arm64 arch layer: the BRK handlers (called by call_el1_break_hook()), the fault
# handler, arch_prepare_kretprobe (called by the kretprobe pre-handler), upstream's __kprobes
# functions of arch/arm64/kernel/probes/kprobes.c, and the simulators, which the hit path reaches
# through `p->ainsn.api.handler` (Rust names, matched).
ROOTS_ARM64_ARCH = ("kprobe_brk_handler", "kprobe_ss_brk_handler", "kprobe_fault_handler")
ROOTS_ARM64_KRETPROBES = ("kretprobe_brk_handler", "arch_prepare_kretprobe")
ROOT_PATTERN_ARM64_ARCH = re.compile(r"rkp_arm64_simulate_")
# With the Rust riscv arch layer: the handlers handle_break() and the fault path call, and the
# simulators, reached through `p->ainsn.api.handler`.
ROOTS_RISCV_ARCH = ("kprobe_breakpoint_handler", "kprobe_single_step_handler", "kprobe_fault_handler")
ROOT_PATTERN_RISCV_ARCH = re.compile(r"rkp_riscv_simulate_")
# With the Rust loongarch arch layer: the handlers do_bp() and the fault path call, and the
# kprobes-on-ftrace handler; the simulators are inlined into them.
ROOTS_LOONGARCH_ARCH = ("kprobe_breakpoint_handler", "kprobe_singlestep_handler", "kprobe_fault_handler")
ROOTS_LOONGARCH_FTRACE = ("kprobe_ftrace_handler",)
# With the Rust s390 arch layer: the die notifier (breakpoint, PER step, program check), which
# the core registers and whose C name is already a root, the fault handler and the
# kprobes-on-ftrace handler.
ROOTS_S390_ARCH = ("kprobe_fault_handler",)
ROOTS_S390_FTRACE = ("kprobe_ftrace_handler",)
# With the Rust ppc64 arch layer: the handlers the program check, the single-step interrupt and
# the fault path call, the optprobe callback and the kprobes-on-ftrace handler.
ROOTS_PPC64_ARCH = ("kprobe_handler", "kprobe_post_handler", "kprobe_fault_handler")
ROOTS_PPC64_OPTPROBES = ("optimized_callback",)
ROOTS_PPC64_FTRACE = ("kprobe_ftrace_handler",)
# The Rust arch layer's C glue object, per arch.
ARCH_GLUE = {"CONFIG_X86_64": "arch/x86/kernel/kprobes/rust_glue.o",
             "CONFIG_ARM64": "arch/arm64/kernel/probes/rust_glue.o",
             "CONFIG_RISCV": "arch/riscv/kernel/probes/rust_glue.o",
             "CONFIG_LOONGARCH": "arch/loongarch/kernel/probes/rust_glue.o",
             "CONFIG_S390": "arch/s390/kernel/probes/rust_glue.o",
             "CONFIG_PPC64": "arch/powerpc/kernel/probes/rust_glue.o"}

# Reachable functions left probeable on purpose, each with the reason; the same on both cores.
EXCEPTIONS = {
    "kprobe_busy_begin": "kprobe_flush_task() calls it; C leaves it probeable too (not NOKPROBE)",
    "kprobe_busy_end": "kprobe_flush_task() calls it; C leaves it probeable too (not NOKPROBE)",
    "arch_kretprobe_fixup_return": "__kretprobe_trampoline_handler() calls it; C's __weak "
                                   "default is probeable too (not NOKPROBE)",
}

PANIC_RE = re.compile(r"panic|slice_(start_|end_)?index_(len_)?fail|len_mismatch_fail|unwrap_failed|expect_failed")
# With CONFIG_RUST_DEBUG_ASSERTIONS rustc checks at run time what unsafe code promises (the
# "UB checks": the preconditions of ptr::read_volatile(), ptr::add(), NonNull::new_unchecked()...
# through core's panic_nounwind_fmt(), whose message says "unsafe precondition(s) violated", and
# every raw pointer dereference for NULL and alignment). They panic only where the program has
# undefined behaviour, which is what that option is for, so in such a build they are listed
# by name, not failed; any other panic path (an index, an unwrap, an overflow) still fails.
UB_CHECK_RE = re.compile(r"panic_nounwind_fmt|panic_null_pointer_dereference|panic_misaligned_pointer_dereference")
# value, flags, section, size, [st_other: ppc64 ELFv2 prints the local entry offset], name
SYM_RE = re.compile(r"^([0-9a-f]+) (.{7}) (\S+)\s+([0-9a-f]+) (?:0x[0-9a-f]+ )?(.*)$")
RELOC_TARGET_RE = re.compile(r"^(.+?)(?:([+-])0x([0-9a-f]+))?$")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"hitpath-check: {' '.join(cmd)} failed:\n{r.stderr}")
    return r.stdout


class Obj:
    """The function symbols, call edges and blacklist entries of one object."""

    def __init__(self, path):
        self.path = path
        self.funcs = {}  # name -> (section, start, size)
        self.by_sec = defaultdict(list)  # section -> [(start, end, name)]
        self.undef = set()
        self.global_defs = set()
        for ln in run([OBJDUMP, "-t", str(path)]).splitlines():
            m = SYM_RE.match(ln)
            if not m:
                continue
            value, flags, sec, size, name = m.groups()
            if sec == "*UND*":
                self.undef.add(name)
                continue
            if "F" not in flags:
                continue
            start, size = int(value, 16), int(size, 16)
            self.funcs[name] = (sec, start, size)
            self.by_sec[sec].append((start, start + max(size, 1), name))
            if flags[0] in "gu" or flags[1] == "w":
                self.global_defs.add(name)
        self.edges = defaultdict(set)  # name -> {callee names (ours or external)}
        self.blacklisted = set()
        self._disassemble()
        self._blacklist()

    def func_at(self, sec, off):
        return [n for (s, e, n) in self.by_sec.get(sec, ()) if s <= off < e]

    def _targets(self, target, rtype):
        """Function names a relocation target names: a symbol, or a section plus offset."""
        m = RELOC_TARGET_RE.match(target)
        sym, sign, add = m.group(1), m.group(2), m.group(3)
        if sym in self.funcs or sym in self.undef:
            return {sym}
        if sym in self.by_sec:
            a = int(add, 16) * (-1 if sign == "-" else 1) if add else 0
            # x86 PC-relative: the addend is the target minus 4 (the displacement's size).
            offs = {a, a + 4} if rtype in ("R_X86_64_PLT32", "R_X86_64_PC32") else {a}
            return {n for o in offs for n in self.func_at(sym, o)}
        return set()

    def _disassemble(self):
        sec = cur = None
        insns = []  # (addr, text, func)
        relocs = []  # (offset, type, target, func)
        for ln in run([OBJDUMP, "-dr", "--no-show-raw-insn", str(self.path)]).splitlines():
            m = re.match(r"^Disassembly of section (\S+):$", ln)
            if m:
                sec = m.group(1)
                cur = None
                continue
            m = re.match(r"^([0-9a-f]+) <(.+)>:$", ln)
            if m:
                if m.group(2) in self.funcs:
                    cur = m.group(2)
                continue
            m = re.match(r"^\s+([0-9a-f]+):\s+(R_\S+)\s+(\S+)$", ln)
            if m:
                if cur:
                    relocs.append((int(m.group(1), 16), m.group(2), m.group(3), cur))
                continue
            m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", ln)
            if m and cur:
                insns.append((int(m.group(1), 16), m.group(2), cur, sec))
        reloc_at = defaultdict(list)
        for off, rtype, target, func in relocs:
            reloc_at[func].append(off)
            for t in self._targets(target, rtype):
                if t != func:
                    self.edges[func].add(t)
        for i, (addr, text, func, sec) in enumerate(insns):
            nxt = insns[i + 1][0] if i + 1 < len(insns) and insns[i + 1][2] == func else addr + 16
            # A relocated operand shows a meaningless target in the disassembly: the
            # relocation above gave the real one.
            if any(addr <= o < nxt for o in reloc_at[func]):
                continue
            for name in re.findall(r"<([^>+]+)(?:\+0x[0-9a-f]+)?>", text):
                if name != func and name in self.funcs:
                    self.edges[func].add(name)

    def _blacklist(self):
        """The functions `_kprobe_blacklist` entries (NOKPROBE_SYMBOL) point to."""
        inside = False
        for ln in run([OBJDUMP, "-r", str(self.path)]).splitlines():
            m = re.match(r"^RELOCATION RECORDS FOR \[(.+)\]:$", ln)
            if m:
                inside = m.group(1) == "_kprobe_blacklist"
                continue
            parts = ln.split()
            if inside and len(parts) == 3 and re.match(r"^[0-9a-f]+$", parts[0]):
                self.blacklisted |= self._targets(parts[2], parts[1])

    def unprobeable(self, name):
        return self.funcs[name][0].startswith(".kprobes.text") or name in self.blacklisted


def config(bdir):
    cfg = set()
    for ln in (bdir / ".config").read_text().splitlines():
        m = re.match(r"^(CONFIG_\w+)=y$", ln)
        if m:
            cfg.add(m.group(1))
    return cfg


def core_objects(bdir):
    # With ftrace entry sites (x86_64, function tracer) the crate object linked is the one
    # kernel/kprobes/fentry_sites.py rewrote; it has the same functions plus `call __fentry__`.
    # On powerpc and s390 it is the one with the ftrace sites of C there (kprobes_rust_mcount.o).
    crate = next((p for p in (bdir / "kernel/kprobes/kprobes_rust_fentry.o",
                              bdir / "kernel/kprobes/kprobes_rust_mcount.o") if p.is_file()),
                 bdir / "kernel/kprobes/kprobes_rust.o")
    rust = [crate, bdir / "kernel/kprobes/kprobes_helpers.o"]
    c = [bdir / "kernel/kprobes.o"]
    cfg = config(bdir)
    if all(p.is_file() for p in rust) and "CONFIG_KPROBES_RUST_ARCH" in cfg:
        glue = next((g for c, g in ARCH_GLUE.items() if c in cfg), None)
        if glue is None:
            sys.exit(f"hitpath-check: {bdir} has the Rust arch layer on an arch this check does not know")
        return "rust-arch", rust + [bdir / glue]
    if all(p.is_file() for p in rust):
        return "rust", rust
    if all(p.is_file() for p in c):
        return "c", c
    sys.exit(f"hitpath-check: {bdir} has neither kernel/kprobes.o nor the Rust core's objects")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("builddir", type=Path)
    ap.add_argument("--symbols", type=Path, help="write the function symbols and their hit flag")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the reachable functions")
    args = ap.parse_args()
    bdir = args.builddir.resolve()
    impl, paths = core_objects(bdir)
    cfg = config(bdir)
    objs = [Obj(p) for p in paths]

    required = list(ROOTS_ALWAYS)
    if "CONFIG_OPTPROBES" in cfg:
        required += ROOTS_OPTPROBES
    if "CONFIG_KRETPROBES" in cfg:
        required += ROOTS_KRETPROBES
        required += ROOTS_RETHOOK if "CONFIG_KRETPROBE_ON_RETHOOK" in cfg else ROOTS_OBJPOOL
    if impl == "rust-arch" and ("CONFIG_ARM64" in cfg or "CONFIG_RISCV" in cfg):
        arm64 = "CONFIG_ARM64" in cfg
        required += ROOTS_ARM64_ARCH if arm64 else ROOTS_RISCV_ARCH
        if arm64 and "CONFIG_KRETPROBES" in cfg:
            required += ROOTS_ARM64_KRETPROBES
        pattern = ROOT_PATTERN_ARM64_ARCH if arm64 else ROOT_PATTERN_RISCV_ARCH
        simulators = sorted({f for o in objs for f in o.funcs if pattern.search(f)})
        if not simulators:
            print(f"hit-path check: FAIL: no {pattern.pattern}* function in the Rust arch layer",
                  file=sys.stderr)
            return 1
        required += simulators
    elif impl == "rust-arch" and "CONFIG_LOONGARCH" in cfg:
        required += ROOTS_LOONGARCH_ARCH
        if "CONFIG_KPROBES_ON_FTRACE" in cfg:
            required += ROOTS_LOONGARCH_FTRACE
    elif impl == "rust-arch" and "CONFIG_PPC64" in cfg:
        required += ROOTS_PPC64_ARCH
        if "CONFIG_OPTPROBES" in cfg:
            required += ROOTS_PPC64_OPTPROBES
        if "CONFIG_KPROBES_ON_FTRACE" in cfg:
            required += ROOTS_PPC64_FTRACE
    elif impl == "rust-arch" and "CONFIG_S390" in cfg:
        required += ROOTS_S390_ARCH
        if "CONFIG_KPROBES_ON_FTRACE" in cfg:
            required += ROOTS_S390_FTRACE
    elif impl == "rust-arch":
        required += ROOTS_X86_ARCH
        if "CONFIG_OPTPROBES" in cfg:
            required += ROOTS_X86_OPTPROBES
        if "CONFIG_KPROBES_ON_FTRACE" in cfg:
            required += ROOTS_X86_FTRACE
        emulators = sorted({f for o in objs for f in o.funcs if ROOT_PATTERN_X86_ARCH.search(f)})
        if not emulators:
            print("hit-path check: FAIL: no kprobe_emulate_* function in the Rust arch layer",
                  file=sys.stderr)
            return 1
        required += emulators

    def owner(name, frm=None):
        """The object defining `name`: the caller's own first, then a global definition."""
        if frm is not None and name in frm.funcs:
            return frm
        for o in objs:
            if name in o.global_defs:
                return o
        return None

    errors = []
    roots = []
    for r in required + [n for n in ROOTS_OPTIONAL if any(n in o.funcs for o in objs)]:
        o = owner(r) or next((o for o in objs if r in o.funcs), None)
        if o is None:
            errors.append(f"entry point {r} is not a function symbol of the core (C's name)")
        else:
            roots.append((o, r))

    seen = set()
    external = defaultdict(set)
    work = list(roots)
    while work:
        o, f = work.pop()
        if (o.path, f) in seen:
            continue
        seen.add((o.path, f))
        for callee in o.edges[f]:
            d = owner(callee, o)
            if d is None:
                external[callee].add(f)
            else:
                work.append((d, callee))

    reachable = {}
    for o in objs:
        for f in o.funcs:
            if (o.path, f) in seen:
                reachable[f] = o
    bad = []
    for f, o in sorted(reachable.items()):
        if o.unprobeable(f):
            where = o.funcs[f][0] if o.funcs[f][0].startswith(".kprobes.text") else "_kprobe_blacklist"
        elif f in EXCEPTIONS:
            where = f"probeable, as in C: {EXCEPTIONS[f]}"
        else:
            where = f"{o.funcs[f][0]} (PROBEABLE)"
            bad.append(f"{f} in {o.path.name} is reachable from a probe hit but sits in "
                       f"{o.funcs[f][0]}, not in .kprobes.text or _kprobe_blacklist")
        if args.verbose:
            print(f"  hit path: {f} [{o.path.name}: {where}]")
    errors += bad
    ub_checks = {}
    if impl != "c":
        for callee, callers in sorted(external.items()):
            if "CONFIG_RUST_DEBUG_ASSERTIONS" in cfg and UB_CHECK_RE.search(callee):
                ub_checks[callee] = callers
            elif PANIC_RE.search(callee):
                errors.append(f"{', '.join(sorted(callers))} reach a panic path: {callee}")
    for callee, callers in ub_checks.items():
        print(f"hit-path check: UB check (debug assertions: a panic only on undefined behaviour): "
              f"{', '.join(sorted(callers))} reach {callee}")

    if args.symbols:
        lines = []
        for p in paths:
            for ln in run([NM, "--defined-only", str(p)]).splitlines():
                parts = ln.split()
                if len(parts) != 3 or parts[1] not in "tTwW":
                    continue
                name = parts[2]
                if name.startswith(("__pfx_", "__cfi_", ".L")):
                    continue
                # The listed exceptions are probeable on both cores: not expected to be refused.
                lines.append(f"{name} {'hit' if name in reachable and name not in EXCEPTIONS else '-'}")
        args.symbols.write_text("\n".join(sorted(set(lines))) + "\n")

    nfun = sum(len(o.funcs) for o in objs)
    what = {"c": "C core", "rust": "rust core",
            "rust-arch": "rust core and {} arch".format(
                next((a for c, a in (("CONFIG_ARM64", "arm64"), ("CONFIG_RISCV", "riscv"),
                                     ("CONFIG_LOONGARCH", "loongarch"), ("CONFIG_S390", "s390"), ("CONFIG_PPC64", "ppc64"))
                      if c in cfg), "x86"))}[impl]
    summary = (f"hit-path check ({what}, {bdir.name}): {len(roots)} entry points, "
               f"{len(reachable)} reachable functions of {nfun} in "
               f"{', '.join(p.name for p in paths)}")
    if errors:
        for e in errors:
            print(f"hit-path check: FAIL: {e}", file=sys.stderr)
        print(f"{summary}: FAILED ({len(errors)} problems)")
        return 1
    ub = ""
    if ub_checks:
        names = sorted({re.sub(r"^.*panicking\d+", "", c) for c in ub_checks})
        ub = (f"; UB checks of debug assertions reachable from "
              f"{len(set().union(*ub_checks.values()))} functions ({', '.join(names)}), listed above")
    print(f"{summary}: all unprobeable"
          + (f" (except {', '.join(sorted(set(EXCEPTIONS) & set(reachable)))}, as in C)"
             if set(EXCEPTIONS) & set(reachable) else "") + f"{ub}: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

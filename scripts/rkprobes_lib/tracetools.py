# SPDX-License-Identifier: GPL-2.0
"""The tracing users' tools on each implementation: `rkprobes test --tools` (x86_64).

For each implementation: build the KUnit kernel with perf events, BPF and IPv4
(configuration kunit-tools: configs/tools.config on top of the kunit fragments),
boot it with a busybox initramfs that holds the host's perf (Debian linux-perf)
and bpftrace (Debian bpftrace 0.17), each with the shared libraries `ldd`
names, and run tools/testing/rkprobes/tracetools/tracetools-init.sh there:

- perf: `perf probe -a` at FUNC's entry, at FUNC+OFFSET and at FUNC%return,
  `perf probe -l`, `perf stat -e probe:...` of the three over WORKLOAD,
  `perf probe -d`, and kprobe_events empty afterwards;
- bpftrace: one program with `kprobe:FUNC` (counting hits and summing arg2,
  vfs_read's count argument), `kretprobe:FUNC` (hits, sum of retval) and
  `kprobe:FUNC+OFFSET`, over the same WORKLOAD, filtered on its pid (cpid).

FUNC is vfs_read, WORKLOAD `dd if=/dev/zero of=/dev/null bs=7 count=300`, so
each probe must count exactly READS hits and the sums be READS x BS: the
workload's reads are per task and deterministic, timing cannot change them.
OFFSET is read from the build's vmlinux: the instruction after FUNC's ftrace
site (past endbr64 and the 5-byte NOP), so that probe is an int3 one where the
entry probe is on ftrace, as debugfs kprobes/list must say. Then each non-C implementation's counts must equal
C's, one row each. The ftrace kselftests run again in the same kernel, where
kretprobe_maxactive.tc has the inet_csk_accept it probes (kselftest.py).
"""

import re
import shutil
import subprocess
from pathlib import Path

from . import common, initramfs, kbuild, kselftest, qemu
from .common import Failure

ARCHES = ("x86_64",)
CONFIG = "kunit-tools"
INIT = common.REPO / "tools" / "testing" / "rkprobes" / "tracetools" / "tracetools-init.sh"
TOOLS = {"perf": (Path("/usr/bin/perf"), "linux-perf"), "bpftrace": (Path("/usr/bin/bpftrace"), "bpftrace")}
FUNC = "vfs_read"
BS, READS = 7, 300
WORKLOAD = f"/bin/dd if=/dev/zero of=/dev/null bs={BS} count={READS}"
APPEND = "panic=-1 kunit.enable=0"
# The guest holds perf, bpftrace and their libraries (LLVM 14), about 230 MB, in its ramfs.
MEMORY = ("-m", "2048")
STEP_RE = re.compile(r"^RKT-BEGIN (\S+)$")
END_RE = re.compile(r"^RKT-END (\S+) (\d+)$")


def tool_problems():
    """What is missing on the host for the guest's tools, as (problem, fix) pairs."""
    return [(f"{path} is missing", f"scripts/rkprobes setup (installs Debian's {pkg})")
            for path, pkg in TOOLS.values() if not path.is_file()]


def libraries(binary):
    """The shared libraries `binary` loads, with its ELF interpreter: {path in the guest: file}."""
    r = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"ldd {binary} failed: {r.stderr.strip() or r.stdout.strip()}")
    files = {}
    for ln in r.stdout.splitlines():
        m = re.match(r"^\s*(\S+) => (/\S+) \(0x", ln) or re.match(r"^\s*(/\S+) \(0x", ln)
        if m:
            path = m.group(m.lastindex)
            files[path.lstrip("/")] = Path(path)
        elif "not found" in ln:
            raise Failure(f"{binary} needs a library the host lacks: {ln.strip()}; reinstall its package "
                          "with scripts/rkprobes setup")
    interp = initramfs.elf_interp(binary)
    if interp:
        files[interp.lstrip("/")] = Path(interp)
    return files


def probe_offset(bdir, func=FUNC):
    """(the offset in `func` of its ftrace site, that of the instruction after it), from the build's
    vmlinux."""
    objdump = shutil.which(f"llvm-objdump{common.LLVM_SUFFIX}") or "objdump"
    r = subprocess.run([objdump, "-d", "--no-show-raw-insn", f"--disassemble-symbols={func}",
                        str(bdir / "vmlinux")], capture_output=True, text=True)
    insns = [(int(m.group(1), 16), m.group(2).strip()) for m in
             re.finditer(r"^([0-9a-f]{16}):\s+(.*)$", r.stdout, re.M)]
    if r.returncode != 0 or len(insns) < 3:
        raise Failure(f"cannot disassemble {func} in {bdir / 'vmlinux'} with {objdump}: "
                      f"{r.stderr.strip()[:300] or 'no instructions'}")
    i = 1 if insns[0][1].startswith("endbr64") else 0
    site_len = insns[i + 1][0] - insns[i][0]
    if not (insns[i][1].startswith("nop") or "__fentry__" in insns[i][1]) or site_len != 5:
        raise Failure(f"{func}+{insns[i][0] - insns[0][0]:#x} is `{insns[i][1]}` ({site_len} bytes), not the "
                      "5-byte ftrace site expected there; tracetools.py's probe_offset() needs updating")
    return insns[i][0] - insns[0][0], insns[i + 1][0] - insns[0][0]


def parse(text):
    """{ step: (exit code or None, output lines) } from the console."""
    steps, name, buf = {}, None, []
    for raw in text.splitlines():
        ln = re.sub(r"^\[\s*\d+\.\d+\]\s?", "", raw.rstrip("\r\n").replace("\r", ""))
        m = END_RE.match(ln)
        if m and m.group(1) == name:
            steps[name] = (int(m.group(2)), buf)
            name = None
            continue
        m = STEP_RE.match(ln)
        if m:
            name, buf = m.group(1), []
            steps[name] = (None, buf)
        elif name:
            buf.append(ln)
    return steps


def perf_counts(lines, offset_event):
    """{ event: count } of `perf stat -x ,` output lines (count,unit,event,...)."""
    counts = {}
    for ln in lines:
        f = ln.split(",")
        if len(f) >= 3 and f[2].startswith("probe:"):
            counts[f[2]] = int(f[0]) if f[0].isdigit() else f[0]
    return {("probe:offset" if k == offset_event else k): v for k, v in counts.items()}


def bpftrace_maps(lines):
    """{ map name: value } of bpftrace's map dump at exit (`@name: value`)."""
    return {m.group(1): int(m.group(2)) for m in (re.match(r"^@(\w+): (-?\d+)$", ln) for ln in lines) if m}


class Checks:
    """The checks of one row: each named, passed or failed."""

    def __init__(self):
        self.items = []

    def check(self, ok, what):
        self.items.append((bool(ok), what))

    def add_row(self, res, name, extra=""):
        passed = sum(1 for ok, _ in self.items if ok)
        failed = len(self.items) - passed
        bad = [w for ok, w in self.items if not ok]
        note = (f"{passed} of {len(self.items)} checks" + (f"; {extra}" if extra else "")
                + "".join(f"\n  FAILED: {w}" for w in bad)
                + ("" if bad else "".join(f"\n  {w}" for ok, w in self.items)))
        res.add(name, passed, failed or (0 if self.items else 1), note=note if self.items else "no checks ran")


def _step(steps, name):
    rc, lines = steps.get(name, (None, []))
    return rc, lines, "\n".join(lines[-6:])


def judge(res, arch, impl, steps, site, offset):
    """The perf and bpftrace rows of one boot; returns the counts it saw, for the comparison."""
    counts = {}
    perf = Checks()
    entry, ret, off_event = f"probe:{FUNC}", f"probe:{FUNC}__return", "probe:rkt_offset"
    for step, what in (("perf-add-entry", f"perf probe -a {FUNC}"),
                       ("perf-add-offset", f"perf probe -a rkt_offset={FUNC}+{offset}"),
                       ("perf-add-return", f"perf probe -a {FUNC}%return")):
        rc, _, tail = _step(steps, step)
        perf.check(rc == 0, f"{what}: exit {rc}" + ("" if rc == 0 else f": {tail}"))
    rc, lines, tail = _step(steps, "perf-list")
    listed = [e for e in (entry, off_event, ret) if any(ln.strip().startswith(e + " ") for ln in lines)]
    perf.check(rc == 0 and len(listed) == 3, f"perf probe -l: exit {rc}, lists {', '.join(listed) or 'none'} "
               f"of the three" + ("" if len(listed) == 3 else f": {tail}"))
    rc, lines, tail = _step(steps, "kprobe-events")
    # perf writes the place as it resolved it (a symbol, or _text+N with a vmlinux): the types and
    # names are checked here, the places by the hits counted below.
    want = {f"p:probe/{FUNC}", "p:probe/rkt_offset", f"r:probe/{FUNC}__return"}
    have = {re.sub(r"^([pr])\d*:(\S+).*$", r"\1:\2", ln.strip()) for ln in lines if ln.strip()}
    perf.check(rc == 0 and want <= have, "kprobe_events holds the three probes perf wrote: "
               + "; ".join(ln.strip() for ln in lines if ln.strip()))
    # debugfs kprobes/list: the entry and return probes on vfs_read's ftrace site (past endbr64 the
    # core moves a probe at +0 there), the offset one an int3 one.
    rc, lines, _ = _step(steps, "kprobes-list")
    mine = [ln.split(None, 2)[-1].strip() for ln in lines if re.search(rf"\s{FUNC}\+0x", ln)]
    on_site = [ln for ln in mine if ln.split()[0] == f"{FUNC}+{site:#x}"]
    on_offset = [ln for ln in mine if ln.split()[0] == f"{FUNC}+{offset:#x}"]
    perf.check(rc == 0 and len(on_site) == 2 and all("[FTRACE]" in ln for ln in on_site)
               and len(on_offset) == 1 and "[FTRACE]" not in on_offset[0],
               f"debugfs kprobes/list: entry and return on the ftrace site +{site:#x} [FTRACE], +{offset:#x} "
               f"not: {'; '.join(mine)}")
    rc, lines, tail = _step(steps, "perf-stat")
    stat = perf_counts(lines, off_event)
    for event in (entry, "probe:offset", ret):
        got = stat.get(event)
        counts[f"perf stat {event}"] = got
        perf.check(rc == 0 and got == READS, f"perf stat -e {event} over `{WORKLOAD}`: {got} (want {READS}, "
                   "one per read)" + ("" if rc == 0 else f"; exit {rc}: {tail}"))
    rc, _, tail = _step(steps, "perf-delete")
    perf.check(rc == 0, f"perf probe -d 'probe:*': exit {rc}" + ("" if rc == 0 else f": {tail}"))
    rc, lines, _ = _step(steps, "kprobe-events-after")
    perf.check(rc == 0 and not any(ln.strip() for ln in lines),
               "kprobe_events empty after perf probe -d" + ("" if not lines else f": {lines[:3]}"))
    perf.add_row(res, f"perf {arch}/{impl}: probe -a (entry, +{offset}, %return), -l, stat, -d",
                 extra=f"{FUNC} hits per probe: " + ", ".join(f"{k[10:]} {v}" for k, v in counts.items()))

    bpf = Checks()
    rc, lines, tail = _step(steps, "bpftrace")
    maps = bpftrace_maps(lines)
    bpf.check(rc == 0, f"bpftrace exit {rc}" + ("" if rc == 0 else f": {tail}"))
    for key, want, what in (("entry", READS, f"kprobe:{FUNC} hits"), ("return", READS, f"kretprobe:{FUNC} hits"),
                            ("offset", READS, f"kprobe:{FUNC}+{offset} hits"),
                            ("arg2_sum", READS * BS, "sum of arg2 (the count argument) at entry"),
                            ("retval_sum", READS * BS, "sum of retval at return")):
        got = maps.get(key)
        counts[f"bpftrace @{key}"] = got
        bpf.check(got == want, f"{what}: {got} (want {want})")
    rc, lines, _ = _step(steps, "kprobe-events-after-bpftrace")
    bpf.check(rc == 0 and not any(ln.strip() for ln in lines),
              "kprobe_events empty after bpftrace" + ("" if not lines else f": {lines[:3]}"))
    bpf.add_row(res, f"bpftrace {arch}/{impl}: kprobe:, kretprobe:, kprobe:+{offset}, arg2, retval",
                extra=", ".join(f"@{k[10:]} {v}" for k, v in counts.items() if k.startswith("bpftrace")))
    return counts


def run(res, arch, impl, timeout):
    """Build, boot and judge one implementation; returns its counts, or None when nothing ran."""
    name = f"perf and bpftrace {arch}/{impl}"
    try:
        missing = tool_problems()
        if missing:
            raise Failure("; ".join(f"{p} (fix: {fix})" for p, fix in missing))
        bdir = kbuild.build(arch, impl, CONFIG)
        site, offset = probe_offset(bdir)
        params = bdir / "tracetools-params"
        params.write_text(f"FUNC={FUNC}\nOFFSET={offset}\nWORKLOAD='{WORKLOAD}'\n")
        files = {"tracetools/params": params}
        for binary, _ in TOOLS.values():
            files[str(binary).lstrip("/")] = binary
            files |= libraries(binary)
        initrd = initramfs.pack(bdir, "tracetools-initramfs", INIT, [], files=files, arch=arch)
        log = bdir / "tracetools-console.log"
        text = qemu.boot(arch, bdir, APPEND, log, lambda t: "RKT-DONE" in t, timeout, initrd=initrd,
                         extra=MEMORY, label=f"perf and bpftrace {arch}/{impl}")
    except Failure as e:
        res.add(name, failed=1, note=str(e))
        return None
    steps = parse(text)
    print(f"\nperf and bpftrace {arch}/{impl} (console: {log}):", flush=True)
    for step, (rc, lines) in steps.items():
        print(f"  {step}: exit {rc}", flush=True)
        for ln in lines[-12:]:
            print(f"    {ln}", flush=True)
    return judge(res, arch, impl, steps, site, offset)


def compare_name(arch, other):
    return f"perf and bpftrace {arch}: {common.impl_label(other)} counts equal C's"


def compare(res, arch, runs, other):
    """Every count (perf stat per probe, bpftrace's maps) of `other` must equal C's."""
    name = compare_name(arch, other)
    c, o = runs.get("c"), runs.get(other)
    if not c or not o:
        missing = [i for i in ("c", other) if not runs.get(i)]
        res.add(name, skipped=1, note=f"not compared: no counts from {', '.join(missing)} (its boot failed)")
        return
    differ = [f"{k}: C {c.get(k)}, {common.impl_label(other)} {o.get(k)}" for k in sorted(set(c) | set(o))
              if c.get(k) != o.get(k) or c.get(k) is None]
    note = (f"{len(c) - len(differ)} of {len(c)} counts equal"
            + ("".join(f"\n  {d}" for d in differ) if differ else ": " + ", ".join(f"{k} {v}" for k, v in c.items())))
    res.add(name, len(c) - len(differ), len(differ), note=note)


def run_all(res, arch, impls, timeout):
    """perf and bpftrace on `arch` for each of `impls`, C against each other one; then the ftrace
    kselftests in the same kernel."""
    if arch not in ARCHES:
        res.add(f"perf and bpftrace {arch}", skipped=1,
                note=f"runs on {', '.join(ARCHES)} only: the guest runs the host's perf and bpftrace binaries")
        return
    # One place in the machine's build queue for the whole step rather than one per build and
    # boot: after the first build of each implementation the others find it up to date, and the
    # boots are short (about 15 s for the tools, a minute for the kselftests, per build).
    with common.build_lock():
        runs = {}
        for impl in impls:
            common.banner(f"perf and bpftrace on {arch}, {impl} implementation (configuration {CONFIG})")
            runs[impl] = run(res, arch, impl, timeout)
        common.compare_with_c(res, arch, impls, runs, compare, compare_name)
        kselftest.run_all(res, arch, impls, timeout, config=CONFIG)

# SPDX-License-Identifier: GPL-2.0
"""Boot a built kernel under QEMU (TCG), capture the console, stop when done."""

import bisect
import re
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from . import common
from .common import Failure, info


def qemu_command(arch, bdir, append, initrd=None, extra=()):
    a = common.ARCHES[arch]
    cmd = [a.qemu, "-nodefaults", "-m", "1024", "-kernel", str(bdir / a.image),
           "-append", f"console={a.console} {append}".strip(), "-no-reboot", "-nographic",
           "-serial", "stdio"] + a.qemu_args + list(extra)
    if initrd:
        cmd += ["-initrd", str(initrd)]
    return cmd


def accelerator(arch):
    """The accelerator `qemu_command()` boots `arch` with: "kvm" if its arguments ask for it,
    else QEMU's default for a guest of another arch than the host's, "tcg"."""
    args = common.ARCHES[arch].qemu_args
    if "-enable-kvm" in args or any(a in ("-accel", "-machine") and "kvm" in b for a, b in zip(args, args[1:])):
        return "kvm"
    return "tcg"


def version(arch):
    """The first line `<qemu> --version` of `arch` prints, or why there is none."""
    try:
        out = subprocess.run([common.ARCHES[arch].qemu, "--version"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        return f"{common.ARCHES[arch].qemu} --version failed: {e}"
    return out.splitlines()[0] if out else f"{common.ARCHES[arch].qemu} --version printed nothing"


def monitor(path, command, timeout=30):
    """One HMP command through QEMU's monitor socket at `path`; returns what it printed
    (waits for the prompt to come back, at most `timeout` seconds)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        buf = b""
        deadline = time.monotonic() + timeout
        while b"(qemu)" not in buf and time.monotonic() < deadline:
            buf += s.recv(4096)
        s.sendall(command.encode() + b"\n")
        buf = b""
        while b"(qemu)" not in buf and time.monotonic() < deadline:
            buf += s.recv(65536)
    out = buf.decode(errors="replace").replace("\r", "")
    # The monitor echoes the command (with terminal escapes) and ends with its prompt.
    out = out.rsplit("(qemu)", 1)[0]
    return out.split("\n", 1)[1] if "\n" in out else out


# The program counter in `info registers` of each arch.
_PC = {
    "x86_64": re.compile(r"\bRIP=([0-9a-f]+)"),
    "arm64": re.compile(r"\bPC=([0-9a-f]+)"),
    "riscv": re.compile(r"^\s*pc\s+([0-9a-f]+)", re.M),
    "ppc64": re.compile(r"\bNIP\s+([0-9a-f]+)"),
    "s390": re.compile(r"\bPSW=mask [0-9a-f]+ addr ([0-9a-f]+)"),
    "loongarch": re.compile(r"\bpc=0x([0-9a-f]+)", re.I),
}


def _x86_slide(sock, syms):
    """x86_64's KASLR slide: IDT entry 0 (at the fixed cpu_entry_area address) holds the
    address of asm_exc_divide_error. 0 when it cannot be read."""
    base = dict((n, a) for a, n in syms).get("asm_exc_divide_error")
    try:
        words = re.findall(r":\s*0x([0-9a-f]+)\s+0x([0-9a-f]+)", monitor(sock, "x /2gx 0xfffffe0000000000"))
    except OSError:
        return 0
    if not base or not words:
        return 0
    lo, hi = (int(w, 16) for w in words[0])
    handler = (lo & 0xffff) | ((lo >> 48) << 16) | ((hi & 0xffffffff) << 32)
    return handler - base


def _symbolizer(vmlinux, slide_of=None):
    """addr -> 'symbol+0xoff' from vmlinux's text symbols (llvm-nm -n), or None without it.
    `slide_of(syms)` gives the KASLR slide to take off first."""
    try:
        out = subprocess.run([f"llvm-nm{common.LLVM_SUFFIX}", "-n", "--defined-only", str(vmlinux)],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    syms = []
    for ln in out.splitlines():
        parts = ln.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), parts[2]))
    if not syms:
        return None
    addrs = [a for a, _ in syms]
    slide = slide_of(syms) if slide_of else 0

    def name(addr):
        addr -= slide
        i = bisect.bisect_right(addrs, addr) - 1
        if i < 0 or addr - syms[i][0] > 0x100000:
            return "(not in vmlinux's text: a module, or KASLR)"
        return f"{syms[i][1]}+{addr - syms[i][0]:#x}"
    return name


def where_vcpus_are(arch, bdir, sock):
    """Each vCPU's program counter, symbolized, from QEMU's monitor: the lines a hung guest's
    report gets. The whole `info registers -a` goes next to the console log."""
    try:
        regs = monitor(sock, "info registers -a")
    except OSError as e:
        return [f"(QEMU's monitor did not answer: {e})"], ""
    name = _symbolizer(bdir / "vmlinux", (lambda syms: _x86_slide(sock, syms)) if arch == "x86_64" else None)
    pc_rx = _PC.get(arch)
    out = []
    for cpu, body in re.findall(r"CPU#(\d+)\n(.*?)(?=\nCPU#\d+\n|\Z)", regs, re.S) or [("?", regs)]:
        m = pc_rx.search(body) if pc_rx else None
        if not m:
            out.append(f"vCPU {cpu}: (no program counter found in `info registers`)")
            continue
        pc = int(m.group(1), 16)
        line = f"vCPU {cpu}: pc {pc:#x} {name(pc) if name else ''}".rstrip()
        trap = _x86_trap_frame(sock, cpu, body) if arch == "x86_64" and name and "asm_exc_" in name(pc) else None
        if trap:
            # At an exception entry's first instruction the CPU's frame is on the stack: the
            # interrupted RIP (for int3 one past the int3) and RFLAGS.
            rip, rfl = trap
            line += f", entered from {rip:#x} {name(rip)} (RFLAGS {rfl:#x})"
        out.append(line)
    return out, regs


def failure_summary(err):
    """The first line of a boot's failure, with the vCPU lines of a killed guest under it."""
    lines = str(err).splitlines() or [""]
    return lines[0] + "".join("\n      " + ln for ln in lines if ln.startswith("vCPU "))

def _x86_trap_frame(sock, cpu, body):
    """(RIP, RFLAGS) of the hardware exception frame at vCPU `cpu`'s RSP, or None."""
    rsp = re.search(r"\bRSP=([0-9a-f]+)", body)
    if not rsp:
        return None
    try:
        monitor(sock, f"cpu {cpu}")
        dump = monitor(sock, f"x /3gx 0x{rsp.group(1)}")
    except OSError:
        return None
    words = [int(w, 16) for w in re.findall(r"0x([0-9a-f]{16})", dump)]
    return (words[0], words[2]) if len(words) >= 3 else None


# Seconds between two heartbeat lines while a guest runs.
HEARTBEAT = 30
# Console lines that say which test or step the guest is in: (regex, how to name it).
_STEPS = [
    (re.compile(r"#\s*Subtest:\s*(\S+)"), "KUnit suite {0}"),
    (re.compile(r"^\s*((?:not )?ok) (\d+) (\S+)"), "{2}: {0} ({1} done)"),
    (re.compile(r"^\[(\d+)\] (.*?)(?:\s+\[\w+\])?$"), "kselftest [{0}] {1}"),
    (re.compile(r"^(RK[A-Z]* .*)"), "{0}"),
]
_TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")


def guest_step(line):
    """The test or step a console line says the guest is in, or None."""
    line = _TIMESTAMP.sub("", line.rstrip("\r\n"))
    for rx, fmt in _STEPS:
        m = rx.search(line)
        if m:
            return fmt.format(*m.groups())[:80]
    return None


def boot(arch, bdir, append, log_path, done, timeout, initrd=None, extra=(), label="boot", on_line=None):
    """Boot and return the console text.

    `done(text)` tells when the guest has printed all that is wanted; QEMU is
    then given a moment to exit by itself (the guest reboots, -no-reboot
    turns that into an exit) and is killed otherwise. A boot that does not
    finish within `timeout` seconds is killed and reported with the tail of
    its console. `on_line(line, proc)`, if given, sees each console line as it
    arrives and may answer on the guest's console input (`proc.stdin`).
    """
    # A monitor of our own, asked where the vCPUs are if the guest must be killed.
    mon_dir = tempfile.mkdtemp(prefix="rkprobes-mon-")
    sock = Path(mon_dir) / "monitor.sock"
    cmd = qemu_command(arch, bdir, append, initrd,
                       list(extra) + ["-monitor", f"unix:{sock},server=on,wait=off"])
    info(f"booting {bdir.name} under QEMU (console log: {log_path})")
    lines = []
    start = time.monotonic()
    log = open(log_path, "w")
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.PIPE if on_line else subprocess.DEVNULL,
                            text=True, errors="replace", bufsize=1)

    panicked = threading.Event()
    step = ["booting"]

    def reader():
        # The console goes to the log as it arrives, so a hung boot can be watched live.
        for ln in proc.stdout:
            lines.append(ln)
            step[0] = guest_step(ln) or step[0]
            if "Kernel panic - not syncing" in ln:
                panicked.set()
            log.write(ln)
            log.flush()
            if on_line:
                on_line(ln, proc)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    finished = False
    timed_out = False
    beat = start
    try:
        while proc.poll() is None:
            if time.monotonic() - beat >= HEARTBEAT:
                beat = time.monotonic()
                # A line a while, so a long boot is seen to live, and where it is.
                print(f"  [{common.fmt_secs(beat - start)}] {label}: {step[0]} ({len(lines)} console lines, "
                      f"limit {common.fmt_secs(timeout)})", flush=True)
            if done("".join(lines)):
                finished = True
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                break
            if panicked.is_set():
                # Some boards (loongarch virt) cannot reboot: do not wait for the timeout.
                time.sleep(1)
                proc.kill()
                break
            if time.monotonic() - start > timeout:
                timed_out = True
                where, regs = where_vcpus_are(arch, bdir, sock)
                if regs:
                    Path(log_path).with_suffix(".registers").write_text(regs)
                proc.kill()
                break
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        t.join(timeout=5)
        log.close()
        sock.unlink(missing_ok=True)
        Path(mon_dir).rmdir()
    text = "".join(lines)
    secs = time.monotonic() - start
    if not finished and done(text):
        finished = True
    if timed_out:
        raise Failure(f"{label}: QEMU did not finish within {timeout}s and was killed.\n"
                      f"--- where the vCPUs were (QEMU's `info registers -a`, in "
                      f"{Path(log_path).with_suffix('.registers')}):\n" + "\n".join(where) + "\n"
                      f"--- tail of the console ({log_path}):\n" + "".join(text.splitlines(True)[-40:]))
    if not finished:
        panic = re.search(r"Kernel panic.*", text)
        raise Failure(f"{label}: QEMU exited (code {proc.returncode}) before the guest finished"
                      + (f" ({panic.group(0)})" if panic else "")
                      + f".\n--- tail of the console ({log_path}):\n" + "".join(text.splitlines(True)[-40:]))
    info(f"{label}: guest finished in {common.fmt_secs(secs)}")
    return text

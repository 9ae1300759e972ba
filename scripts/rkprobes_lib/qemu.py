# SPDX-License-Identifier: GPL-2.0
"""Boot a built kernel under QEMU (TCG), capture the console, stop when done."""

import re
import subprocess
import threading
import time

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
    cmd = qemu_command(arch, bdir, append, initrd, extra)
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
                proc.kill()
                break
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        t.join(timeout=5)
        log.close()
    text = "".join(lines)
    secs = time.monotonic() - start
    if not finished and done(text):
        finished = True
    if timed_out:
        raise Failure(f"{label}: QEMU did not finish within {timeout}s and was killed.\n"
                      f"--- tail of the console ({log_path}):\n" + "".join(text.splitlines(True)[-40:]))
    if not finished:
        panic = re.search(r"Kernel panic.*", text)
        raise Failure(f"{label}: QEMU exited (code {proc.returncode}) before the guest finished"
                      + (f" ({panic.group(0)})" if panic else "")
                      + f".\n--- tail of the console ({log_path}):\n" + "".join(text.splitlines(True)[-40:]))
    info(f"{label}: guest finished in {common.fmt_secs(secs)}")
    return text

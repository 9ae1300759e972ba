# SPDX-License-Identifier: GPL-2.0
"""A KUnit suite in a module of ours, booted in the KUnit kernel with a busybox initramfs.

What the conformance suite and the x86 behaviour suite share: build the kernel and the modules,
pack the init, boot, cut the console between the init's `<MARKER>-BEGIN` and `<MARKER>-DONE`
lines, parse it with upstream's `kunit.py parse`, and turn the cases into one result row's counts
and note (a failed boot, a failed insmod, skipped and failed cases, failed expectations).
"""

import re

from . import common, initramfs, kbuild, qemu
from .common import Failure


def console_segment(text, marker):
    """The console between `<marker>-BEGIN` and `<marker>-DONE`, without timestamps."""
    lines = []
    inside = False
    for ln in text.splitlines():
        ln = re.sub(r"^\[\s*\d+\.\d+\]\s?", "", ln.rstrip("\r"))
        if ln == f"{marker}-BEGIN":
            inside = True
        elif ln == f"{marker}-DONE":
            break
        elif inside:
            lines.append(ln)
    return lines


def suite_cases(data, suite):
    """{ case: status } of `suite` in a `kunit.py parse` JSON tree."""
    found = {}

    def walk(group):
        for case in group.get("test_cases", []):
            if group.get("name") == suite:
                found[case["name"]] = case["status"]
        for sub in group.get("sub_groups", []):
            walk(sub)

    walk(data)
    return found


def skip_reasons(lines):
    """{ case: reason } of the KTAP `ok N case # SKIP reason` lines."""
    reasons = {}
    for ln in lines:
        m = re.match(r"^\s*ok \d+ (\w+) # SKIP (.*)$", ln)
        if m:
            reasons[m.group(1)] = m.group(2)
    return reasons


def keyed_values(lines, regex, strip=str.strip):
    """{ "<case>.<key>": value } from the lines `regex` (groups: case, key, value) matches."""
    out = {}
    for ln in lines:
        m = regex.search(ln)
        if m:
            out[f"{m.group(1)}.{m.group(2)}"] = strip(m.group(3))
    return out


class Boot:
    """One boot of a suite: its build directory, console log and the parsed cases."""

    def __init__(self, bdir, log, text, lines, status, boot_error):
        self.bdir = bdir
        self.log = log
        self.text = text
        self.lines = lines
        self.status = status
        self.boot_error = boot_error


def boot(arch, impl, suite, stem, marker, init, build_modules, append, timeout, label):
    """Build, boot and parse one implementation, keeping the cases of `suite`; raises Failure if
    the kernel or the modules cannot be built. `stem` names the files in the build directory (`<stem>-console.log`,
    `<stem>-ktap.log`, `<stem>.json`); `build_modules(arch, bdir)` returns the modules."""
    bdir = kbuild.build(arch, impl, "kunit")
    kos = build_modules(arch, bdir)
    initrd = initramfs.pack(bdir, f"{stem}-initramfs", init, kos, arch=arch)
    log = bdir / f"{stem}-console.log"
    boot_error = None
    try:
        text = qemu.boot(arch, bdir, append, log, lambda t: f"{marker}-DONE" in t, timeout,
                         initrd=initrd, label=label)
    except Failure as e:
        # A crash or a hang: still report what the cases printed before it.
        boot_error = str(e)
        text = log.read_text(errors="replace") if log.is_file() else ""
    lines = console_segment(text, marker)
    seg = bdir / f"{stem}-ktap.log"
    seg.write_text("\n".join(lines) + "\n")
    parsed, _ = common.kunit_parse(seg, bdir / f"{stem}.json")
    return Boot(bdir, log, text, lines, suite_cases(parsed, suite) if parsed is not None else {},
                boot_error)


# What `kunit.py parse` calls a case that ran and failed: a failed expectation, or a crash.
FAILED = ("FAIL", "ERROR")


def went_down_in(b, cases, expected):
    """The expected failure the guest went down in, if boot `b` ended early and every case of
    `cases` that did not report is an expected failure; None otherwise."""
    unrun = [c for c in cases if c not in b.status]
    if not b.boot_error or not unrun or any(c not in expected for c in unrun):
        return None
    return unrun[0]


def summarize(b, cases, module, marker, head, expected=None, crashes=False):
    """(passed, failed, skipped, xfailed, note) of boot `b` against the expected `cases`; `head`
    starts the note after the case counts. The init prints `<marker>-INSMOD <exit code>`.

    `expected` maps the cases expected to fail to why: one that ran and failed is an XFAIL,
    neither passed nor failed nor skipped; one that passes is an UNEXPECTED PASS and fails.
    With `crashes`, an expected failure may take the guest down: if the boot ended early and
    every case that did not report is an expected failure, those are XFAIL too, and the ended
    boot and the missing insmod exit are not failures (the note says where it went down)."""
    status = dict(b.status)
    expected = expected or {}
    down = went_down_in(b, cases, expected) if crashes else None
    gone = {c: ("ERROR (the guest went down in it)" if c == down else f"DID NOT RUN (the guest went down in {down})")
            for c in cases if down and c not in status}
    status.update(gone)
    xfails = [c for c in cases if c in expected and (status.get(c) in FAILED or c in gone)]
    upasses = [c for c in cases if c in expected and status.get(c) == "PASS"]
    passed = sum(1 for c in cases if status.get(c) == "PASS") - len(upasses)
    skipped = sum(1 for c in cases if status.get(c) == "SKIP")
    failed = len(cases) - passed - skipped - len(xfails)
    note = (f"{passed}/{len(cases)} cases passed, {skipped} skipped"
            + (f", {len(xfails)} expected failures (XFAIL)" if xfails else "")
            + f"{head} (console: {b.log})")
    if down:
        oops = re.search(r"^.*(Oops|illegal operation|Unable to handle|BUG:|Kernel panic).*$", b.text, re.M)
        note += (f"\n  the guest went down in expected failure {down}"
                 + (f" ({oops.group(0).strip()})" if oops else "")
                 + "; the boot's end is not counted as a failure: " + b.boot_error.splitlines()[0])
    elif b.boot_error:
        failed = max(failed, 1)
        note = "the boot did not finish: " + b.boot_error + "\n" + note
    insmod = re.search(rf"^{marker}-INSMOD (\d+)$", "\n".join(b.lines), re.M)
    if not down and (not insmod or insmod.group(1) != "0"):
        note += f"; insmod {module} exited {insmod.group(1) if insmod else '(never returned)'}"
        failed = max(failed, 1)
    skips = skip_reasons(b.lines)
    for c in cases:
        st = status.get(c, "DID NOT RUN")
        if c in upasses:
            note += (f"\n  UNEXPECTED PASS: {c}: it was expected to fail ({expected[c]}); if that "
                     "cause is gone, take the case off the expected failures")
        elif c in xfails:
            note += f"\n  XFAIL: {c} ({st})"
        elif st == "SKIP":
            note += f"\n  SKIP: {c}: {skips.get(c, '')}"
        elif st != "PASS":
            note += f"\n  {st}: {c}"
    reasons = sorted({expected[c] for c in xfails})
    for why in reasons:
        note += f"\n  XFAIL reason: {why}"
    # KUnit prints a failed expectation as a header line and the values and message below it.
    lines = b.lines
    failures = [" / ".join(x.strip() for x in lines[i:i + 5])
                for i, ln in enumerate(lines) if re.search(r"(ASSERTION|EXPECTATION) FAILED", ln)]
    if failed:
        for ln in failures[:20]:
            note += f"\n    {ln}"
    return passed, failed, skipped, len(xfails), note

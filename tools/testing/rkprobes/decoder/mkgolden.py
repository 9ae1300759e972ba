#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Builds golden.txt, the x86 decoder's golden vectors, from golden.S.

Each instruction line of golden.S is assembled on its own with clang-22, so the bytes and
length are the assembler's; the "#=" annotation is copied as written.
Lines of .byte are taken as written (their length or error must be in the annotation).
Usage: ./mkgolden.py [golden.S [golden.txt]]
"""

import os
import subprocess
import sys
import tempfile

HEADER = """\
# SPDX-License-Identifier: GPL-2.0
#
# Golden vectors of the kprobes x86 instruction decoder (arch/x86/lib/insn_decoder).
# Generated from golden.S by mkgolden.py; lengths of assembled lines come from clang-22.
#
# Format: MODE HEX-BYTES ; KEY=VALUE ... # source
#   MODE      64 or 32
#   len=N     decodes to N bytes            err=NoData|Invalid  decoding fails so
#   disp=D    RIP-relative with displacement D (default: not RIP-relative)
#   branch=K  relative branch: jmp, call, jcc.CC or loop.N (default: none)
#   target=T  the branch target, relative to the instruction's address
#   emul=E    kprobes emulation: none (default), if, ret, call, jmp, jcc, loop,
#             callind.REG, jmpind.REG or unsupported
#   boost=y|n whether kprobes may boost it (checked only when given)
#   exc=y     INT/UD that must not be probed      ijmp=y   indirect or far jump
#   masks=y   MOV SS/POP SS                       emu=y    Xen/KVM emulate prefix
#   copy=invalid  refused for out-of-line copy (otherwise a copy must relocate correctly)
"""


def run(cmd, what=""):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"mkgolden: {' '.join(cmd)} failed{what}:\n{done.stderr}")
    return done.stdout


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "golden.S")
    dst = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "golden.txt")

    entries = []  # (mode, asm or None, raw bytes or None, annotation)
    mode = "64"
    for line in open(src):
        code = line.split("#=", 1)[0].strip()
        if code.startswith("#") or not code:
            continue
        if code in (".code64", ".code32"):
            mode = code[-2:]
            entries.append((mode, code, None, None))
            continue
        note = line.split("#=", 1)[1].strip() if "#=" in line else ""
        if code.startswith(".byte"):
            raw = [int(b, 0) for b in code[len(".byte"):].split(",")]
            entries.append((mode, None, raw, note))
        else:
            entries.append((mode, code, None, note))

    with tempfile.TemporaryDirectory() as tmp:
        s = os.path.join(tmp, "g.S")
        o = os.path.join(tmp, "g.o")
        b = os.path.join(tmp, "g.bin")
        assembled = []
        for mode, code, raw, _ in entries:
            if raw is not None or code in (".code64", ".code32"):
                continue
            # One instruction per object, so every byte of .text belongs to it.
            open(s, "w").write(f".code{mode}\n{code}\n")
            run(["clang-22", "-c", s, "-o", o], f" on `{code}`")
            run(["llvm-objcopy-22", "-O", "binary", "--only-section=.text", o, b])
            assembled.append(open(b, "rb").read())

    out = [HEADER]
    it = iter(assembled)
    for mode, code, raw, note in entries:
        if code in (".code64", ".code32"):
            continue
        if raw is None:
            bs = next(it)
            if "len=" not in note:
                note = f"len={len(bs)} {note}".strip()
            comment = code
        else:
            bs, comment = bytes(raw), "raw"
        out.append(f"{mode} {bs.hex(' ')} ; {note} # {comment}\n")
    open(dst, "w").write("".join(out))
    print(f"{dst}: {len(out) - 1} vectors")


if __name__ == "__main__":
    main()

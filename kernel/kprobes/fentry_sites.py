#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Give the functions of a Rust object the ftrace entry site C functions have.

usage: fentry_sites.py IN.o OUT.o

C compiled with -mfentry starts every function with `call __fentry__` (after
the ENDBR with IBT), which objtool records in __mcount_loc and, with --mnop,
turns into a 5-byte NOP that ftrace patches when a function is traced. This is
how `kprobe_events`, perf, bpftrace and the function tracer can attach to a C
function at entry, and how a kprobe at entry becomes [FTRACE]. rustc 1.96 has
no -mfentry; it has -Zpatchable-function-entry, which the Kbuild file asks for
with 5 entry bytes: LLVM then puts a 5-byte NOP (`nopl 8(%rax,%rax)`) at the
same place. This tool turns each of those into `call __fentry__` with its
R_X86_64_PLT32 relocation, so that objtool treats the Rust object like a C one
(and nothing else in the kernel build changes).

A function's entry is its symbol, or 4 bytes past it when it starts with ENDBR.
Every patchable entry LLVM recorded in __patchable_function_entries must be
found this way, or the tool fails, naming what it did not find.

Input: an ELF64 little-endian x86-64 relocatable object. New contents of the
symbol table, its string table and the relocation sections are appended to the
file (with a new relocation section for a text section that had none) and the
section header table is rewritten after them; everything else is unchanged.
"""

import struct
import sys

ENDBR64 = bytes.fromhex("f30f1efa")
# LLVM's patchable-function-entry NOP of 5 bytes (the displacement marks it).
PATCHABLE_NOP5 = bytes.fromhex("0f1f440008")
CALL_REL32 = bytes.fromhex("e800000000")
SHT_SYMTAB, SHT_RELA, SHT_SYMTAB_SHNDX = 2, 4, 18
SHF_EXECINSTR = 0x4
STT_FUNC = 2
STB_GLOBAL = 1
R_X86_64_64, R_X86_64_PLT32 = 1, 4
EM_X86_64 = 62


class Fail(Exception):
    pass


class Elf:
    def __init__(self, data):
        self.data = bytearray(data)
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise Fail("not an ELF64 little-endian object")
        (self.e_type, self.e_machine, _, _, _, self.e_shoff, _, _, _, _, self.e_shentsize,
         self.e_shnum, self.e_shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
        if self.e_type != 1 or self.e_machine != EM_X86_64:
            raise Fail("not an x86-64 relocatable object")
        self.sh = [list(struct.unpack_from("<IIQQQQIIQQ", data, self.e_shoff + i * self.e_shentsize))
                   for i in range(self.e_shnum)]
        shstr = self.contents(self.e_shstrndx)
        self.names = [shstr[s[0]:shstr.index(b"\0", s[0])].decode() for s in self.sh]

    def contents(self, i):
        _, _, _, _, off, size = self.sh[i][:6]
        return bytes(self.data[off:off + size])

    def replace(self, i, new):
        """Appends `new` as section i's contents (8-aligned) and points the header at it."""
        self.data.extend(b"\0" * (-len(self.data) % 8))
        self.sh[i][4] = len(self.data)
        self.sh[i][5] = len(new)
        self.data.extend(new)

    def add_string(self, i, string):
        """Appends `string` to string table i (which may be both .strtab and .shstrtab)."""
        table = self.contents(i)
        self.replace(i, table + string.encode() + b"\0")
        return len(table)

    def add_rela(self, target, symtab):
        """Adds an empty `.rela<target name>` section for section `target`; returns its index."""
        name_off = self.add_string(self.e_shstrndx, f".rela{self.names[target]}")
        # SHF_INFO_LINK: sh_info names the section the relocations apply to.
        self.sh.append([name_off, SHT_RELA, 0x40, 0, 0, 0, symtab, target, 8, 24])
        self.names.append(f".rela{self.names[target]}")
        return len(self.sh) - 1

    def write_headers(self):
        """Writes the section header table at the end of the file and points the ELF header at it."""
        self.data.extend(b"\0" * (-len(self.data) % 8))
        self.e_shoff = len(self.data)
        for s in self.sh:
            self.data.extend(struct.pack("<IIQQQQIIQQ", *s))
        struct.pack_into("<Q", self.data, 40, self.e_shoff)
        struct.pack_into("<H", self.data, 60, len(self.sh))


def rewrite(data):
    elf = Elf(data)
    if any(s[1] == SHT_SYMTAB_SHNDX for s in elf.sh):
        raise Fail("objects with SHT_SYMTAB_SHNDX are not handled")
    symtab = next(i for i, s in enumerate(elf.sh) if s[1] == SHT_SYMTAB)
    strtab = elf.sh[symtab][6]
    syms = [list(struct.unpack_from("<IBBHQQ", elf.contents(symtab), o))
            for o in range(0, elf.sh[symtab][5], 24)]
    strs = elf.contents(strtab)

    def sym_name(s):
        return strs[s[0]:strs.index(b"\0", s[0])].decode()

    # Where LLVM put patchable entries: (section, offset) of each function's padding start.
    recorded = set()
    for i, name in enumerate(elf.names):
        if elf.sh[i][1] != SHT_RELA or name != ".rela__patchable_function_entries":
            continue
        rel = elf.contents(i)
        for o in range(0, len(rel), 24):
            _, info, addend = struct.unpack_from("<QQq", rel, o)
            sym = syms[info >> 32]
            if info & 0xffffffff != R_X86_64_64:
                raise Fail(f"unexpected relocation type {info & 0xffffffff} in {name}")
            recorded.add((sym[3], sym[4] + addend))

    # The entry NOP of every function: at its symbol, or past its ENDBR.
    sites = {}
    for s in syms:
        shndx = s[3]
        if s[1] & 0xf != STT_FUNC or not 0 < shndx < len(elf.sh) or not elf.sh[shndx][2] & SHF_EXECINSTR:
            continue
        text = elf.data[elf.sh[shndx][4]:elf.sh[shndx][4] + elf.sh[shndx][5]]
        off = s[4]
        if text[off:off + 4] == ENDBR64:
            off += 4
        if text[off:off + 5] == PATCHABLE_NOP5:
            sites[(shndx, off)] = sym_name(s)
    if not recorded:
        raise Fail("no __patchable_function_entries: was the object built with "
                   "-Zpatchable-function-entry=<pad+5>,<pad>?")
    pad = {off - start for (sec, off) in sites for (rsec, start) in recorded if rsec == sec and 0 <= off - start <= 64}
    missed = [r for r in recorded if not any(sec == r[0] and 0 <= off - r[1] <= 64 for (sec, off) in sites)]
    if missed or not pad:
        raise Fail(f"{len(missed)} patchable entries with no function entry NOP found "
                   f"(first at section {elf.names[missed[0][0]]} offset {missed[0][1]:#x})" if missed
                   else "no function entry NOP found")

    # `__fentry__`, undefined and global, appended after the locals.
    fentry = next((i for i, s in enumerate(syms) if sym_name(s) == "__fentry__"), None)
    if fentry is None:
        fentry = len(syms)
        syms.append([elf.add_string(strtab, "__fentry__"), STB_GLOBAL << 4, 0, 0, 0, 0])

    # `call __fentry__` at each site, one PLT32 relocation each.
    relas = {elf.sh[i][7]: i for i, s in enumerate(elf.sh) if s[1] == SHT_RELA and s[6] == symtab}
    added = {}
    for (shndx, off) in sorted(sites):
        if shndx not in relas:
            relas[shndx] = elf.add_rela(shndx, symtab)
        base = elf.sh[shndx][4]
        elf.data[base + off:base + off + 5] = CALL_REL32
        added.setdefault(relas[shndx], []).append(
            struct.pack("<QQq", off + 1, (fentry << 32) | R_X86_64_PLT32, -4))
    for i, entries in added.items():
        elf.replace(i, (elf.contents(i) if elf.sh[i][5] else b"") + b"".join(entries))
    elf.replace(symtab, b"".join(struct.pack("<IBBHQQ", *s) for s in syms))
    elf.write_headers()
    return bytes(elf.data), len(sites)


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        with open(argv[1], "rb") as f:
            out, _ = rewrite(f.read())
    except (Fail, OSError, struct.error, StopIteration) as e:
        print(f"fentry_sites.py: {argv[1]}: {e}", file=sys.stderr)
        return 1
    with open(argv[2], "wb") as f:
        f.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Give the functions of a Rust object on s390 the ftrace entry site C functions have.

usage: s390_mcount_sites.py IN.o OUT.o

C on s390 is built with -mfentry -mnop-mcount -mrecord-mcount: every function
starts with a 6-byte `brcl 0,0` that ftrace patches into a call when the
function is traced, and its address is listed in __mcount_loc. rustc 1.96 has
no such flags; the Kbuild file asks it for -Zpatchable-function-entry=3,0,
which puts three 2-byte `bcr 0,0` (nopr) at the same place and lists their
address in __patchable_function_entries. This tool writes each of those
three NOPs as one `brcl 0,0` and renames the list __mcount_loc, so that the
linker and ftrace take the Rust object as they take a C one.

Every entry listed must hold the three NOPs, or the tool fails, naming it.

Input: an ELF64 big-endian s390 relocatable object; only section contents,
one section name and that section's flags change, the file keeps its layout.
"""

import struct
import sys

NOPR3 = bytes.fromhex("070007000700")
BRCL_NOP = bytes.fromhex("c00400000000")
SECTION = b"__patchable_function_entries"
NEW_NAME = b"__mcount_loc"
SHT_RELA = 4
SHF_ALLOC = 0x2
EM_S390 = 22
R_390_64 = 22


def fail(msg):
    sys.exit(f"s390_mcount_sites.py: {msg}")


def main():
    if len(sys.argv) != 3:
        fail("usage: s390_mcount_sites.py IN.o OUT.o")
    data = bytearray(open(sys.argv[1], "rb").read())
    if data[:6] != b"\x7fELF\x02\x02" or struct.unpack_from(">H", data, 18)[0] != EM_S390:
        fail(f"{sys.argv[1]} is not an ELF64 big-endian s390 object")
    shoff, = struct.unpack_from(">Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from(">HHH", data, 0x3a)
    shdrs = [struct.unpack_from(">IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab_off = shdrs[shstrndx][4]

    def name_at(off):
        return bytes(data[off:data.index(b"\0", off)])

    names = [name_at(strtab_off + sh[0]) for sh in shdrs]
    entries = [i for i, n in enumerate(names) if n == SECTION]
    if not entries:
        fail(f"{sys.argv[1]} has no {SECTION.decode()} section: built without -Zpatchable-function-entry?")
    sites = 0
    for i, sh in enumerate(shdrs):
        if sh[1] != SHT_RELA or sh[7] not in entries:
            continue
        symtab = shdrs[sh[6]]
        for r in range(sh[5] // 24):
            _, info, addend = struct.unpack_from(">QQq", data, sh[4] + r * 24)
            if info & 0xffffffff != R_390_64:
                fail(f"relocation type {info & 0xffffffff} in {SECTION.decode()}, expected R_390_64")
            _, _, _, shndx, value, _ = struct.unpack_from(">IBBHQQ", data, symtab[4] + (info >> 32) * 24)
            off = shdrs[shndx][4] + value + addend
            if bytes(data[off:off + 6]) != NOPR3:
                fail(f"no three nopr at {names[shndx].decode()}+{value + addend:#x}: "
                     "built with another -Zpatchable-function-entry than 3,0?")
            data[off:off + 6] = BRCL_NOP
            sites += 1
    # The new name is shorter: written over the old one, in place (the name of the relocation
    # section, which ends with it, becomes .rela__mcount_loc). Flags as C's __mcount_loc:
    # allocated only, no longer writable or in link order with the text.
    for i in entries:
        off = strtab_off + shdrs[i][0]
        data[off:off + len(SECTION)] = NEW_NAME + b"\0" * (len(SECTION) - len(NEW_NAME))
        struct.pack_into(">Q", data, shoff + i * shentsize + 8, SHF_ALLOC)
        struct.pack_into(">I", data, shoff + i * shentsize + 40, 0)
    if not sites:
        fail(f"no entry listed in {SECTION.decode()}")
    open(sys.argv[2], "wb").write(data)


if __name__ == "__main__":
    main()

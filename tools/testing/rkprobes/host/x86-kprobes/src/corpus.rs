// SPDX-License-Identifier: GPL-2.0

//! A built-in kernel image for the differential when no vmlinux is at hand.
//!
//! Hand-written functions cover each decision (RIP-relative copies in and out of reach,
//! every jcc, loops with each counter width, indirect branches, refused and unsupported
//! instructions, 15-byte instructions, ENDBR, kCFI, exception-table and ftrace sites, jumps
//! into an optimized range, indirect jumps, the entry text), and a sweep puts every one- and
//! two-byte legacy opcode and every VEX map-1 opcode with several ModRM bytes and prefixes at
//! a function start.

use crate::image::Image;

/// Where the corpus text starts (the usual x86-64 kernel text address).
pub const BASE: u64 = 0xffff_ffff_8100_0000;

fn hand_written() -> Vec<(&'static str, Vec<u8>)> {
    let mut jcc = Vec::new();
    for cc in 0..16u8 {
        jcc.extend([0x70 | cc, 0x02]);
        jcc.extend([0x0f, 0x80 | cc, 0x10, 0x00, 0x00, 0x00]);
        jcc.extend([0x0f, 0x80 | cc, 0xf0, 0xff, 0xff, 0xff]);
    }
    vec![
        (
            "basic",
            vec![
                0xf3, 0x0f, 0x1e, 0xfa, // endbr64
                0x55, // push %rbp
                0x48, 0x89, 0xe5, // mov %rsp,%rbp
                0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00, // mov 0x100(%rip),%rax
                0x89, 0x05, 0x00, 0xfe, 0xff, 0xff, // mov %eax,-0x200(%rip)
                0x48, 0x8b, 0x05, 0x00, 0x00, 0x00, 0x80, // mov -2GiB(%rip),%rax: no reach
                0x83, 0xc0, 0x01, // add $1,%eax
                0xf0, 0x01, 0x07, // lock add %eax,(%rdi)
                0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, // movabs: 10 bytes, boost just fits
                0x48, 0xc7, 0x84, 0x24, 0, 1, 0, 0, 0x78, 0x56, 0x34, 0x12, // 12 bytes
                0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0,
                0,    // 15-byte NOP: no room for int3
                0x5d, // pop %rbp
                0xc3, // ret
            ],
        ),
        ("jcc", jcc),
        (
            "branches",
            vec![
                0xeb, 0x00, // jmp .+2
                0xe9, 0x00, 0x01, 0x00, 0x00, // jmp .+0x105
                0xe8, 0x00, 0x00, 0x00, 0x00, // call
                0xff, 0xd0, // call *%rax
                0x41, 0xff, 0xd3, // call *%r11
                0x41, 0xff, 0xe3, // jmp *%r11
                0xff, 0xe4, // jmp *%rsp
                0xff, 0xd4, // call *%rsp
                0xff, 0x10, // call *(%rax): unsupported
                0xff, 0x28, // ljmp *(%rax): unsupported
                0x67, 0xff, 0xd0, // addr32 call *%rax: unsupported
                0xff, 0xc0, // inc %eax
                0xfe, 0xc8, // dec %al
                0xfe, 0xd0, // (grp4 /2)
                0xd1, 0xf0, // shl /6 (AMD)
                0xf7, 0xc8, 0x01, 0, 0, 0, // test /1 (AMD)
                0xc2, 0x08, 0x00, // ret $8
                0xca, 0x08, 0x00, // lret $8
                0xcb, // lret
                0xc3, // ret
            ],
        ),
        (
            "loops",
            vec![
                0xe2, 0xfe, // loop
                0xe1, 0xfe, // loope
                0xe0, 0xfe, // loopne
                0xe3, 0x00, // jrcxz
                0x67, 0xe2, 0xfe, // addr32 loop
                0x67, 0xe1, 0x10, // addr32 loope
                0x67, 0xe0, 0x80, // addr32 loopne
                0x67, 0xe3, 0x7f, // jecxz
                0xfa, // cli
                0xfb, // sti
                0x9c, // pushf
                0x9d, // popf
                0x66, 0x9c, // pushfw
                0xc3,
            ],
        ),
        (
            "refused",
            vec![
                0x90, 0xcc, // int3
                0xcd, 0x03, // int $3
                0xf1, // int1
                0x0f, 0x0b, // ud2
                0x0f, 0xb9, 0x00, // ud1
                0x0f, 0xff, // ud0 (no ModRM in the opcode map)
                0xf4, // hlt
                0x8e, 0xd0, // mov %eax,%ss
                0x0f, 0x01, 0xc1, // vmcall: unsupported
                0x0f, 0x01, 0xca, // clac
                0x48, 0xcf, // iretq: unsupported
                0x0f, 0x0b, 0x78, 0x65, 0x6e, 0x0f, 0xa2, // Xen emulate prefix + cpuid
                0xc3,
            ],
        ),
        (
            "vex",
            vec![
                0xc5, 0xf9, 0x70, 0xc0, 0x01, // vpshufd $1,%xmm0,%xmm0
                0xc5, 0xf8, 0xc2, 0xc1, 0x00, // vcmpeqps %xmm1,%xmm0,%xmm0
                0xc5, 0xf9, 0xf1, 0xc1, // vpsllw %xmm1,%xmm0,%xmm0
                0xc5, 0xf8, 0x77, // vzeroupper
                0x62, 0xf1, 0x7d, 0x48, 0x70, 0xc0, 0x01, // vpshufd (EVEX)
                0xc3,
            ],
        ),
        (
            "kcfi",
            vec![
                0x41, 0xba, 0x78, 0x56, 0x34, 0x12, // mov $id,%r10d
                0x45, 0x03, 0x53, 0xfc, // add -4(%r11),%r10d
                0x74, 0x02, // je .+4
                0x0f, 0x0b, // ud2
                0x41, 0xff, 0xd3, // call *%r11
                0x44, 0x03, 0x50, 0xfc, // add -4(%rax),%r10d (not a check)
                0xba, 1, 2, 3, 4, // mov $imm,%edx (not a check)
                0xc3,
            ],
        ),
        (
            "extable",
            vec![
                0x55, // push %rbp
                0x48, 0x8b, 0x07, // mov (%rdi),%rax: exception-table site
                0x5d, 0xc3,
            ],
        ),
        (
            "ftrace",
            vec![
                0xe8, 0x00, 0x00, 0x00, 0x00, // call __fentry__: an ftrace site
                0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3,
            ],
        ),
        (
            "jump_into",
            vec![
                0x55, // push %rbp
                0x48, 0x89, 0xe5, // mov %rsp,%rbp
                0x48, 0x83, 0xc0, 0x01, // add $1,%rax
                0x75, 0xf7, // jne to +1
                0xe3, 0xf5, // jrcxz to +1
                0x0f, 0x84, 0xef, 0xff, 0xff, 0xff, // je to +1
                0xe8, 0xe9, 0xff, 0xff, 0xff, // call to +1 (not a jump)
                0x5d, 0xc3,
            ],
        ),
        (
            "indirect",
            vec![
                0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xc0, 0x01, //
                0xff, 0xe0, // jmp *%rax
                0x5d, 0xc3,
            ],
        ),
        (
            "entry",
            vec![0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x5d, 0xc3],
        ),
        ("short", vec![0x90, 0x90, 0xc3]),
    ]
}

/// Returns the built-in image: the hand-written functions and the opcode sweep.
pub fn image() -> Image {
    build(true)
}

/// Returns the hand-written functions alone.
pub fn hand_written_image() -> Image {
    build(false)
}

fn build(sweep: bool) -> Image {
    let mut text = Vec::new();
    let mut img = Image {
        base: BASE,
        ..Image::default()
    };
    let add = |img: &mut Image, text: &mut Vec<u8>, bytes: &[u8]| -> u64 {
        let start = BASE + text.len() as u64;
        text.extend_from_slice(bytes);
        while !text.len().is_multiple_of(16) {
            text.push(0xcc);
        }
        img.symbols.push((start, BASE + text.len() as u64 - start));
        start
    };
    for (name, bytes) in hand_written() {
        let start = add(&mut img, &mut text, &bytes);
        match name {
            "extable" => {
                img.extable.insert(start + 1);
            }
            // The lock prefix of `lock add %eax,(%rdi)`.
            "basic" => img.smp_locks.push(start + 0x1f),
            // The int3 is a kgdb breakpoint.
            "refused" => {
                img.kgdb_breaks.insert(start + 1);
            }
            "ftrace" => img.ftrace.push(start),
            "entry" => img.entry_text = (start, start + 16),
            _ => {}
        }
    }
    const MODRM: [u8; 8] = [0x05, 0xc0, 0xd0, 0xe0, 0xc8, 0xf0, 0x18, 0x28];
    const TAIL: [u8; 8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88];
    for op in (0..=255u8).filter(|_| sweep) {
        for modrm in MODRM {
            // Prefixes matter to boosting and to the address size, not to each ModRM.
            let prefixes: &[&[u8]] = if matches!(modrm, 0x05 | 0xc0 | 0xd0) {
                &[&[], &[0x67], &[0x2e], &[0x41], &[0x66]]
            } else {
                &[&[]]
            };
            for prefix in prefixes {
                let mut f = prefix.to_vec();
                f.extend([op, modrm]);
                f.extend(TAIL);
                add(&mut img, &mut text, &f);
            }
            let mut f = vec![0x0f, op, modrm];
            f.extend(TAIL);
            add(&mut img, &mut text, &f);
            let mut f = vec![0xc5, 0xf9, op, modrm];
            f.extend(TAIL);
            add(&mut img, &mut text, &f);
        }
    }
    img.text = text;
    img.ftrace.sort_unstable();
    img.find_cfi_traps();
    img
}

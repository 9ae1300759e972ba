// SPDX-License-Identifier: GPL-2.0

//! The C ABI of the Rust x86 instruction decoder, for the KUnit suite `rust_insn_decoder`.
//!
//! Constraints: built only with `CONFIG_KPROBES_RUST_INSN_KUNIT`; its one caller is the C KUnit
//! suite (`insn_decoder_kunit.c`), which runs in process context during boot. No allocation, no
//! locks and no panic path: the decoder is pure `core` code (see `insn_decoder/mod.rs`) and
//! these shims only copy its results into C-visible memory. The crate that includes this file
//! has the decoder at `crate::insn_decoder`: the kprobes crate (`kernel/kprobes/kprobes_rust.rs`)
//! when `CONFIG_KPROBES_RUST=y`, else the stand-alone `insn_decoder_rs.rs`.
//!
//! Three C entry points, declared for C in `insn_decoder_rs.h`, one per question the suite asks:
//! - [`rust_insn_decode`] decodes one instruction and flattens the result into
//!   [`RustInsn`], so the C side can compare it with upstream's `struct insn`;
//! - [`rust_insn_golden`] hands out the golden vectors (`golden.txt`, embedded at build time);
//! - [`rust_insn_golden_check`] runs one golden line through `golden::check_line`.

use core::ffi::c_int;

use crate::insn_decoder::{golden, BranchKind, Insn, Mode, OpcodeMap};

/// The golden vectors, the same file the host tests read.
///
/// `insn_decoder_golden.txt` is a link to `tools/testing/rkprobes/decoder/golden.txt`, which
/// the overlay copies into the tree as a plain file.
static GOLDEN: &str = include_str!("insn_decoder_golden.txt");

/// `EINVAL`, returned for a golden vector that does not hold.
const EINVAL: c_int = 22;

/// No relative branch (`struct rust_insn`'s `branch`).
pub const RUST_INSN_BRANCH_NONE: u8 = 0;
/// `jmp rel8`, `jmp rel32`.
pub const RUST_INSN_BRANCH_JMP: u8 = 1;
/// `call rel32`.
pub const RUST_INSN_BRANCH_CALL: u8 = 2;
/// `jcc`; `branch_cc` holds the condition code.
pub const RUST_INSN_BRANCH_JCC: u8 = 3;
/// `loop*` or `j*cxz`; `branch_cc` holds the low two opcode bits.
pub const RUST_INSN_BRANCH_LOOP: u8 = 4;

/// One instruction as the Rust decoder sees it, flattened for C.
///
/// The C mirror is `struct rust_insn` in `insn_decoder_rs.h`; the suite checks that the two
/// have the same size ([`rust_insn_size`]) and decodes a known instruction field by field, so a
/// layout drift fails the test. Fields are ordered so that there is no padding.
#[repr(C)]
pub struct RustInsn {
    /// 0, or the negative errno of a failed decode (`insn_decode()`'s convention).
    pub ret: i32,
    /// Length in bytes (`insn.length`).
    pub length: u8,
    /// Xen/KVM emulate prefix size (`insn.emulate_prefix_size`).
    pub emulate_prefix_size: u8,
    /// Legacy prefix bytes, repeats included (`insn.prefixes.nbytes`).
    pub prefix_nbytes: u8,
    /// REX (1) or REX2 (2) size (`insn.rex_prefix.nbytes`).
    pub rex_nbytes: u8,
    /// Distinct legacy prefixes, the last one in slot 3 (`insn.prefixes.bytes`).
    pub prefixes: [u8; 4],
    /// VEX/EVEX (or XOP) size (`insn.vex_prefix.nbytes`).
    pub vex_nbytes: u8,
    /// Opcode bytes, escapes included (`insn.opcode.nbytes`).
    pub opcode_nbytes: u8,
    /// REX or REX2 bytes (`insn.rex_prefix.bytes`).
    pub rex: [u8; 2],
    /// VEX/EVEX bytes as encoded, `vex_nbytes` of them (`insn.vex_prefix.bytes`).
    pub vex: [u8; 4],
    /// Opcode bytes (`insn.opcode.bytes`).
    pub opcode: [u8; 4],
    /// 1 if there is a ModRM byte (`insn.modrm.nbytes`).
    pub modrm_nbytes: u8,
    /// The ModRM byte, or 0.
    pub modrm: u8,
    /// 1 if there is a SIB byte (`insn.sib.nbytes`).
    pub sib_nbytes: u8,
    /// The SIB byte, or 0.
    pub sib: u8,
    /// Displacement size (`insn.displacement.nbytes`).
    pub disp_nbytes: u8,
    /// First immediate size (`insn.immediate1.nbytes`).
    pub imm1_nbytes: u8,
    /// Second immediate size (`insn.immediate2.nbytes`).
    pub imm2_nbytes: u8,
    /// Operand size in bytes (`insn.opnd_bytes`).
    pub opnd_bytes: u8,
    /// Displacement, sign-extended (`insn.displacement.value`).
    pub disp: i32,
    /// First immediate, sign-extended (`insn.immediate1.value`).
    pub imm1: i32,
    /// Second immediate (`insn.immediate2.value`).
    pub imm2: i32,
    /// Attribute word from the opcode tables (`insn.attr`).
    pub attr: u32,
    /// Address size in bytes (`insn.addr_bytes`).
    pub addr_bytes: u8,
    /// 1 if decoded as AMD XOP, which upstream's decoder reads as `POP Ev`.
    pub xop: u8,
    /// 1 if a memory operand is RIP-relative (`insn_rip_relative()`).
    pub rip_relative: u8,
    /// One of the `RUST_INSN_BRANCH_*` values (`Insn::branch`).
    pub branch: u8,
    /// Condition code of a `jcc`, or kind of a `loop`.
    pub branch_cc: u8,
    /// 1 if [`RustInsn::jump_target`] is set (`Insn::jump_target`: a branch but not a call).
    pub has_jump_target: u8,
    /// Reserved, 0.
    pub reserved: [u8; 2],
    /// The target of a RIP-relative operand, or 0 (`Insn::rip_relative_target`).
    pub rip_target: u64,
    /// The target of a relative branch, or 0 (`Insn::branch_target`).
    pub branch_target: u64,
    /// The target of a relative jump (not a call), or 0 (`Insn::jump_target`).
    pub jump_target: u64,
}

impl RustInsn {
    /// An empty result: no instruction, `ret` 0.
    const fn empty() -> Self {
        RustInsn {
            ret: 0,
            length: 0,
            emulate_prefix_size: 0,
            prefix_nbytes: 0,
            rex_nbytes: 0,
            prefixes: [0; 4],
            vex_nbytes: 0,
            opcode_nbytes: 0,
            rex: [0; 2],
            vex: [0; 4],
            opcode: [0; 4],
            modrm_nbytes: 0,
            modrm: 0,
            sib_nbytes: 0,
            sib: 0,
            disp_nbytes: 0,
            imm1_nbytes: 0,
            imm2_nbytes: 0,
            opnd_bytes: 0,
            disp: 0,
            imm1: 0,
            imm2: 0,
            attr: 0,
            addr_bytes: 0,
            xop: 0,
            rip_relative: 0,
            branch: RUST_INSN_BRANCH_NONE,
            branch_cc: 0,
            has_jump_target: 0,
            reserved: [0; 2],
            rip_target: 0,
            branch_target: 0,
            jump_target: 0,
        }
    }

    /// Flattens `insn`, decoded at address `addr`.
    fn from_insn(insn: &Insn, addr: u64) -> Self {
        let mut out = RustInsn::empty();
        // Every size below is at most MAX_INSN_SIZE (15), so the narrowing casts are exact.
        out.length = insn.len() as u8;
        out.emulate_prefix_size = insn.emulate_prefix_size() as u8;
        out.prefix_nbytes = insn.prefix_size() as u8;
        out.prefixes = insn.prefix_bytes();
        out.rex_nbytes = insn.rex().len() as u8;
        copy_bytes(&mut out.rex, insn.rex());
        out.vex_nbytes = insn.vex_size() as u8;
        copy_bytes(&mut out.vex, insn.vex());
        out.opcode_nbytes = insn.opcode_bytes().len() as u8;
        copy_bytes(&mut out.opcode, insn.opcode_bytes());
        if let Some(modrm) = insn.modrm() {
            out.modrm_nbytes = 1;
            out.modrm = modrm;
        }
        if let Some(sib) = insn.sib() {
            out.sib_nbytes = 1;
            out.sib = sib;
        }
        let (disp, imm1, imm2) = (insn.displacement(), insn.immediate(), insn.immediate2());
        (out.disp, out.disp_nbytes) = (disp.value, disp.size);
        (out.imm1, out.imm1_nbytes) = (imm1.value, imm1.size);
        (out.imm2, out.imm2_nbytes) = (imm2.value, imm2.size);
        out.attr = insn.attr();
        out.opnd_bytes = insn.operand_bytes();
        out.addr_bytes = insn.address_bytes();
        out.xop = u8::from(matches!(insn.opcode().0, OpcodeMap::Xop(_)));
        out.rip_relative = u8::from(insn.is_rip_relative());
        out.rip_target = insn.rip_relative_target(addr).unwrap_or(0);
        if let Some(branch) = insn.branch() {
            (out.branch, out.branch_cc) = match branch.kind {
                BranchKind::Jmp => (RUST_INSN_BRANCH_JMP, 0),
                BranchKind::Call => (RUST_INSN_BRANCH_CALL, 0),
                BranchKind::Jcc(cc) => (RUST_INSN_BRANCH_JCC, cc),
                BranchKind::Loop(kind) => (RUST_INSN_BRANCH_LOOP, kind),
            };
        }
        out.branch_target = insn.branch_target(addr).unwrap_or(0);
        if let Some(target) = insn.jump_target(addr) {
            out.has_jump_target = 1;
            out.jump_target = target;
        }
        out
    }
}

/// Copies `src` over the start of `dst`, as far as both reach, with no panic path.
fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    let mut src = src.iter();
    for to in dst.iter_mut() {
        match src.next() {
            Some(from) => *to = *from,
            None => break,
        }
    }
}

/// Returns the size of [`RustInsn`], for the C side's layout check.
#[no_mangle]
pub extern "C" fn rust_insn_size() -> usize {
    core::mem::size_of::<RustInsn>()
}

/// Decodes the 64-bit instruction at `buf` as if it were at address `addr`, into `*out`.
///
/// Reads at most `len` bytes (and at most 15). Returns `out->ret`: 0, or the negative errno
/// `insn_decode()` returns for the same bytes (`-ENODATA`, `-EINVAL`).
///
/// # Safety
///
/// `buf` must be valid for reads of `len` bytes and `out` valid for a write of one
/// [`RustInsn`], and neither may be written by anyone else during the call.
#[no_mangle]
pub unsafe extern "C" fn rust_insn_decode(
    buf: *const u8,
    len: usize,
    addr: u64,
    out: *mut RustInsn,
) -> c_int {
    // SAFETY: the caller guarantees `buf` is readable for `len` bytes and not written during
    // the call.
    let input = unsafe { core::slice::from_raw_parts(buf, len) };
    let result = match Insn::decode(input, Mode::KERNEL) {
        Ok(insn) => RustInsn::from_insn(&insn, addr),
        Err(err) => RustInsn {
            ret: err.to_errno(),
            ..RustInsn::empty()
        },
    };
    let ret = result.ret;
    // SAFETY: the caller guarantees `out` is valid for a write of one `RustInsn`.
    unsafe { out.write(result) };
    ret
}

/// Returns the embedded golden-vector file and stores its length in `*len`.
///
/// The text is not NUL-terminated and lives as long as the kernel.
///
/// # Safety
///
/// `len` must be valid for a write of one `usize`.
#[no_mangle]
pub unsafe extern "C" fn rust_insn_golden(len: *mut usize) -> *const u8 {
    // SAFETY: the caller guarantees `len` is valid for a write.
    unsafe { len.write(GOLDEN.len()) };
    GOLDEN.as_ptr()
}

/// Checks one golden-vector line of `len` bytes at `line` with `golden::check_line`.
///
/// Returns 1 for a vector that holds, 0 for a comment or blank line, and `-EINVAL` for a
/// vector that does not hold (or a line that is not UTF-8); then `*why` and `*why_len` name
/// the first property that disagrees (static text, not NUL-terminated).
///
/// # Safety
///
/// `line` must be valid for reads of `len` bytes and not written during the call; `why` and
/// `why_len` must be valid for a write each.
#[no_mangle]
pub unsafe extern "C" fn rust_insn_golden_check(
    line: *const u8,
    len: usize,
    why: *mut *const u8,
    why_len: *mut usize,
) -> c_int {
    // SAFETY: the caller guarantees `line` is readable for `len` bytes and not written during
    // the call.
    let bytes = unsafe { core::slice::from_raw_parts(line, len) };
    let reason = match core::str::from_utf8(bytes) {
        Ok(text) => match golden::check_line(text) {
            Ok(vector) => return c_int::from(vector),
            Err(golden::Mismatch(reason)) => reason,
        },
        Err(_) => "the line is not UTF-8",
    };
    // SAFETY: the caller guarantees `why` and `why_len` are valid for writes; `reason` is a
    // `&'static str`, so the pointer stays valid after the call.
    unsafe {
        why.write(reason.as_ptr());
        why_len.write(reason.len());
    }
    -EINVAL
}

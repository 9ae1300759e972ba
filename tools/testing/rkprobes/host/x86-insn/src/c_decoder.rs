// SPDX-License-Identifier: GPL-2.0

//! Bindings to the kernel's C x86 decoder built for the host by `build.rs`.
//!
//! Only compiled with `cfg(rkprobes_c_decoder)`, which `build.rs` sets when it could build
//! `csrc/insn_c_shim.c` against the Linux tree.

use core::ffi::{c_int, c_uchar, c_uint};

/// `struct rk_c_insn` of `csrc/insn_c_shim.c`: the C decoder's `struct insn`, flattened.
#[repr(C)]
#[derive(Default, Debug)]
pub struct CInsn {
    /// `insn_decode()`'s return value.
    pub ret: c_int,
    /// `insn.length`.
    pub length: c_int,
    /// `insn.emulate_prefix_size`.
    pub emulate_prefix_size: c_int,
    /// `insn.prefixes.nbytes`.
    pub prefix_nbytes: c_int,
    /// `insn.prefixes.bytes`.
    pub prefixes: [c_uchar; 4],
    /// `insn.rex_prefix.nbytes`.
    pub rex_nbytes: c_int,
    /// `insn.vex_prefix.nbytes`.
    pub vex_nbytes: c_int,
    /// `insn.opcode.bytes`.
    pub opcode: [c_uchar; 4],
    /// `insn.opcode.nbytes`.
    pub opcode_nbytes: c_int,
    /// `insn.modrm.nbytes`.
    pub modrm_nbytes: c_int,
    /// `insn.modrm.bytes[0]`.
    pub modrm: c_int,
    /// `insn.sib.nbytes`.
    pub sib_nbytes: c_int,
    /// `insn.sib.bytes[0]`.
    pub sib: c_int,
    /// `insn.displacement.nbytes`.
    pub disp_nbytes: c_int,
    /// `insn.displacement.value`.
    pub disp: c_int,
    /// `insn.immediate1.nbytes`.
    pub imm1_nbytes: c_int,
    /// `insn.immediate1.value`.
    pub imm1: c_int,
    /// `insn.immediate2.nbytes`.
    pub imm2_nbytes: c_int,
    /// `insn.immediate2.value`.
    pub imm2: c_int,
    /// `insn.attr`.
    pub attr: c_uint,
    /// `insn.opnd_bytes`.
    pub opnd_bytes: c_int,
    /// `insn.addr_bytes`.
    pub addr_bytes: c_int,
    /// `insn_rip_relative()`.
    pub rip_relative: c_int,
}

#[link(name = "rkprobes_insn_c", kind = "static")]
extern "C" {
    fn rk_c_insn_decode(buf: *const c_uchar, len: c_int, x86_64: c_int, out: *mut CInsn) -> c_int;
    fn rk_c_insn_length(buf: *const c_uchar, len: c_int, x86_64: c_int) -> c_int;
    fn rk_c_inat_primary(opcode: c_uchar) -> c_uint;
    fn rk_c_inat_escape(opcode: c_uchar, lpfx_id: c_int, esc_attr: c_uint) -> c_uint;
    fn rk_c_inat_group(modrm: c_uchar, lpfx_id: c_int, grp_attr: c_uint) -> c_uint;
    fn rk_c_inat_avx(opcode: c_uchar, vex_m: c_uchar, vex_p: c_uchar) -> c_uint;
}

fn c_len(buf: &[u8]) -> c_int {
    // The C decoder caps the length at MAX_INSN_SIZE itself; cap here so it fits c_int.
    buf.len().min(16) as c_int
}

/// Decodes `buf` with the C decoder.
pub fn decode(buf: &[u8], x86_64: bool) -> CInsn {
    let mut out = CInsn::default();
    // SAFETY: `buf` is valid for reads of `c_len(buf)` bytes, the most the C decoder reads;
    // `out` is a valid, exclusive `struct rk_c_insn` for the duration of the call.
    unsafe { rk_c_insn_decode(buf.as_ptr(), c_len(buf), c_int::from(x86_64), &mut out) };
    out
}

/// Returns the C decoder's length for the instruction at `buf`, or a negative errno.
pub fn length(buf: &[u8], x86_64: bool) -> c_int {
    // SAFETY: `buf` is valid for reads of `c_len(buf)` bytes, the most the C decoder reads.
    unsafe { rk_c_insn_length(buf.as_ptr(), c_len(buf), c_int::from(x86_64)) }
}

/// `inat_get_opcode_attribute()`.
pub fn inat_primary(opcode: u8) -> u32 {
    // SAFETY: a pure table lookup with no pointer arguments.
    unsafe { rk_c_inat_primary(opcode) }
}

/// `inat_get_escape_attribute()`.
pub fn inat_escape(opcode: u8, lpfx_id: u32, esc_attr: u32) -> u32 {
    // SAFETY: a pure table lookup. The C code indexes its tables with `lpfx_id`, masked here
    // to 0..=3 (the tables' second dimension), and with bit fields of `esc_attr` that it masks.
    unsafe { rk_c_inat_escape(opcode, (lpfx_id & 3) as c_int, esc_attr) }
}

/// `inat_get_group_attribute()`.
pub fn inat_group(modrm: u8, lpfx_id: u32, grp_attr: u32) -> u32 {
    // SAFETY: as for `inat_escape`: `lpfx_id` is masked to 0..=3 here and the C code masks
    // the fields of `grp_attr` and `modrm` it indexes with.
    unsafe { rk_c_inat_group(modrm, (lpfx_id & 3) as c_int, grp_attr) }
}

/// `inat_get_avx_attribute()`.
pub fn inat_avx(opcode: u8, vex_m: u8, vex_p: u8) -> u32 {
    // SAFETY: a pure table lookup; the C code bounds-checks `vex_m` and `vex_p`.
    unsafe { rk_c_inat_avx(opcode, vex_m, vex_p) }
}

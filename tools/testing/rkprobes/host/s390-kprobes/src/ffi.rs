// SPDX-License-Identifier: GPL-2.0

//! Calls into upstream's C (built by `build.rs`).
//!
//! The C reads the text where s390 has it: the shim maps the image at its kernel address.
//! The shim's state is process-wide, so every run holds [`lock`].

use std::sync::{Mutex, MutexGuard};

/// What the shim's `rk_prepare()` reports of `arch_prepare_kprobe()` (`struct rk_prepared`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CPrepared {
    /// `p->opcode` after (0x5a5a before).
    pub opcode: u16,
    /// Whether `p->ainsn.insn` was set.
    pub has_slot: i32,
    /// How often `is_known_insn()` was asked.
    pub known_asked: i32,
    /// The first halfword it was asked about.
    pub known_insn: u16,
    /// Writes outside the slot.
    pub stray: i32,
    /// The slot after (0x5a5a where not written).
    pub slot: [u16; 4],
}

/// A probe hit's state before and after one of upstream's handlers (`struct rk_hit`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CHit {
    /// `p->addr`.
    pub addr: u64,
    /// The PSW mask (updated).
    pub psw_mask: u64,
    /// The PSW address (updated).
    pub psw_addr: u64,
    /// `kcb->kprobe_status` before.
    pub status: u64,
    /// `kcb->kprobe_saved_imask` before.
    pub saved_imask: u64,
    /// `kcb->prev_kprobe.status` before.
    pub prev_status: u64,
    /// The fixup of the exception table entry.
    pub extable_fixup: u64,
    /// The registers (updated).
    pub gprs: [u64; 16],
    /// The slot's halfwords.
    pub slot: [u16; 3],
    /// `current_kprobe`: 0 none, 1 the probe, 2 another.
    pub current: i32,
    /// Whether `kcb->prev_kprobe.kp` is set.
    pub prev: i32,
    /// Whether `get_kprobe()` finds the probe at the breakpoint.
    pub found: i32,
    /// Whether the probe has a pre handler.
    pub has_pre: i32,
    /// What the pre handler returns.
    pub pre_ret: i32,
    /// Whether the probe has a post handler.
    pub has_post: i32,
    /// Whether `fixup_exception()` finds an entry.
    pub extable_hit: i32,
    /// The slot's address (out).
    pub slot_addr: u64,
    /// `kcb->kprobe_status` after.
    pub status_after: u64,
    /// `kcb->kprobe_saved_imask` after.
    pub saved_imask_after: u64,
    /// `kcb->prev_kprobe.status` after.
    pub prev_status_after: u64,
    /// `nmissed` added.
    pub nmissed: u64,
    /// `current_kprobe` after: 0 none, 1 the probe, 2 the other, 3 the previous one.
    pub current_after: i32,
    /// `kcb->prev_kprobe.kp` after, numbered as `current_after`.
    pub prev_after: i32,
    /// `BUG()`s.
    pub bugs: i32,
    /// Pre handler calls.
    pub pre_calls: i32,
    /// Post handler calls.
    pub post_calls: i32,
    /// The preemption count's change.
    pub preempt: i32,
    /// Control register saves (`enable_singlestep()`).
    pub ctl_stores: i32,
    /// The handler's return value.
    pub ret: i32,
}

#[cfg(rkprobes_c_s390)]
mod c {
    use super::{CHit, CPrepared};
    extern "C" {
        pub fn rk_map_text(base: u64, text: *const u16, len: u64) -> i32;
        pub fn rk_map_slot(at: u64) -> u64;
        pub fn rk_insn_length(code: u8) -> i32;
        pub fn rk_mcount_insn_size() -> u64;
        pub fn rk_prohibited(insn: *const u16, asked: *mut i32) -> i32;
        pub fn rk_known(insn: *const u16) -> i32;
        pub fn rk_opcode_offsets(
            opc: *mut u8,
            mask: *mut u8,
            byte: *mut u8,
            count: *mut u16,
            max: i32,
        ) -> i32;
        pub fn rk_fixup_type(insn: *const u16) -> i32;
        pub fn rk_relative_long(insn0: u16) -> i32;
        pub fn rk_prepare(
            kaddr: u64,
            sym_found: i32,
            sym_offset: u64,
            probe_seed: u64,
            slot: u64,
            out: *mut CPrepared,
        ) -> i32;
        pub fn rk_hit(which: i32, h: *mut CHit) -> i32;
        pub fn rk_resume(
            addr: u64,
            insn: *const u16,
            saved_imask: u64,
            psw_mask: *mut u64,
            psw_addr: *mut u64,
            gprs: *mut u64,
        );
    }
}

/// Whether upstream's C was built.
pub const AVAILABLE: bool = cfg!(rkprobes_c_s390);

static LOCK: Mutex<()> = Mutex::new(());

/// Serialises the users of the shim's process-wide state.
pub fn lock() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(rkprobes_c_s390)]
/// Maps `halfwords` at `base` for the C (under [`lock`]).
pub fn map_text(base: u64, halfwords: &[u16]) -> Result<(), String> {
    // SAFETY: the shim maps fresh memory at `base` (refusing when anything is mapped there)
    // and copies `halfwords`, a live slice of the given length, into it.
    let r = unsafe { c::rk_map_text(base, halfwords.as_ptr(), 2 * halfwords.len() as u64) };
    if r == 0 {
        Ok(())
    } else {
        Err(format!("cannot map the text at {base:#x}"))
    }
}

#[cfg(rkprobes_c_s390)]
/// Maps the slot page of `resume_execution()` at `at` once; its address, or an error.
pub fn map_slot(at: u64) -> Result<u64, String> {
    static SLOT: Mutex<Option<u64>> = Mutex::new(None);
    let mut s = SLOT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(a) = *s {
        return Ok(a);
    }
    // SAFETY: the shim maps a fresh page at `at`, refusing when anything is mapped there.
    let a = unsafe { c::rk_map_slot(at) };
    if a == 0 {
        return Err(format!("cannot map the slot page at {at:#x}"));
    }
    *s = Some(a);
    Ok(a)
}

#[cfg(rkprobes_c_s390)]
/// The opcode of the probe the shim's `get_kprobe()` has at `addr` with `seed`, if any.
pub fn probe_at(addr: u64, seed: u64) -> Option<u16> {
    let z = addr ^ seed;
    let z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    let h = z ^ (z >> 31);
    (h & 3 != 0).then_some((h >> 16) as u16)
}

#[cfg(rkprobes_c_s390)]
/// `MCOUNT_INSN_SIZE`.
pub fn mcount_insn_size() -> u64 {
    // SAFETY: a constant.
    unsafe { c::rk_mcount_insn_size() }
}

#[cfg(rkprobes_c_s390)]
/// `insn_length()`.
pub fn insn_length(code: u8) -> u64 {
    // SAFETY: a pure function of its argument.
    unsafe { c::rk_insn_length(code) as u64 }
}

#[cfg(rkprobes_c_s390)]
/// `probe_is_prohibited_opcode()`: its return value and how often it asked
/// `is_known_insn()`.
pub fn prohibited(insn: &[u16; 3]) -> (i32, i32) {
    let mut asked = 0;
    // SAFETY: `insn` has the three halfwords the shim copies; `asked` is a live local.
    let r = unsafe { c::rk_prohibited(insn.as_ptr(), &mut asked) };
    (r, asked)
}

#[cfg(rkprobes_c_s390)]
/// `is_known_insn()` of the instruction whose halfwords are `insn`.
pub fn known(insn: &[u16; 3]) -> bool {
    // SAFETY: `insn` has the three halfwords the shim reads.
    unsafe { c::rk_known(insn.as_ptr()) != 0 }
}

#[cfg(rkprobes_c_s390)]
/// Upstream's `opcode_offset[]`: each entry's opcode, mask, byte and count.
pub fn opcode_offsets() -> Vec<(u8, u8, u8, usize)> {
    const MAX: usize = 64;
    let (mut o, mut m, mut b, mut c) = ([0u8; MAX], [0u8; MAX], [0u8; MAX], [0u16; MAX]);
    // SAFETY: four live arrays of `MAX` entries, of which the shim fills at most `MAX`.
    let n = unsafe {
        c::rk_opcode_offsets(
            o.as_mut_ptr(),
            m.as_mut_ptr(),
            b.as_mut_ptr(),
            c.as_mut_ptr(),
            MAX as i32,
        )
    };
    let n = (n.max(0) as usize).min(MAX);
    (0..n).map(|i| (o[i], m[i], b[i], c[i] as usize)).collect()
}

#[cfg(rkprobes_c_s390)]
/// `probe_get_fixup_type()`.
pub fn fixup_type(insn: &[u16; 3]) -> u32 {
    // SAFETY: `insn` has the three halfwords the shim copies.
    unsafe { c::rk_fixup_type(insn.as_ptr()) as u32 }
}

#[cfg(rkprobes_c_s390)]
/// `probe_is_insn_relative_long()`.
pub fn relative_long(insn0: u16) -> bool {
    // SAFETY: a pure function of its argument.
    unsafe { c::rk_relative_long(insn0) != 0 }
}

#[cfg(rkprobes_c_s390)]
/// `arch_prepare_kprobe()` at `kaddr` in the mapped text: its return value and what it did.
pub fn prepare(
    kaddr: u64,
    offset: Option<u64>,
    probe_seed: u64,
    slot: Option<u64>,
) -> (i32, CPrepared) {
    let mut out = CPrepared::default();
    // SAFETY: the caller holds the lock with the text mapped; `kaddr`'s instruction and the
    // halfwords from its symbol's start are in it (the harness only asks about sites with
    // the longest instruction's room after them); `out` is a live local.
    let r = unsafe {
        c::rk_prepare(
            kaddr,
            offset.is_some() as i32,
            offset.unwrap_or(0),
            probe_seed,
            slot.unwrap_or(0),
            &mut out,
        )
    };
    (r, out)
}

#[cfg(rkprobes_c_s390)]
/// `resume_execution()` of the probe at `addr` whose slot (the mapped slot page) holds
/// `insn`, with `saved_imask` in the control block: the PSW mask, address and registers after.
pub fn resume(
    addr: u64,
    insn: &[u16; 3],
    saved_imask: u64,
    psw: (u64, u64),
    gprs: [u64; 16],
) -> (u64, u64, [u64; 16]) {
    let (mut mask, mut pa, mut g) = (psw.0, psw.1, gprs);
    // SAFETY: the slot page is mapped ([`map_slot`]) and the caller holds the lock; the other
    // pointers are to live locals (`g` has the 16 registers).
    unsafe {
        c::rk_resume(
            addr,
            insn.as_ptr(),
            saved_imask,
            &mut mask,
            &mut pa,
            g.as_mut_ptr(),
        )
    };
    (mask, pa, g)
}

#[cfg(rkprobes_c_s390)]
/// Which of upstream's handlers [`hit`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handler {
    /// `kprobe_handler()`.
    Trap = 0,
    /// `post_kprobe_handler()`.
    Post = 1,
    /// `kprobe_trap_handler()`.
    Fault = 2,
}

#[cfg(rkprobes_c_s390)]
/// Runs the handler `which` on the state `h` (the outputs filled in), with the slot page
/// mapped ([`map_slot`]) and the lock held.
pub fn hit(which: Handler, h: &mut CHit) {
    // SAFETY: `h` is a live `struct rk_hit`; the handlers compute with `p->addr` and read the
    // mapped slot page, which the caller mapped.
    let r = unsafe { c::rk_hit(which as i32, h) };
    assert_eq!(r, 0, "the slot page is not mapped");
}

// SPDX-License-Identifier: GPL-2.0

//! Calls into upstream's C (built by `build.rs`).
//!
//! `arch_prepare_kprobe()` reads the image's words through a pointer to the image's buffer;
//! what the C logs (`printk()`, `WARN()`, `BUG()`) is recorded by the shim and read back here.

use crate::image::Image;
use crate::kprobes::PpcInst;
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    static IMAGE: RefCell<Option<(Arc<Image>, Vec<u32>)>> = const { RefCell::new(None) };
}

/// The largest `PAGE_SIZE` tried: the host copy of the text has the kernel address's
/// offset in such a page, as the C computes the page offset from the host pointer.
const PAGE_ALIGN: usize = 0x1_0000;

/// A copy of `img`'s words whose first word `at` sits where the kernel's would in a
/// [`PAGE_ALIGN`] page: the buffer and the index of the first word.
fn page_aligned_copy(img: &Image) -> (Vec<u32>, usize) {
    let mut buf = vec![0u32; img.words.len() + PAGE_ALIGN / 4];
    let want = (img.base as usize) % PAGE_ALIGN;
    let have = buf.as_ptr() as usize % PAGE_ALIGN;
    let at = (want + PAGE_ALIGN - have) % PAGE_ALIGN / 4;
    buf[at..at + img.words.len()].copy_from_slice(&img.words);
    (buf, at)
}

/// The words of the shim's template and detour buffers (`RK_TEMPLATE_MAX`).
pub const TEMPLATE_MAX: usize = 256;

/// What the shim's `rk_prepare()` reports of `arch_prepare_kprobe()` (`struct rk_prepared`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CPrepared {
    /// `p->opcode` after (the shim's poison when not written).
    pub opcode: u32,
    /// Whether `p->ainsn.insn` was set.
    pub has_slot: i32,
    /// The slot's words after (poison where not written).
    pub slot: [u32; 2],
    /// `p->ainsn.boostable` after (7 before).
    pub boostable: i32,
    /// The address `get_kprobe()` was asked about, or 0.
    pub asked: u64,
}

/// What the shim's `rk_prepare_optimized()` is given and reports (`struct rk_opt`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COpt {
    /// `p->addr`.
    pub addr: u64,
    /// `&arch_rethook_trampoline`.
    pub rethook: u64,
    /// The `nip` `emulate_update_regs()` leaves.
    pub analyse_nip: u64,
    /// What `get_optinsn_slot()` returns (0: none).
    pub slot: u64,
    /// `ppc_kallsyms_lookup_name("optimized_callback")`.
    pub callback: u64,
    /// `ppc_kallsyms_lookup_name("emulate_step")`.
    pub emulate: u64,
    /// The slot's instruction, first word.
    pub insn_val: u32,
    /// The slot's instruction, second word.
    pub insn_suffix: u32,
    /// What `analyse_instr()` returns.
    pub analyse_ret: i32,
    /// The `struct optimized_kprobe` address the C used.
    pub op: u64,
    /// `op->optinsn.insn` after.
    pub insn_after: u64,
    /// The slot `free_optinsn_slot()` freed, or 0.
    pub freed: u64,
    /// `flush_icache_range()`'s start, or 0.
    pub flush_start: u64,
    /// `flush_icache_range()`'s end, or 0.
    pub flush_end: u64,
    /// The frame `analyse_instr()` saw: `nip`.
    pub analysed_nip: u64,
    /// Its `msr`.
    pub analysed_msr: u64,
    /// Its `trap`.
    pub analysed_trap: u64,
    /// The other fields it saw, or-ed together.
    pub analysed_other: u64,
    /// The instruction it saw (`ppc_inst_as_ulong()`).
    pub analysed_insn: u64,
    /// How often `analyse_instr()` was called.
    pub analysed: i32,
    /// `free_optinsn_slot()`'s `dirty` (-1 if not called).
    pub freed_dirty: i32,
    /// `WARN()`s that fired.
    pub warns: i32,
    /// `patch_instruction()` calls outside the slot and the detour.
    pub stray: i32,
    /// The detour after (poison where not written).
    pub detour: [u32; TEMPLATE_MAX],
}

impl COpt {
    /// A scenario with everything else zero.
    pub fn new(addr: u64, insn: PpcInst) -> Self {
        COpt {
            addr,
            rethook: 0,
            analyse_nip: 0,
            slot: 0,
            callback: 0,
            emulate: 0,
            insn_val: insn.val,
            insn_suffix: insn.suffix,
            analyse_ret: 0,
            op: 0,
            insn_after: 0,
            freed: 0,
            flush_start: 0,
            flush_end: 0,
            analysed_nip: 0,
            analysed_msr: 0,
            analysed_trap: 0,
            analysed_other: 0,
            analysed_insn: 0,
            analysed: 0,
            freed_dirty: 0,
            warns: 0,
            stray: 0,
            detour: [0; TEMPLATE_MAX],
        }
    }
}

/// A probe hit's state before and after one of upstream's handlers (`struct rk_hit`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CHit {
    /// `p->addr`.
    pub addr: u64,
    /// `regs->msr` before.
    pub msr: u64,
    /// `regs->nip` before.
    pub nip: u64,
    /// `kcb->kprobe_saved_msr` before.
    pub saved_msr: u64,
    /// `kcb->kprobe_status` before.
    pub status: u64,
    /// `kcb->prev_kprobe.status`.
    pub prev_status: u64,
    /// `kcb->prev_kprobe.saved_msr`.
    pub prev_saved_msr: u64,
    /// The slot's two words.
    pub slot: [u32; 2],
    /// Whether the probe is `current_kprobe` (and registered at `nip`).
    pub current: i32,
    /// Whether `kcb->prev_kprobe.kp` is set.
    pub prev: i32,
    /// Whether the probe has a post handler.
    pub has_post: i32,
    /// Whether `get_kernel_nofault()` succeeds.
    pub nofault_ok: i32,
    /// Whether the exception tables have an entry for `nip`.
    pub extable_hit: i32,
    /// `kprobe_fault_handler()`'s `trapnr`.
    pub trapnr: i32,
    /// What `get_kernel_nofault()` reads.
    pub nofault_word: u32,
    /// The fixup of the exception table entry.
    pub extable_fixup: u64,
    /// The slot's address (out).
    pub slot_addr: u64,
    /// `regs->msr` after.
    pub msr_after: u64,
    /// `regs->nip` after.
    pub nip_after: u64,
    /// `kcb->kprobe_saved_msr` after.
    pub saved_msr_after: u64,
    /// `kcb->kprobe_status` after.
    pub status_after: u64,
    /// `current_kprobe` after: 0 none, 1 the probe, 2 the previous one, 3 or 4 another.
    pub current_after: i32,
    /// Calls of the post handler.
    pub post_calls: i32,
    /// The preemption count's change.
    pub preempt: i32,
    /// The handler's return value.
    pub ret: i32,
    /// `nmissed` added.
    pub nmissed: u64,
}

#[cfg(rkprobes_c_ppc64)]
mod c {
    use super::{CHit, COpt, CPrepared};
    use std::ffi::c_char;
    extern "C" {
        pub fn rk_set_page_size(size: u64);
        pub fn rk_set_text(host: *const u8, base: u64);
        pub fn rk_take_notes(out: *mut *const c_char) -> i32;
        pub fn rk_can_single_step(w: u32) -> i32;
        pub fn rk_is_trap(w: u32) -> i32;
        pub fn rk_breakpoint() -> u32;
        pub fn rk_is_conditional_branch(val: u32, suffix: u32) -> i32;
        pub fn rk_is_offset_in_branch_range(offset: i64) -> i32;
        pub fn rk_create_branch(addr: u64, target: u64, flags: i32, instr: *mut u32) -> i32;
        pub fn rk_function_entry(kaddr: u64) -> u64;
        pub fn rk_adjust_addr(addr: u64, offset: u64, on_entry: *mut i32) -> u64;
        pub fn rk_prepare(
            kaddr: u64,
            prev: i32,
            prev_word: u32,
            no_slot: i32,
            out: *mut CPrepared,
        ) -> i32;
        pub fn rk_try_to_emulate(
            boostable: *mut i32,
            emulate_ret: i32,
            val: u32,
            suffix: u32,
            bugs: *mut i32,
            emulated: *mut u64,
        ) -> i32;
        pub fn rk_set_template(
            words: *const u32,
            n: i64,
            op: i64,
            call: i64,
            insn: i64,
            emulate: i64,
            ret: i64,
        ) -> i32;
        pub fn rk_prepare_optimized(o: *mut COpt) -> i32;
        pub fn rk_within_optimized(kp_addr: u64, addr: u64) -> i32;
        pub fn rk_on_func_entry(offset: u64) -> i32;
        pub fn rk_mcount_insn_size() -> u64;
        pub fn rk_hit(which: i32, h: *mut CHit) -> i32;
    }
}

/// Whether upstream's C was built.
pub const AVAILABLE: bool = cfg!(rkprobes_c_ppc64);

/// Makes `image` the text the C reads on this thread.
pub fn install(image: Arc<Image>) {
    assert!(image.base.is_multiple_of(4), "the text starts on a word");
    let (copy, at) = page_aligned_copy(&image);
    #[cfg(rkprobes_c_ppc64)]
    // SAFETY: `copy[at..]` holds the image's words; the thread-local keeps `copy` (whose heap
    // buffer does not move when the vector does) until the next `install`, and the C only
    // reads it, through calls made while it is installed.
    unsafe {
        c::rk_set_text(copy[at..].as_ptr().cast(), image.base)
    };
    #[cfg(not(rkprobes_c_ppc64))]
    let _ = at;
    IMAGE.with(|e| *e.borrow_mut() = Some((image, copy)));
}

#[cfg(rkprobes_c_ppc64)]
/// What the C logged since the last call: how many lines, and the first format strings.
pub fn take_notes() -> (i32, Vec<String>) {
    let mut out = [std::ptr::null::<std::ffi::c_char>(); 4];
    // SAFETY: `out` has the four entries the shim writes; each is NULL or one of upstream's
    // string literals.
    unsafe {
        let n = c::rk_take_notes(out.as_mut_ptr());
        let v = out
            .iter()
            .filter(|p| !p.is_null())
            .map(|&p| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
            .collect();
        (n, v)
    }
}

#[cfg(rkprobes_c_ppc64)]
/// Sets the C's `PAGE_SIZE`.
pub fn set_page_size(size: u64) {
    // SAFETY: sets the shim's thread-local `PAGE_SIZE`.
    unsafe { c::rk_set_page_size(size) }
}

#[cfg(rkprobes_c_ppc64)]
/// `can_single_step()`, `is_trap()`.
pub fn word_predicates(w: u32) -> (bool, bool) {
    // SAFETY: pure functions of their argument.
    unsafe { (c::rk_can_single_step(w) != 0, c::rk_is_trap(w) != 0) }
}

#[cfg(rkprobes_c_ppc64)]
/// `MCOUNT_INSN_SIZE`.
pub fn mcount_insn_size() -> u64 {
    // SAFETY: a constant.
    unsafe { c::rk_mcount_insn_size() }
}

#[cfg(rkprobes_c_ppc64)]
/// `BREAKPOINT_INSTRUCTION`.
pub fn breakpoint() -> u32 {
    // SAFETY: a constant.
    unsafe { c::rk_breakpoint() }
}

#[cfg(rkprobes_c_ppc64)]
/// `is_conditional_branch()`.
pub fn is_conditional_branch(i: PpcInst) -> bool {
    // SAFETY: a pure function of its arguments.
    unsafe { c::rk_is_conditional_branch(i.val, i.suffix) != 0 }
}

#[cfg(rkprobes_c_ppc64)]
/// `is_offset_in_branch_range()`.
pub fn is_offset_in_branch_range(offset: i64) -> bool {
    // SAFETY: a pure function of its argument.
    unsafe { c::rk_is_offset_in_branch_range(offset) != 0 }
}

#[cfg(rkprobes_c_ppc64)]
/// `create_branch()`: its return value and the instruction it left.
pub fn create_branch(addr: u64, target: u64, flags: i32) -> (i32, u32) {
    let mut instr = 0u32;
    // SAFETY: `addr` is only computed with; `instr` is a live local.
    let rc = unsafe { c::rk_create_branch(addr, target, flags, &mut instr) };
    (rc, instr)
}

#[cfg(rkprobes_c_ppc64)]
/// `ppc_function_entry()` of the function at `kaddr`, a word of the installed image with a
/// word after it.
pub fn function_entry(kaddr: u64) -> u64 {
    assert_in_image(kaddr, 8);
    // SAFETY: the two words the C reads are in the installed image (checked above).
    unsafe { c::rk_function_entry(kaddr) }
}

#[cfg(rkprobes_c_ppc64)]
/// `arch_adjust_kprobe_addr()`: the address and what it stored in `*on_func_entry`.
pub fn adjust_addr(addr: u64, offset: u64) -> (u64, bool) {
    let mut e = 0;
    // SAFETY: only computes with its arguments; `e` is a live local.
    let r = unsafe { c::rk_adjust_addr(addr, offset, &mut e) };
    (r, e != 0)
}

#[cfg(rkprobes_c_ppc64)]
/// `arch_prepare_kprobe()` at `kaddr` (a word of the installed image or 1-3 bytes into one,
/// with two words after it and, unless at the start of a page, one before), with a previous
/// probe (`prev`: 0 none, 1 with a slot holding `prev_word`, 2 on ftrace) and, when
/// `no_slot`, no free slot: its return value, what it did, and what it logged.
pub fn prepare(
    kaddr: u64,
    prev: i32,
    prev_word: u32,
    no_slot: bool,
) -> (i32, CPrepared, (i32, Vec<String>)) {
    assert_in_image(kaddr.wrapping_sub(4) & !3, 16);
    take_notes();
    let mut out = CPrepared::default();
    // SAFETY: the words the C reads (`kaddr - 4` to `kaddr + 8`) are in the installed image
    // (checked above); `out` is a live local.
    let r = unsafe { c::rk_prepare(kaddr, prev, prev_word, no_slot as i32, &mut out) };
    (r, out, take_notes())
}

#[cfg(rkprobes_c_ppc64)]
/// `try_to_emulate()` with `boostable` and `emulate_step()` returning `emulate_ret` on the
/// slot instruction `insn`: its return value, the new boostable, the `BUG()`s, and the
/// instruction `emulate_step()` was given.
pub fn try_to_emulate(boostable: i32, emulate_ret: i32, insn: PpcInst) -> (i32, i32, i32, u64) {
    let (mut b, mut bugs, mut emulated) = (boostable, 0, 0);
    take_notes();
    // SAFETY: out-pointers to live locals.
    let r = unsafe {
        c::rk_try_to_emulate(
            &mut b,
            emulate_ret,
            insn.val,
            insn.suffix,
            &mut bugs,
            &mut emulated,
        )
    };
    (r, b, bugs, emulated)
}

#[cfg(rkprobes_c_ppc64)]
/// Sets the C's detour template: its words and the labels' indices.
pub fn set_template(
    words: &[u32],
    op: usize,
    call: usize,
    insn: usize,
    emulate: usize,
    ret: usize,
) {
    assert!(words.len() <= TEMPLATE_MAX);
    // SAFETY: `words` is a live slice of at most `RK_TEMPLATE_MAX` words, copied by the shim.
    let r = unsafe {
        c::rk_set_template(
            words.as_ptr(),
            words.len() as i64,
            op as i64,
            call as i64,
            insn as i64,
            emulate as i64,
            ret as i64,
        )
    };
    assert_eq!(r, 0);
}

#[cfg(rkprobes_c_ppc64)]
/// `arch_prepare_optimized_kprobe()` on the scenario `o`: its return value; `o` holds what
/// it did.
pub fn prepare_optimized(o: &mut COpt) -> i32 {
    // SAFETY: `o` is a live `struct rk_opt`; the C only computes with the kernel addresses in
    // it and writes the detour through the shim's `patch_instruction()`.
    unsafe { c::rk_prepare_optimized(o) }
}

#[cfg(rkprobes_c_ppc64)]
/// `arch_within_optimized_kprobe()`.
pub fn within_optimized(kp_addr: u64, addr: u64) -> bool {
    // SAFETY: only compares the addresses.
    unsafe { c::rk_within_optimized(kp_addr, addr) != 0 }
}

#[cfg(rkprobes_c_ppc64)]
/// `arch_kprobe_on_func_entry()` (built with kprobes on ftrace).
pub fn on_func_entry(offset: u64) -> bool {
    // SAFETY: a pure function of its argument.
    unsafe { c::rk_on_func_entry(offset) != 0 }
}

#[cfg(rkprobes_c_ppc64)]
fn assert_in_image(kaddr: u64, len: u64) {
    let ok = IMAGE.with(|e| {
        e.borrow()
            .as_ref()
            .is_some_and(|(img, _)| kaddr >= img.base && kaddr + len <= img.end())
    });
    assert!(ok, "{kaddr:#x}+{len} is not in the installed image");
}

#[cfg(rkprobes_c_ppc64)]
/// Which of upstream's handlers [`hit`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handler {
    /// `kprobe_handler()`.
    Trap = 0,
    /// `kprobe_post_handler()`.
    Post = 1,
    /// `kprobe_fault_handler()`.
    Fault = 2,
}

#[cfg(rkprobes_c_ppc64)]
/// Runs the handler `which` on the state `h` (the outputs filled in).
pub fn hit(which: Handler, h: &mut CHit) {
    // SAFETY: `h` is a live `struct rk_hit`; the handlers only compute with `p->addr` and read
    // the shim's own slot.
    let r = unsafe { c::rk_hit(which as i32, h) };
    assert_eq!(r, 0);
}

#[cfg(rkprobes_c_ppc64)]
/// The address of the slot the shim's handlers step (a thread-local of the shim).
pub fn hit_slot_addr() -> u64 {
    let mut h = CHit::default();
    // SAFETY: as in [`hit`]; an unknown handler only fills in the slot's address.
    unsafe { c::rk_hit(-1, &mut h) };
    h.slot_addr
}

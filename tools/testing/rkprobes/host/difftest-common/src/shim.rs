// SPDX-License-Identifier: GPL-2.0

//! The shape of the answers of upstream's C through the arm64 and riscv shims
//! (`csrc/*_c_shim.c`).

/// The C's `enum probe_insn` (0 rejected, 1 `INSN_GOOD_NO_SLOT`, 2 `INSN_GOOD`) and handler
/// number (0 none, then as in `simulate-insn.h`, from 1).
pub type Verdict = (i32, i32);

/// The C's verdict with the handler kept only where it means something (`INSN_GOOD_NO_SLOT`).
pub fn c_verdict((r, h): Verdict) -> Verdict {
    (r, if r == 1 { h } else { 0 })
}

/// What the C's `arch_prepare_kprobe()` did, with the slot as `S` (its words or bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CPrepared<S> {
    /// Its return value.
    pub ret: i32,
    /// `p->opcode`.
    pub opcode: u32,
    /// `p->ainsn.api.handler` as a number.
    pub handler: i32,
    /// Whether `p->ainsn.api.insn` was set.
    pub has_slot: bool,
    /// The slot.
    pub slot: S,
    /// `p->ainsn.api.restore`, as a kernel address.
    pub restore: u64,
}

impl<S: Default> CPrepared<S> {
    /// Calls `prepare` (the shim's `rk_prepare()`) with zeroed out-values for `p->opcode`, the
    /// handler, whether a slot was taken, the slot and `api.restore`; what it returned and
    /// wrote.
    pub fn from_c(
        prepare: impl FnOnce(&mut u32, &mut i32, &mut i32, &mut S, &mut u64) -> i32,
    ) -> Self {
        let (mut opcode, mut handler, mut has_slot, mut slot, mut restore) =
            (0, 0, 0, S::default(), 0);
        let ret = prepare(
            &mut opcode,
            &mut handler,
            &mut has_slot,
            &mut slot,
            &mut restore,
        );
        CPrepared {
            ret,
            opcode,
            handler,
            has_slot: has_slot != 0,
            slot,
            restore,
        }
    }
}

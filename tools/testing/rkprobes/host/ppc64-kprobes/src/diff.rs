// SPDX-License-Identifier: GPL-2.0

//! The differential: the Rust decisions against upstream's C, site by site.

use crate::ffi;
#[cfg(rkprobes_c_ppc64)]
use crate::image::random_word;
use crate::image::Image;
use crate::kprobes::Refusal;
#[cfg(rkprobes_c_ppc64)]
use crate::kprobes::{
    arch_kprobe_on_func_entry, can_optimize, errno, insn, optimize_branch, prepare_kprobe,
    prepare_optimized_kprobe, try_to_emulate, within_optimized_kprobe, AnalyseInstr, Emulation,
    KernelText, OptProbe, PpcInst, Template, BREAKPOINT_INSTRUCTION,
};
#[cfg(rkprobes_c_ppc64)]
use crate::kprobes::{
    fault_resume, msr_without_singlestep, post_step_resume, stray_trap, trap_may_be_kprobe,
    StrayTrap, MSR_DR, MSR_IR, MSR_PR, MSR_SINGLESTEP,
};
#[cfg(rkprobes_c_ppc64)]
use crate::rng::Rng;
use rkprobes_difftest_common::upstream::NOT_BUILT;
#[cfg(rkprobes_c_ppc64)]
use std::cell::Cell;
use std::sync::Arc;

pub use rkprobes_difftest_common::report::Report;

/// What to compare.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Optprobe scenarios per site whose probe `arch_prepare_kprobe()` accepts.
    pub opt_scenarios: usize,
    /// Seed of the scenarios.
    pub seed: u64,
    /// Mismatches kept in [`Report::shown`].
    pub show: usize,
    /// A negative control: the Rust side is not told about the probe at the previous word.
    pub skew_prev: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            opt_scenarios: 2,
            seed: 0x0070_7063_3634,
            show: 20,
            skew_prev: false,
        }
    }
}

/// `PAGE_SIZE` of the pseries kernel (`CONFIG_PPC_64K_PAGES`, Book3S-64's default).
pub const PAGE_SIZE_64K: u64 = 0x1_0000;
/// The 4 KiB `PAGE_SIZE` (`CONFIG_PPC_4K_PAGES`).
pub const PAGE_SIZE_4K: u64 = 0x1000;

/// What `can_optimize()` hands `analyse_instr()`'s frame as its MSR (`MSR_KERNEL` of the
/// shim's `rk_kernel.h`).
pub const SHIM_MSR_KERNEL: u64 = 0x9000_0000_0000_1033;

/// A distinctive part of the line upstream's `arch_prepare_kprobe()` prints for `r`.
pub fn refusal_note(r: Refusal) -> Option<&'static str> {
    match r {
        Refusal::Unaligned => Some("unaligned address"),
        Refusal::CannotSingleStep => Some("can't be single stepped"),
        Refusal::SecondWordOfPrefixed => Some("second word of prefixed instruction"),
        Refusal::Unreadable => None,
    }
}

/// Compares everything at every site of `img`.
pub fn run(img: Arc<Image>, opts: &Options) -> Result<Report, String> {
    if !ffi::AVAILABLE {
        return Err(NOT_BUILT.into());
    }
    ffi::install(img.clone());
    #[cfg_attr(not(rkprobes_c_ppc64), allow(unused_mut))]
    let mut rep = Report::new(img.name.clone());
    #[cfg(rkprobes_c_ppc64)]
    {
        let mut rng = Rng::new(opts.seed);
        let starts: std::collections::HashSet<u64> =
            img.functions.iter().map(|&(s, _)| s).collect();
        for a in img.sites() {
            compare_site(&img, a, starts.contains(&a), opts, &mut rng, &mut rep);
        }
    }
    #[cfg(not(rkprobes_c_ppc64))]
    let _ = opts;
    Ok(rep)
}

/// Collects the differences of one site.
#[cfg(rkprobes_c_ppc64)]
struct Site<'a> {
    rep: &'a mut Report,
    diffs: Vec<String>,
}

#[cfg(rkprobes_c_ppc64)]
impl Site<'_> {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        self.rep.checks += 1;
        if !ok {
            self.diffs.push(what());
        }
    }
}

#[cfg(rkprobes_c_ppc64)]
fn compare_site(img: &Image, a: u64, start: bool, opts: &Options, rng: &mut Rng, rep: &mut Report) {
    let Some(w) = img.read_word(a) else { return };
    let Some(inst) = img.read_inst(a) else { return };
    rep.sites += 1;
    let mut s = Site {
        rep,
        diffs: Vec::new(),
    };

    // The word's predicates.
    let (c_step, c_trap) = ffi::word_predicates(w);
    let (r_step, r_trap) = (insn::can_single_step(w), insn::is_trap(w));
    s.check((r_step, r_trap) == (c_step, c_trap), || {
        format!(
            "can_single_step/is_trap: Rust {:?}, C {:?}",
            (r_step, r_trap),
            (c_step, c_trap)
        )
    });
    let (r_cb, c_cb) = (
        insn::is_conditional_branch(inst),
        ffi::is_conditional_branch(inst),
    );
    s.check(r_cb == c_cb, || {
        format!("is_conditional_branch: Rust {r_cb}, C {c_cb}")
    });
    if start || rng.below(8) == 0 {
        let next = img.read_word(a + 4).unwrap_or_default();
        let (r, c) = (insn::ppc_function_entry(a, w, next), ffi::function_entry(a));
        s.check(r == c, || {
            format!("ppc_function_entry: Rust {r:#x}, C {c:#x}")
        });
    }

    // arch_prepare_kprobe(), aligned and now and then 1-3 bytes off, with a previous probe
    // now and then, on 64K or 4K pages.
    let mut addrs = vec![a];
    if rng.below(16) == 0 {
        addrs.push(a + 1 + rng.below(3));
    }
    let mut accepted = None;
    for &pa in &addrs {
        let page = if rng.below(2) == 0 {
            PAGE_SIZE_64K
        } else {
            PAGE_SIZE_4K
        };
        let (prev, prev_word) = match rng.below(10) {
            0 => (2, 0),
            1 | 2 => (
                1,
                if rng.below(2) == 0 {
                    (insn::OP_PREFIX << 26) | (rng.next_u32() & 0x03ff_ffff)
                } else {
                    random_word(rng)
                },
            ),
            _ => (0, 0),
        };
        let no_slot = rng.below(32) == 0;
        let prev_slot = (prev == 1 && !opts.skew_prev).then_some(prev_word);
        ffi::set_page_size(page);
        let r = prepare_kprobe(img, pa, page, prev_slot);
        let (cret, c, (nnotes, notes)) = ffi::prepare(pa, prev, prev_word, no_slot);
        let mut want_notes: Vec<&str> = Vec::new();
        let same = match r {
            Err(refused) => {
                want_notes.extend(refused.first.and_then(refusal_note));
                if refused.prev_probe_prefixed {
                    want_notes.push("second word of prefixed instruction");
                }
                cret == refused.errno() && c.has_slot == 0 && c.opcode == 0x5a5a_5a5a
            }
            Ok(p) => {
                let (words, n) = p.insn.words();
                let slot_ok =
                    (0..2).all(|i| c.slot[i] == if i < n { words[i] } else { 0x5a5a_5a5a });
                if no_slot {
                    cret == errno::ENOMEM && c.has_slot == 0 && c.opcode == 0x5a5a_5a5a
                } else {
                    cret == 0 && c.has_slot != 0 && c.opcode == p.opcode() && slot_ok
                }
            }
        };
        let notes_ok = nnotes as usize == want_notes.len()
            && notes.iter().zip(&want_notes).all(|(c, w)| c.contains(w));
        s.check(same && notes_ok && c.boostable == 0 && c.asked == pa.wrapping_sub(4), || {
            format!(
                "arch_prepare_kprobe({pa:#x}, page {page:#x}, prev {prev} {prev_word:#010x}, no_slot {no_slot}): Rust {r:?}, C {cret} {c:x?} notes {nnotes} {notes:?}"
            )
        });
        s.rep.count(match r {
            Err(e) => format!(
                "prepare refused: {:?}{}{}",
                e.first,
                if e.prev_probe_prefixed {
                    ", previous probe prefixed"
                } else {
                    ""
                },
                if pa % 4 != 0 { " (misaligned)" } else { "" }
            ),
            Ok(_) if no_slot => "prepare: no slot".to_string(),
            Ok(p) if p.insn.prefixed() => "prepare ok: prefixed".to_string(),
            Ok(_) => "prepare ok".to_string(),
        });
        if let (Ok(p), false) = (r, no_slot) {
            accepted = Some(p.insn);
        }
    }

    // try_to_emulate(), from each state, for each kind of emulate_step() answer.
    for boostable in [0, 1, -1] {
        let ret = [1, 0, -1, 2, -14][rng.below(5) as usize];
        let (r_what, r_boost) = try_to_emulate(boostable, ret);
        let (c_ret, c_boost, c_bugs, c_insn) = ffi::try_to_emulate(boostable, ret, inst);
        let (_, c_notes) = ffi::take_notes();
        let r_bug = r_what == Emulation::Bug;
        s.check(
            c_ret == ret
                && c_boost == r_boost
                && (c_bugs == 1) == r_bug
                && (c_notes.len() == 1) == r_bug
                && c_insn == inst.as_ulong(),
            || {
                format!("try_to_emulate(boostable {boostable}, emulate_step {ret}): Rust {r_what:?} {r_boost}, C {c_ret} {c_boost} bugs {c_bugs} insn {c_insn:#x}")
            },
        );
    }

    // Optprobes, and the handlers, for an accepted probe.
    if let Some(slot_insn) = accepted {
        for _ in 0..opts.opt_scenarios {
            compare_optprobe(a, slot_insn, rng, &mut s);
        }
        compare_handlers(a, slot_insn, rng, &mut s);
    } else {
        compare_stray_trap(a, w, rng, &mut s);
    }

    // Branches at this address, to its neighbourhood and the branch-range edges.
    let target = near(a, rng);
    let flags = rng.below(4) as i32;
    let (c_rc, c_instr) = ffi::create_branch(a, target, flags);
    let r = insn::create_branch(a, target, flags as u32);
    s.check(
        r == (c_rc == 0).then_some(c_instr) && (c_rc == 0 || c_instr == 0),
        || {
            format!(
                "create_branch({a:#x}, {target:#x}, {flags}): Rust {r:x?}, C {c_rc} {c_instr:#x}"
            )
        },
    );
    let off = target.wrapping_sub(a) as i64;
    let (r, c) = (
        insn::is_offset_in_branch_range(off),
        ffi::is_offset_in_branch_range(off),
    );
    s.check(r == c, || {
        format!("is_offset_in_branch_range({off:#x}): Rust {r}, C {c}")
    });

    let what = || format!("{a:#x} {w:#010x}");
    let diffs = std::mem::take(&mut s.diffs);
    rep.finish_site(what, diffs, opts.show);
}

/// `kprobe_status` values.
#[cfg(rkprobes_c_ppc64)]
const KPROBE_HIT_ACTIVE: u64 = 1;
#[cfg(rkprobes_c_ppc64)]
const KPROBE_HIT_SS: u64 = 2;
#[cfg(rkprobes_c_ppc64)]
const KPROBE_REENTER: u64 = 4;
#[cfg(rkprobes_c_ppc64)]
const KPROBE_HIT_SSDONE: u64 = 8;

/// A random MSR for a hit: kernel mode with relocation on mostly, now and then user mode or
/// real mode; single-step on or off.
#[cfg(rkprobes_c_ppc64)]
fn hit_msr(rng: &mut Rng) -> u64 {
    let mut msr = (rng.next_u64() & !(MSR_PR | MSR_SINGLESTEP)) | MSR_IR | MSR_DR;
    match rng.below(16) {
        0 => msr |= MSR_PR,
        1 => msr &= !MSR_IR,
        2 => msr &= !MSR_DR,
        _ => {}
    }
    if rng.below(2) == 0 {
        msr |= MSR_SINGLESTEP;
    }
    msr
}

/// What a handler left, as the comparison sees it: return value, `nip`, MSR,
/// `current_kprobe` (0 none, 1 the probe, 2 the previous one), status, saved MSR, post
/// handler calls, preemption count change.
#[cfg(rkprobes_c_ppc64)]
type HitOutcome = (i32, u64, u64, i32, u64, u64, i32, i32);

#[cfg(rkprobes_c_ppc64)]
fn c_outcome(h: &ffi::CHit) -> HitOutcome {
    (
        h.ret,
        h.nip_after,
        h.msr_after,
        h.current_after,
        h.status_after,
        h.saved_msr_after,
        h.post_calls,
        h.preempt,
    )
}

/// `kprobe_handler()` at a word with no probe (or, for a probe in the middle of its step,
/// at a trap in the slot) against [`trap_may_be_kprobe`], [`stray_trap`] and
/// [`msr_without_singlestep`].
#[cfg(rkprobes_c_ppc64)]
fn compare_stray_trap(a: u64, w: u32, rng: &mut Rng, s: &mut Site<'_>) {
    let mut h = ffi::CHit {
        addr: a,
        nip: a,
        msr: hit_msr(rng),
        nofault_ok: (rng.below(8) != 0) as i32,
        nofault_word: match rng.below(4) {
            0 => BREAKPOINT_INSTRUCTION,
            1 => w,
            _ => random_word(rng),
        },
        saved_msr: rng.next_u64() & 0xffff,
        ..ffi::CHit::default()
    };
    // One time in four: the probe at nip is the one stepping, and the slot holds a trap.
    let stepping = rng.below(4) == 0;
    if stepping {
        h.current = 1;
        h.status = KPROBE_HIT_SS;
        h.slot = [
            [BREAKPOINT_INSTRUCTION, 0x7c83_2808, 0x0883_0010][rng.below(3) as usize],
            0,
        ];
    }
    let before = h;
    ffi::hit(ffi::Handler::Trap, &mut h);
    let unchanged = (
        0,
        before.nip,
        before.msr,
        before.current,
        before.status,
        before.saved_msr,
        0,
        0,
    );
    let want: HitOutcome = if !trap_may_be_kprobe(before.msr) {
        unchanged
    } else if stepping {
        (
            0,
            before.nip,
            msr_without_singlestep(before.msr, before.saved_msr),
            1,
            before.status,
            before.saved_msr,
            0,
            0,
        )
    } else {
        let word = (before.nofault_ok != 0).then_some(before.nofault_word);
        let ret = match stray_trap(word) {
            StrayTrap::NotOurs => 0,
            StrayTrap::Removed => 1,
        };
        (
            ret,
            before.nip,
            before.msr,
            0,
            before.status,
            before.saved_msr,
            0,
            0,
        )
    };
    let got = c_outcome(&h);
    s.check(got == want, || {
        format!("kprobe_handler({before:x?}): Rust {want:x?}, C {got:x?}")
    });
    s.rep.count(if !trap_may_be_kprobe(before.msr) {
        "kprobe_handler: user or real mode"
    } else if stepping {
        "kprobe_handler: trap in the slot during the step"
    } else if want.0 == 1 {
        "kprobe_handler: breakpoint gone"
    } else {
        "kprobe_handler: not ours"
    });
}

/// `kprobe_post_handler()` and `kprobe_fault_handler()` for a probe whose slot holds `insn`,
/// against [`post_step_resume`] and [`fault_resume`].
#[cfg(rkprobes_c_ppc64)]
fn compare_handlers(a: u64, insn: PpcInst, rng: &mut Rng, s: &mut Site<'_>) {
    let slot_addr = ffi::hit_slot_addr();
    let statuses = [
        KPROBE_HIT_SS,
        KPROBE_REENTER,
        KPROBE_HIT_ACTIVE,
        KPROBE_HIT_SSDONE,
        0,
    ];
    let slot_words = if rng.below(8) == 0 {
        [random_word(rng), rng.next_u32()]
    } else {
        [insn.val, insn.suffix]
    };
    let stepped = if insn::get_op(slot_words[0]) == insn::OP_PREFIX {
        PpcInst::prefix(slot_words[0], slot_words[1])
    } else {
        PpcInst::word(slot_words[0])
    };
    let base = ffi::CHit {
        addr: a,
        msr: hit_msr(rng),
        nip: match rng.below(8) {
            0 => slot_addr + 4,
            1 => slot_addr + 8,
            2 => rng.next_u64(),
            _ => slot_addr + stepped.inst_len(),
        },
        saved_msr: if rng.below(2) == 0 { MSR_SINGLESTEP } else { 0 }
            | (rng.next_u64() & 0x8000_0000_0000_f033),
        status: statuses[rng.below(statuses.len() as u64) as usize],
        prev_status: statuses[rng.below(statuses.len() as u64) as usize],
        prev_saved_msr: rng.next_u64() & 0xffff,
        slot: slot_words,
        current: (rng.below(16) != 0) as i32,
        has_post: (rng.below(4) != 0) as i32,
        extable_hit: rng.below(2) as i32,
        extable_fixup: rng.next_u64() & !3,
        trapnr: 0x300,
        ..ffi::CHit::default()
    };
    let mut base = base;
    base.prev = (base.status == KPROBE_REENTER || rng.below(4) == 0) as i32;
    let restore = |b: &ffi::CHit| -> (i32, u64, u64) {
        if b.status == KPROBE_REENTER {
            (
                if b.prev != 0 { 2 } else { 0 },
                b.prev_status,
                b.prev_saved_msr,
            )
        } else {
            (0, b.status, b.saved_msr)
        }
    };

    // kprobe_post_handler().
    let b = base;
    let mut h = b;
    ffi::hit(ffi::Handler::Post, &mut h);
    let unchanged: HitOutcome = (0, b.nip, b.msr, b.current, b.status, b.saved_msr, 0, 0);
    let want = if b.current == 0 || b.msr & MSR_PR != 0 {
        unchanged
    } else {
        match post_step_resume(stepped, slot_addr, b.nip, a) {
            None => unchanged,
            Some(nip) => {
                let post = (b.status != KPROBE_REENTER && b.has_post != 0) as i32;
                let status = if post != 0 {
                    KPROBE_HIT_SSDONE
                } else {
                    b.status
                };
                let msr = b.msr | b.saved_msr;
                let (current, status, saved) = restore(&ffi::CHit { status, ..b });
                let ret = if msr & MSR_SINGLESTEP != 0 { 0 } else { 1 };
                (ret, nip, msr, current, status, saved, post, -1)
            }
        }
    };
    let got = c_outcome(&h);
    s.check(got == want, || {
        format!("kprobe_post_handler({b:x?}): Rust {want:x?}, C {got:x?}")
    });
    s.rep.count(match want {
        (_, _, _, _, _, _, _, 0) => "kprobe_post_handler: not our step",
        (1, ..) => "kprobe_post_handler: resumed",
        _ => "kprobe_post_handler: resumed, someone else single-steps",
    });

    // kprobe_fault_handler(), the probe current whenever it is stepping.
    let mut b = base;
    if matches!(b.status, KPROBE_HIT_SS | KPROBE_REENTER) {
        b.current = 1;
    }
    let mut h = b;
    ffi::hit(ffi::Handler::Fault, &mut h);
    let unchanged: HitOutcome = (0, b.nip, b.msr, b.current, b.status, b.saved_msr, 0, 0);
    let want = match b.status {
        KPROBE_HIT_SS | KPROBE_REENTER => {
            let (nip, msr) = fault_resume(a, b.msr, b.saved_msr);
            let (current, status, saved) = restore(&b);
            (0, nip, msr, current, status, saved, 0, -1)
        }
        KPROBE_HIT_ACTIVE | KPROBE_HIT_SSDONE if b.extable_hit != 0 => (
            1,
            b.extable_fixup,
            b.msr,
            b.current,
            b.status,
            b.saved_msr,
            0,
            0,
        ),
        _ => unchanged,
    };
    let got = c_outcome(&h);
    s.check(got == want, || {
        format!("kprobe_fault_handler({b:x?}): Rust {want:x?}, C {got:x?}")
    });
}

/// An address near `a`: often at or around the edges of the I-form branch range
/// (-32 MiB, +32 MiB - 4), sometimes misaligned, sometimes anywhere.
#[cfg(rkprobes_c_ppc64)]
fn near(a: u64, rng: &mut Rng) -> u64 {
    let edge: i64 = match rng.below(6) {
        0 => -0x200_0000,
        1 => 0x1ff_fffc,
        2 => 0x200_0000,
        3 => -0x200_0004,
        _ => (rng.next_u64() % 0x400_0000) as i64 - 0x200_0000,
    };
    let jitter = match rng.below(8) {
        0 => rng.below(3) as i64 + 1,
        1 => -4,
        2 => 4,
        _ => 0,
    };
    if rng.below(32) == 0 {
        return rng.next_u64();
    }
    a.wrapping_add_signed(edge & !3).wrapping_add_signed(jitter)
}

/// The analysis both sides get: the same answer, and whether (and how) it was asked.
#[cfg(rkprobes_c_ppc64)]
struct Analysis {
    ret: i32,
    nip: u64,
    asked: Cell<Option<(PpcInst, u64)>>,
}

#[cfg(rkprobes_c_ppc64)]
impl AnalyseInstr for Analysis {
    fn emulated_nip(&self, insn: PpcInst, nip: u64) -> Option<u64> {
        self.asked.set(Some((insn, nip)));
        (self.ret == 1).then_some(self.nip)
    }
}

/// Template layouts: the labels' word indices (`op`, `call`, `insn`, `emulate`, `ret`,
/// `end`); the first is the shape of ppc64's `optprobes_head.S`.
#[cfg(rkprobes_c_ppc64)]
const LAYOUTS: [[usize; 6]; 3] = [
    [55, 61, 63, 68, 81, 82],
    [0, 5, 6, 11, 12, 13],
    [10, 20, 30, 40, 50, 200],
];

#[cfg(rkprobes_c_ppc64)]
fn compare_optprobe(a: u64, slot_insn: PpcInst, rng: &mut Rng, s: &mut Site<'_>) {
    let [op_i, call_i, insn_i, emu_i, ret_i, end] = LAYOUTS[rng.below(3) as usize];
    // No prefix in the template: upstream copies it with patch_instruction(), which would
    // write a word with primary opcode 1 as a prefixed instruction (8 bytes); the real
    // template (optprobes_head.S) has none.
    let words: Vec<u32> = (0..end)
        .map(|_| match random_word(rng) {
            w if insn::get_op(w) == insn::OP_PREFIX => 0x6000_0000,
            w => w,
        })
        .collect();
    ffi::set_template(&words, op_i, call_i, insn_i, emu_i, ret_i);
    let tmpl = Template::new(op_i, call_i, insn_i, emu_i, ret_i, end).expect("a valid layout");

    // Where the probe is: kernel text, now and then a module or the rethook trampoline.
    let addr = match rng.below(16) {
        0 => a & 0x0fff_ffff_ffff_fffc,
        _ => a,
    };
    let rethook = if rng.below(16) == 0 {
        addr
    } else {
        0xc000_0000_0000_2000
    };
    let slot = if rng.below(32) == 0 {
        0
    } else {
        near(addr, rng)
    };
    let ret_at = slot.wrapping_add(4 * ret_i as u64);
    let nip = match rng.below(8) {
        0 => 0,
        1 | 2 => near(ret_at, rng),
        3 => addr.wrapping_add(slot_insn.inst_len()),
        4 => rng.next_u64(),
        _ => addr.wrapping_add(4),
    };
    let analysis = Analysis {
        ret: [1, 1, 1, 0, -1, 2][rng.below(6) as usize],
        nip,
        asked: Cell::new(None),
    };
    let callback = match rng.below(32) {
        0 => 0,
        1 => near(slot, rng),
        _ => slot.wrapping_add_signed(((rng.next_u64() % 0x100_0000) as i64 - 0x80_0000) & !3),
    };
    let emulate = match rng.below(32) {
        0 => 0,
        1 => near(slot, rng),
        _ => slot.wrapping_add_signed(((rng.next_u64() % 0x100_0000) as i64 - 0x80_0000) & !3),
    };

    let mut c = ffi::COpt::new(addr, slot_insn);
    c.rethook = rethook;
    c.analyse_ret = analysis.ret;
    c.analyse_nip = nip;
    c.slot = slot;
    c.callback = callback;
    c.emulate = emulate;
    let cret = ffi::prepare_optimized(&mut c);
    let p = OptProbe {
        addr,
        insn: slot_insn,
        op: c.op,
    };
    let nz = |v: u64| (v != 0).then_some(v);
    let r = prepare_optimized_kprobe(
        &p,
        &tmpl,
        rethook,
        &analysis,
        nz(callback),
        nz(emulate),
        || nz(slot),
    );

    // can_optimize() asked analyse_instr() the same, from the frame the trait promises.
    let asked = analysis.asked.get();
    let c_asked = (c.analysed == 1).then_some(c.analysed_nip);
    s.check(
        asked.map(|(_, n)| n) == c_asked
            && c.analysed <= 1
            && (c.analysed == 0
                || (c.analysed_msr == SHIM_MSR_KERNEL
                    && c.analysed_trap == 0
                    && c.analysed_other == 0
                    && asked.is_some_and(|(i, _)| i.as_ulong() == c.analysed_insn))),
        || format!("analyse_instr: Rust asked {asked:x?}, C {} times at {:#x} msr {:#x} trap {} other {:#x} insn {:#x}", c.analysed, c.analysed_nip, c.analysed_msr, c.analysed_trap, c.analysed_other, c.analysed_insn),
    );
    let r_can = can_optimize(addr, slot_insn, rethook, &analysis).map(|n| n.get());
    let outcome = match &r {
        Ok(d) => {
            let mut want = words.clone();
            d.apply(&tmpl, &mut want);
            let detour_ok =
                c.detour[..end] == want[..] && c.detour[end..].iter().all(|&w| w == 0x5a5a_5a5a);
            s.check(
                cret == 0
                    && c.insn_after == slot
                    && c.freed == 0
                    && c.warns == 0
                    && c.stray == 0
                    && detour_ok
                    && c.flush_start == slot
                    && c.flush_end == slot.wrapping_add(4 * end as u64),
                || format!("arch_prepare_optimized_kprobe at {addr:#x}, slot {slot:#x}: Rust {d:x?}, C {cret}, freed {:#x}, warns {}, stray {}, detour {}", c.freed, c.warns, c.stray, if detour_ok { "same" } else { "differs" }),
            );
            let b = optimize_branch(addr, slot);
            let (brc, binstr) = ffi::create_branch(addr, slot, 0);
            s.check(b == (brc == 0).then_some(binstr), || {
                format!("optimize branch {addr:#x} -> {slot:#x}: Rust {b:x?}, C {brc} {binstr:#x}")
            });
            for x in [
                addr.wrapping_sub(1),
                addr,
                addr + 1,
                addr + 3,
                addr + 4,
                addr + 5,
            ] {
                let (rw, cw) = (
                    within_optimized_kprobe(addr, x),
                    ffi::within_optimized(addr, x),
                );
                s.check(rw == cw, || {
                    format!("arch_within_optimized_kprobe({addr:#x}, {x:#x}): Rust {rw}, C {cw}")
                });
            }
            if d.ret.is_none() {
                "optimized, return branch left unpatched (upstream)".to_string()
            } else {
                "optimized".to_string()
            }
        }
        Err(e) => {
            s.check(
                cret == e.errno()
                    && c.insn_after == 0
                    && c.freed == e.freed_slot().unwrap_or(0)
                    && (e.freed_slot().is_none() || c.freed_dirty == 0)
                    && c.warns == matches!(e, crate::kprobes::OptRefusal::NoSymbol { .. }) as i32
                    && c.stray == 0,
                || format!("arch_prepare_optimized_kprobe at {addr:#x}, slot {slot:#x}, nip {nip:#x} (can_optimize {r_can:x?}): Rust {e:x?}, C {cret}, freed {:#x}, warns {}", c.freed, c.warns),
            );
            match e {
                crate::kprobes::OptRefusal::CannotOptimize => "not optimized: can_optimize",
                crate::kprobes::OptRefusal::NoSlot => "not optimized: no slot",
                crate::kprobes::OptRefusal::OutOfRange { .. } => "not optimized: out of range",
                crate::kprobes::OptRefusal::NoSymbol { .. } => "not optimized: no symbol",
                crate::kprobes::OptRefusal::CallOutOfRange { .. } => {
                    "not optimized: call out of range"
                }
            }
            .to_string()
        }
    };
    s.rep.count(outcome);
}

/// Upstream's `BREAKPOINT_INSTRUCTION` and `MCOUNT_INSN_SIZE` against the Rust ones, and
/// `arch_kprobe_on_func_entry()` and `arch_adjust_kprobe_addr()` over offsets 0 to 63: the
/// number of differences, or `None` without the C.
pub fn constants_mismatches() -> Option<usize> {
    #[cfg(rkprobes_c_ppc64)]
    {
        let mut bad = usize::from(ffi::breakpoint() != BREAKPOINT_INSTRUCTION);
        bad += usize::from(ffi::mcount_insn_size() != crate::kprobes::MCOUNT_INSN_SIZE);
        for off in 0..64u64 {
            let addr = 0xc000_0000_0100_0000u64;
            bad += usize::from(arch_kprobe_on_func_entry(off, true) != ffi::on_func_entry(off));
            bad += usize::from(
                ffi::adjust_addr(addr, off) != (addr + off, arch_kprobe_on_func_entry(off, true)),
            );
        }
        Some(bad)
    }
    #[cfg(not(rkprobes_c_ppc64))]
    {
        None
    }
}

/// Whether upstream's C was built.
pub fn c_available() -> bool {
    ffi::AVAILABLE
}

// SPDX-License-Identifier: GPL-2.0

//! The differential: the Rust decisions against upstream's C, site by site.

use crate::ffi;
use crate::image::Image;
#[cfg(rkprobes_c_s390)]
use crate::kprobes::{
    copy_instruction, disable_singlestep_mask, insn_length, is_known_insn, prepare_kprobe,
    probe_get_fixup_type, probe_is_insn_relative_long, probe_is_prohibited_opcode,
    resume_execution, KernelText, PSW_MASK_EXT, PSW_MASK_IO, PSW_MASK_PER,
};
#[cfg(rkprobes_c_s390)]
use crate::kprobes::{
    enable_singlestep_mask, reenter_allowed, KPROBE_HIT_ACTIVE, KPROBE_HIT_SS, KPROBE_HIT_SSDONE,
    KPROBE_REENTER,
};
#[cfg(rkprobes_c_s390)]
use crate::rng::Rng;
use rkprobes_difftest_common::upstream::NOT_BUILT;

pub use rkprobes_difftest_common::report::Report;

/// Where the slot page of the `resume_execution()` comparisons is mapped.
pub const RESUME_SLOT: u64 = 0x3ff_d000_0000;

/// What to compare.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Seed of the scenarios.
    pub seed: u64,
    /// Mismatches kept in [`Report::shown`].
    pub show: usize,
    /// A negative control: the Rust side re-aims relative-long instructions for a slot two
    /// bytes off.
    pub skew_slot: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: 0x7333_3930,
            show: 20,
            skew_slot: false,
        }
    }
}

/// Compares everything at every site of `img`, whose text the C reads at `img.base`.
pub fn run(img: &Image, opts: &Options) -> Result<Report, String> {
    if !ffi::AVAILABLE {
        return Err(NOT_BUILT.into());
    }
    let _guard = ffi::lock();
    #[cfg_attr(not(rkprobes_c_s390), allow(unused_mut))]
    let mut rep = Report::new(img.name.clone());
    #[cfg(rkprobes_c_s390)]
    {
        ffi::map_text(img.base, &img.halfwords)?;
        let slot_page = ffi::map_slot(RESUME_SLOT)?;
        let mut rng = Rng::new(opts.seed);
        for (a, start) in img.sites() {
            compare_site(img, a, start, slot_page, opts, &mut rng, &mut rep);
        }
    }
    #[cfg(not(rkprobes_c_s390))]
    let _ = opts;
    Ok(rep)
}

/// A slot address for a probe at `a`: usually within ±2 GiB, now and then at the edges of
/// the 32-bit halfword displacement's reach or beyond, or odd.
#[cfg(rkprobes_c_s390)]
fn slot_near(a: u64, rng: &mut Rng) -> u64 {
    let d: i64 = match rng.below(8) {
        0 => 0xffff_fffe,
        1 => -0x1_0000_0000,
        2 => (rng.next_u64() % 0x10_0000_0000) as i64 - 0x8_0000_0000,
        _ => (rng.next_u64() % 0x1_0000_0000) as i64 - 0x8000_0000,
    };
    let s = a.wrapping_add_signed(d) & !1;
    if rng.below(64) == 0 {
        s | 1
    } else {
        s
    }
}

#[cfg(rkprobes_c_s390)]
fn compare_site(
    img: &Image,
    a: u64,
    start: u64,
    slot_page: u64,
    opts: &Options,
    rng: &mut Rng,
    rep: &mut Report,
) {
    let Some((insn, _)) = img.read_insn(a) else {
        return;
    };
    rep.sites += 1;
    let mut diffs: Vec<String> = Vec::new();
    let mut check = |rep: &mut Report, ok: bool, what: &dyn Fn() -> String| {
        rep.checks += 1;
        if !ok {
            diffs.push(what());
        }
    };

    // The instruction helpers on the halfwords at the site.
    let (r_known, c_known) = (is_known_insn(&insn), ffi::known(&insn));
    check(rep, r_known == c_known, &|| {
        format!("is_known_insn: Rust {r_known}, C {c_known}")
    });
    let (c_pro, c_asked) = ffi::prohibited(&insn);
    let r_pro = probe_is_prohibited_opcode(&insn);
    check(
        rep,
        (c_pro != 0) == r_pro && c_asked == 1 && (c_pro == 0 || c_pro == -22),
        &|| format!("probe_is_prohibited_opcode: Rust {r_pro}, C {c_pro}"),
    );
    rep.count(match (r_known, r_pro) {
        (false, _) => "instruction unknown",
        (true, true) => "instruction known, prohibited",
        (true, false) => "instruction known, allowed",
    });
    let (r_fix, c_fix) = (probe_get_fixup_type(&insn), ffi::fixup_type(&insn));
    check(rep, r_fix == c_fix, &|| {
        format!("probe_get_fixup_type: Rust {r_fix:#x}, C {c_fix:#x}")
    });
    let (r_rel, c_rel) = (
        probe_is_insn_relative_long(insn[0]),
        ffi::relative_long(insn[0]),
    );
    check(rep, r_rel == c_rel, &|| {
        format!("probe_is_insn_relative_long: Rust {r_rel}, C {c_rel}")
    });

    // arch_prepare_kprobe(), at the site and now and then one byte off, with its symbol
    // offset (now and then none), the disassembler's answer, probes at some breakpoints.
    let mut addrs = vec![a];
    if rng.below(16) == 0 {
        addrs.push(a + 1);
    }
    let mut accepted = false;
    for &pa in &addrs {
        let offset = (rng.below(64) != 0).then_some(pa - start);
        let seed = rng.next_u64();
        let slot = (rng.below(32) != 0).then(|| slot_near(pa, rng));
        let r_slot = slot.map(|s| if opts.skew_slot { s + 2 } else { s });
        let r = prepare_kprobe(img, pa, offset, |x| ffi::probe_at(x, seed), r_slot);
        let (cret, c) = ffi::prepare(pa, offset, seed, slot);
        let same = match r {
            Err(e) => cret == e && c.opcode == 0x5a5a && c.slot == [0x5a5a; 4] && c.stray == 0,
            Ok(p) => {
                let n = (p.len / 2) as usize;
                cret == 0
                    && c.has_slot != 0
                    && c.opcode == p.opcode
                    && c.stray == 0
                    && (0..4).all(|i| c.slot[i] == if i < n { p.slot_insn[i] } else { 0x5a5a })
                    && c.known_asked == 1
                    && c.known_insn == insn[0]
            }
        };
        check(rep, same, &|| {
            format!("arch_prepare_kprobe({pa:#x}, offset {offset:x?}, slot {slot:x?}): Rust {r:x?}, C {cret} {c:x?}")
        });
        rep.count(match r {
            Err(e) if pa % 2 != 0 => format!("prepare errno {e}, odd address"),
            Err(e) if c.known_asked == 0 => format!("prepare errno {e}, not a boundary"),
            Err(e) => format!("prepare errno {e}"),
            Ok(p) if probe_is_insn_relative_long(p.opcode) => {
                "prepare ok: relative long re-aimed".to_string()
            }
            Ok(_) => "prepare ok".to_string(),
        });
        accepted |= r.is_ok() && pa == a;
    }

    // resume_execution() after stepping the instruction in the slot page: from the fall
    // through, a taken branch, or anywhere.
    if accepted {
        let slot_insn = copy_instruction(insn, a, slot_page);
        let ilen = insn_length((slot_insn[0] >> 8) as u8);
        for _ in 0..2 {
            let psw_addr = match rng.below(4) {
                0 | 1 => slot_page + ilen,
                2 => a.wrapping_add_signed((rng.next_u64() % 0x10000) as i64 - 0x8000) & !1,
                _ => rng.next_u64(),
            };
            let mask = rng.next_u64() | PSW_MASK_PER;
            let saved = rng.next_u64() & (PSW_MASK_PER | PSW_MASK_IO | PSW_MASK_EXT);
            let gprs: [u64; 16] = std::array::from_fn(|_| rng.reg_value());
            let (c_mask, c_addr, c_gprs) =
                ffi::resume(a, &slot_insn, saved, (mask, psw_addr), gprs);
            let r = resume_execution(&slot_insn, a, slot_page, psw_addr);
            let mut r_gprs = gprs;
            if let Some((reg, delta)) = r.gpr_fix {
                r_gprs[reg] = r_gprs[reg].wrapping_add(delta);
            }
            let r_mask = disable_singlestep_mask(mask, saved);
            check(
                rep,
                (r_mask, r.ip, r_gprs) == (c_mask, c_addr, c_gprs),
                &|| {
                    format!("resume_execution({a:#x}, slot {slot_insn:04x?}, psw {psw_addr:#x}): Rust {r:x?} mask {r_mask:#x}, C addr {c_addr:#x} mask {c_mask:#x} gprs differ: {}", r_gprs != c_gprs)
                },
            );
            rep.count(
                if r.ip == a.wrapping_add(ilen) && psw_addr == slot_page + ilen {
                    "resume: after the probe"
                } else {
                    "resume: elsewhere"
                },
            );
        }
        compare_handlers(a, slot_insn, slot_page, rng, rep, &mut diffs);
    }

    rep.finish_site(|| format!("{a:#x} {insn:04x?}"), diffs, opts.show);
}

/// What a handler left, as the comparison sees it: return value, PSW mask and address,
/// `current_kprobe`, the saved previous probe and its status, the status, the saved interrupt
/// bits, `nmissed`, `BUG()`s, pre and post handler calls, the preemption count change, the
/// control-register saves, and the registers.
#[cfg(rkprobes_c_s390)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HitOutcome {
    ret: i32,
    mask: u64,
    addr: u64,
    current: i32,
    prev: i32,
    prev_status: u64,
    status: u64,
    saved_imask: u64,
    nmissed: u64,
    bugs: i32,
    pre_calls: i32,
    post_calls: i32,
    preempt: i32,
    ctl_stores: i32,
    gprs: [u64; 16],
}

#[cfg(rkprobes_c_s390)]
impl HitOutcome {
    /// The state `h` describes before the handler runs, nothing done yet.
    fn before(h: &ffi::CHit) -> Self {
        HitOutcome {
            ret: 0,
            mask: h.psw_mask,
            addr: h.psw_addr,
            current: h.current,
            prev: if h.prev != 0 { 3 } else { 0 },
            prev_status: h.prev_status,
            status: h.status,
            saved_imask: h.saved_imask,
            nmissed: 0,
            bugs: 0,
            pre_calls: 0,
            post_calls: 0,
            preempt: 0,
            ctl_stores: 0,
            gprs: h.gprs,
        }
    }

    /// What upstream's handler left in `h`.
    fn after(h: &ffi::CHit) -> Self {
        HitOutcome {
            ret: h.ret,
            mask: h.psw_mask,
            addr: h.psw_addr,
            current: h.current_after,
            prev: h.prev_after,
            prev_status: h.prev_status_after,
            status: h.status_after,
            saved_imask: h.saved_imask_after,
            nmissed: h.nmissed,
            bugs: h.bugs,
            pre_calls: h.pre_calls,
            post_calls: h.post_calls,
            preempt: h.preempt,
            ctl_stores: h.ctl_stores,
            gprs: h.gprs,
        }
    }

    /// `push_kprobe()` of the probe (1).
    fn push(&mut self) {
        self.prev = self.current;
        self.prev_status = self.status;
        self.current = 1;
    }

    /// `pop_kprobe()`.
    fn pop(&mut self) {
        self.current = self.prev;
        self.status = self.prev_status;
        self.prev = 0;
    }
}

/// Upstream's `kprobe_handler()`, `post_kprobe_handler()` and `kprobe_trap_handler()` for the
/// probe at `a` whose slot (the slot page) holds `slot_insn`, against the Rust pieces
/// (`enable_singlestep_mask()`, `reenter_allowed()`, `resume_execution()`,
/// `disable_singlestep_mask()`) put together as the glue and the core's `hit.rs` do.
#[cfg(rkprobes_c_s390)]
fn compare_handlers(
    a: u64,
    slot_insn: [u16; 3],
    slot_page: u64,
    rng: &mut Rng,
    rep: &mut Report,
    diffs: &mut Vec<String>,
) {
    let statuses = [
        KPROBE_HIT_ACTIVE,
        KPROBE_HIT_SS,
        KPROBE_REENTER,
        KPROBE_HIT_SSDONE,
        0,
    ];
    let pick = |rng: &mut Rng| statuses[rng.below(statuses.len() as u64) as usize];
    let ilen = insn_length((slot_insn[0] >> 8) as u8);
    let base = ffi::CHit {
        addr: a,
        psw_mask: rng.next_u64() & !(PSW_MASK_PER | PSW_MASK_IO | PSW_MASK_EXT)
            | (rng.next_u64() & (PSW_MASK_PER | PSW_MASK_IO | PSW_MASK_EXT)),
        status: pick(rng),
        saved_imask: rng.next_u64() & (PSW_MASK_PER | PSW_MASK_IO | PSW_MASK_EXT),
        prev_status: pick(rng),
        extable_fixup: rng.next_u64() & !1,
        gprs: std::array::from_fn(|_| rng.reg_value()),
        slot: slot_insn,
        prev: (rng.below(2) == 0) as i32,
        found: (rng.below(8) != 0) as i32,
        has_pre: (rng.below(2) == 0) as i32,
        pre_ret: (rng.below(4) == 0) as i32,
        has_post: (rng.below(2) == 0) as i32,
        extable_hit: (rng.below(2) == 0) as i32,
        ..ffi::CHit::default()
    };
    let mut compare = |which: ffi::Handler, b: ffi::CHit, want: HitOutcome, what: &str| {
        let mut h = b;
        ffi::hit(which, &mut h);
        let got = HitOutcome::after(&h);
        rep.checks += 1;
        if got != want {
            diffs.push(format!("{which:?} ({b:x?}): Rust {want:x?}, C {got:x?}"));
        }
        rep.count(what.to_string());
    };

    // kprobe_handler() at the breakpoint: a first hit, or one during another probe.
    let mut b = base;
    b.psw_addr = a.wrapping_add(2);
    b.current = [0, 0, 2][rng.below(3) as usize];
    if b.current == 0 {
        b.prev = 0;
    }
    let mut w = HitOutcome::before(&b);
    let what;
    if b.found == 0 {
        what = "kprobe_handler: no probe";
    } else {
        w.preempt = 1;
        if b.current != 0 {
            if reenter_allowed(b.status) {
                w.nmissed = 1;
                what = "kprobe_handler: reentered from a handler";
            } else {
                w.bugs = 1;
                what = "kprobe_handler: reentered while stepping (BUG)";
            }
            w.push();
            w.status = KPROBE_REENTER;
        } else {
            w.push();
            w.status = KPROBE_HIT_ACTIVE;
            w.pre_calls = b.has_pre;
            if b.has_pre != 0 && b.pre_ret != 0 {
                w.pop();
                w.preempt = 0;
                w.ret = 1;
            } else {
                w.status = KPROBE_HIT_SS;
            }
            what = if w.ret == 1 {
                "kprobe_handler: pre handler took over"
            } else {
                "kprobe_handler: stepping"
            };
        }
        if w.ret == 0 {
            let (mask, saved) = enable_singlestep_mask(w.mask);
            w.mask = mask;
            w.saved_imask = saved;
            w.addr = slot_page;
            w.ctl_stores = 1;
            w.ret = 1;
        }
    }
    compare(ffi::Handler::Trap, b, w, what);

    // post_kprobe_handler() after the step: the probe current (now and then none).
    let mut b = base;
    b.current = (rng.below(16) != 0) as i32;
    b.psw_addr = match rng.below(4) {
        0 => rng.next_u64() & !1,
        _ => slot_page + ilen,
    };
    let mut w = HitOutcome::before(&b);
    let what = if b.current == 0 {
        "post_kprobe_handler: no probe"
    } else {
        let r = resume_execution(&slot_insn, a, slot_page, b.psw_addr);
        if let Some((reg, delta)) = r.gpr_fix {
            w.gprs[reg] = w.gprs[reg].wrapping_add(delta);
        }
        w.mask = disable_singlestep_mask(w.mask, w.saved_imask);
        w.addr = r.ip;
        if w.status != KPROBE_REENTER && b.has_post != 0 {
            w.status = KPROBE_HIT_SSDONE;
            w.post_calls = 1;
        }
        w.pop();
        w.preempt = -1;
        w.ret = if w.mask & PSW_MASK_PER != 0 { 0 } else { 1 };
        if w.ret == 1 {
            "post_kprobe_handler: resumed"
        } else {
            "post_kprobe_handler: resumed, PER still on"
        }
    };
    compare(ffi::Handler::Post, b, w, what);

    // kprobe_trap_handler(): a fault in the step or in a handler.
    let mut b = base;
    b.current = 1;
    b.psw_addr = rng.next_u64() & !1;
    let mut w = HitOutcome::before(&b);
    let what = match b.status {
        KPROBE_HIT_SS | KPROBE_REENTER => {
            w.mask = disable_singlestep_mask(w.mask, w.saved_imask);
            w.addr = a;
            w.pop();
            w.preempt = -1;
            "kprobe_trap_handler: fault in the step"
        }
        KPROBE_HIT_ACTIVE | KPROBE_HIT_SSDONE if b.extable_hit != 0 => {
            w.addr = b.extable_fixup;
            w.ret = 1;
            "kprobe_trap_handler: fixed up"
        }
        _ => "kprobe_trap_handler: not handled",
    };
    compare(ffi::Handler::Fault, b, w, what);
}

/// `insn_length()` of every first byte, and `MCOUNT_INSN_SIZE`, against upstream's: the
/// number of differences, or `None` without the C.
pub fn insn_length_mismatches() -> Option<usize> {
    #[cfg(rkprobes_c_s390)]
    {
        Some(
            (0..=255u8)
                .filter(|&b| insn_length(b) != ffi::insn_length(b))
                .count()
                + usize::from(ffi::mcount_insn_size() != crate::kprobes::MCOUNT_INSN_SIZE),
        )
    }
    #[cfg(not(rkprobes_c_s390))]
    {
        None
    }
}

/// Upstream's `opcode_offset[]` (each entry's opcode, mask, byte and count), or `None`
/// without the C.
pub fn c_opcode_offsets() -> Option<Vec<(u8, u8, u8, usize)>> {
    #[cfg(rkprobes_c_s390)]
    {
        Some(ffi::opcode_offsets())
    }
    #[cfg(not(rkprobes_c_s390))]
    {
        None
    }
}

/// `is_known_insn()` of every first byte with every value of the byte its group looks at
/// (the other bytes random), Rust against upstream: the number of instructions compared and
/// of differences, or `None` without the C.
pub fn known_insn_sweep(seed: u64) -> Option<(usize, usize)> {
    #[cfg(rkprobes_c_s390)]
    {
        let mut rng = Rng::new(seed);
        let (mut n, mut bad) = (0, 0);
        for first in 0..=255u16 {
            for other in 0..=255u16 {
                for byte in [1usize, 5] {
                    let mut b: [u8; 6] = std::array::from_fn(|_| rng.next_u32() as u8);
                    b[0] = first as u8;
                    b[byte] = other as u8;
                    let insn = [
                        u16::from_be_bytes([b[0], b[1]]),
                        u16::from_be_bytes([b[2], b[3]]),
                        u16::from_be_bytes([b[4], b[5]]),
                    ];
                    n += 1;
                    bad += usize::from(is_known_insn(&insn) != ffi::known(&insn));
                }
            }
        }
        Some((n, bad))
    }
    #[cfg(not(rkprobes_c_s390))]
    {
        let _ = seed;
        None
    }
}

/// Whether upstream's C was built.
pub fn c_available() -> bool {
    ffi::AVAILABLE
}

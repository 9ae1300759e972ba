// SPDX-License-Identifier: GPL-2.0

//! The differential: the Rust decisions and simulators against upstream's C, site by site.

use crate::ffi;
use crate::image::Image;
use crate::kprobes::insn::insn_length;
use crate::kprobes::{
    check_kprobe, errno, prepare_kprobe, probe_decode_insn, KernelText, Prepared, ProbeInsn,
    PtRegs, Simulator,
};
use crate::rng::Rng;
#[cfg(rkprobes_c_riscv)]
use rkprobes_difftest_common::shim::c_verdict;
use rkprobes_difftest_common::upstream::NOT_BUILT;
use std::sync::Arc;

use rkprobes_difftest_common::report;

pub use rkprobes_difftest_common::report::Report;

/// What to compare.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Random register states each simulated site is run from.
    pub states: usize,
    /// Seed of the register states and of the odd/mid-instruction probe addresses.
    pub seed: u64,
    /// Mismatches kept in [`Report::shown`].
    pub show: usize,
    /// A negative control: the Rust simulators are given the probe address plus 2.
    pub skew_addr: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            states: 8,
            seed: 0x0072_6973_6376,
            show: 20,
            skew_addr: false,
        }
    }
}

/// The number upstream's shim gives a handler (`simulate-insn.h` order, from 1).
pub fn handler_index(s: Simulator) -> i32 {
    match s {
        Simulator::Auipc => 1,
        Simulator::Branch => 2,
        Simulator::Jal => 3,
        Simulator::Jalr => 4,
        Simulator::CJ => 5,
        Simulator::CJr => 6,
        Simulator::CJalr => 7,
        Simulator::CBnez => 8,
        Simulator::CBeqz => 9,
    }
}

/// Rust's verdict as the C's `(enum probe_insn, handler)`.
fn verdict(p: ProbeInsn) -> ffi::Verdict {
    match p {
        ProbeInsn::Rejected => (0, 0),
        ProbeInsn::Simulate(s) => (1, handler_index(s)),
        ProbeInsn::Step => (2, 0),
    }
}

/// The instruction as `p->opcode` holds it: 16 bits zero-extended, or 32.
pub fn opcode_of(word: u32) -> u32 {
    if insn_length(word) == 4 {
        word
    } else {
        word & 0xffff
    }
}

/// A random frame for a probe at `addr`: register values at the 64-bit and 32-bit edges, and
/// one run in three from a small pool of values so that branches compare equal registers and
/// c.beqz/c.bnez see zero often; usually `epc == addr` (as at a probe hit), sometimes not.
pub fn random_regs(rng: &mut Rng, addr: u64) -> PtRegs {
    let mut r = PtRegs::default();
    let pool = [rng.reg_value(), rng.reg_value(), 0];
    let pooled = rng.below(3) == 0;
    for x in r.x.iter_mut() {
        *x = if pooled {
            pool[rng.below(3) as usize]
        } else {
            rng.reg_value()
        };
    }
    r.epc = if rng.below(4) == 0 {
        rng.next_u64()
    } else {
        addr
    };
    r.status = rng.next_u64();
    r.badaddr = rng.next_u64();
    r.cause = rng.next_u64();
    r.orig_a0 = rng.next_u64();
    r
}

/// Compares everything at every instruction boundary of every function of `img`.
pub fn run(img: Arc<Image>, opts: &Options) -> Result<Report, String> {
    if !ffi::AVAILABLE {
        return Err(NOT_BUILT.into());
    }
    ffi::install(img.clone());
    let mut rep = Report::new(img.name.clone());
    #[cfg(rkprobes_c_riscv)]
    {
        let mut rng = Rng::new(opts.seed);
        for a in img.sites() {
            compare_site(&img, a, opts, &mut rng, &mut rep);
        }
    }
    #[cfg(not(rkprobes_c_riscv))]
    let _ = opts;
    Ok(rep)
}

/// Rust's `arch_prepare_kprobe()` against the C's at `pa`; a description when they differ.
#[cfg(rkprobes_c_riscv)]
fn compare_prepare(img: &Image, pa: u64, at: &str, rep: &mut Report) -> Option<String> {
    let r = prepare_kprobe(img, pa, true);
    let c = ffi::prepare(pa);
    rep.checks += 1;
    let same = match r {
        Err(e) => c.ret == e,
        Ok(Prepared::Simulate { opcode, simulator }) => {
            c.ret == 0
                && !c.has_slot
                && c.opcode == opcode
                && c.handler == handler_index(simulator)
                && c.restore == 0
        }
        Ok(
            p @ Prepared::Step {
                opcode,
                slot,
                restore,
                ..
            },
        ) => {
            let n = p.slot_len() as usize;
            c.ret == 0
                && c.has_slot
                && c.handler == 0
                && c.opcode == opcode
                && c.slot[..n] == slot[..n]
                && c.slot[n..].iter().all(|&b| b == ffi::SLOT_FILL)
                && c.restore == restore
        }
    };
    let what = match r {
        Err(e) if e == errno::EILSEQ && !pa.is_multiple_of(2) => "-EILSEQ: odd address".to_string(),
        Err(e) if e == errno::EILSEQ && img.lookup_offset(pa).is_none() => {
            "-EILSEQ: no kallsyms symbol".to_string()
        }
        Err(e) if e == errno::EILSEQ => {
            "-EILSEQ: not an instruction boundary from its symbol's start".to_string()
        }
        Err(e) => format!("errno {e}"),
        Ok(Prepared::Simulate { .. }) => "ok, simulated".to_string(),
        Ok(Prepared::Step { len, .. }) => format!("ok, slot for a {len}-byte instruction"),
    };
    rep.count(format!("prepare at {at}: {what}"));
    (!same).then(|| format!("arch_prepare_kprobe({pa:#x}): Rust {r:?}, C {c:?}"))
}

#[cfg(rkprobes_c_riscv)]
fn compare_site(img: &Image, a: u64, opts: &Options, rng: &mut Rng, rep: &mut Report) {
    let Some(lo) = img.read_u16(a) else { return };
    let len = insn_length(u32::from(lo));
    let hi = if len == 4 {
        img.read_u16(a + 2).unwrap_or(0)
    } else {
        0
    };
    let opcode = u32::from(lo) | (u32::from(hi) << 16);
    rep.sites += 1;
    let mut diffs: Vec<String> = Vec::new();

    // The decision: C reads 32 bits at the site, Rust decides the instruction alone.
    let rd = probe_decode_insn(opcode, true);
    let (rv, cv) = (verdict(rd), c_verdict(ffi::decode_at(a)));
    rep.checks += 1;
    if rv != cv {
        diffs.push(format!(
            "riscv_probe_decode_insn({opcode:#x}): Rust {rv:?}, C {cv:?}"
        ));
    }
    let (rv, cv) = (
        verdict(probe_decode_insn(opcode, false)),
        c_verdict(ffi::decode_word(opcode, false)),
    );
    rep.checks += 1;
    if rv != cv {
        diffs.push(format!(
            "riscv_probe_decode_insn({opcode:#x}) without RVC: Rust {rv:?}, C {cv:?}"
        ));
    }
    rep.count(match rd {
        ProbeInsn::Rejected => format!("decision: rejected ({len}-byte)"),
        ProbeInsn::Step => format!("decision: stepped out of line ({len}-byte)"),
        ProbeInsn::Simulate(s) => format!("decision: simulated by {s:?}"),
    });
    if img.in_data(a) {
        rep.count("site inside a $d (data) range of the mapping symbols");
    }

    // The boundary walk from the kallsyms symbol's start.
    let (rc, cc) = (check_kprobe(img, a), ffi::check(a));
    rep.checks += 1;
    if rc != cc {
        diffs.push(format!("arch_check_kprobe: Rust {rc}, C {cc}"));
    }

    // arch_prepare_kprobe() at the site, and now and then at an odd address and inside a
    // 32-bit instruction.
    diffs.extend(compare_prepare(img, a, "the site", rep));
    if rng.below(16) == 0 {
        diffs.extend(compare_prepare(img, a + 1, "site+1", rep));
        if len == 4 {
            diffs.extend(compare_prepare(
                img,
                a + 2,
                "site+2 (inside a 32-bit instruction)",
                rep,
            ));
        }
    }

    // The simulators, from the same random frames.
    if let ProbeInsn::Simulate(sim) = rd {
        for _ in 0..opts.states {
            let before = random_regs(rng, a);
            let (c_after, c_ok) = ffi::simulate(handler_index(sim), opcode, a, &before);
            let ra = if opts.skew_addr { a + 2 } else { a };
            let (r_after, r_ok) = before.simulated(sim, opcode, ra);
            rep.checks += 1;
            if !r_ok {
                rep.count(format!("{sim:?}: simulator refused (frame untouched)"));
            } else if matches!(sim, Simulator::Branch | Simulator::CBeqz | Simulator::CBnez) {
                let taken = r_after.epc != a.wrapping_add(len);
                rep.count(format!(
                    "{sim:?}: {}",
                    if taken { "taken" } else { "not taken" }
                ));
            }
            if r_ok != c_ok || r_after != c_after {
                diffs.push(format!(
                    "{sim:?} {opcode:#x} at {a:#x}: Rust {r_ok}, C {c_ok}: {}",
                    frame_diff(&before, &r_after, &c_after)
                ));
            }
        }
    }

    rep.finish_site(|| format!("{a:#x} {opcode:#010x}"), diffs, opts.show);
}

/// The decision on loose words against the C's: `n` random 32-bit words and every 16-bit
/// parcel (under random upper halves), each with and without the C extension, and each word
/// against its own `p->opcode` form (upstream decides the 32 bits it reads at a compressed
/// instruction, the Rust decides the instruction).
pub fn run_words(n: u64, opts: &Options) -> Result<Report, String> {
    if !ffi::AVAILABLE {
        return Err(NOT_BUILT.into());
    }
    let mut rep = Report::new(format!(
        "random words ({n} 32-bit words and all 65536 16-bit parcels)"
    ));
    #[cfg(rkprobes_c_riscv)]
    {
        let mut rng = Rng::new(opts.seed ^ 0x776f_7264);
        for i in 0..n + 0x1_0000 {
            let w = if i < n {
                rng.next_u32()
            } else {
                (rng.next_u32() & 0xffff_0000) | (i - n) as u32
            };
            rep.sites += 1;
            let mut diffs = Vec::new();
            for isa_c in [true, false] {
                let r = verdict(probe_decode_insn(opcode_of(w), isa_c));
                let c = c_verdict(ffi::decode_word(w, isa_c));
                let c_op = c_verdict(ffi::decode_word(opcode_of(w), isa_c));
                rep.checks += 2;
                if r != c || r != c_op {
                    diffs.push(format!(
                        "isa_c {isa_c}: Rust {r:?}, C on the word {c:?}, C on the opcode {c_op:?}"
                    ));
                }
                if isa_c {
                    rep.count(format!(
                        "{}-bit: {}",
                        insn_length(w) * 8,
                        match r {
                            (0, _) => "rejected".to_string(),
                            (2, _) => "stepped".to_string(),
                            (_, h) => format!("simulated by handler {h}"),
                        }
                    ));
                }
            }
            rep.finish_site(|| format!("word {w:#010x}"), diffs, opts.show);
        }
    }
    #[cfg(not(rkprobes_c_riscv))]
    let _ = (n, opts);
    Ok(rep)
}

/// The fields where the Rust frame `r` and the C frame `c` differ, with their value before.
pub fn frame_diff(before: &PtRegs, r: &PtRegs, c: &PtRegs) -> String {
    let regs = (0..31).map(|i| (format!("x{}", i + 1), before.x[i], r.x[i], c.x[i]));
    let others = [
        ("epc", before.epc, r.epc, c.epc),
        ("status", before.status, r.status, c.status),
        ("badaddr", before.badaddr, r.badaddr, c.badaddr),
        ("cause", before.cause, r.cause, c.cause),
        ("orig_a0", before.orig_a0, r.orig_a0, c.orig_a0),
    ];
    report::frame_diff(regs.chain(others.map(|(n, b, rv, cv)| (n.to_string(), b, rv, cv))))
}

/// Whether upstream's C was built.
pub fn c_available() -> bool {
    ffi::AVAILABLE
}

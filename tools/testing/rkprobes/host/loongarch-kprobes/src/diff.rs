// SPDX-License-Identifier: GPL-2.0

//! The differential: the Rust decisions and simulators against upstream's C, site by site.

use crate::ffi;
#[cfg(rkprobes_c_loongarch)]
use crate::ffi::CSim;
use crate::image::Image;
#[cfg(rkprobes_c_loongarch)]
use crate::kprobes::{
    decode_insn, insn, insns_need_simulation, insns_not_supported, prepare_kprobe, simu_branch,
    simu_pc, simulate_insn, KernelText, Prepared, ProbeInsn,
};
use crate::kprobes::{PtRegs, SimuError, Simulator, Unsupported};
use crate::rng::Rng;
use rkprobes_difftest_common::report;
use rkprobes_difftest_common::upstream::NOT_BUILT;
use std::sync::Arc;

pub use rkprobes_difftest_common::report::Report;

/// What to compare.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Random register states each simulated site is run from (other sites: one).
    pub states: usize,
    /// Seed of the register states.
    pub seed: u64,
    /// Mismatches kept in [`Report::shown`].
    pub show: usize,
    /// A negative control: the Rust simulators get a frame whose `$a0` (`regs[4]`) is off by
    /// one.
    pub skew_a0: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            states: 8,
            seed: 0x6c_6f6f_6e67,
            show: 20,
            skew_a0: false,
        }
    }
}

/// The number the shim gives the simulator `arch_simulate_insn()` picks (1 `simu_pc()`, 2
/// `simu_branch()`).
pub fn handler_index(s: Simulator) -> i32 {
    match s {
        Simulator::Pc => 1,
        Simulator::Branch => 2,
    }
}

/// A distinctive part of the message upstream's `insns_not_supported()` logs for `u`.
pub fn unsupported_note(u: Unsupported) -> &'static str {
    match u {
        Unsupported::AtomicMemoryAccess => "atomic memory access instructions are not supported",
        Unsupported::ScQ => "sc.q instruction is not supported",
        Unsupported::LlSc => "ll and sc instructions are not supported",
        Unsupported::LlacqScrel => "llacq and screl instructions are not supported",
        Unsupported::BceqzBcnez => "bceqz and bcnez instructions are not supported",
    }
}

/// A distinctive part of the message upstream's `simu_pc()`/`simu_branch()` log for `e`.
pub fn simu_note(e: SimuError) -> &'static str {
    match e {
        SimuError::InvalidPc(_) => "invalid pc",
        SimuError::UnknownOpcode => "unknown opcode",
    }
}

/// Whether the C logged what Rust reports: nothing for `None`, a message containing `want`
/// otherwise.
#[cfg(rkprobes_c_loongarch)]
fn same_note(c: &Option<String>, want: Option<&str>) -> bool {
    match (c, want) {
        (None, None) => true,
        (Some(c), Some(w)) => c.contains(w),
        _ => false,
    }
}

/// A random frame for a probe at `addr`: registers at the 64-bit and 32-bit edges, one frame
/// in three drawn from a pool of three values (one of them 0) so the branches compare equal
/// registers and `beqz`/`bnez` see zero; `csr_era` usually `addr` (as at a probe hit), now
/// and then random, random and aligned, or `addr` with bits 1:0 set; random other fields.
pub fn random_regs(rng: &mut Rng, addr: u64) -> PtRegs {
    let mut r = PtRegs::default();
    let pool = [rng.reg_value(), rng.reg_value(), 0];
    let pooled = rng.below(3) == 0;
    for x in r.regs.iter_mut() {
        *x = if pooled {
            pool[rng.below(3) as usize]
        } else {
            rng.reg_value()
        };
    }
    r.orig_a0 = rng.next_u64();
    r.csr_era = match rng.below(8) {
        0 => rng.next_u64(),
        1 => rng.next_u64() & !3,
        2 => addr ^ (1 + rng.below(3)),
        _ => addr,
    };
    r.csr_badvaddr = rng.next_u64();
    r.csr_crmd = rng.next_u64();
    r.csr_prmd = rng.next_u64();
    r.csr_euen = rng.next_u64();
    r.csr_ecfg = rng.next_u64();
    r.csr_estat = rng.next_u64();
    r
}

/// Compares everything at every site of `img`.
pub fn run(img: Arc<Image>, opts: &Options) -> Result<Report, String> {
    if !ffi::AVAILABLE {
        return Err(NOT_BUILT.into());
    }
    ffi::install(img.clone());
    #[cfg_attr(not(rkprobes_c_loongarch), allow(unused_mut))]
    let mut rep = Report::new(img.name.clone());
    #[cfg(rkprobes_c_loongarch)]
    {
        let mut rng = Rng::new(opts.seed);
        for a in img.sites() {
            compare_site(&img, a, opts, &mut rng, &mut rep);
        }
    }
    #[cfg(not(rkprobes_c_loongarch))]
    let _ = opts;
    Ok(rep)
}

#[cfg(rkprobes_c_loongarch)]
fn compare_site(img: &Image, a: u64, opts: &Options, rng: &mut Rng, rep: &mut Report) {
    let Some(w) = img.read_insn(a) else { return };
    rep.sites += 1;
    let mut diffs: Vec<String> = Vec::new();
    let mut check = |rep: &mut Report, ok: bool, what: &dyn Fn() -> String| {
        rep.checks += 1;
        if !ok {
            diffs.push(what());
        }
    };

    // The decisions of the word.
    let rns = insns_not_supported(w);
    let (cns, cnote) = ffi::not_supported(w);
    check(
        rep,
        rns.is_some() == cns && same_note(&cnote, rns.map(unsupported_note)),
        &|| format!("insns_not_supported: Rust {rns:?}, C {cns} ({cnote:?})"),
    );
    let (rsim, csim) = (insns_need_simulation(w), ffi::need_simulation(w));
    check(rep, rsim == csim, &|| {
        format!("insns_need_simulation: Rust {rsim}, C {csim}")
    });
    let rpred = [
        insn::is_pc_ins(w),
        insn::is_branch_ins(w),
        insn::is_break_ins(w),
    ];
    let cpred = ffi::predicates(w);
    check(rep, rpred == cpred, &|| {
        format!("is_pc_ins/is_branch_ins/is_break_ins: Rust {rpred:?}, C {cpred:?}")
    });
    let decided = decode_insn(w);
    rep.count(match decided {
        ProbeInsn::Rejected(u) => format!("rejected: {u:?}"),
        ProbeInsn::Simulate(s) => format!("simulated: {s:?}"),
        ProbeInsn::Step => "stepped out of line".to_string(),
    });

    // arch_prepare_kprobe(), aligned, and now and then one to three bytes off.
    let mut addrs = vec![a];
    if rng.below(16) == 0 {
        addrs.push(a + 1 + rng.below(3));
    }
    for &pa in &addrs {
        let r = prepare_kprobe(img, pa);
        let (c, note) = ffi::prepare(pa);
        let want_note = match decided {
            ProbeInsn::Rejected(u) if pa % 4 == 0 => Some(unsupported_note(u)),
            _ => None,
        };
        let same = same_note(&note, want_note)
            && match r {
                Err(e) => {
                    c.ret == e
                        && !c.has_slot
                        && c.restore == u64::MAX
                        && (pa % 4 != 0 || c.opcode == w)
                }
                Ok(Prepared::Simulate { opcode, simulator }) => {
                    c.ret == 0
                        && !c.has_slot
                        && c.opcode == opcode
                        && c.handler == handler_index(simulator)
                        && c.restore == 0
                }
                Ok(Prepared::Step {
                    opcode,
                    slot,
                    restore,
                }) => {
                    c.ret == 0
                        && c.has_slot
                        && c.handler == 0
                        && c.opcode == opcode
                        && c.slot == slot
                        && c.restore == restore
                }
            };
        check(rep, same, &|| {
            format!("arch_prepare_kprobe({pa:#x}): Rust {r:?}, C {c:?} ({note:?})")
        });
        rep.count(match r {
            Err(e) if pa % 4 != 0 => format!("prepare errno {e}, misaligned"),
            Err(e) => format!("prepare errno {e}"),
            Ok(_) => "prepare ok".to_string(),
        });
    }

    // The simulators, from the same random frames: arch_simulate_insn() (what a hit runs),
    // and simu_pc() and simu_branch() on their own, whatever the word.
    let simulated = insn::is_pc_ins(w) || insn::is_branch_ins(w);
    let states = if simulated { opts.states } else { 1 };
    for _ in 0..states {
        let before = random_regs(rng, a);
        let mut r_in = before;
        if opts.skew_a0 {
            r_in.regs[4] = r_in.regs[4].wrapping_add(1);
        }
        for which in [CSim::ArchSimulateInsn, CSim::SimuPc, CSim::SimuBranch] {
            let (c_after, c_note) = ffi::simulate(which, w, &before);
            let mut r_after = r_in;
            let res = match which {
                CSim::ArchSimulateInsn => simulate_insn(w, &mut r_after),
                CSim::SimuPc => simu_pc(&mut r_after, w),
                CSim::SimuBranch => simu_branch(&mut r_after, w),
            };
            rep.checks += 1;
            let untouched = res.is_ok() || r_after == r_in;
            if r_after != c_after || !untouched || !same_note(&c_note, res.err().map(simu_note)) {
                diffs.push(format!(
                    "{which:?} {w:#010x} at {a:#x}: Rust {res:?}, C {c_note:?}; {}",
                    frame_diff(&before, &r_after, &c_after)
                ));
            }
            if simulated || which != CSim::ArchSimulateInsn {
                rep.count(match res {
                    Ok(()) if simulated && which == CSim::ArchSimulateInsn => {
                        format!("{which:?}: simulated")
                    }
                    Ok(()) => format!("{which:?}: ok"),
                    Err(SimuError::InvalidPc(_)) => format!("{which:?}: invalid pc"),
                    Err(SimuError::UnknownOpcode) => format!("{which:?}: unknown opcode"),
                });
            }
        }
    }

    rep.finish_site(|| format!("{a:#x} {w:#010x}"), diffs, opts.show);
}

/// The fields where the Rust frame `r` and the C frame `c` differ, with their value before.
pub fn frame_diff(before: &PtRegs, r: &PtRegs, c: &PtRegs) -> String {
    let regs = (0..32).map(|i| (format!("r{i}"), before.regs[i], r.regs[i], c.regs[i]));
    let others = [
        ("orig_a0", before.orig_a0, r.orig_a0, c.orig_a0),
        ("csr_era", before.csr_era, r.csr_era, c.csr_era),
        (
            "csr_badvaddr",
            before.csr_badvaddr,
            r.csr_badvaddr,
            c.csr_badvaddr,
        ),
        ("csr_crmd", before.csr_crmd, r.csr_crmd, c.csr_crmd),
        ("csr_prmd", before.csr_prmd, r.csr_prmd, c.csr_prmd),
        ("csr_euen", before.csr_euen, r.csr_euen, c.csr_euen),
        ("csr_ecfg", before.csr_ecfg, r.csr_ecfg, c.csr_ecfg),
        ("csr_estat", before.csr_estat, r.csr_estat, c.csr_estat),
    ];
    report::frame_diff(regs.chain(others.map(|(n, b, rv, cv)| (n.to_string(), b, rv, cv))))
}

/// Upstream's `KPROBE_BP_INSN` and `KPROBE_SSTEPBP_INSN`; `None` without the C.
pub fn c_break_insns() -> Option<(u32, u32)> {
    #[cfg(rkprobes_c_loongarch)]
    {
        Some(ffi::break_insns())
    }
    #[cfg(not(rkprobes_c_loongarch))]
    {
        None
    }
}

/// Whether upstream's C was built.
pub fn c_available() -> bool {
    ffi::AVAILABLE
}

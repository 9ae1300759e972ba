// SPDX-License-Identifier: GPL-2.0

//! The differential: the Rust decisions and simulators against upstream's C, site by site.

use crate::ffi::{self, Env, MemModel};
use crate::image::Image;
use crate::kprobes::{
    insn, is_steppable, kprobe_decode_insn, prepare_kprobe, probe_decode_insn, simulate,
    KernelText, Prepared, ProbeInsn, PtRegs, Simulator,
};
use crate::rng::Rng;
#[cfg(rkprobes_c_arm64)]
use rkprobes_difftest_common::shim::c_verdict;
use rkprobes_difftest_common::upstream::NOT_BUILT;
use std::sync::Arc;

use rkprobes_difftest_common::report;

pub use rkprobes_difftest_common::report::Report;

/// The reason given when a literal read faults: upstream's `READ_ONCE()` takes the fault (in
/// the kernel, an oops in the breakpoint handler; in the host build, the read returns 0 and
/// the simulator carries on), the Rust simulator returns the [`crate::kprobes::Fault`] and
/// leaves the frame untouched so the glue can handle it.
pub const FAULT_REASON: &str =
    "literal read faulted: C carries on with the read's value (an oops in the kernel), Rust \
     returns Fault and leaves the frame untouched";

/// What to compare.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Random register states each simulated site is run from.
    pub states: usize,
    /// Seed of the register states and of the memory model.
    pub seed: u64,
    /// Mismatches kept in [`Report::shown`].
    pub show: usize,
    /// One page in this many faults for the literal loads (0: none).
    pub fault_one_in: u64,
    /// A negative control: the Rust simulators get a frame whose x0 is off by one.
    pub skew_x0: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            states: 8,
            seed: 0x61_726d_3634,
            show: 20,
            fault_one_in: 16,
            skew_x0: false,
        }
    }
}

/// The number upstream's shim gives a handler (`simulate-insn.h` order, from 1).
pub fn handler_index(s: Simulator) -> i32 {
    match s {
        Simulator::AdrAdrp => 1,
        Simulator::BBl => 2,
        Simulator::BCond => 3,
        Simulator::BrBlrRet => 4,
        Simulator::CbzCbnz => 5,
        Simulator::TbzTbnz => 6,
        Simulator::LdrLiteral => 7,
        Simulator::LdrswLiteral => 8,
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

/// A random frame for a probe at `addr`: usually `pc == addr` (as at a probe hit), sometimes
/// not (upstream's adr and literal simulators advance the frame's PC, not `addr`).
pub fn random_regs(rng: &mut Rng, addr: u64) -> PtRegs {
    let mut r = PtRegs::default();
    for x in r.regs.iter_mut() {
        *x = rng.reg_value();
    }
    r.sp = rng.next_u64() & !0xf;
    r.pc = if rng.below(4) == 0 {
        rng.next_u64()
    } else {
        addr
    };
    r.pstate = (rng.below(16) << 28) | (rng.next_u64() & 0xffff_ffff_0fff_ffff);
    r
}

/// Compares everything at every site of `img`.
pub fn run(img: Arc<Image>, opts: &Options) -> Result<Report, String> {
    if !ffi::AVAILABLE {
        return Err(NOT_BUILT.into());
    }
    let mem = MemModel {
        seed: opts.seed,
        fault_one_in: opts.fault_one_in,
    };
    ffi::install(Arc::new(Env {
        image: img.clone(),
        mem,
    }));
    let mut rep = Report::new(img.name.clone());
    #[cfg(rkprobes_c_arm64)]
    {
        let mut rng = Rng::new(opts.seed);
        for a in img.sites() {
            compare_site(&img, a, mem, opts, &mut rng, &mut rep);
        }
    }
    Ok(rep)
}

#[cfg(rkprobes_c_arm64)]
fn compare_site(
    img: &Image,
    a: u64,
    mem: MemModel,
    opts: &Options,
    rng: &mut Rng,
    rep: &mut Report,
) {
    let Some(w) = img.read_insn(a) else { return };
    rep.sites += 1;
    let mut diffs: Vec<String> = Vec::new();
    let mut check = |rep: &mut Report, ok: bool, what: &dyn Fn() -> String| {
        rep.checks += 1;
        if !ok {
            diffs.push(what());
        }
    };

    let (rs, cs) = (is_steppable(w), ffi::is_steppable(w));
    check(rep, rs == cs, &|| format!("steppable: Rust {rs}, C {cs}"));
    let (rp, cp) = (
        verdict(probe_decode_insn(w)),
        c_verdict(ffi::probe_decode(w)),
    );
    check(rep, rp == cp, &|| {
        format!("arm_probe_decode_insn: Rust {rp:?}, C {cp:?}")
    });
    let rk = kprobe_decode_insn(img, a);
    let (rkv, ckv) = (verdict(rk), c_verdict(ffi::kprobe_decode(a)));
    check(rep, rkv == ckv, &|| {
        format!("arm_kprobe_decode_insn: Rust {rkv:?}, C {ckv:?}")
    });
    let literal = insn::is_ldr_lit(w) || insn::is_ldrsw_lit(w);
    rep.count(match rk {
        ProbeInsn::Rejected if literal || probe_decode_insn(w) != ProbeInsn::Rejected => {
            "rejected: inside an atomic sequence".to_string()
        }
        ProbeInsn::Rejected => "rejected".to_string(),
        ProbeInsn::Step => "stepped out of line".to_string(),
        ProbeInsn::Simulate(s) => format!("simulated: {s:?}"),
    });

    // arch_prepare_kprobe(), aligned, and now and then one byte off.
    let mut addrs = vec![a];
    if rng.below(64) == 0 {
        addrs.push(a + 1 + rng.below(3));
    }
    for &pa in &addrs {
        let r = prepare_kprobe(img, pa);
        let c = ffi::prepare(pa);
        let same = match r {
            Err(e) => c.ret == e,
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
                    && c.opcode == opcode
                    && c.slot == slot
                    && c.restore == restore
            }
        };
        check(rep, same, &|| {
            format!("arch_prepare_kprobe({pa:#x}): Rust {r:?}, C {c:?}")
        });
        if let Err(e) = r {
            if pa % 4 != 0 {
                rep.count(format!("prepare errno {e}, misaligned"));
            } else if img.search_exception_tables(pa) {
                rep.count(format!("prepare errno {e}, exception table"));
            } else {
                rep.count(format!("prepare errno {e}"));
            }
        } else {
            rep.count("prepare ok");
        }
    }

    // The simulators, from the same random frames.
    if let ProbeInsn::Simulate(sim) = rk {
        for _ in 0..opts.states {
            let before = random_regs(rng, a);
            let (c_after, c_faulted) = ffi::simulate(handler_index(sim), w, a, &before);
            let mut r_in = before;
            if opts.skew_x0 {
                r_in.regs[0] = r_in.regs[0].wrapping_add(1);
            }
            let mut r_after = r_in;
            let r = simulate(sim, w, a, &mut r_after, &mem);
            rep.checks += 1;
            match (r, c_faulted) {
                (Err(_), true) => {
                    if r_after == r_in {
                        rep.diverged(FAULT_REASON);
                    } else {
                        diffs.push(format!(
                            "{sim:?} {w:#010x} at {a:#x}: faulted, frame changed"
                        ));
                    }
                }
                (Ok(()), false) => {
                    if r_after != c_after {
                        diffs.push(format!(
                            "{sim:?} at {a:#x}: {}",
                            frame_diff(&before, &r_after, &c_after)
                        ));
                    }
                }
                (r, c) => diffs.push(format!(
                    "{sim:?} {w:#010x} at {a:#x}: Rust {r:?}, C faulted {c}"
                )),
            }
        }
    }

    rep.finish_site(|| format!("{a:#x} {w:#010x}"), diffs, opts.show);
}

/// The fields where the Rust frame `r` and the C frame `c` differ, with their value before.
pub fn frame_diff(before: &PtRegs, r: &PtRegs, c: &PtRegs) -> String {
    let regs = (0..31).map(|i| (format!("x{i}"), before.regs[i], r.regs[i], c.regs[i]));
    let others = [
        ("sp", before.sp, r.sp, c.sp),
        ("pc", before.pc, r.pc, c.pc),
        ("pstate", before.pstate, r.pstate, c.pstate),
    ];
    report::frame_diff(regs.chain(others.map(|(n, b, rv, cv)| (n.to_string(), b, rv, cv))))
}

/// Whether upstream's C was built.
pub fn c_available() -> bool {
    ffi::AVAILABLE
}

/// Upstream's `aarch32_opcode_cond_checks[cond](pstate)`; `false` without the C.
pub fn c_condition_holds(cond: u32, pstate: u64) -> bool {
    #[cfg(rkprobes_c_arm64)]
    {
        ffi::cond(cond, pstate)
    }
    #[cfg(not(rkprobes_c_arm64))]
    {
        let _ = (cond, pstate);
        false
    }
}

// SPDX-License-Identifier: GPL-2.0

//! The differential: upstream's C and the Rust decisions side by side at every instruction
//! boundary of an [`Image`].

use crate::image::{Image, OtherProbe};
use rkprobes_x86_insn::kprobes::{self, Config, Emulation, KernelText, Regs, Stack, Template};
use rkprobes_x86_insn::{Insn, Mode, OpcodeMap};
use std::collections::BTreeMap;

/// Where the instruction slot is, relative to the probe.
#[derive(Clone, Copy, Debug)]
pub enum Slot {
    /// In the module area, within `jmp rel32` reach of kernel text.
    Near,
    /// In the vmalloc area, out of reach: RIP-relative copies and optprobes fail.
    Far,
}

impl Slot {
    /// Returns the slot address used for a probe at `addr`.
    pub fn addr(self, addr: u64) -> u64 {
        match self {
            Slot::Near => 0xffff_ffff_c000_0000 + (addr & 0xff0),
            Slot::Far => 0xffff_c900_0000_0000 + (addr & 0xff0),
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The configuration (`preemption` is tried both ways).
    pub cfg: Config,
    /// Optprobes are compared at every site of functions of at most this many
    /// instructions, and at every [`Self::opt_stride`]th site of longer ones (`can_optimize`
    /// decodes the whole function for each site).
    pub opt_full: usize,
    /// See [`Self::opt_full`].
    pub opt_stride: usize,
    /// Register states each emulated site is run with.
    pub emulate_states: usize,
    /// How many mismatches to print in full.
    pub show: usize,
    /// Print progress to stderr every 1000 symbols.
    pub progress: bool,
    /// Added to the slot address the Rust side is given, for the negative control: any
    /// non-zero value must produce mismatches.
    pub rust_slot_skew: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cfg: Config::default(),
            opt_full: 256,
            opt_stride: 16,
            emulate_states: 8,
            show: 20,
            rust_slot_skew: 0,
            progress: false,
        }
    }
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Report {
    /// Instruction boundaries visited.
    pub sites: u64,
    /// Sites where C and Rust disagree for no listed reason.
    pub mismatches: u64,
    /// Sites where they disagree for a listed, deliberate reason, by reason.
    pub divergences: BTreeMap<&'static str, u64>,
    /// Individual comparisons made.
    pub checks: u64,
    /// Outcomes seen (for the summary): `prepare_kprobe` errnos, boosts, emulations,
    /// optprobes.
    pub outcomes: BTreeMap<String, u64>,
    /// The first mismatches, described.
    pub shown: Vec<String>,
}

/// Why upstream and the Rust side deliberately differ on instructions whose opcode map is
/// carried by a prefix.
pub const PREFIX_MAP_REASON: &str = "VEX/EVEX/REX2-encoded opcode: upstream looks at opcode.bytes[0] alone, so it reads e.g. vpshufd (c5 f9 70) as a jcc, vcmpps (c5 f8 c2) as ret, vpsllw (c5 f9 f1) as int1 and REX2 movups (d5 c0 11) as adc for emulation, boosting, exception and jump-into-range checks; the Rust decoder keys them on the encoding space";

/// Why the two decoders deliberately differ on AMD XOP.
pub const XOP_REASON: &str = "AMD XOP instruction (8f with map_select >= 8): the Rust decoder decodes it, upstream's decodes 8f as pop and so finds other instruction boundaries after it";

/// Why the Rust side refuses `pop %ss`.
pub const POP_SS_REASON: &str = "pop %ss (17, invalid in 64-bit mode): upstream's POP_SS_OPCODE is 0x1f (pop %ds), so it copies 17 to single-step it; the Rust refuses it as it refuses mov to %ss (-EINVAL)";

/// Returns the deliberate reason for a difference involving `insns`, if there is one.
fn reason<'a>(mut insns: impl Iterator<Item = &'a Insn> + Clone) -> Option<&'static str> {
    if insns
        .clone()
        .any(|i| matches!(i.opcode().0, OpcodeMap::Xop(_)))
    {
        return Some(XOP_REASON);
    }
    if insns.clone().any(|i| non_legacy(i) || i.rex().len() == 2) {
        return Some(PREFIX_MAP_REASON);
    }
    insns
        .any(|i| i.opcode() == (OpcodeMap::Legacy(0), 0x17))
        .then_some(POP_SS_REASON)
}

fn decode_at(img: &Image, addr: u64) -> Option<Insn> {
    let mut buf = [0u8; 15];
    img.read(addr, &mut buf).then_some(())?;
    Insn::decode(&buf, Mode::Bits64).ok()
}

fn non_legacy(insn: &Insn) -> bool {
    !matches!(insn.opcode().0, OpcodeMap::Legacy(_))
}

/// Returns the last instruction boundary strictly inside `(addr, addr + size)`.
fn inner_boundary(img: &Image, addr: u64, size: u64) -> Option<u64> {
    let mut at = addr;
    let mut last = None;
    while at < addr + size {
        if at > addr {
            last = Some(at);
        }
        at += decode_at(img, at)?.len() as u64;
    }
    last
}

/// Returns the boundaries of the symbol `(start, size)` as the Rust decoder finds them.
fn boundaries(img: &Image, start: u64, size: u64) -> Vec<(u64, Insn)> {
    let mut out = Vec::new();
    let mut addr = start;
    while addr < start + size {
        let Some(insn) = decode_at(img, addr) else {
            break;
        };
        out.push((addr, insn));
        addr += insn.len() as u64;
    }
    out
}

fn emulation_tuple(e: Emulation) -> (u8, u8, u8, i32) {
    match e {
        Emulation::None => (0, 0, 0, 0),
        Emulation::IfModifier(op) => (1, op, 0, 0),
        Emulation::Ret => (2, 0, 0, 0),
        Emulation::Call { rel } => (3, 0, 0, rel),
        Emulation::Jmp { rel } => (4, 0, 0, rel),
        Emulation::Jcc { cond, rel } => (5, cond, 0, rel),
        Emulation::Loop {
            kind,
            address_bits,
            rel,
        } => (6, kind, address_bits, rel),
        Emulation::CallIndirect { reg } => (7, reg, 0, 0),
        Emulation::JmpIndirect { reg } => (8, reg, 0, 0),
    }
}

/// A stack of 16 words at a fixed address, for the Rust emulators.
struct ArrayStack {
    base: u64,
    words: [u64; 16],
    bad: bool,
}

impl Stack for ArrayStack {
    fn write(&mut self, addr: u64, val: u64) {
        match self.slot(addr) {
            Some(i) => self.words[i] = val,
            None => self.bad = true,
        }
    }

    fn read(&mut self, addr: u64) -> u64 {
        match self.slot(addr) {
            Some(i) => self.words[i],
            None => {
                self.bad = true;
                0
            }
        }
    }
}

impl ArrayStack {
    fn slot(&self, addr: u64) -> Option<usize> {
        let off = addr.checked_sub(self.base)?;
        off.is_multiple_of(8).then_some(())?;
        let i = usize::try_from(off / 8).ok()?;
        (i < self.words.len()).then_some(i)
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[cfg(rkprobes_c_kprobes)]
mod run_c {
    use super::*;
    use crate::ffi::{PtRegs, TemplateSpec, Upstream};

    const GPR_TO_PT: [fn(&mut PtRegs) -> &mut u64; 16] = [
        |r| &mut r.ax,
        |r| &mut r.cx,
        |r| &mut r.dx,
        |r| &mut r.bx,
        |r| &mut r.sp,
        |r| &mut r.bp,
        |r| &mut r.si,
        |r| &mut r.di,
        |r| &mut r.r8,
        |r| &mut r.r9,
        |r| &mut r.r10,
        |r| &mut r.r11,
        |r| &mut r.r12,
        |r| &mut r.r13,
        |r| &mut r.r14,
        |r| &mut r.r15,
    ];

    /// The optprobe template the differential uses: `optprobe_template_entry`'s layout on
    /// x86-64 (NOP3 for `clac`, two NOP5 for the argument, NOP5 for the call) around filler.
    pub const TEMPLATE_LEN: usize = 0x60;
    const CLAC: usize = 4;
    const VAL: usize = 0x27;
    const CALL: usize = 0x31;
    const CALLBACK: u64 = 0xffff_ffff_8123_4560;

    fn template_code() -> [u8; TEMPLATE_LEN] {
        let mut t = [0x90u8; TEMPLATE_LEN];
        for (i, b) in t.iter_mut().enumerate() {
            *b = 0x50 + (i as u8 % 8);
        }
        t[CLAC..CLAC + 3].copy_from_slice(&[0x0f, 0x1f, 0x00]);
        for at in [VAL, VAL + 5, CALL] {
            t[at..at + 5].copy_from_slice(&crate::image::NOP5);
        }
        t
    }

    struct Site {
        addr: u64,
        start: u64,
        end: u64,
        len: u64,
    }

    pub fn run(img: &Image, opts: &Options) -> Report {
        let code = template_code();
        let spec = TemplateSpec {
            code: &code,
            clac: CLAC,
            val: VAL,
            call: CALL,
            callback: CALLBACK,
        };
        let tmpl = Template {
            code: &code,
            clac: CLAC,
            val: VAL,
            call: CALL,
            callback: CALLBACK,
        };
        let mut c = Upstream::new(img, &opts.cfg, &spec);
        let mut rep = Report::default();
        for (n, &(start, size)) in img.symbols.iter().enumerate() {
            if opts.progress && n % 1000 == 0 {
                eprintln!(
                    "{n}/{} symbols, {} sites, {} mismatches",
                    img.symbols.len(),
                    rep.sites,
                    rep.mismatches
                );
            }
            let func = boundaries(img, start, size);
            let sampled = func.len() <= opts.opt_full;
            for (i, (addr, insn)) in func.iter().enumerate() {
                let site = Site {
                    addr: *addr,
                    start,
                    end: start + size,
                    len: insn.len() as u64,
                };
                let opt = sampled || i % opts.opt_stride.max(1) == 0;
                let mut diffs = Vec::new();
                compare_site(&mut c, img, opts, &tmpl, &site, opt, &mut rep, &mut diffs);
                rep.sites += 1;
                if diffs.is_empty() {
                    continue;
                }
                // A kprobe decision reads the function up to the site, an optprobe all of it.
                let upto = func.iter().take(i + 1).map(|(_, i)| i);
                let all = func.iter().map(|(_, i)| i);
                let why: Option<Vec<_>> = diffs
                    .iter()
                    .map(|d: &(bool, String)| {
                        if d.0 {
                            reason(all.clone())
                        } else {
                            reason(upto.clone())
                        }
                    })
                    .collect();
                if let Some(why) = why {
                    *rep.divergences.entry(why[0]).or_default() += 1;
                } else {
                    rep.mismatches += 1;
                    if rep.shown.len() < opts.show {
                        let bytes: Vec<String> =
                            insn.bytes().iter().map(|b| format!("{b:02x}")).collect();
                        let mut head = [0u8; 16];
                        img.read(start, &mut head);
                        rep.shown.push(format!(
                            "{addr:#x} (sym {start:#x}+{:#x}, starting {head:02x?}) [{}]: {}",
                            addr - start,
                            bytes.join(" "),
                            diffs
                                .into_iter()
                                .map(|d| d.1)
                                .collect::<Vec<_>>()
                                .join("; ")
                        ));
                    }
                }
            }
        }
        rep
    }

    fn count(rep: &mut Report, what: String) {
        *rep.outcomes.entry(what).or_default() += 1;
    }

    /// Compares everything at one site; each difference is (whether it comes from the
    /// function walk of an optprobe, description).
    #[expect(clippy::too_many_arguments)]
    fn compare_site(
        c: &mut Upstream<'_>,
        img: &Image,
        opts: &Options,
        tmpl: &Template<'_>,
        s: &Site,
        opt: bool,
        rep: &mut Report,
        diffs: &mut Vec<(bool, String)>,
    ) {
        let mut check = |rep: &mut Report, walk: bool, ok: bool, what: String| {
            rep.checks += 1;
            if !ok {
                diffs.push((walk, what));
            }
        };
        let rust_cp = kprobes::can_probe(img, &opts.cfg, s.addr);
        let c_cp = c.can_probe(s.addr);
        check(
            rep,
            false,
            rust_cp == c_cp,
            format!("can_probe C {c_cp} Rust {rust_cp}"),
        );

        let off = s.addr - s.start;
        let mut word = [0u8; 4];
        let first = img
            .read(s.start, &mut word)
            .then(|| u32::from_le_bytes(word));
        let r = kprobes::adjust_kprobe_addr(&opts.cfg, s.start, off, first).unwrap_or((0, false));
        let ca = c.adjust_kprobe_addr(s.start, off);
        check(
            rep,
            false,
            r == ca,
            format!("adjust_kprobe_addr C {ca:x?} Rust {r:x?}"),
        );

        // Another probe armed here, plain (int3) and optimized (jmp rel32): what
        // recover_probed_instruction() restores at and after it, and the boundary check of
        // the next instruction, whose walk reads through it.
        let mut orig = [0u8; 5];
        img.read(s.addr, &mut orig);
        for optimized in [None, Some([orig[1], orig[2], orig[3], orig[4]])] {
            img.probe.set(Some(OtherProbe {
                addr: s.addr,
                opcode: orig[0],
                optimized,
            }));
            let what = if optimized.is_some() {
                "optimized"
            } else {
                "kprobe"
            };
            for at in s.addr..s.addr + 5 {
                let cr = c.recover(at);
                let rr = img.recover(at);
                check(
                    rep,
                    false,
                    cr == rr,
                    format!("recover {at:#x} with {what} here: C {cr:02x?} Rust {rr:02x?}"),
                );
            }
            let next = s.addr + s.len;
            if next < s.end {
                let rc = kprobes::can_probe(img, &opts.cfg, next);
                let cc = c.can_probe(next);
                check(
                    rep,
                    true,
                    rc == cc,
                    format!("can_probe after a {what}: C {cc} Rust {rc}"),
                );
            }
            img.probe.set(None);
        }

        for slot in [Slot::Near, Slot::Far] {
            let slot_addr = slot.addr(s.addr);
            for (preempt, post) in [(false, false), (true, false), (false, true)] {
                c.set_preemption(preempt);
                let cfg = Config {
                    preemption: preempt,
                    ..opts.cfg
                };
                let ck = c.prepare_kprobe(s.addr, slot_addr, post);
                let rust_slot = slot_addr.wrapping_add(opts.rust_slot_skew);
                let rk = kprobes::prepare_kprobe(img, &cfg, s.addr, rust_slot, post);
                let tag = format!("{slot:?} preempt={preempt} post={post}");
                match rk {
                    Err(e) => {
                        check(
                            rep,
                            false,
                            ck.ret == e,
                            format!("{tag}: errno C {} Rust {e}", ck.ret),
                        );
                        count(rep, format!("prepare_kprobe errno {e}"));
                    }
                    Ok(p) => {
                        if ck.ret != 0 {
                            check(
                                rep,
                                false,
                                false,
                                format!("{tag}: errno C {} Rust 0", ck.ret),
                            );
                            continue;
                        }
                        let n = p.len;
                        let cn = ck.tp_len as usize;
                        check(
                            rep,
                            false,
                            n == cn && p.slot[..n] == ck.poked[..n.min(15)],
                            format!(
                                "{tag}: slot C {:02x?} Rust {:02x?}",
                                &ck.poked[..cn.min(15)],
                                &p.slot[..n]
                            ),
                        );
                        check(rep, false, p.opcode == ck.opcode, format!("{tag}: opcode"));
                        check(
                            rep,
                            false,
                            p.boostable == (ck.boostable != 0),
                            format!("{tag}: boostable C {} Rust {}", ck.boostable, p.boostable),
                        );
                        check(rep, false, p.size == ck.size, format!("{tag}: size"));
                        let re = emulation_tuple(p.emulation);
                        let ce = (
                            ck.emulate,
                            ck.op_byte,
                            if ck.emulate == 6 { ck.loop_asize } else { 0 },
                            ck.rel32,
                        );
                        check(
                            rep,
                            false,
                            re == ce,
                            format!("{tag}: emulation C {ce:?} Rust {re:?}"),
                        );
                        count(rep, format!("prepare_kprobe ok, boosted={}", p.boostable));
                        if matches!(slot, Slot::Near) && !preempt && !post && re == ce && re.0 != 0
                        {
                            count(rep, format!("emulation kind {}", re.0));
                            for k in 0..opts.emulate_states {
                                let seed = s.addr ^ ((k as u64 + 1) << 48);
                                let ok = compare_emulation(c, s.addr, p.emulation, p.size, seed);
                                check(
                                    rep,
                                    false,
                                    ok.is_ok(),
                                    format!(
                                        "emulation state {k}: {}",
                                        ok.err().unwrap_or_default()
                                    ),
                                );
                            }
                        }
                    }
                }
            }
            c.set_preemption(opts.cfg.preemption);
            if !opt {
                continue;
            }
            let rco = kprobes::can_optimize(img, &opts.cfg, s.addr);
            let cco = c.can_optimize(s.addr);
            check(
                rep,
                true,
                rco == cco,
                format!("can_optimize C {cco} Rust {rco}"),
            );
            let mut buf = vec![0u8; tmpl.max_optinsn_size()];
            let op = c.optprobe_addr();
            let ro = kprobes::prepare_optimized_kprobe(
                img,
                &opts.cfg,
                s.addr,
                slot_addr.wrapping_add(opts.rust_slot_skew),
                op,
                tmpl,
                &mut buf,
            );
            let co = c.prepare_optimized_kprobe(s.addr, slot_addr);
            let tag = format!("{slot:?} optprobe");
            match ro {
                Err(e) => {
                    check(
                        rep,
                        true,
                        co.ret == e,
                        format!("{tag}: errno C {} Rust {e}", co.ret),
                    );
                    count(rep, format!("prepare_optimized_kprobe errno {e}"));
                }
                Ok(o) => {
                    let cl = co.len as usize;
                    check(
                        rep,
                        true,
                        co.ret == 0,
                        format!("{tag}: errno C {} Rust 0", co.ret),
                    );
                    check(
                        rep,
                        true,
                        o.size == co.size as usize,
                        format!("{tag}: size C {} Rust {}", co.size, o.size),
                    );
                    check(
                        rep,
                        true,
                        o.len == cl && buf[..o.len] == co.poked[..cl.min(512)],
                        format!(
                            "{tag}: detour C {:02x?} Rust {:02x?}",
                            &co.poked[..cl.min(512)],
                            &buf[..o.len]
                        ),
                    );
                    let rc = kprobes::check_optimized_kprobe(img, s.addr, o.size)
                        .err()
                        .unwrap_or(0);
                    check(
                        rep,
                        true,
                        rc == co.check,
                        format!("{tag}: check C {} Rust {rc}", co.check),
                    );
                    // Another armed probe at an instruction boundary inside the replaced
                    // bytes: its int3 is in the text, recovered for the copy (the detour is
                    // the same), and it refuses the optimization.
                    if let Some(inside) = inner_boundary(img, s.addr, o.size as u64) {
                        let mut first = [0u8];
                        img.read(inside, &mut first);
                        img.probe.set(Some(OtherProbe {
                            addr: inside,
                            opcode: first[0],
                            optimized: None,
                        }));
                        let co2 = c.prepare_optimized_kprobe(s.addr, slot_addr);
                        let mut buf2 = vec![0u8; tmpl.max_optinsn_size()];
                        let ro2 = kprobes::prepare_optimized_kprobe(
                            img,
                            &opts.cfg,
                            s.addr,
                            slot_addr.wrapping_add(opts.rust_slot_skew),
                            op,
                            tmpl,
                            &mut buf2,
                        );
                        let rc2 = kprobes::check_optimized_kprobe(img, s.addr, o.size)
                            .err()
                            .unwrap_or(0);
                        img.probe.set(None);
                        let cl2 = (co2.len as usize).min(512);
                        check(
                            rep,
                            true,
                            ro2 == Ok(o)
                                && buf2 == buf
                                && co2.ret == 0
                                && co2.poked[..cl2] == buf[..o.len],
                            format!("{tag}: with a probe inside C {} Rust {ro2:?}", co2.ret),
                        );
                        check(
                            rep,
                            true,
                            rc2 == co2.check && rc2 == kprobes::errno::EEXIST,
                            format!(
                                "{tag}: check with a probe inside C {} Rust {rc2}",
                                co2.check
                            ),
                        );
                        count(rep, "optprobe with another probe inside".into());
                    }
                    count(rep, format!("prepare_optimized_kprobe ok, size {}", o.size));
                }
            }
        }
    }

    /// Runs one emulation in C and in Rust from the same random state.
    fn compare_emulation(
        c: &mut Upstream<'_>,
        addr: u64,
        e: Emulation,
        size: u8,
        seed: u64,
    ) -> Result<(), String> {
        let mut rng = Rng(seed | 1);
        let mut cstack = [0u64; 16];
        let base = cstack.as_mut_ptr() as u64;
        for w in cstack.iter_mut() {
            *w = rng.next();
        }
        let mut regs = Regs::default();
        for g in regs.gpr.iter_mut() {
            *g = rng.next();
        }
        // Counters at the edges of each width, and every flag pattern over time.
        regs.gpr[1] = match seed >> 48 & 7 {
            1 => 0,
            2 => 1,
            3 => 0x1_0000,
            4 => 0x1_0000_0000,
            5 => 0xffff_ffff_0000_0001,
            _ => rng.next(),
        };
        regs.flags = rng.next() & 0xfff;
        regs.gpr[4] = base + 8 * 8;
        regs.ip = addr + 1;
        let mut pt = PtRegs::default();
        for (i, f) in GPR_TO_PT.iter().enumerate() {
            *f(&mut pt) = regs.gpr[i];
        }
        pt.ip = regs.ip;
        pt.flags = regs.flags;
        let mut rstack = ArrayStack {
            base,
            words: cstack,
            bad: false,
        };
        // SAFETY: `pt.sp` points to the middle of `cstack`, and an emulation moves it by one
        // word.
        unsafe { c.emulate(&mut pt) };
        kprobes::emulate(e, size, &mut regs, &mut rstack);
        let mut want = Regs::default();
        for (i, f) in GPR_TO_PT.iter().enumerate() {
            want.gpr[i] = *f(&mut pt);
        }
        want.ip = pt.ip;
        want.flags = pt.flags;
        if rstack.bad || want != regs || rstack.words != cstack {
            return Err(format!(
                "C {want:x?} {cstack:x?} Rust {regs:x?} {:x?}",
                rstack.words
            ));
        }
        Ok(())
    }
}

/// Runs the differential over every instruction boundary of `img`.
///
/// `Err` when upstream's C could not be built (see `build.rs`).
pub fn run(img: &Image, opts: &Options) -> Result<Report, String> {
    #[cfg(rkprobes_c_kprobes)]
    {
        Ok(run_c::run(img, opts))
    }
    #[cfg(not(rkprobes_c_kprobes))]
    {
        let _ = (img, opts);
        Err("upstream's C was not built: set RKPROBES_LINUX_SRC to the Linux 6.12 tree".into())
    }
}

impl Report {
    /// Prints the summary, ending with the `N sites, M mismatches` line.
    pub fn print(&self) {
        for m in &self.shown {
            println!("MISMATCH {m}");
        }
        for (what, n) in &self.outcomes {
            println!("  {n:>9}  {what}");
        }
        println!("{} comparisons", self.checks);
        for (why, n) in &self.divergences {
            println!("deliberate divergence at {n} sites: {why}");
        }
        println!("{} sites, {} mismatches", self.sites, self.mismatches);
    }
}

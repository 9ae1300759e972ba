// SPDX-License-Identifier: GPL-2.0

//! The kprobes decision sources build as the kernel builds them, use `core` only, and have
//! no panic path.
//!
//! `arch/x86/kernel/kprobes/mod.rs` and the decoder it uses are compiled into a stand-alone
//! `no_std` crate with `rustc` (no `std`, no `alloc` in scope), with the kernel's lints, and
//! again to LLVM IR at the kernel's optimisation levels with every public entry point
//! exercised, which must declare no panic function.

#[path = "../../x86-insn/tests/common/no_std_check.rs"]
mod no_std_check;

use no_std_check::Check;

/// Calls every public entry point on opaque inputs, so their code is in the optimised
/// output.
const EXERCISE: &str = r#"
use kprobes::{Config, KernelText, Regs, Stack, SymbolSpan, Template, MAX_INSN_SIZE};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}

/// Kernel text in a caller's buffer, and answers from caller-provided words.
pub struct Text<'a> {
    base: u64,
    text: &'a [u8],
    answers: u64,
}

impl KernelText for Text<'_> {
    fn recover(&self, addr: u64) -> Option<[u8; MAX_INSN_SIZE]> {
        let off = usize::try_from(addr.wrapping_sub(self.base)).ok()?;
        let bytes = self.text.get(off..)?;
        let mut out = [0u8; MAX_INSN_SIZE];
        let mut from = bytes.iter();
        for b in out.iter_mut() {
            *b = from.next().copied().unwrap_or(0);
        }
        Some(out)
    }
    fn lookup_size_offset(&self, addr: u64) -> Option<SymbolSpan> {
        (self.answers & 1 != 0).then(|| SymbolSpan {
            size: self.text.len() as u64,
            offset: addr.wrapping_sub(self.base),
        })
    }
    fn search_exception_tables(&self, addr: u64) -> bool {
        self.answers & 2 != 0 && addr == self.answers
    }
    fn is_cfi_trap(&self, addr: u64) -> bool {
        addr == self.answers >> 1
    }
    fn kgdb_has_hit_break(&self, addr: u64) -> bool {
        addr == self.answers >> 2
    }
    fn alternatives_text_reserved(&self, start: u64, _end: u64) -> bool {
        start == self.answers >> 3
    }
    fn text_reserved(&self, start: u64, end: u64) -> bool {
        start <= self.answers && self.answers <= end
    }
    fn in_entry_text(&self, addr: u64) -> bool {
        addr == self.answers >> 4
    }
    fn armed_kprobe_at(&self, addr: u64) -> bool {
        addr == self.answers >> 5
    }
}

struct Words<'a>(&'a mut [u64; 8], u64);

impl Stack for Words<'_> {
    fn write(&mut self, addr: u64, val: u64) {
        if let Some(w) = self.0.get_mut((addr.wrapping_sub(self.1) / 8) as usize) {
            *w = val;
        }
    }
    fn read(&mut self, addr: u64) -> u64 {
        self.0.get((addr.wrapping_sub(self.1) / 8) as usize).copied().unwrap_or(0)
    }
}

fn config(bits: u64) -> Config {
    Config {
        preemption: bits & 1 != 0,
        cfi_clang: bits & 2 != 0,
        kgdb: bits & 4 != 0,
        no_jump_tables: bits & 8 != 0,
        ibt: bits & 16 != 0,
        smap: bits & 32 != 0,
    }
}

/// Prepares a kprobe and an optprobe and runs the emulation.
#[no_mangle]
pub extern "C" fn exercise(
    text: &[u8; 64],
    w: &[u64; 8],
    out: &mut [u8; 256],
    tmpl: &[u8; 96],
    stack: &mut [u64; 8],
    regs: &mut Regs,
) -> i64 {
    let text = text.get(..(w[2] >> 8) as usize).unwrap_or(text);
    let tmpl = tmpl.get(..(w[2] >> 16) as usize).unwrap_or(tmpl);
    let k = Text { base: w[0], text, answers: w[1] };
    let cfg = config(w[2]);
    let mut r = 0i64;
    match kprobes::prepare_kprobe(&k, &cfg, w[3], w[4], w[5] & 1 != 0) {
        Ok(p) => {
            r = r.wrapping_add(p.len as i64).wrapping_add(i64::from(p.slot[3]));
            let mut s = Words(stack, w[6]);
            r = r.wrapping_add(i64::from(kprobes::emulate(p.emulation, p.size, regs, &mut s)));
        }
        Err(e) => r = r.wrapping_add(e.into()),
    }
    let t = Template {
        code: tmpl,
        clac: w[6] as usize,
        val: w[7] as usize,
        call: (w[7] >> 32) as usize,
        callback: w[5] ^ w[6],
    };
    match kprobes::prepare_optimized_kprobe(&k, &cfg, w[3], w[4], w[5], &t, out) {
        Ok(o) => r = r.wrapping_add(o.len as i64),
        Err(e) => r = r.wrapping_add(e.into()),
    }
    if let Err(e) = kprobes::check_optimized_kprobe(&k, w[3], w[7] as usize) {
        r = r.wrapping_add(e.into());
    }
    let mut buf = [0u8; MAX_INSN_SIZE];
    kprobes::recover_probed_insn(&mut buf, w[1] & 1 != 0, text.first().copied());
    let copied = [buf[1], buf[2], buf[3], buf[4]];
    kprobes::recover_optprobed_insn(&mut buf, w[3], w[4], w[5] as u8, &copied);
    r = r.wrapping_add(i64::from(buf[w[6] as usize % MAX_INSN_SIZE]));
    let mut word = [0u8; 4];
    for (d, s) in word.iter_mut().zip(text.iter()) {
        *d = *s;
    }
    if let Some((a, entry)) =
        kprobes::adjust_kprobe_addr(&cfg, w[3], w[4], Some(u32::from_le_bytes(word)))
    {
        r = r.wrapping_add(a as i64).wrapping_add(i64::from(entry));
    }
    r
}
"#;

const CHECK: Check = Check {
    what: "the x86 kprobes decisions",
    modules: &[
        ("insn_decoder", "arch/x86/lib/insn_decoder/mod.rs"),
        ("kprobes", "arch/x86/kernel/kprobes/mod.rs"),
    ],
    exercise: EXERCISE,
    must_contain: &["exercise", "can_optimize"],
    crate_name: "rkprobes_kprobes_check",
};

no_std_check::kernel_build_tests!(CHECK);

// SPDX-License-Identifier: GPL-2.0

//! The kernel model both sides of the differential read: text, symbols and the tables
//! upstream consults.

use rkprobes_difftest_common::elf::{symbol_containing, Elf, SHT_NOBITS};
use rkprobes_x86_insn::kprobes::{
    recover_optprobed_insn, recover_probed_insn, KernelText, SymbolSpan, DISP32_SIZE, MAX_INSN_SIZE,
};
use std::cell::{Cell, RefCell};
use std::collections::HashSet;

pub use rkprobes_x86_insn::kprobes::NOP5;

/// Another probe, armed: its int3 (or, optimized, its `jmp rel32`) is in the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OtherProbe {
    /// Where it is.
    pub addr: u64,
    /// The original first byte (`p->opcode`).
    pub opcode: u8,
    /// For an optimized probe, the original bytes after the first
    /// (`op->optinsn.copied_insn`).
    pub optimized: Option<[u8; DISP32_SIZE]>,
}

/// Where the jump of an optimized [`OtherProbe`] goes.
const OTHER_DETOUR: u64 = 0xffff_ffff_c010_0000;

/// A kernel text image and the tables kprobes consults about it.
#[derive(Default)]
pub struct Image {
    /// Address of the first byte of [`Self::text`].
    pub base: u64,
    /// The text.
    pub text: Vec<u8>,
    /// Symbol starts and sizes, sorted by start, not overlapping.
    pub symbols: Vec<(u64, u64)>,
    /// Instruction addresses of the exception table.
    pub extable: HashSet<u64>,
    /// ftrace call sites (`__start_mcount_loc` to `__stop_mcount_loc`), sorted.
    pub ftrace: Vec<u64>,
    /// Lock prefixes the UP/SMP alternatives may patch (`.smp_locks`), sorted.
    pub smp_locks: Vec<u64>,
    /// Addresses of kgdb software breakpoints.
    pub kgdb_breaks: HashSet<u64>,
    /// kCFI trap (`ud2`) addresses.
    pub cfi_traps: HashSet<u64>,
    /// The entry text (`__entry_text_start` to `__entry_text_end`).
    pub entry_text: (u64, u64),
    /// Another armed probe, if any.
    pub probe: Cell<Option<OtherProbe>>,
    /// The displacements `__copy_instruction()` reported as not fitting into s32 (its
    /// `pr_err()`), in order.
    pub displacement_errors: RefCell<Vec<i64>>,
}

impl Image {
    /// Reads the text at `addr` as the running kernel holds it, with another probe's int3 or
    /// jump in place; zero past the end of the text, `false` before it or beyond.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> bool {
        if !self.read_original(addr, out) {
            return false;
        }
        if let Some(p) = self.probe.get() {
            let mut patch = [0u8; 5];
            let n = if p.optimized.is_some() {
                let rel = OTHER_DETOUR.wrapping_sub(p.addr + 5) as u32;
                patch[0] = 0xe9;
                patch[1..].copy_from_slice(&rel.to_le_bytes());
                5
            } else {
                patch[0] = 0xcc;
                1
            };
            for (i, b) in patch[..n].iter().enumerate() {
                let at = p.addr.wrapping_add(i as u64);
                if let Some(o) = at.checked_sub(addr).and_then(|o| out.get_mut(o as usize)) {
                    *o = *b;
                }
            }
        }
        true
    }

    /// Reads the original text at `addr`, zero past its end; `false` before it or beyond.
    pub fn read_original(&self, addr: u64, out: &mut [u8]) -> bool {
        let Some(off) = addr.checked_sub(self.base) else {
            return false;
        };
        let Ok(off) = usize::try_from(off) else {
            return false;
        };
        if off >= self.text.len() {
            return false;
        }
        for (i, b) in out.iter_mut().enumerate() {
            *b = self.text.get(off + i).copied().unwrap_or(0);
        }
        true
    }

    /// Returns the symbol containing `addr`.
    pub fn symbol(&self, addr: u64) -> Option<(u64, u64)> {
        symbol_containing(&self.symbols, addr)
    }

    /// Finds kCFI check sequences in the text: `movl $id, %r10d; addl -4(%reg), %r10d;
    /// je .+2; ud2`, the sequence `decode_cfi_insn()` reads, and records their `ud2`.
    pub fn find_cfi_traps(&mut self) {
        let t = &self.text;
        for i in 12..t.len().saturating_sub(1) {
            let ud2 = t[i] == 0x0f && t[i + 1] == 0x0b;
            let je = t[i - 2] == 0x74 && t[i - 1] == 0x02;
            let movl = t[i - 12] == 0x41 && t[i - 11] == 0xba;
            let addl = matches!(t[i - 6], 0x44 | 0x45) && t[i - 5] == 0x03;
            if ud2 && je && movl && addl {
                self.cfi_traps.insert(self.base + i as u64);
            }
        }
    }

    /// Whether `addr` is an ftrace site (`ftrace_location(addr) == addr`).
    pub fn is_ftrace(&self, addr: u64) -> bool {
        self.ftrace.binary_search(&addr).is_ok()
    }

    /// `ftrace_text_reserved()`: a 5-byte call site overlapping `[start, end]`.
    pub fn ftrace_text_reserved(&self, start: u64, end: u64) -> bool {
        let i = self.ftrace.partition_point(|&a| a + 5 <= start);
        self.ftrace.get(i).is_some_and(|&a| a <= end)
    }
}

impl KernelText for Image {
    fn recover(&self, addr: u64) -> Option<[u8; MAX_INSN_SIZE]> {
        let mut buf = [0u8; MAX_INSN_SIZE];
        if !self.read(addr, &mut buf) {
            return None;
        }
        let probe = self.probe.get();
        // __recover_optprobed_insn(): an optimized probe up to 4 bytes before.
        if let Some((p, copied)) = probe.and_then(|p| Some((p, p.optimized?))) {
            if addr.wrapping_sub(p.addr) < 5 {
                recover_optprobed_insn(&mut buf, addr, p.addr, p.opcode, &copied);
                return Some(buf);
            }
        }
        // __recover_probed_insn()
        let kprobe = probe.filter(|p| p.addr == addr).map(|p| p.opcode);
        recover_probed_insn(&mut buf, self.is_ftrace(addr), kprobe);
        Some(buf)
    }

    fn lookup_size_offset(&self, addr: u64) -> Option<SymbolSpan> {
        let (start, size) = self.symbol(addr)?;
        Some(SymbolSpan {
            size,
            offset: addr - start,
        })
    }

    fn search_exception_tables(&self, addr: u64) -> bool {
        self.extable.contains(&addr)
    }

    fn is_cfi_trap(&self, addr: u64) -> bool {
        self.cfi_traps.contains(&addr)
    }

    fn kgdb_has_hit_break(&self, addr: u64) -> bool {
        self.kgdb_breaks.contains(&addr)
    }

    fn alternatives_text_reserved(&self, start: u64, end: u64) -> bool {
        // A lock prefix in [start, end], as for a kernel that keeps them (one possible CPU).
        let i = self.smp_locks.partition_point(|&a| a < start);
        self.smp_locks.get(i).is_some_and(|&a| a <= end)
    }

    fn text_reserved(&self, start: u64, end: u64) -> bool {
        self.ftrace_text_reserved(start, end) || self.alternatives_text_reserved(start, end)
    }

    fn in_entry_text(&self, addr: u64) -> bool {
        self.entry_text.0 <= addr && addr < self.entry_text.1
    }

    fn armed_kprobe_at(&self, addr: u64) -> bool {
        self.probe.get().is_some_and(|p| p.addr == addr)
    }

    fn displacement_does_not_fit(&self, newdisp: i64) {
        self.displacement_errors.borrow_mut().push(newdisp);
    }
}

impl Image {
    /// Reads an x86-64 vmlinux: `.text`, its symbols, `__ex_table`, the ftrace sites, the
    /// entry text bounds, and the kCFI traps found in the text.
    pub fn from_vmlinux(f: &[u8]) -> Result<Image, String> {
        let elf = Elf::parse(f, None)?;
        let text = elf.section(".text").ok_or("no .text")?;
        let mut img = Image {
            base: text.addr,
            text: elf.data(text)?.to_vec(),
            ..Image::default()
        };
        let end = img.base + img.text.len() as u64;

        // (start, ELF size) of each text symbol.
        let mut starts: Vec<(u64, u64)> = Vec::new();
        let (mut mcount_start, mut mcount_stop) = (0, 0);
        for sym in elf.symbols()? {
            let (name, value) = (sym.name, sym.value);
            match name {
                "__entry_text_start" => img.entry_text.0 = value,
                "__entry_text_end" => img.entry_text.1 = value,
                "__start_mcount_loc" => mcount_start = value,
                "__stop_mcount_loc" => mcount_stop = value,
                _ => {}
            }
            // kallsyms keeps function and untyped text symbols, not local labels.
            if (sym.kind == 0 || sym.kind == 2)
                && !name.is_empty()
                && !name.starts_with(".L")
                && (img.base..end).contains(&value)
            {
                starts.push((value, if sym.kind == 2 { sym.size } else { 0 }));
            }
        }
        starts.sort_unstable();
        // One symbol per address, the largest ELF size.
        starts.dedup_by(|b, a| {
            a.0 == b.0 && {
                a.1 = a.1.max(b.1);
                true
            }
        });
        for (i, &(s, elf_size)) in starts.iter().enumerate() {
            // kallsyms measures a symbol to the next one; a function's ELF size, where
            // known, stops it at its end instead of running into the padding after it
            // (a kallsyms size would walk the 2 MiB of int3 at the end of .text).
            let next = starts.get(i + 1).map_or(end, |n| n.0);
            let size = if elf_size > 0 {
                elf_size.min(next - s)
            } else {
                next - s
            };
            // An untyped label followed by more than a page is a section marker before
            // alignment padding (`__entry_text_end`, `__static_call_text_end`...), not code.
            if elf_size == 0 && size > 4096 {
                continue;
            }
            img.symbols.push((s, size));
        }

        if let Some(ex) = elf.section("__ex_table") {
            // struct exception_table_entry { int insn, fixup, data; }, each relative to
            // itself.
            img.extable = elf.relative_table(ex, 12)?.into_iter().collect();
        }
        if let Some(locks) = elf.section(".smp_locks") {
            img.smp_locks = elf.relative_table(locks, 4)?;
            img.smp_locks.sort_unstable();
        }
        // The ftrace sites: __start_mcount_loc to __stop_mcount_loc, in whichever section
        // holds them.
        let holder = elf.sections().iter().find(|s| {
            s.kind != SHT_NOBITS && s.addr <= mcount_start && mcount_stop <= s.addr + s.size
        });
        if let (Some(sec), true) = (holder, mcount_start < mcount_stop) {
            let from = (sec.off + (mcount_start - sec.addr)) as usize;
            let to = from + (mcount_stop - mcount_start) as usize;
            img.ftrace = f
                .get(from..to)
                .ok_or("mcount_loc out of file")?
                .chunks_exact(8)
                .map(|a| u64::from_le_bytes(a.try_into().unwrap_or_default()))
                .filter(|&a| a != 0)
                .collect();
            img.ftrace.sort_unstable();
        }
        img.find_cfi_traps();
        Ok(img)
    }
}

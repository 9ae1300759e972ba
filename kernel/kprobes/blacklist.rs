// SPDX-License-Identifier: GPL-2.0

//! The kprobe blacklist: address ranges that must never be probed (`kprobe_blacklist` in C).
//!
//! Constraints: `no_std`, no allocation in the logic (entries live in a [`BlacklistStore`], in
//! the kernel the RCU list of `struct kprobe_blacklist_entry`); lookups are RCU reads and may run
//! from any context that can call `within_kprobe_blacklist` (kgdb, hw_breakpoint); additions and
//! removals run at init or under `kprobe_mutex` (module notifier). Does not name the `kernel`
//! crate.
//!
//! Semantics kept from C: an entry starts at a symbol and spans the symbol's size; a zero-size
//! symbol advances an area walk by one byte; the check is the arch range, then the list, then
//! the same on the base name of a `.`-suffixed symbol. With the upstream fix posted in April 2026
//! (applied to both cores), an address inside a symbol adds no entry: 6.12 added
//! `[entry, entry + size)` there, a range that runs past the symbol's end (on arm64 with
//! CALL_OPS a `NOKPROBE_SYMBOL` address is not a symbol start, and the range reached terabytes,
//! refusing every registration).

use core::ops::ControlFlow;

use super::arch::{Arch, ArchHooks};
use super::errno::{Errno, Result};

/// Storage of blacklist ranges, in insertion order.
pub trait BlacklistStore {
    /// `kmalloc` an entry and `list_add_tail_rcu` it; `Err(ENOMEM)` if allocation fails.
    fn blacklist_add_tail(&self, start: usize, end: usize) -> Result;
    /// `list_for_each_entry_rcu` over the entries, stopping on `Break`.
    fn blacklist_for_each(&self, f: impl FnMut(usize, usize) -> ControlFlow<()>)
        -> ControlFlow<()>;
    /// `list_del_rcu` + `kfree_rcu` every entry for which `pred(start, end)` holds.
    fn blacklist_remove_if(&self, pred: impl FnMut(usize, usize) -> bool);
}

/// The blacklist-related sections of a module (`struct module` fields).
#[derive(Clone, Copy, Debug, Default)]
pub struct ModuleAreas<'a> {
    /// `mod->kprobe_blacklist[0..num_kprobe_blacklist]` (its `NOKPROBE_SYMBOL`s).
    pub kprobe_blacklist: &'a [usize],
    /// `(kprobes_text_start, kprobes_text_size)`; start 0 when absent.
    pub kprobes_text: (usize, usize),
    /// `(noinstr_text_start, noinstr_text_size)`; start 0 when absent.
    pub noinstr_text: (usize, usize),
}

/// `kprobe_add_ksym_blacklist()`: blacklist the symbol that starts at `entry`.
///
/// Returns how far an area walk moves on: the symbol size, or for an `entry` inside a symbol
/// (which adds nothing) the bytes left to the symbol's end; `EINVAL` if `entry` is not kernel
/// text or has no symbol.
pub fn kprobe_add_ksym_blacklist<A: Arch + BlacklistStore>(a: &A, entry: usize) -> Result<usize> {
    if !a.kernel_text_address(entry) {
        return Err(Errno::EINVAL);
    }
    let Some((size, offset)) = a.kallsyms_lookup_size_offset(entry) else {
        return Err(Errno::EINVAL);
    };
    if offset != 0 {
        // Not a symbol start: go on at the next symbol (0, one byte on, if the size is short).
        return Ok(size.saturating_sub(offset));
    }
    a.blacklist_add_tail(entry, entry.wrapping_add(size))?;
    Ok(size)
}

/// `kprobe_add_area_blacklist()`: blacklist every symbol in `[start, end)`.
pub fn kprobe_add_area_blacklist<A: Arch + BlacklistStore>(
    a: &A,
    start: usize,
    end: usize,
) -> Result {
    let mut entry = start;
    while entry < end {
        let size = kprobe_add_ksym_blacklist(a, entry)?;
        // An alias symbol has size 0 and advances one byte; stop rather than wrap around.
        let Some(next) = entry.checked_add(size.max(1)) else {
            break;
        };
        entry = next;
    }
    Ok(())
}

/// `kprobe_remove_area_blacklist()`: drop entries whose start lies in `[start, end)`.
pub fn kprobe_remove_area_blacklist<S: BlacklistStore>(s: &S, start: usize, end: usize) {
    s.blacklist_remove_if(|s0, _| s0 >= start && s0 < end);
}

/// `__within_kprobe_blacklist()`: the arch range, then the list.
pub fn within_kprobe_blacklist_raw<A: Arch + BlacklistStore>(a: &A, addr: usize) -> bool {
    if A::Hooks::within_kprobe_blacklist(a, addr) {
        return true;
    }
    a.blacklist_for_each(|s, e| {
        if addr >= s && addr < e {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// `strchr(name, '.')` as an index, eight bytes a step: a byte of `w ^ DOTS` is zero exactly
/// where `w` holds a '.', and of the bytes the zero-byte test flags, the lowest is such a byte
/// (a false flag needs a borrow, and borrows only run upward from a zero byte).
fn find_dot(name: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const DOTS: u64 = ONES * b'.' as u64;
    let (words, tail) = name.as_chunks::<8>();
    for (i, w) in words.iter().enumerate() {
        let x = u64::from_le_bytes(*w) ^ DOTS;
        let zero = x.wrapping_sub(ONES) & !x & (ONES << 7);
        if zero != 0 {
            return Some(i * 8 + zero.trailing_zeros() as usize / 8);
        }
    }
    let base = name.len() - tail.len();
    tail.iter().position(|&c| c == b'.').map(|j| base + j)
}

/// `within_kprobe_blacklist()`: also checks the base symbol of `foo.isra.0`-style names.
pub fn within_kprobe_blacklist<A: Arch + BlacklistStore>(a: &A, addr: usize) -> bool {
    if within_kprobe_blacklist_raw(a, addr) {
        return true;
    }
    let base = a.lookup_symbol_name(addr, |name| {
        let name = name?;
        let dot = find_dot(name)?;
        Some(A::Hooks::lookup_name(a, &name[..dot], 0))
    });
    match base {
        Some(base) if base != 0 => within_kprobe_blacklist_raw(a, base),
        _ => false,
    }
}

/// `populate_kprobe_blacklist()`: `NOKPROBE_SYMBOL`s, `.kprobes.text`, `.noinstr.text`, arch.
///
/// `nokprobe` yields the (descriptor-dereferenced) addresses of the `_kprobe_blacklist` section.
/// On error C logs "Failed to populate blacklist (error %d), kprobes not restricted, be careful
/// using them!" and carries on; the glue does the same with the returned error.
pub fn populate_kprobe_blacklist<A: Arch + BlacklistStore>(
    a: &A,
    nokprobe: impl IntoIterator<Item = usize>,
) -> Result {
    for entry in nokprobe {
        match kprobe_add_ksym_blacklist(a, entry) {
            Ok(_) | Err(Errno::EINVAL) => {}
            Err(e) => return Err(e),
        }
    }
    let (s, e) = a.kprobes_text();
    kprobe_add_area_blacklist(a, s, e)?;
    let (s, e) = a.noinstr_text();
    kprobe_add_area_blacklist(a, s, e)?;
    A::Hooks::populate_kprobe_blacklist(a, |s, e| kprobe_add_area_blacklist(a, s, e))
}

/// `add_module_kprobe_blacklist()` (MODULE_STATE_COMING); errors are ignored, as in C.
pub fn add_module_kprobe_blacklist<A: Arch + BlacklistStore>(a: &A, m: &ModuleAreas<'_>) {
    for &entry in m.kprobe_blacklist {
        let _ = kprobe_add_ksym_blacklist(a, entry);
    }
    for (start, size) in [m.kprobes_text, m.noinstr_text] {
        if start != 0 {
            let _ = kprobe_add_area_blacklist(a, start, start.wrapping_add(size));
        }
    }
}

/// `remove_module_kprobe_blacklist()` (MODULE_STATE_GOING).
pub fn remove_module_kprobe_blacklist<S: BlacklistStore>(s: &S, m: &ModuleAreas<'_>) {
    for &entry in m.kprobe_blacklist {
        kprobe_remove_area_blacklist(s, entry, entry.wrapping_add(1));
    }
    for (start, size) in [m.kprobes_text, m.noinstr_text] {
        if start != 0 {
            kprobe_remove_area_blacklist(s, start, start.wrapping_add(size));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::find_dot;

    #[test]
    fn find_dot_is_the_first_dot() {
        // Every length up to three words and a tail, a dot (or none) at every position, after
        // bytes that trip a careless zero-byte test ('/', 0x2d, 0xae, NUL-free high bytes).
        for len in 0..=27 {
            for fill in [b'a', b'/', 0x2d, 0xae, 0xff] {
                for dot in (0..len).map(Some).chain([None]) {
                    let mut buf = [fill; 27];
                    let name = &mut buf[..len];
                    if let Some(d) = dot {
                        name[d] = b'.';
                        if d + 1 < len {
                            name[d + 1] = b'.';
                        }
                    }
                    assert_eq!(find_dot(name), dot, "{name:?}");
                }
            }
        }
    }
}

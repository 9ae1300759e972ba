// SPDX-License-Identifier: GPL-2.0

//! The symbol answers of one batch of registrations (`register_kprobes()`,
//! `register_kretprobes()`), so that the kallsyms services the core and the arch ask once per
//! probe do not each walk a module's whole symbol table.
//!
//! Constraints: built in process context, without `module_mutex` and before the core takes
//! `kprobe_mutex` (the name walk takes `module_mutex`; allocations are GFP_KERNEL); never on a
//! probe hit. A [`Batch`] is a value its registration call owns: `with_symbol_batch()` builds
//! one into the [`Kernel`] it hands the call (`glue/text.rs`), and drops it when the call
//! returns. Every other caller of the kallsyms services (other registrations, debugfs, the
//! notifiers, the hit path) uses [`KERNEL`], which has none, and gets C's answers. A batch does
//! not change once built.
//!
//! [`Kernel`]: super::handle::Kernel
//! [`KERNEL`]: super::handle::KERNEL
//!
//! Exactness: every answer is the one the C function would give at that moment.
//! - Names: a name vmlinux has is left to C (a binary search there). The others are resolved
//!   by one walk of every module's symbols (`module_kallsyms_on_each_symbol()`), keeping the
//!   first match in module-list and symtab order, as `module_kallsyms_lookup_name()` does. A
//!   `module:symbol` name, or a first match of value 0 (C would go on to the next module), is
//!   left to C.
//! - Addresses: for the core text of a live module, `find_kallsyms_symbol()`'s answer from the
//!   module's sorted symbol values ([`crate::symindex`], which proves it equal), built when the
//!   batch is, for each module a name resolved into or a probe's given address falls in. Init
//!   text, other modules, other regions and anything unusual are left to C.
//! - A module event (COMING, LIVE or GOING) since the batch began bumps [`GENERATION`] and sends
//!   every later question of the batch to C: the index then describes nothing that is
//!   guaranteed to exist.
//!
//! An allocation failure only means C answers.

use core::ffi::{c_int, c_void, CStr};
use core::ptr::{self, addr_of, NonNull};
use core::sync::atomic::{AtomicUsize, Ordering};

use kernel::alloc::{flags::GFP_KERNEL, KVVec};
use kernel::bindings;

use crate::symindex::{self, Sym};
use crate::text::KSYM_NAME_LEN;

/// Bumped by the kprobes module notifier on every module event.
pub static GENERATION: AtomicUsize = AtomicUsize::new(0);

/// A name of the batch that vmlinux does not have.
struct Name {
    /// The caller's `symbol_name`, live for the whole registration call.
    ptr: *const u8,
    len: usize,
    /// The address found by the walk (0: none), once `found`.
    addr: usize,
    found: bool,
    /// Left to C: the first match had value 0.
    to_c: bool,
}

impl Name {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr`/`len` describe the caller's `symbol_name`, which outlives the batch.
        unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// The sorted symbols of one live module's core text.
struct ModIndex {
    module: *const bindings::module,
    /// The `mod_kallsyms` the indexes refer to.
    kallsyms: *const bindings::mod_kallsyms,
    base: usize,
    end: usize,
    syms: KVVec<Sym>,
}

/// The symbol answers of one registration batch.
///
/// # Invariants
///
/// Not changed after [`Batch::build`]. Each name points to its caller's `symbol_name`, live for
/// the registration call that owns the batch; each module index describes a module that was
/// live when it was built, whose memory is read only after checking [`GENERATION`] with
/// preemption off.
pub struct Batch {
    generation: usize,
    /// Sorted by name bytes, without duplicates.
    names: KVVec<Name>,
    modules: KVVec<ModIndex>,
}

// SAFETY: a batch is only read once built (type invariant), and every pointer it holds is
// dereferenced under conditions that hold on any CPU (the caller's strings for the call, a
// module's memory after the generation check with preemption off): shared references to it may
// be used from any task.
unsafe impl Sync for Batch {}

impl Batch {
    /// The batch of the `n` probes with names `name_of(i)` and given addresses `addr_of(i)`:
    /// `None` with fewer than two, or without memory.
    pub fn build<'a>(
        n: usize,
        name_of: impl Fn(usize) -> Option<&'a [u8]>,
        addr_of: impl Fn(usize) -> usize,
    ) -> Option<Batch> {
        if n < 2 {
            return None;
        }
        let generation = GENERATION.load(Ordering::Acquire);
        let mut b = build(n, &name_of, generation)?;
        // The modules the names resolved into and the given addresses fall in, each indexed
        // once; those other addresses fall in are left to C.
        let named = b.names.len();
        for i in 0..named + n {
            let addr = match b.names.get(i) {
                Some(name) if name.found => name.addr,
                Some(_) => continue,
                None => addr_of(i - named),
            };
            if addr == 0 || b.modules.iter().any(|m| (m.base..m.end).contains(&addr)) {
                continue;
            }
            if let Some(index) = index_module(addr) {
                if b.modules.push(index, GFP_KERNEL).is_err() {
                    break;
                }
            }
        }
        Some(b)
    }

    /// Whether no module event happened since the batch was built.
    fn current(&self) -> bool {
        GENERATION.load(Ordering::Acquire) == self.generation
    }

    /// `kallsyms_lookup_name(name)` from the batch, or `None` for C to answer.
    pub fn lookup_name(&self, name: &[u8]) -> Option<usize> {
        if !self.current() {
            return None;
        }
        let i = self.names.binary_search_by(|n| n.bytes().cmp(name)).ok()?;
        let n = &self.names[i];
        (!n.to_c).then_some(if n.found { n.addr } else { 0 })
    }

    /// `find_kallsyms_symbol()` of `addr` from the batch's module indexes: (module index,
    /// symtab index, size, offset), or `None` for C to answer.
    fn find(&self, addr: usize) -> Option<(usize, u32, usize, usize)> {
        let m = self
            .modules
            .iter()
            .position(|m| addr.wrapping_sub(m.base) < m.end - m.base)?;
        let mi = &self.modules[m];
        let (idx, size, offset) = symindex::lookup(&mi.syms, mi.base, mi.end, addr)?;
        Some((m, idx, size, offset))
    }

    /// `kallsyms_lookup_size_offset(addr)` from the batch, or `None` for C to answer.
    pub fn lookup_size_offset(&self, addr: usize) -> Option<(usize, usize)> {
        if !self.current() {
            return None;
        }
        let (_, _, size, offset) = self.find(addr)?;
        Some((size, offset))
    }

    /// `lookup_symbol_name(addr)` from the batch: `f` gets the name; `Err(f)` for C to answer.
    /// As C's, the name is copied out first, so `f` runs after the module may be gone.
    pub fn with_symbol_name<R, F: FnOnce(Option<&[u8]>) -> R>(
        &self,
        addr: usize,
        f: F,
    ) -> Result<R, F> {
        let mut buf = [0u8; KSYM_NAME_LEN];
        match self.copy_symbol_name(addr, &mut buf) {
            Some(len) => Ok(f(Some(&buf[..len]))),
            None => Err(f),
        }
    }

    /// Copies the batch's name for `addr` into `buf`; its length, or `None` for C to answer.
    fn copy_symbol_name(&self, addr: usize, buf: &mut [u8; KSYM_NAME_LEN]) -> Option<usize> {
        let (m, idx, _, _) = self.find(addr)?;
        let mi = &self.modules[m];
        // SAFETY: paired with the enable below. With preemption off, a module not yet notified
        // GOING when the generation is checked below cannot be freed before preemption is back on
        // (free_module() waits for an RCU grace period after its notifiers).
        unsafe { bindings::preempt_disable() };
        // The generation first: only a module that no event has touched since the batch began is
        // known to be alive here, so its pointer is read only after this check.
        let len = self
            .current()
            .then(|| {
                // SAFETY: the module is alive in this section (the generation check above); one
                // word read, as READ_ONCE().
                unsafe { ptr::read_volatile(addr_of!((*mi.module).kallsyms)) }
            })
            .filter(|&kallsyms| kallsyms.cast_const() == mi.kallsyms)
            .map(|_| {
                // SAFETY: `idx` indexes this `mod_kallsyms`, live in this section; its names are
                // NUL-terminated.
                let name = unsafe {
                    let k = &*mi.kallsyms;
                    let sym = &*k.symtab.add(idx as usize);
                    CStr::from_ptr(k.strtab.add(sym.st_name as usize).cast()).to_bytes()
                };
                // As strscpy() into a KSYM_NAME_LEN buffer.
                let len = name.len().min(KSYM_NAME_LEN - 1);
                buf[..len].copy_from_slice(&name[..len]);
                len
            });
        // SAFETY: pairs with the disable above.
        unsafe { bindings::preempt_enable() };
        len
    }
}

/// Resolves the names vmlinux does not have; `None` (no batch) on allocation failure.
fn build<'a>(
    n: usize,
    name_of: &impl Fn(usize) -> Option<&'a [u8]>,
    generation: usize,
) -> Option<Batch> {
    let mut names = KVVec::with_capacity(n, GFP_KERNEL).ok()?;
    for name in (0..n).filter_map(name_of) {
        if name.is_empty() || name.contains(&b':') || in_vmlinux(name) {
            continue;
        }
        names
            .push(
                Name {
                    ptr: name.as_ptr(),
                    len: name.len(),
                    addr: 0,
                    found: false,
                    to_c: false,
                },
                GFP_KERNEL,
            )
            .ok()?;
    }
    let v = names.as_mut_slice();
    v.sort_unstable_by(|a, b| a.bytes().cmp(b.bytes()));
    // Without duplicates, so that the walk records each name where the lookup finds it.
    let mut kept = 0;
    for i in 0..v.len() {
        if kept == 0 || v[kept - 1].bytes() != v[i].bytes() {
            v.swap(kept, i);
            kept += 1;
        }
    }
    // SAFETY: `kept <= len`; the entries dropped are plain data, left as they are.
    unsafe { names.set_len(kept) };
    if !names.is_empty() {
        // SAFETY: `walk_one` gets `data` as the `KVVec<Name>` it is, which outlives the walk
        // and is not otherwise touched during it; called without module_mutex (module docs).
        unsafe {
            bindings::module_kallsyms_on_each_symbol(
                ptr::null(),
                Some(walk_one),
                ptr::addr_of_mut!(names).cast(),
            )
        };
    }
    Some(Batch {
        generation,
        names,
        modules: KVVec::new(),
    })
}

/// `kallsyms_on_each_match_symbol()`'s callback: the first match ends the search.
///
/// # Safety
///
/// None: the arguments are not used.
unsafe extern "C" fn stop_at_first(_: *mut c_void, _: usize) -> c_int {
    1
}

/// Whether vmlinux has `name` (`kallsyms_lookup_names()`, a binary search). A name too long for
/// kallsyms is in neither vmlinux nor a module: the walk finds it nowhere either.
fn in_vmlinux(name: &[u8]) -> bool {
    let mut buf = [0u8; KSYM_NAME_LEN];
    if name.len() >= buf.len() {
        return false;
    }
    buf[..name.len()].copy_from_slice(name);
    // SAFETY: `buf` is NUL-terminated; the callback uses none of its arguments.
    unsafe {
        bindings::kallsyms_on_each_match_symbol(
            Some(stop_at_first),
            buf.as_ptr().cast(),
            ptr::null_mut(),
        ) != 0
    }
}

/// The walk's callback: records the first match of each pending name.
///
/// # Safety
///
/// `data` is the batch's `KVVec<Name>` being built (sorted), `name` a NUL-terminated symbol name.
unsafe extern "C" fn walk_one(data: *mut c_void, name: *const u8, value: usize) -> c_int {
    // SAFETY: `# Safety`.
    let names = unsafe { &mut *data.cast::<KVVec<Name>>() };
    // SAFETY: `# Safety`.
    let sym = unsafe { CStr::from_ptr(name.cast()) }.to_bytes();
    if let Ok(i) = names.binary_search_by(|n| n.bytes().cmp(sym)) {
        let n = &mut names[i];
        if !n.found && !n.to_c {
            if value == 0 {
                n.to_c = true;
            } else {
                n.found = true;
                n.addr = value;
            }
        }
    }
    0
}

/// The index of the core text of the live module holding `addr`, or `None`.
fn index_module(addr: usize) -> Option<ModIndex> {
    // SAFETY: `__module_text_address()` wants preemption off; the module is then pinned by
    // the reference taken before preemption is back on.
    let m = unsafe {
        bindings::preempt_disable();
        let m = bindings::__module_text_address(addr);
        let pinned = !m.is_null() && bindings::try_module_get(m);
        bindings::preempt_enable();
        NonNull::new(if pinned { m } else { ptr::null_mut() })?
    };
    let index = index_pinned(m, addr);
    // SAFETY: balances the try_module_get() above.
    unsafe { bindings::module_put(m.as_ptr()) };
    index
}

/// [`index_module`] once the module is pinned.
fn index_pinned(m: NonNull<bindings::module>, addr: usize) -> Option<ModIndex> {
    let m = m.as_ptr();
    // SAFETY: the module is pinned; plain reads of its state and of its core text descriptor,
    // which do not change while it is live.
    let (state, base, size) = unsafe {
        let text = addr_of!((*m).mem)
            .cast::<bindings::module_memory>()
            .add(bindings::mod_mem_type_MOD_TEXT as usize);
        (
            ptr::read_volatile(addr_of!((*m).state)),
            ptr::read_volatile(addr_of!((*text).base)) as usize,
            ptr::read_volatile(addr_of!((*text).size)) as usize,
        )
    };
    if state != bindings::module_state_MODULE_STATE_LIVE || addr.wrapping_sub(base) >= size {
        return None;
    }
    // SAFETY: paired with the enable below. In this section the `mod_kallsyms` the module
    // points to stays allocated: `do_init_module()` switches the pointer to the core copy once
    // and frees the init copy only after an RCU grace period.
    unsafe { bindings::preempt_disable() };
    // SAFETY: the module is pinned; its kallsyms pointer is one word (READ_ONCE()), and a
    // non-NULL one is valid in this section (above).
    let (k, num) = unsafe {
        let k = ptr::read_volatile(addr_of!((*m).kallsyms)).cast_const();
        let num = if k.is_null() {
            0
        } else {
            (*k).num_symtab as usize
        };
        (k, num)
    };
    // SAFETY: pairs with the disable above.
    unsafe { bindings::preempt_enable() };
    if k.is_null() {
        return None;
    }
    let mut syms = KVVec::with_capacity(num, GFP_KERNEL).ok()?;
    // SAFETY: paired with the enable below; the pointer is read again and the copy read
    // above used only if the module still points to it, so alive in this section (above).
    unsafe { bindings::preempt_disable() };
    // SAFETY: as above.
    let same = unsafe { ptr::read_volatile(addr_of!((*m).kallsyms)) }.cast_const() == k;
    if same {
        for i in 1..num {
            // SAFETY: `i < num_symtab` entries of the live symtab; names are NUL-terminated in
            // the strtab.
            let (defined, value, name) = unsafe {
                let sym = &*(*k).symtab.add(i);
                (
                    u32::from(sym.st_shndx) != bindings::SHN_UNDEF,
                    sym.st_value as usize,
                    CStr::from_ptr((*k).strtab.add(sym.st_name as usize).cast()).to_bytes(),
                )
            };
            if value.wrapping_sub(base) < size && symindex::considered(defined, name) {
                // Within the capacity of `num`: no allocation, so none with preemption off.
                if syms.len() < num {
                    let _ = syms.push(
                        Sym {
                            value,
                            idx: i as u32,
                        },
                        GFP_KERNEL,
                    );
                }
            }
        }
    }
    // SAFETY: pairs with the disable above.
    unsafe { bindings::preempt_enable() };
    if !same {
        return None;
    }
    symindex::sort(syms.as_mut_slice());
    Some(ModIndex {
        module: m,
        kallsyms: k,
        base,
        end: base + size,
        syms,
    })
}

/// `ftrace_location(addr)` from the batch, or `None` for C to answer: C's own steps, with the
/// batch's answer for the symbol's size and offset (the x86 arch asks it for every instruction
/// it decodes, and C's asks `kallsyms_lookup_size_offset()` whenever `addr` is no call site).
#[cfg(CONFIG_DYNAMIC_FTRACE)]
pub fn ftrace_location(b: &Batch, addr: usize) -> Option<usize> {
    if !b.current() {
        return None;
    }
    // SAFETY: pure address query (ftrace searches its records under RCU itself).
    let loc = unsafe { bindings::ftrace_location_range(addr, addr) };
    if loc != 0 {
        return Some(loc);
    }
    let (size, offset) = b.lookup_size_offset(addr)?;
    if offset != 0 {
        return Some(0);
    }
    // SAFETY: as above; `size` >= 1 for a symbol kallsyms found.
    Some(unsafe { bindings::ftrace_location_range(addr, addr + size - 1) })
}

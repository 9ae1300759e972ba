// SPDX-License-Identifier: GPL-2.0

//! The symbol answers of one batch of registrations (`register_kprobes()`,
//! `register_kretprobes()`), so that the kallsyms services the core and the arch ask once per
//! probe do not each walk a module's whole symbol table.
//!
//! Constraints: process context, called without `module_mutex` and before the core takes
//! `kprobe_mutex` (the name walk takes `module_mutex`; allocations are GFP_KERNEL); never on a
//! probe hit. Only the task that installed a batch reads it ([`OWNER`]): every other caller of
//! the kallsyms services (another task's registration, debugfs, the notifiers) gets C's answers,
//! and one batch at a time is installed (a second concurrent batch simply goes without).
//!
//! Exactness: every answer is the one the C function would give at that moment.
//! - Names: a name vmlinux has is left to C (a binary search there). The others are resolved
//!   by one walk of every module's symbols (`module_kallsyms_on_each_symbol()`), keeping the
//!   first match in module-list and symtab order, as `module_kallsyms_lookup_name()` does. A
//!   `module:symbol` name, or a first match of value 0 (C would go on to the next module), is
//!   left to C.
//! - Addresses: for the core text of a live module, `find_kallsyms_symbol()`'s answer from the
//!   module's sorted symbol values ([`crate::symindex`], which proves it equal), built once per
//!   module per batch. Init text, other regions and anything unusual are left to C.
//! - A module event (COMING, LIVE or GOING) since the batch began bumps [`GENERATION`] and sends
//!   every later question of the batch to C: the index then describes nothing that is
//!   guaranteed to exist.
//!
//! An allocation failure only means C answers.

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_void, CStr};
use core::ptr::{self, addr_of, NonNull};
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use kernel::alloc::{flags::GFP_KERNEL, KVVec};
use kernel::bindings;

use crate::symindex::{self, Sym};
use crate::text::KSYM_NAME_LEN;

/// Bumped by the kprobes module notifier on every module event.
pub static GENERATION: AtomicUsize = AtomicUsize::new(0);

/// The task whose batch is installed, or NULL.
static OWNER: AtomicPtr<bindings::task_struct> = AtomicPtr::new(ptr::null_mut());

/// The installed batch; only [`OWNER`] reads or writes it.
struct BatchCell(UnsafeCell<Option<Batch>>);

// SAFETY: the cell is only touched by the task recorded in `OWNER`, which it installs with a
// compare-exchange from NULL and clears after it dropped the batch: one task at a time.
unsafe impl Sync for BatchCell {}

static BATCH: BatchCell = BatchCell(UnsafeCell::new(None));

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

struct Batch {
    generation: usize,
    /// Sorted by name bytes, without duplicates.
    names: KVVec<Name>,
    modules: KVVec<ModIndex>,
}

fn current_task() -> *mut bindings::task_struct {
    // SAFETY: no requirement; the pointer is only compared, never dereferenced.
    unsafe { bindings::get_current() }
}

/// The installed batch, if the current task installed it and no module event happened since.
fn batch() -> Option<&'static mut Batch> {
    let owner = OWNER.load(Ordering::Acquire);
    if owner.is_null() || owner != current_task() {
        return None;
    }
    // SAFETY: only the owner reaches this point (see `BatchCell`), and it never holds two of
    // these references at once (each service below takes one and drops it).
    let b = unsafe { (*BATCH.0.get()).as_mut()? };
    (GENERATION.load(Ordering::Acquire) == b.generation).then_some(b)
}

/// Runs `f` with the batch of the `n` names `name_of(i)` installed, when there are at least two
/// and no other batch is; else just runs `f`.
pub fn run<'a, R>(
    n: usize,
    name_of: impl Fn(usize) -> Option<&'a [u8]>,
    f: impl FnOnce() -> R,
) -> R {
    let me = current_task();
    if n < 2
        || OWNER
            .compare_exchange(ptr::null_mut(), me, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
    {
        return f();
    }
    let generation = GENERATION.load(Ordering::Acquire);
    let b = build(n, &name_of, generation);
    // SAFETY: `OWNER` is this task (see `BatchCell`); no reference into the cell is live.
    unsafe { *BATCH.0.get() = b };
    let r = f();
    // SAFETY: as above; the batch is dropped before the cell is given up.
    unsafe { *BATCH.0.get() = None };
    OWNER.store(ptr::null_mut(), Ordering::Release);
    r
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

/// `kallsyms_lookup_name(name)` from the batch, or `None` for C to answer.
pub fn lookup_name(name: &[u8]) -> Option<usize> {
    let b = batch()?;
    let i = b.names.binary_search_by(|n| n.bytes().cmp(name)).ok()?;
    let n = &b.names[i];
    (!n.to_c).then_some(if n.found { n.addr } else { 0 })
}

/// `find_kallsyms_symbol()` of `addr` from the batch: (module index, symtab index, size,
/// offset), or `None` for C to answer. `may_build`: the caller may sleep, so the index of a
/// module the batch has not met yet may be built (allocations, a module reference).
fn find(b: &mut Batch, addr: usize, may_build: bool) -> Option<(usize, u32, usize, usize)> {
    let m = match b
        .modules
        .iter()
        .position(|m| addr.wrapping_sub(m.base) < m.end - m.base)
    {
        Some(m) => m,
        None if may_build => {
            let index = index_module(addr)?;
            b.modules.push(index, GFP_KERNEL).ok()?;
            b.modules.len() - 1
        }
        None => return None,
    };
    let mi = &b.modules[m];
    let (idx, size, offset) = symindex::lookup(&mi.syms, mi.base, mi.end, addr)?;
    Some((m, idx, size, offset))
}

/// `kallsyms_lookup_size_offset(addr)` from the batch, or `None` for C to answer. Called where
/// the caller may sleep (`_kprobe_addr()`, the arch's instruction checks under `text_mutex`),
/// which is where a module's index is built: `_kprobe_addr()` asks first, for every probe.
pub fn lookup_size_offset(addr: usize) -> Option<(usize, usize)> {
    let (_, _, size, offset) = find(batch()?, addr, true)?;
    Some((size, offset))
}

/// `lookup_symbol_name(addr)` from the batch: `f` gets the name; `Err(f)` for C to answer.
/// Called with preemption off (`check_kprobe_address_safe()`): only indexes already built
/// answer. As C's, the name is copied out first, so `f` runs with the batch released.
pub fn with_symbol_name<R, F: FnOnce(Option<&[u8]>) -> R>(addr: usize, f: F) -> Result<R, F> {
    // Before the buffer is cleared: a registration outside any batch pays nothing here.
    if batch().is_none() {
        return Err(f);
    }
    let mut buf = [0u8; KSYM_NAME_LEN];
    match copy_symbol_name(addr, &mut buf) {
        Some(len) => Ok(f(Some(&buf[..len]))),
        None => Err(f),
    }
}

/// Copies the batch's name for `addr` into `buf`; its length, or `None` for C to answer.
fn copy_symbol_name(addr: usize, buf: &mut [u8; KSYM_NAME_LEN]) -> Option<usize> {
    let b = batch()?;
    let (m, idx, _, _) = find(b, addr, false)?;
    let mi = &b.modules[m];
    // SAFETY: paired with the enable below. With preemption off, a module not yet notified
    // GOING when the generation is checked below cannot be freed before preemption is back on
    // (free_module() waits for an RCU grace period after its notifiers).
    unsafe { bindings::preempt_disable() };
    // The generation first: only a module that no event has touched since the batch began is
    // known to be alive here, so its pointer is read only after this check.
    let len = (GENERATION.load(Ordering::Acquire) == b.generation)
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
pub fn ftrace_location(addr: usize) -> Option<usize> {
    batch()?;
    // SAFETY: pure address query (ftrace searches its records under RCU itself).
    let loc = unsafe { bindings::ftrace_location_range(addr, addr) };
    if loc != 0 {
        return Some(loc);
    }
    let (size, offset) = lookup_size_offset(addr)?;
    if offset != 0 {
        return Some(0);
    }
    // SAFETY: as above; `size` >= 1 for a symbol kallsyms found.
    Some(unsafe { bindings::ftrace_location_range(addr, addr + size - 1) })
}

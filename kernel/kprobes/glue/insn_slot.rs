// SPDX-License-Identifier: GPL-2.0

//! Kernel implementation of [`InsnCache`] on `struct kprobe_insn_cache` (the data objects
//! `kprobe_insn_slots` and `kprobe_optinsn_slots`, defined in `kprobes_helpers.c`), and the
//! C-linkage slot functions the arch code reaches through the header's inline wrappers.
//!
//! Constraints: mutators run under the cache's own mutex; `__is_insn_slot_addr` and the kallsyms
//! enumeration are lockless RCU readers (`kernel_text_address()` calls the former from
//! unwinders). Page descriptors are the C `struct rkp_insn_page`, opaque here: the C walk hands
//! out where each page's text address, `slot_used[]` array and counters are with the page, so
//! slot scans and counter updates are plain loads and stores (as in C), not a call each.

use core::ffi::{c_char, c_int, c_uint, c_void, CStr};
use core::ops::ControlFlow;
use core::ptr::{self, addr_of, NonNull};

use kernel::bindings;

use crate::insn_slot::{self, InsnCache, SlotState};
use crate::text::KSYM_NAME_LEN;

/// The C page descriptor (`struct rkp_insn_page`), only handled by pointer.
#[repr(C)]
pub struct RkpInsnPage {
    _opaque: [u8; 0],
}

// The cache is passed as `void *`: `struct kprobe_insn_cache` embeds a mutex whose layout trips
// `improper_ctypes` in some configs, and C only needs the address.
extern "C" {
    fn rkp_cache_lock(c: *mut c_void);
    fn rkp_cache_unlock(c: *mut c_void);
    fn rkp_insn_page_alloc(
        c: *mut c_void,
        insns: *mut usize,
        slot_used: *mut *mut c_char,
        nused: *mut *mut c_int,
        ngarbage: *mut *mut c_int,
    ) -> *mut RkpInsnPage;
    fn rkp_insn_page_add(c: *mut c_void, kip: *mut RkpInsnPage);
    fn rkp_insn_page_remove(kip: *mut RkpInsnPage);
    fn rkp_insn_page_free(kip: *mut RkpInsnPage);
    fn rkp_insn_page_is_only(kip: *mut RkpInsnPage) -> bool;
    fn rkp_insn_page_next(
        c: *mut c_void,
        kip: *mut RkpInsnPage,
        insns: *mut usize,
        slot_used: *mut *mut c_char,
        nused: *mut *mut c_int,
        ngarbage: *mut *mut c_int,
    ) -> *mut RkpInsnPage;
}

/// A `struct kprobe_insn_cache`.
///
/// # Invariants
///
/// Points to one of the two static caches (or another cache that lives as long).
#[derive(Clone, Copy)]
pub struct Cache(NonNull<bindings::kprobe_insn_cache>);

impl Cache {
    /// Wraps a cache pointer from the arch's inline wrappers.
    ///
    /// # Safety
    ///
    /// `c` points to a `struct kprobe_insn_cache` that is never freed.
    pub unsafe fn from_raw(c: NonNull<bindings::kprobe_insn_cache>) -> Self {
        // INVARIANT: guaranteed by the caller.
        Cache(c)
    }

    fn ptr(self) -> *mut bindings::kprobe_insn_cache {
        self.0.as_ptr()
    }

    fn raw(self) -> *mut c_void {
        self.0.as_ptr().cast()
    }
}

/// One page of a cache: its descriptor and where its fields are.
///
/// # Invariants
///
/// `kip` is a live `struct rkp_insn_page` (linked in its cache, or fresh from
/// `rkp_insn_page_alloc`); `insns` is its `insns`; `slots` points to its `slot_used`, which holds
/// `slots_per_page(cache)` bytes; `nused` and `ngarbage` point to its counters.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Page {
    kip: NonNull<RkpInsnPage>,
    insns: usize,
    slots: NonNull<u8>,
    nused: NonNull<c_int>,
    ngarbage: NonNull<c_int>,
}

/// The out-parameters of `rkp_insn_page_next`/`rkp_insn_page_alloc`.
struct Fields {
    insns: usize,
    slots: *mut c_char,
    nused: *mut c_int,
    ngarbage: *mut c_int,
}

impl Fields {
    fn new() -> Self {
        Fields {
            insns: 0,
            slots: ptr::null_mut(),
            nused: ptr::null_mut(),
            ngarbage: ptr::null_mut(),
        }
    }

    /// Wraps the page C returned (`None` for NULL) with the fields it wrote out.
    ///
    /// # Safety
    ///
    /// If `kip` is not NULL, `self` holds what C wrote out for it.
    unsafe fn page(&self, kip: *mut RkpInsnPage) -> Option<Page> {
        // INVARIANT: C wrote out this page's fields with it (the caller's contract).
        Some(Page {
            kip: NonNull::new(kip)?,
            insns: self.insns,
            slots: NonNull::new(self.slots.cast())?,
            nused: NonNull::new(self.nused)?,
            ngarbage: NonNull::new(self.ngarbage)?,
        })
    }
}

impl Page {
    fn kip(self) -> *mut RkpInsnPage {
        self.kip.as_ptr()
    }
}

fn state(v: u8) -> SlotState {
    match v {
        0 => SlotState::Clean,
        1 => SlotState::Dirty,
        _ => SlotState::Used,
    }
}

impl InsnCache for Cache {
    type Page = Page;

    fn slots_per_page(&self) -> usize {
        // C's slots_per_page(); `insn_size` is set before the cache is first used (the `max`
        // only keeps a zero from dividing).
        self.page_size() / self.slot_bytes().max(1)
    }
    fn slot_bytes(&self) -> usize {
        // SAFETY: the cache is live; `insn_size` is set before first use.
        let n = unsafe { ptr::read_volatile(addr_of!((*self.ptr()).insn_size)) };
        n * core::mem::size_of::<bindings::kprobe_opcode_t>()
    }
    fn page_size(&self) -> usize {
        bindings::PAGE_SIZE as usize
    }
    fn with_mutex<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: the cache's own sleeping mutex, process context.
        unsafe { rkp_cache_lock(self.raw()) };
        let r = f();
        // SAFETY: taken above.
        unsafe { rkp_cache_unlock(self.raw()) };
        r
    }
    fn synchronize_rcu(&self) {
        // SAFETY: process context, no RCU read-side section held.
        unsafe { bindings::synchronize_rcu() };
    }
    fn for_each_page(&self, mut f: impl FnMut(Self::Page) -> ControlFlow<()>) -> ControlFlow<()> {
        let mut o = Fields::new();
        let mut kip = ptr::null_mut();
        loop {
            // SAFETY: RCU walk (callers hold the cache mutex or are RCU readers); the next page
            // is read before `f` may remove the current one (list_for_each_entry_safe). C
            // writes the out-parameters for the page it returns, which `page` then wraps.
            let Some(pg) = (unsafe {
                kip = rkp_insn_page_next(
                    self.raw(),
                    kip,
                    &mut o.insns,
                    &mut o.slots,
                    &mut o.nused,
                    &mut o.ngarbage,
                );
                o.page(kip)
            }) else {
                break;
            };
            f(pg)?;
        }
        ControlFlow::Continue(())
    }
    fn page_insns(&self, pg: Self::Page) -> usize {
        pg.insns
    }
    #[inline]
    fn slot(&self, pg: Self::Page, idx: usize) -> SlotState {
        // SAFETY: `slots` holds `slots_per_page` bytes (type invariant) and the logic's loops keep
        // `idx` below that; the cache mutex serialises the writers.
        state(unsafe { *pg.slots.as_ptr().add(idx) })
    }
    #[inline]
    fn set_slot(&self, pg: Self::Page, idx: usize, s: SlotState) {
        // SAFETY: as above.
        unsafe { *pg.slots.as_ptr().add(idx) = s as u8 };
    }
    fn nused(&self, pg: Self::Page) -> usize {
        // SAFETY: `nused` points to the live page's counter (type invariant); cache mutex held.
        unsafe { *pg.nused.as_ptr() }.max(0) as usize
    }
    fn set_nused(&self, pg: Self::Page, n: usize) {
        // SAFETY: as above.
        unsafe { *pg.nused.as_ptr() = n as c_int };
    }
    fn ngarbage(&self, pg: Self::Page) -> usize {
        // SAFETY: `ngarbage` points to the live page's counter (type invariant); mutex held.
        unsafe { *pg.ngarbage.as_ptr() }.max(0) as usize
    }
    fn set_ngarbage(&self, pg: Self::Page, n: usize) {
        // SAFETY: as above.
        unsafe { *pg.ngarbage.as_ptr() = n as c_int };
    }
    fn nr_garbage(&self) -> usize {
        // SAFETY: cache mutex held.
        unsafe { ptr::read_volatile(addr_of!((*self.ptr()).nr_garbage)) }.max(0) as usize
    }
    fn set_nr_garbage(&self, n: usize) {
        // SAFETY: cache mutex held.
        unsafe { ptr::write_volatile(ptr::addr_of_mut!((*self.ptr()).nr_garbage), n as c_int) };
    }
    fn alloc_page(&self) -> Option<Self::Page> {
        let mut o = Fields::new();
        // SAFETY: allocates a descriptor and an executable page for this cache; C writes the
        // out-parameters when it returns a page.
        unsafe {
            let kip = rkp_insn_page_alloc(
                self.raw(),
                &mut o.insns,
                &mut o.slots,
                &mut o.nused,
                &mut o.ngarbage,
            );
            o.page(kip)
        }
    }
    fn add_page(&self, pg: Self::Page) {
        // SAFETY: cache mutex held; `pg` fresh from `alloc_page`.
        unsafe { rkp_insn_page_add(self.raw(), pg.kip()) };
    }
    fn is_only_page(&self, pg: Self::Page) -> bool {
        // SAFETY: `pg` linked.
        unsafe { rkp_insn_page_is_only(pg.kip()) }
    }
    fn remove_page(&self, pg: Self::Page) {
        // SAFETY: cache mutex held; `pg` linked.
        unsafe { rkp_insn_page_remove(pg.kip()) };
    }
    fn free_page(&self, pg: Self::Page) {
        // SAFETY: unlinked and a grace period has passed (the logic's order).
        unsafe { rkp_insn_page_free(pg.kip()) };
    }
}

fn cache(c: *mut bindings::kprobe_insn_cache) -> Option<Cache> {
    // SAFETY: the header's wrappers only pass the two static caches.
    NonNull::new(c).map(|c| unsafe { Cache::from_raw(c) })
}

/// `__get_insn_slot()`: a free slot, or NULL.
#[no_mangle]
pub extern "C" fn __get_insn_slot(
    c: *mut bindings::kprobe_insn_cache,
) -> *mut bindings::kprobe_opcode_t {
    cache(c)
        .and_then(|c| insn_slot::get_insn_slot(&c))
        .map_or(ptr::null_mut(), |s| s as *mut _)
}

/// `__free_insn_slot()`.
#[no_mangle]
pub extern "C" fn __free_insn_slot(
    c: *mut bindings::kprobe_insn_cache,
    slot: *mut bindings::kprobe_opcode_t,
    dirty: c_int,
) {
    if let Some(c) = cache(c) {
        // C WARNs on a slot no page holds or a double free.
        let _ = insn_slot::free_insn_slot(&c, slot as usize, dirty != 0);
    }
}

/// `__is_insn_slot_addr()`.
#[no_mangle]
pub extern "C" fn __is_insn_slot_addr(c: *mut bindings::kprobe_insn_cache, addr: usize) -> bool {
    // SAFETY: an RCU read-side section around the lockless walk.
    unsafe { super::helpers::rkp_rcu_read_lock() };
    let r = cache(c).is_some_and(|c| insn_slot::is_insn_slot_addr(&c, addr));
    // SAFETY: ends the section.
    unsafe { super::helpers::rkp_rcu_read_unlock() };
    r
}

/// Writes a kallsyms answer (`'t'`, the cache's name, the page address).
///
/// # Safety
///
/// `value` and `ty` are writable; `sym` has room for `KSYM_NAME_LEN` bytes.
unsafe fn put_kallsym(c: Cache, page: usize, value: *mut usize, ty: *mut c_char, sym: *mut c_char) {
    // SAFETY: `c->sym` is a static NUL-terminated string.
    let name = unsafe { CStr::from_ptr(ptr::read_volatile(addr_of!((*c.ptr()).sym)).cast()) };
    let bytes = name.to_bytes();
    let n = bytes.len().min(KSYM_NAME_LEN - 1);
    // SAFETY: caller contract on the output pointers; `n + 1 <= KSYM_NAME_LEN`.
    unsafe {
        ptr::copy_nonoverlapping(bytes.as_ptr(), sym.cast::<u8>(), n);
        *sym.add(n) = 0;
        *ty = b't' as c_char;
        *value = page;
    }
}

/// `kprobe_cache_get_kallsym()`: 0 and the `*symnum`-th page, or -ERANGE.
///
/// # Safety
///
/// Pointers as for `kprobe_get_kallsym()` (from kallsyms).
#[no_mangle]
pub unsafe extern "C" fn kprobe_cache_get_kallsym(
    c: *mut bindings::kprobe_insn_cache,
    symnum: *mut c_uint,
    value: *mut usize,
    ty: *mut c_char,
    sym: *mut c_char,
) -> c_int {
    let (Some(c), false) = (cache(c), symnum.is_null()) else {
        return crate::errno::Errno::ERANGE.to_neg();
    };
    // SAFETY: RCU reader; `symnum` writable (caller contract).
    unsafe { super::helpers::rkp_rcu_read_lock() };
    // SAFETY: as above.
    let page = insn_slot::cache_get_kallsym(&c, unsafe { &mut *symnum });
    // SAFETY: ends the section.
    unsafe { super::helpers::rkp_rcu_read_unlock() };
    match page {
        Some(p) => {
            // SAFETY: forwarded caller contract.
            unsafe { put_kallsym(c, p, value, ty, sym) };
            0
        }
        None => crate::errno::Errno::ERANGE.to_neg(),
    }
}

/// `kprobe_get_kallsym()`: insn pages, then optinsn pages, then `arch_kprobe_get_kallsym()`.
///
/// # Safety
///
/// `value`, `ty` and `sym` are writable as kallsyms passes them (`sym`: `KSYM_NAME_LEN`).
#[no_mangle]
pub unsafe extern "C" fn kprobe_get_kallsym(
    symnum: c_uint,
    value: *mut usize,
    ty: *mut c_char,
    sym: *mut c_char,
) -> c_int {
    let mut n = symnum;
    // SAFETY: the static cache; forwarded pointer contract.
    if unsafe {
        kprobe_cache_get_kallsym(
            ptr::addr_of_mut!(bindings::kprobe_insn_slots),
            &mut n,
            value,
            ty,
            sym,
        )
    } == 0
    {
        return 0;
    }
    #[cfg(CONFIG_OPTPROBES)]
    // SAFETY: as above.
    if unsafe {
        kprobe_cache_get_kallsym(
            ptr::addr_of_mut!(bindings::kprobe_optinsn_slots),
            &mut n,
            value,
            ty,
            sym,
        )
    } == 0
    {
        return 0;
    }
    // SAFETY: the arch hook (or its weak default) with the same pointers.
    if unsafe { bindings::arch_kprobe_get_kallsym(&mut n, value.cast(), ty.cast(), sym.cast()) }
        == 0
    {
        return 0;
    }
    crate::errno::Errno::ERANGE.to_neg()
}

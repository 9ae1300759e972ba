// SPDX-License-Identifier: GPL-2.0

//! Kernel implementation of [`InsnCache`] on `struct kprobe_insn_cache` (the data objects
//! `kprobe_insn_slots` and `kprobe_optinsn_slots`, defined in `kprobes_helpers.c`), and the
//! C-linkage slot functions the arch code reaches through the header's inline wrappers.
//!
//! Constraints: mutators run under the cache's own mutex; `__is_insn_slot_addr` and the kallsyms
//! enumeration are lockless RCU readers (`kernel_text_address()` calls the former from
//! unwinders). Page descriptors (`struct kprobe_insn_page` of `kernel/kprobes.c`) are defined
//! and walked here, so slot scans, counters and the page list are plain loads and stores, as in
//! C, and the cache mutex is taken here with `mutex_lock()`; the C helpers do the allocation,
//! the page list's RCU updates and the perf ksymbol events, given the descriptor's list node and
//! text page.

use core::ffi::{c_char, c_int, c_uint, c_void, CStr};
use core::num::NonZeroUsize;
use core::ops::ControlFlow;
use core::ptr::{self, addr_of, NonNull};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use kernel::bindings;
use kernel::types::Opaque;

use super::helpers::{
    rkp_cond_synchronize_rcu, rkp_init_optinsn_slots, rkp_insn_page_add, rkp_insn_page_alloc,
    rkp_insn_page_remove,
};
use crate::insn_slot::{self, InsnCache, SlotState};
use crate::report::{Message, Report, WarnSite};
use crate::text::KSYM_NAME_LEN;

/// A page descriptor, laid out as `kernel/kprobes.c`'s `struct kprobe_insn_page` (so a page
/// costs the same memory): `slots_per_page(cache)` bytes of `slot_used` follow it.
#[repr(C)]
struct InsnPage {
    list: bindings::list_head,
    insns: *mut bindings::kprobe_opcode_t,
    cache: *mut bindings::kprobe_insn_cache,
    nused: c_int,
    ngarbage: c_int,
    slot_used: [u8; 0],
}

// The cache is passed as `void *`: `struct kprobe_insn_cache` embeds a mutex whose layout trips
// `improper_ctypes` in some configs, and C only needs the address.

/// A `struct kprobe_insn_cache`, used by reference: `&Cache` is the cache's own address, so
/// the logic's `&C` needs no copy of a handle on the stack (that would keep `mutex_unlock()`
/// from being a tail call).
///
/// # Invariants
///
/// Only ever referred to through [`Cache::from_raw`], on one of the two static caches (or
/// another cache that is never freed).
#[repr(transparent)]
pub struct Cache(Opaque<bindings::kprobe_insn_cache>);

impl Cache {
    /// The cache behind a pointer from the arch's inline wrappers.
    ///
    /// # Safety
    ///
    /// `c` points to a `struct kprobe_insn_cache` that is never freed.
    pub unsafe fn from_raw(c: NonNull<bindings::kprobe_insn_cache>) -> &'static Self {
        // SAFETY: `Cache` is a transparent `Opaque` of the struct, which C may change at any
        // time (as `Opaque` allows); it lives forever (caller). INVARIANT: as the caller says.
        unsafe { c.cast::<Cache>().as_ref() }
    }

    fn ptr(&self) -> *mut bindings::kprobe_insn_cache {
        self.0.get()
    }

    /// This cache's [`Extra`]: one for each static cache, `None` for any other (which then
    /// has no free hint and defers no grace period).
    fn extra(&self) -> Option<&'static Extra> {
        static EXTRA: [Extra; 2] = [Extra::new(), Extra::new()];
        let c = self.ptr();
        if c == ptr::addr_of_mut!(bindings::kprobe_insn_slots) {
            return Some(&EXTRA[0]);
        }
        #[cfg(CONFIG_OPTPROBES)]
        if c == ptr::addr_of_mut!(bindings::kprobe_optinsn_slots) {
            return Some(&EXTRA[1]);
        }
        None
    }

    /// `c->free(kip->insns)` and `kfree(kip)`.
    fn free_page_now(&self, pg: Page) {
        // SAFETY: unlinked and a grace period has passed since (the logic's order):
        // the text page goes back through the cache's own `free` (set before first use, as
        // `alloc`), then the descriptor, kmalloc'ed by `rkp_insn_page_alloc()`.
        unsafe {
            if let Some(free) = (*self.ptr()).free {
                free(pg.insns());
            }
            bindings::kfree(pg.ptr().cast());
        }
    }
}

/// How many unlinked pages a cache parks for an owed grace period (see
/// [`insn_slot::with_deferred_grace`]); one more is freed after paying it.
const PARKED_PAGES: usize = 64;

/// What a static cache keeps besides `struct kprobe_insn_cache` (whose layout is the header's):
/// the free hint and the state of deferred grace periods. All of it is read and written only
/// under the cache mutex (atomics only so that the statics need no `unsafe impl Sync`).
struct Extra {
    /// [`InsnCache::free_hint`].
    hint: AtomicPtr<InsnPage>,
    /// [`InsnCache::deferring`].
    deferring: AtomicUsize,
    /// [`InsnCache::owed`]: whether one is owed, and its cookie.
    owed: AtomicBool,
    cookie: AtomicUsize,
    /// [`InsnCache::park_page`]: `nparked` unlinked pages.
    parked: [AtomicPtr<InsnPage>; PARKED_PAGES],
    nparked: AtomicUsize,
}

impl Extra {
    const fn new() -> Self {
        const NULL: AtomicPtr<InsnPage> = AtomicPtr::new(ptr::null_mut());
        Extra {
            hint: NULL,
            deferring: AtomicUsize::new(0),
            owed: AtomicBool::new(false),
            cookie: AtomicUsize::new(0),
            parked: [NULL; PARKED_PAGES],
            nparked: AtomicUsize::new(0),
        }
    }
}

/// Runs `f`, the bottom halves of an unregistration batch of `n` probes, in a
/// [`insn_slot::with_deferred_grace`] window of each slot cache, so that the slots `f` frees
/// one by one cost one `synchronize_rcu()` at the end rather than one for each collection of
/// dirty slots and one for each page an emptied page list gives back. With fewer than two
/// probes it just runs `f`.
pub fn with_free_batch<R>(n: usize, f: impl FnOnce() -> R) -> R {
    if n < 2 {
        return f();
    }
    #[cfg(CONFIG_OPTPROBES)]
    let f = || insn_slot::with_deferred_grace(optinsn_slots(), f);
    insn_slot::with_deferred_grace(insn_slots(), f)
}

/// `kprobe_insn_slots`, the cache of single-step slots (for an arch layer in this crate, which
/// then needs no C wrapper of `get_insn_slot()`).
pub fn insn_slots() -> &'static Cache {
    // SAFETY: `kprobe_insn_slots` is a static object of kprobes_helpers.c: its address is not
    // NULL and it is never freed.
    unsafe {
        Cache::from_raw(NonNull::new_unchecked(ptr::addr_of_mut!(
            bindings::kprobe_insn_slots
        )))
    }
}

/// `kprobe_optinsn_slots`, the cache of optprobe detour slots.
#[cfg(CONFIG_OPTPROBES)]
pub fn optinsn_slots() -> &'static Cache {
    // SAFETY: as for [`insn_slots`], with `kprobe_optinsn_slots`.
    unsafe {
        Cache::from_raw(NonNull::new_unchecked(ptr::addr_of_mut!(
            bindings::kprobe_optinsn_slots
        )))
    }
}

/// One page of a cache.
///
/// # Invariants
///
/// Points to a live [`InsnPage`] of the cache it came from (linked in its `pages`, fresh from
/// [`InsnCache::alloc_page`], or unlinked and parked for an owed grace period), followed by
/// `slots_per_page(cache)` bytes of `slot_used`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Page(NonNull<InsnPage>);

impl Page {
    fn ptr(self) -> *mut InsnPage {
        self.0.as_ptr()
    }

    fn list(self) -> *mut bindings::list_head {
        // SAFETY: only the member's address is formed (type invariant: the page is live).
        unsafe { ptr::addr_of_mut!((*self.ptr()).list) }
    }

    fn insns(self) -> *mut c_void {
        // SAFETY: the page is live (type invariant); `insns` is set before it is linked.
        unsafe { (*self.ptr()).insns.cast() }
    }

    /// `slot_used[idx]`.
    ///
    /// # Safety
    ///
    /// `idx < slots_per_page(cache)`.
    unsafe fn slot_ptr(self, idx: usize) -> *mut u8 {
        // SAFETY: the array follows the descriptor (type invariant) and `idx` is in it (caller).
        unsafe {
            ptr::addr_of_mut!((*self.ptr()).slot_used)
                .cast::<u8>()
                .add(idx)
        }
    }

    /// `list_entry(node, struct kprobe_insn_page, list)`.
    ///
    /// # Safety
    ///
    /// `node` is the `list` of a live page descriptor (a node of a cache's `pages` other than
    /// the head).
    unsafe fn from_list(node: *mut bindings::list_head) -> Self {
        let off = core::mem::offset_of!(InsnPage, list);
        // SAFETY: by the caller, stepping back to the descriptor stays in bounds, non-NULL.
        // INVARIANT: a linked descriptor is live.
        Page(unsafe { NonNull::new_unchecked(node.byte_sub(off).cast()) })
    }
}

fn state(v: u8) -> SlotState {
    match v {
        0 => SlotState::Clean,
        1 => SlotState::Dirty,
        _ => SlotState::Used,
    }
}

impl Report for Cache {
    fn warn(&self, site: WarnSite) {
        super::report::warn(site);
    }
    fn message(&self, msg: Message) {
        super::report::message(msg);
    }
}

impl InsnCache for Cache {
    type Page = Page;

    fn slots_per_page(&self) -> usize {
        // C's slots_per_page().
        self.page_size() / self.slot_bytes()
    }
    fn slot_bytes(&self) -> NonZeroUsize {
        // SAFETY: the cache is live (type invariant). `insn_size` is never written after
        // init_kprobes(): `kprobe_insn_slots` has it statically, and `kprobe_optinsn_slots`
        // gets it from `rkp_init_optinsn_slots()`, which `register::init_kprobes()` calls
        // before `arch_init_kprobes()`: that arch hook (powerpc registers a probe in it) is the
        // first point at which a probe can be prepared, and so a slot taken or freed, since
        // nothing registers before the early_initcall init_kprobes(). So no write races this
        // read, a plain one as in C (both of a call's reads are one load).
        let n = unsafe { (*self.ptr()).insn_size };
        // Never 0 for a real cache; 1 only keeps a zero from dividing.
        NonZeroUsize::new(n * core::mem::size_of::<bindings::kprobe_opcode_t>())
            .unwrap_or(NonZeroUsize::MIN)
    }
    fn page_size(&self) -> usize {
        bindings::PAGE_SIZE as usize
    }
    fn with_mutex<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: the cache's own sleeping mutex (the cache is live: type invariant), process
        // context.
        unsafe { bindings::mutex_lock(ptr::addr_of_mut!((*self.ptr()).mutex)) };
        let r = f();
        // SAFETY: taken above.
        unsafe { bindings::mutex_unlock(ptr::addr_of_mut!((*self.ptr()).mutex)) };
        r
    }
    fn synchronize_rcu(&self) {
        // SAFETY: process context, no RCU read-side section held.
        unsafe { bindings::synchronize_rcu() };
    }
    fn for_each_page(&self, mut f: impl FnMut(Self::Page) -> ControlFlow<()>) -> ControlFlow<()> {
        // `list_for_each_entry_safe()` (also fine for the RCU readers): the next node is read
        // before `f` may unlink and free the current page.
        // SAFETY: only the address of the cache's list head is formed (the cache is live).
        let head = unsafe { ptr::addr_of_mut!((*self.ptr()).pages) };
        // SAFETY: callers hold the cache mutex or are RCU readers, so every node read is linked
        // or RCU-protected; READ_ONCE as rcu_dereference_raw().
        let mut node = unsafe { ptr::read_volatile(addr_of!((*head).next)) };
        while node != head {
            // SAFETY: as above.
            let next = unsafe { ptr::read_volatile(addr_of!((*node).next)) };
            // SAFETY: a node of `pages` other than the head is a page descriptor's `list`.
            f(unsafe { Page::from_list(node) })?;
            node = next;
        }
        ControlFlow::Continue(())
    }
    fn page_insns(&self, pg: Self::Page) -> usize {
        pg.insns() as usize
    }
    #[inline]
    fn slot(&self, pg: Self::Page, idx: usize) -> SlotState {
        // SAFETY: the logic's loops keep `idx` below `slots_per_page`; the cache mutex
        // serialises the writers.
        state(unsafe { *pg.slot_ptr(idx) })
    }
    #[inline]
    fn set_slot(&self, pg: Self::Page, idx: usize, s: SlotState) {
        // SAFETY: as above.
        unsafe { *pg.slot_ptr(idx) = s as u8 };
    }
    // The three counters are C ints that only ever hold 0..=slots_per_page; read as unsigned,
    // so that the core's `+ 1` needs no overflow check, as C's `++` has none.
    fn nused(&self, pg: Self::Page) -> usize {
        // SAFETY: the page is live (type invariant); cache mutex held.
        unsafe { (*pg.ptr()).nused as c_uint as usize }
    }
    fn set_nused(&self, pg: Self::Page, n: usize) {
        // SAFETY: as above.
        unsafe { (*pg.ptr()).nused = n as c_int };
    }
    fn ngarbage(&self, pg: Self::Page) -> usize {
        // SAFETY: as above.
        unsafe { (*pg.ptr()).ngarbage as c_uint as usize }
    }
    fn set_ngarbage(&self, pg: Self::Page, n: usize) {
        // SAFETY: as above.
        unsafe { (*pg.ptr()).ngarbage = n as c_int };
    }
    fn nr_garbage(&self) -> usize {
        // SAFETY: the cache is live; only accessed under its mutex, held, as in C.
        unsafe { (*self.ptr()).nr_garbage as c_uint as usize }
    }
    fn set_nr_garbage(&self, n: usize) {
        // SAFETY: as above.
        unsafe { (*self.ptr()).nr_garbage = n as c_int };
    }
    fn free_hint(&self) -> Option<Self::Page> {
        let pg = NonNull::new(self.extra()?.hint.load(Ordering::Relaxed))?;
        // INVARIANT: the core sets the hint to a linked page of this cache and clears it before
        // that page is removed, all under the cache mutex, held here: the page is live.
        Some(Page(pg))
    }
    fn set_free_hint(&self, pg: Option<Self::Page>) {
        if let Some(e) = self.extra() {
            e.hint
                .store(pg.map_or(ptr::null_mut(), Page::ptr), Ordering::Relaxed);
        }
    }
    fn alloc_page(&self) -> Option<Self::Page> {
        let n = self.slots_per_page();
        let mut insns = ptr::null_mut();
        let size = core::mem::size_of::<InsnPage>() + n;
        // SAFETY: C allocates `size` bytes (kmalloc, as C's struct_size()) and a text page from
        // the cache, or returns NULL with nothing allocated.
        let kip = NonNull::new(unsafe { rkp_insn_page_alloc(self.ptr(), size, &mut insns) })?;
        let kip = kip.cast::<InsnPage>();
        // SAFETY: `kip` is a fresh allocation of `size` bytes, kmalloc-aligned; every field and
        // the `n` slot bytes are written before the page is used.
        unsafe {
            let list = ptr::addr_of_mut!((*kip.as_ptr()).list);
            // INIT_LIST_HEAD().
            ptr::write(
                list,
                bindings::list_head {
                    next: list,
                    prev: list,
                },
            );
            ptr::addr_of_mut!((*kip.as_ptr()).insns).write(insns.cast());
            ptr::addr_of_mut!((*kip.as_ptr()).cache).write(self.ptr());
            ptr::addr_of_mut!((*kip.as_ptr()).nused).write(0);
            ptr::addr_of_mut!((*kip.as_ptr()).ngarbage).write(0);
            ptr::addr_of_mut!((*kip.as_ptr()).slot_used)
                .cast::<u8>()
                .write_bytes(0, n);
        }
        // INVARIANT: initialised above, with `n` slot bytes.
        Some(Page(kip))
    }
    fn add_page(&self, pg: Self::Page) {
        // SAFETY: cache mutex held; `pg` fresh from `alloc_page` (its list node unlinked).
        unsafe { rkp_insn_page_add(self.ptr(), pg.list(), pg.insns()) };
    }
    fn is_only_page(&self, pg: Self::Page) -> bool {
        // list_is_singular() on the page's node: the head is its only neighbour.
        let list = pg.list();
        // SAFETY: `pg` is linked; cache mutex held.
        let (next, prev) = unsafe { ((*list).next, (*list).prev) };
        next != list && next == prev
    }
    fn neighbours(&self, pg: Self::Page) -> [Option<Self::Page>; 2] {
        // SAFETY: only the address of the cache's list head is formed (the cache is live).
        let head = unsafe { ptr::addr_of_mut!((*self.ptr()).pages) };
        let list = pg.list();
        // SAFETY: `pg` is linked in this cache and the cache mutex is held (the trait's
        // contract), so its neighbours are linked nodes of the list.
        let (prev, next) = unsafe { ((*list).prev, (*list).next) };
        // SAFETY: a node of `pages` other than the head is a page descriptor's `list`.
        let page = |node| (node != head).then(|| unsafe { Page::from_list(node) });
        [page(prev), page(next)]
    }
    fn remove_page(&self, pg: Self::Page) {
        // SAFETY: cache mutex held; `pg` linked in this cache.
        unsafe { rkp_insn_page_remove(self.ptr(), pg.list(), pg.insns()) };
    }
    fn free_page(&self, pg: Self::Page) {
        self.free_page_now(pg);
    }
    fn deferring(&self) -> usize {
        self.extra()
            .map_or(0, |e| e.deferring.load(Ordering::Relaxed))
    }
    fn set_deferring(&self, n: usize) {
        if let Some(e) = self.extra() {
            e.deferring.store(n, Ordering::Relaxed);
        }
    }
    fn grace_cookie(&self) -> usize {
        // SAFETY: no requirement (any context).
        unsafe { bindings::get_state_synchronize_rcu() as usize }
    }
    fn cond_synchronize_rcu(&self, cookie: usize) {
        // SAFETY: process context, no RCU read-side section held; `cookie` came from
        // `get_state_synchronize_rcu()` (`grace_cookie`).
        unsafe { rkp_cond_synchronize_rcu(cookie as _) };
    }
    fn owed(&self) -> Option<usize> {
        let e = self.extra()?;
        e.owed
            .load(Ordering::Relaxed)
            .then(|| e.cookie.load(Ordering::Relaxed))
    }
    fn set_owed(&self, cookie: Option<usize>) {
        if let Some(e) = self.extra() {
            e.cookie.store(cookie.unwrap_or(0), Ordering::Relaxed);
            e.owed.store(cookie.is_some(), Ordering::Relaxed);
        }
    }
    fn park_page(&self, pg: Self::Page) -> bool {
        let Some(e) = self.extra() else { return false };
        let n = e.nparked.load(Ordering::Relaxed);
        if n == PARKED_PAGES {
            return false;
        }
        e.parked[n].store(pg.ptr(), Ordering::Relaxed);
        e.nparked.store(n + 1, Ordering::Relaxed);
        true
    }
    fn unpark_page(&self) -> Option<Self::Page> {
        let e = self.extra()?;
        let n = e.nparked.load(Ordering::Relaxed).checked_sub(1)?;
        e.nparked.store(n, Ordering::Relaxed);
        // INVARIANT: parked by `park_page`, unlinked and not freed since.
        NonNull::new(e.parked[n].swap(ptr::null_mut(), Ordering::Relaxed)).map(Page)
    }
}

/// # Safety
///
/// `c` is NULL or one of the two static caches.
unsafe fn cache(c: *mut bindings::kprobe_insn_cache) -> Option<&'static Cache> {
    // SAFETY: non-NULL here, so one of the static caches (`# Safety`).
    NonNull::new(c).map(|c| unsafe { Cache::from_raw(c) })
}

/// `__get_insn_slot()`: a free slot, or NULL.
///
/// # Safety
///
/// `c` is NULL or `&kprobe_insn_slots`/`&kprobe_optinsn_slots`, as the header's wrappers pass.
#[no_mangle]
pub unsafe extern "C" fn __get_insn_slot(
    c: *mut bindings::kprobe_insn_cache,
) -> *mut bindings::kprobe_opcode_t {
    // SAFETY: `# Safety`.
    unsafe { cache(c) }
        .and_then(insn_slot::get_insn_slot)
        .map_or(ptr::null_mut(), |s| s as *mut _)
}

/// `__free_insn_slot()`.
///
/// # Safety
///
/// As for [`__get_insn_slot`]; `slot` is only compared with the cache's pages.
#[no_mangle]
pub unsafe extern "C" fn __free_insn_slot(
    c: *mut bindings::kprobe_insn_cache,
    slot: *mut bindings::kprobe_opcode_t,
    dirty: c_int,
) {
    // SAFETY: `# Safety`.
    if let Some(c) = unsafe { cache(c) } {
        // A slot no page holds, or a double free, WARNs (through the cache's `Report`).
        let _ = insn_slot::free_insn_slot(c, slot as usize, dirty != 0);
    }
}

/// `__is_insn_slot_addr()`.
///
/// # Safety
///
/// As for [`__get_insn_slot`].
#[no_mangle]
pub unsafe extern "C" fn __is_insn_slot_addr(
    c: *mut bindings::kprobe_insn_cache,
    addr: usize,
) -> bool {
    let rcu = kernel::sync::rcu::read_lock();
    // SAFETY: `# Safety`.
    let r = unsafe { cache(c) }.is_some_and(|c| insn_slot::is_insn_slot_addr(c, addr));
    drop(rcu);
    r
}

/// Writes a kallsyms answer (`'t'`, the cache's name, the page address).
///
/// # Safety
///
/// `value` and `ty` are writable; `sym` has room for `KSYM_NAME_LEN` bytes.
unsafe fn put_kallsym(
    c: &Cache,
    page: usize,
    value: *mut usize,
    ty: *mut c_char,
    sym: *mut c_char,
) {
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
    // SAFETY: `c` as for [`__get_insn_slot`] (kallsyms passes the static caches).
    let (Some(c), false) = (unsafe { cache(c) }, symnum.is_null()) else {
        return crate::errno::Errno::ERANGE.to_neg();
    };
    let rcu = kernel::sync::rcu::read_lock();
    // SAFETY: `symnum` is writable (caller contract).
    let page = insn_slot::cache_get_kallsym(c, unsafe { &mut *symnum });
    drop(rcu);
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

/// The instruction-slot caches (`get_insn_slot()`, `get_optinsn_slot()` and their `free_*`) as
/// the native arch layers use them: raw slot addresses, NULL when there is none.
#[cfg(CONFIG_KPROBES_RUST_ARCH)]
pub(crate) mod slots {
    use super::{insn_slots, Cache};
    use crate::insn_slot::{free_insn_slot, get_insn_slot};
    use core::ptr;

    fn get_from(c: &Cache) -> *mut u8 {
        get_insn_slot(c).map_or(ptr::null_mut(), |s| s as *mut u8)
    }

    /// A slot of the kprobe cache, or NULL.
    pub(crate) fn get() -> *mut u8 {
        get_from(insn_slots())
    }
    /// Returns `slot` to the kprobe cache, `dirty` if a CPU may still run it.
    ///
    /// # Safety
    ///
    /// `slot` came from [`get`] and is no longer used.
    pub(crate) unsafe fn free(slot: *mut u8, dirty: bool) {
        // A slot no page holds, or a double free, WARNs (through the cache's `Report`).
        let _ = free_insn_slot(insn_slots(), slot as usize, dirty);
    }
    /// A slot of the optprobe cache, or NULL.
    #[cfg(CONFIG_OPTPROBES)]
    pub(crate) fn get_opt() -> *mut u8 {
        get_from(crate::glue::insn_slot::optinsn_slots())
    }
    /// Returns `slot` to the optprobe cache, `dirty` if a CPU may still run it.
    ///
    /// # Safety
    ///
    /// `slot` came from [`get_opt`] and is no longer used.
    #[cfg(CONFIG_OPTPROBES)]
    pub(crate) unsafe fn free_opt(slot: *mut u8, dirty: bool) {
        let _ = free_insn_slot(
            crate::glue::insn_slot::optinsn_slots(),
            slot as usize,
            dirty,
        );
    }
}

/// `kprobe_optinsn_slots.insn_size = MAX_OPTINSN_SIZE` where the arch has optprobe slots.
pub(crate) fn c_init_optinsn_slots() {
    // SAFETY: called once from init_kprobes(), before arch_init_kprobes() and so before any
    // slot of the cache is taken.
    unsafe { rkp_init_optinsn_slots() };
}

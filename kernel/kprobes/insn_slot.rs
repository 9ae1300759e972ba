// SPDX-License-Identifier: GPL-2.0

//! Instruction-slot caches (`__ARCH_WANT_KPROBES_INSN_SLOT`): executable pages cut into slots
//! for out-of-line single-stepping and optprobe detours, with mark-and-sweep reuse of slots that
//! a CPU may still be executing ("dirty" slots).
//!
//! Constraints: [`get_insn_slot`] and [`free_insn_slot`] run in process context under the cache's
//! own mutex and may sleep (page allocation, `synchronize_rcu()`); [`is_insn_slot_addr`] and
//! [`cache_get_kallsym`] are lockless RCU readers (`kernel_text_address()` calls the former from
//! unwinders). `no_std`, no allocation in the logic (pages come from the [`InsnCache`]), does not
//! name the `kernel` crate.
//!
//! Semantics kept from C: the newest page is searched first; a dirty slot is only reused after a
//! full `synchronize_rcu()`; garbage is collected when a cache holds more dirty slots than one
//! page has slots, or when no clean slot is left; an emptied page is freed unless it is the last
//! one; freeing looks the page up by slot-index arithmetic that is unsigned, as C's is (its
//! `long` difference is divided by a `size_t`), after a look at the page the previous free found
//! (the same answer: no two pages' slots overlap). One difference: a double free is reported and
//! ignored, where C WARNs and then counts the slot out a second time (a page's `nused` below 0).
//! One addition: [`with_deferred_grace`] lets a run of frees owe its grace periods and pay them
//! once (the same states, fewer waits).

use core::num::NonZeroUsize;

use super::report::{Report, WarnSite};
use core::ops::ControlFlow;

/// State of one slot (`enum kprobe_slot_state`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum SlotState {
    /// `SLOT_CLEAN`: free.
    Clean = 0,
    /// `SLOT_DIRTY`: freed, but a CPU may still run in it until the next grace period.
    Dirty = 1,
    /// `SLOT_USED`: handed out.
    Used = 2,
}

/// One `struct kprobe_insn_cache` and its RCU list of `struct kprobe_insn_page`.
///
/// Mutators are only called with [`InsnCache::with_mutex`] held.
pub trait InsnCache: Report {
    /// Handle to a `struct kprobe_insn_page`.
    type Page: Copy + Eq + core::fmt::Debug;

    /// `slots_per_page(c)`: `PAGE_SIZE / (insn_size * sizeof(kprobe_opcode_t))`.
    fn slots_per_page(&self) -> usize;
    /// `insn_size * sizeof(kprobe_opcode_t)`: bytes per slot.
    fn slot_bytes(&self) -> NonZeroUsize;
    /// `PAGE_SIZE`.
    fn page_size(&self) -> usize;
    /// Runs `f` under `c->mutex`.
    fn with_mutex<R>(&self, f: impl FnOnce() -> R) -> R;
    /// `synchronize_rcu()`.
    fn synchronize_rcu(&self);

    /// `list_for_each_entry_safe` over the pages, newest first; `f` may remove the current page.
    fn for_each_page(&self, f: impl FnMut(Self::Page) -> ControlFlow<()>) -> ControlFlow<()>;
    /// `kip->insns`: address of the page's first slot.
    fn page_insns(&self, pg: Self::Page) -> usize;
    /// `kip->slot_used[idx]`.
    fn slot(&self, pg: Self::Page, idx: usize) -> SlotState;
    /// `kip->slot_used[idx] = state`.
    fn set_slot(&self, pg: Self::Page, idx: usize, state: SlotState);
    /// `kip->nused`.
    fn nused(&self, pg: Self::Page) -> usize;
    /// `kip->nused = n`.
    fn set_nused(&self, pg: Self::Page, n: usize);
    /// `kip->ngarbage`.
    fn ngarbage(&self, pg: Self::Page) -> usize;
    /// `kip->ngarbage = n`.
    fn set_ngarbage(&self, pg: Self::Page, n: usize);
    /// `c->nr_garbage`.
    fn nr_garbage(&self) -> usize;
    /// `c->nr_garbage = n`.
    fn set_nr_garbage(&self, n: usize);
    /// The page the last free found its slot on, if it is still linked (Rust only).
    fn free_hint(&self) -> Option<Self::Page>;
    /// Sets [`InsnCache::free_hint`].
    fn set_free_hint(&self, pg: Option<Self::Page>);
    /// The pages on either side of the linked page `pg` in the cache's list (`kip->list.prev`,
    /// toward the newest page, and `.next`), `None` where the list head is (Rust only: where
    /// the free hint goes next).
    fn neighbours(&self, pg: Self::Page) -> [Option<Self::Page>; 2];

    /// `kmalloc` a page descriptor and `c->alloc()` its page; all slots CLEAN, counters 0.
    fn alloc_page(&self) -> Option<Self::Page>;
    /// `list_add_rcu(&kip->list, &c->pages)` then the perf KSYMBOL register event.
    fn add_page(&self, pg: Self::Page);
    /// `list_is_singular(&kip->list)`: `pg` is the cache's only page.
    fn is_only_page(&self, pg: Self::Page) -> bool;
    /// The perf KSYMBOL unregister event, then `list_del_rcu(&kip->list)`.
    fn remove_page(&self, pg: Self::Page);
    /// `c->free(kip->insns)` and `kfree(kip)`.
    fn free_page(&self, pg: Self::Page);

    /// How many [`with_deferred_grace`] windows are open on the cache (Rust only).
    fn deferring(&self) -> usize;
    /// Sets [`InsnCache::deferring`].
    fn set_deferring(&self, n: usize);
    /// `get_state_synchronize_rcu()`: a cookie of the grace periods so far.
    fn grace_cookie(&self) -> usize;
    /// `cond_synchronize_rcu(cookie)`: returns once a full grace period has passed since
    /// [`InsnCache::grace_cookie`] gave `cookie` (at once if one has already).
    fn cond_synchronize_rcu(&self, cookie: usize);
    /// The cookie taken at the latest point a window owes a grace period from (Rust only).
    fn owed(&self) -> Option<usize>;
    /// Sets [`InsnCache::owed`].
    fn set_owed(&self, cookie: Option<usize>);
    /// Keeps the unlinked page `pg` to be freed when the owed grace period is paid; false
    /// when the cache has no room for another (Rust only).
    fn park_page(&self, pg: Self::Page) -> bool;
    /// A page [`InsnCache::park_page`] kept, taken back.
    fn unpark_page(&self) -> Option<Self::Page>;
}

/// A grace period for the dirty slots about to be cleaned: waited for now, as C does, or, in a
/// [`with_deferred_grace`] window, owed.
fn grace_period<C: InsnCache>(c: &C) {
    if c.deferring() == 0 {
        c.synchronize_rcu();
    } else {
        c.set_owed(Some(c.grace_cookie()));
    }
}

/// Frees the page `pg`, just unlinked: after a grace period, waited for now, as C does, or, in
/// a [`with_deferred_grace`] window, owed, with the page parked until it is paid.
fn release_page<C: InsnCache>(c: &C, pg: C::Page) {
    if c.deferring() == 0 {
        c.synchronize_rcu();
        c.free_page(pg);
        return;
    }
    c.set_owed(Some(c.grace_cookie()));
    if !c.park_page(pg) {
        pay_owed(c);
        c.free_page(pg);
    }
}

/// Waits for the grace period owed, if one is, and frees the pages parked for it.
fn pay_owed<C: InsnCache>(c: &C) {
    let Some(cookie) = c.owed() else { return };
    // The latest cookie: its grace period covers every earlier one.
    c.cond_synchronize_rcu(cookie);
    c.set_owed(None);
    while let Some(pg) = c.unpark_page() {
        c.free_page(pg);
    }
}

/// Runs `f`, a run of slot frees (the bottom halves of an unregistration batch, Rust only),
/// with the grace periods those frees need owed rather than waited for one by one, and paid
/// once at the end: one `synchronize_rcu()` where C has one for each collection of dirty slots
/// and one for each page an emptied page gives back (about two for every page of slots at
/// 1000 probes with detour buffers).
///
/// The caches go through the same states as with C's frees one by one: what moves is only when
/// the grace periods are waited for. A collection cleans dirty slots at once but owes its grace
/// period, which [`get_insn_slot`] pays before it hands out any slot (so no slot is reused
/// before the grace period its cleaning needs, whoever takes it); an emptied page is unlinked
/// at once and parked, freed when the grace period is paid (at once when the cache has no room
/// to park it). The window counts on the cache, not on a task: frees of other tasks while it
/// is open owe their grace periods too, and the window's end pays whatever is owed. The mutex
/// is taken only to open and close the window; `f` frees as any caller does.
pub fn with_deferred_grace<C: InsnCache, R>(c: &C, f: impl FnOnce() -> R) -> R {
    c.with_mutex(|| c.set_deferring(c.deferring() + 1));
    let r = f();
    c.with_mutex(|| {
        c.set_deferring(c.deferring().saturating_sub(1));
        pay_owed(c);
    });
    r
}

/// `__get_insn_slot()`: the address of a free slot, or `None` (-ENOMEM for the arch).
pub fn get_insn_slot<C: InsnCache>(c: &C) -> Option<usize> {
    c.with_mutex(|| {
        loop {
            // A slot is handed out only after the grace period its cleaning needed.
            pay_owed(c);
            if let Some(slot) = find_clean_slot(c) {
                return Some(slot);
            }
            // If there are any garbage slots, collect them and try again.
            if c.nr_garbage() != 0 {
                collect_garbage_slots(c);
                continue;
            }
            break;
        }
        let pg = c.alloc_page()?;
        c.set_slot(pg, 0, SlotState::Used);
        c.set_nused(pg, 1);
        c.set_ngarbage(pg, 0);
        c.add_page(pg);
        Some(c.page_insns(pg))
    })
}

fn find_clean_slot<C: InsnCache>(c: &C) -> Option<usize> {
    let n = c.slots_per_page();
    let mut found = None;
    let _ = c.for_each_page(|pg| {
        if c.nused(pg) < n {
            for i in 0..n {
                if c.slot(pg, i) == SlotState::Clean {
                    c.set_slot(pg, i, SlotState::Used);
                    c.set_nused(pg, c.nused(pg) + 1);
                    found = Some(
                        c.page_insns(pg)
                            .wrapping_add(i.wrapping_mul(c.slot_bytes().get())),
                    );
                    return ControlFlow::Break(());
                }
            }
            // nused was wrong: repair it, and WARN as C does.
            c.set_nused(pg, n);
            c.warn(WarnSite::GetInsnSlot);
        }
        ControlFlow::Continue(())
    });
    found
}

/// `collect_one_slot()`: returns true when the page became empty (and was freed unless last).
///
/// `idx` is a used or dirty slot, so `nused` counts it and is at least 1.
fn collect_one_slot<C: InsnCache>(c: &C, pg: C::Page, idx: usize) -> bool {
    c.set_slot(pg, idx, SlotState::Clean);
    let nused = c.nused(pg).wrapping_sub(1);
    c.set_nused(pg, nused);
    if nused == 0 {
        // Keep the last page so the next probe need not set one up again.
        if !c.is_only_page(pg) {
            if c.free_hint() == Some(pg) {
                // Frees in the order the slots were taken move to the next newer page.
                let [newer, older] = c.neighbours(pg);
                c.set_free_hint(newer.or(older));
            }
            c.remove_page(pg);
            release_page(c, pg);
        }
        return true;
    }
    false
}

/// `collect_garbage_slots()`: after a grace period (or owing one: [`with_deferred_grace`]),
/// clean every dirty slot.
pub fn collect_garbage_slots<C: InsnCache>(c: &C) {
    grace_period(c);
    let n = c.slots_per_page();
    let _ = c.for_each_page(|pg| {
        if c.ngarbage(pg) == 0 {
            return ControlFlow::Continue(());
        }
        c.set_ngarbage(pg, 0);
        for i in 0..n {
            if c.slot(pg, i) == SlotState::Dirty && collect_one_slot(c, pg, i) {
                break;
            }
        }
        ControlFlow::Continue(())
    });
    c.set_nr_garbage(0);
}

/// `__free_insn_slot()`: release `slot`, at once or (`dirty`) after the next collection.
///
/// Returns false, changing nothing, for a slot no page holds or one that is not in use (a
/// double free); both WARN, as in C.
pub fn free_insn_slot<C: InsnCache>(c: &C, slot: usize, dirty: bool) -> bool {
    c.with_mutex(|| {
        let n = c.slots_per_page();
        let bytes = c.slot_bytes();
        // C: ((long)slot - (long)kip->insns) / slot_bytes, an unsigned division (the divisor
        // is a size_t), so a slot below the page gives a huge index: no page of its own.
        let index_on = |pg| Some(slot.wrapping_sub(c.page_insns(pg)) / bytes).filter(|&i| i < n);
        // The pages' slot ranges do not overlap, so the page the last free found is, if it
        // holds the slot, the one C's walk finds; slots freed in a row (a batch's bottom
        // halves) mostly share pages, which the walk would reach one page list later each.
        // Else a page next to it: frees in the order the slots were taken (or the reverse)
        // leave one page for the next newer (older) one, which the walk from the newest page
        // reaches only after all those taken since (before).
        let at = |pg: Option<C::Page>| pg.and_then(|pg| index_on(pg).map(|idx| (pg, idx)));
        let hint = c.free_hint();
        let mut hit = at(hint).or_else(|| {
            let [newer, older] = c.neighbours(hint?);
            at(newer).or_else(|| at(older))
        });
        if hit.is_none() {
            let _ = c.for_each_page(|pg| match index_on(pg) {
                Some(idx) => {
                    hit = Some((pg, idx));
                    ControlFlow::Break(())
                }
                None => ControlFlow::Continue(()),
            });
        }
        let Some((pg, idx)) = hit else {
            c.warn(WarnSite::FreeInsnSlot);
            return false;
        };
        c.set_free_hint(Some(pg));
        if c.slot(pg, idx) != SlotState::Used {
            c.warn(WarnSite::FreeInsnSlot);
            return false;
        }
        if dirty {
            c.set_slot(pg, idx, SlotState::Dirty);
            c.set_ngarbage(pg, c.ngarbage(pg) + 1);
            c.set_nr_garbage(c.nr_garbage() + 1);
            if c.nr_garbage() > n {
                collect_garbage_slots(c);
            }
        } else {
            collect_one_slot(c, pg, idx);
        }
        true
    })
}

/// `__is_insn_slot_addr()`: `addr` lies on one of the cache's pages (lockless).
pub fn is_insn_slot_addr<C: InsnCache>(c: &C, addr: usize) -> bool {
    let size = c.page_size();
    c.for_each_page(|pg| {
        let start = c.page_insns(pg);
        if addr >= start && addr < start.wrapping_add(size) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// `kprobe_cache_get_kallsym()`: the `*symnum`-th page as a `'t'` symbol named after the cache.
///
/// Decrements `*symnum` per page skipped (as C does), so callers can chain caches; returns the
/// page address, or `None` (-ERANGE) when the cache has fewer pages.
pub fn cache_get_kallsym<C: InsnCache>(c: &C, symnum: &mut u32) -> Option<usize> {
    let mut value = None;
    let _ = c.for_each_page(|pg| {
        let n = *symnum;
        *symnum = n.wrapping_sub(1);
        if n != 0 {
            return ControlFlow::Continue(());
        }
        value = Some(c.page_insns(pg));
        ControlFlow::Break(())
    });
    value
}

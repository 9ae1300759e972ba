// SPDX-License-Identifier: GPL-2.0

//! Instruction-slot cache: unit and property tests against a simulated page allocator.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::ops::ControlFlow;

use proptest::prelude::*;
use rkprobes_core::insn_slot::{
    cache_get_kallsym, free_insn_slot, get_insn_slot, is_insn_slot_addr, with_deferred_grace,
    InsnCache, SlotState,
};
use rkprobes_core::report::{Message, Report, WarnSite};

const PAGE: usize = 4096;

#[derive(Clone, Debug)]
struct Page {
    insns: usize,
    slots: Vec<SlotState>,
    nused: usize,
    ngarbage: usize,
    linked: bool,
    removed_at_gp: Option<u64>,
}

/// A simulated `struct kprobe_insn_cache` with x86-sized slots (15 bytes: 273 per page).
struct SimCache {
    slot_bytes: usize,
    pages: RefCell<Vec<Page>>,
    /// Linked pages, newest first (list_add_rcu adds at the head).
    order: RefCell<Vec<usize>>,
    nr_garbage: Cell<usize>,
    free_hint: Cell<Option<usize>>,
    /// Whether `free_hint` answers (false: every free walks the pages, as C's does).
    use_hint: bool,
    gp: Cell<u64>,
    locked: Cell<bool>,
    alloc_fails: Cell<bool>,
    freed_pages: Cell<usize>,
    warns: RefCell<Vec<WarnSite>>,
    deferring: Cell<usize>,
    owed: Cell<Option<usize>>,
    parked: RefCell<Vec<usize>>,
    /// How many pages the cache can park (the kernel's 64; fewer to reach the full case).
    park_room: usize,
}

impl SimCache {
    fn new(slot_bytes: usize) -> Self {
        SimCache {
            slot_bytes,
            pages: RefCell::new(Vec::new()),
            order: RefCell::new(Vec::new()),
            nr_garbage: Cell::new(0),
            free_hint: Cell::new(None),
            use_hint: true,
            gp: Cell::new(0),
            locked: Cell::new(false),
            alloc_fails: Cell::new(false),
            freed_pages: Cell::new(0),
            warns: RefCell::new(Vec::new()),
            deferring: Cell::new(0),
            owed: Cell::new(None),
            parked: RefCell::new(Vec::new()),
            park_room: 3,
        }
    }
    fn take_warns(&self) -> Vec<WarnSite> {
        std::mem::take(&mut self.warns.borrow_mut())
    }
    fn locked(&self) {
        assert!(self.locked.get(), "cache mutated without c->mutex");
    }
    fn linked_pages(&self) -> usize {
        self.order.borrow().len()
    }
}

impl Report for SimCache {
    fn warn(&self, site: WarnSite) {
        self.warns.borrow_mut().push(site);
    }
    fn message(&self, msg: Message) {
        panic!("an instruction cache logs no message ({msg:?})");
    }
}

impl InsnCache for SimCache {
    type Page = usize;

    fn slots_per_page(&self) -> usize {
        PAGE / self.slot_bytes
    }
    fn slot_bytes(&self) -> NonZeroUsize {
        NonZeroUsize::new(self.slot_bytes).expect("a cache has non-empty slots")
    }
    fn page_size(&self) -> usize {
        PAGE
    }
    fn with_mutex<R>(&self, f: impl FnOnce() -> R) -> R {
        assert!(!self.locked.replace(true), "c->mutex taken recursively");
        let r = f();
        self.locked.set(false);
        r
    }
    fn synchronize_rcu(&self) {
        self.gp.set(self.gp.get() + 1);
    }
    fn for_each_page(&self, mut f: impl FnMut(usize) -> ControlFlow<()>) -> ControlFlow<()> {
        let order = self.order.borrow().clone();
        for pg in order {
            f(pg)?;
        }
        ControlFlow::Continue(())
    }
    fn page_insns(&self, pg: usize) -> usize {
        self.pages.borrow()[pg].insns
    }
    fn slot(&self, pg: usize, idx: usize) -> SlotState {
        self.pages.borrow()[pg].slots[idx]
    }
    fn set_slot(&self, pg: usize, idx: usize, state: SlotState) {
        self.locked();
        self.pages.borrow_mut()[pg].slots[idx] = state;
    }
    fn nused(&self, pg: usize) -> usize {
        self.pages.borrow()[pg].nused
    }
    fn set_nused(&self, pg: usize, n: usize) {
        self.locked();
        self.pages.borrow_mut()[pg].nused = n;
    }
    fn ngarbage(&self, pg: usize) -> usize {
        self.pages.borrow()[pg].ngarbage
    }
    fn set_ngarbage(&self, pg: usize, n: usize) {
        self.pages.borrow_mut()[pg].ngarbage = n;
    }
    fn nr_garbage(&self) -> usize {
        self.nr_garbage.get()
    }
    fn set_nr_garbage(&self, n: usize) {
        self.nr_garbage.set(n);
    }
    fn free_hint(&self) -> Option<usize> {
        let pg = self.free_hint.get().filter(|_| self.use_hint);
        if let Some(pg) = pg {
            assert!(
                self.pages.borrow()[pg].linked,
                "the free hint names an unlinked page"
            );
        }
        pg
    }
    fn set_free_hint(&self, pg: Option<usize>) {
        self.locked();
        self.free_hint.set(pg);
    }
    fn neighbours(&self, pg: usize) -> [Option<usize>; 2] {
        self.locked();
        let order = self.order.borrow();
        let i = order
            .iter()
            .position(|&q| q == pg)
            .expect("neighbours of an unlinked page");
        [
            i.checked_sub(1).map(|j| order[j]),
            order.get(i + 1).copied(),
        ]
    }
    fn alloc_page(&self) -> Option<usize> {
        if self.alloc_fails.get() {
            return None;
        }
        let mut pages = self.pages.borrow_mut();
        // Pages are spread out so a slot address identifies its page.
        let insns = 0x10_0000 + pages.len() * 2 * PAGE;
        pages.push(Page {
            insns,
            slots: vec![SlotState::Clean; PAGE / self.slot_bytes],
            nused: 0,
            ngarbage: 0,
            linked: false,
            removed_at_gp: None,
        });
        Some(pages.len() - 1)
    }
    fn add_page(&self, pg: usize) {
        self.locked();
        self.pages.borrow_mut()[pg].linked = true;
        self.order.borrow_mut().insert(0, pg);
    }
    fn is_only_page(&self, pg: usize) -> bool {
        *self.order.borrow() == [pg]
    }
    fn remove_page(&self, pg: usize) {
        self.locked();
        self.order.borrow_mut().retain(|&p| p != pg);
        let mut pages = self.pages.borrow_mut();
        pages[pg].linked = false;
        pages[pg].removed_at_gp = Some(self.gp.get());
    }
    fn free_page(&self, pg: usize) {
        let pages = self.pages.borrow();
        let removed = pages[pg].removed_at_gp.expect("freeing a linked page");
        assert!(
            self.gp.get() > removed,
            "page freed without a grace period after unlinking"
        );
        self.freed_pages.set(self.freed_pages.get() + 1);
    }
    fn deferring(&self) -> usize {
        self.locked();
        self.deferring.get()
    }
    fn set_deferring(&self, n: usize) {
        self.locked();
        self.deferring.set(n);
    }
    fn grace_cookie(&self) -> usize {
        // Grace periods completed so far: the next one to end after now is the one after.
        self.gp.get() as usize
    }
    fn cond_synchronize_rcu(&self, cookie: usize) {
        if self.gp.get() as usize <= cookie {
            self.synchronize_rcu();
        }
    }
    fn owed(&self) -> Option<usize> {
        self.locked();
        self.owed.get()
    }
    fn set_owed(&self, cookie: Option<usize>) {
        self.locked();
        if let (Some(old), Some(new)) = (self.owed.get(), cookie) {
            assert!(new >= old, "an owed grace period replaced by an older one");
        }
        self.owed.set(cookie);
    }
    fn park_page(&self, pg: usize) -> bool {
        self.locked();
        assert!(!self.pages.borrow()[pg].linked, "parking a linked page");
        let mut parked = self.parked.borrow_mut();
        if parked.len() == self.park_room {
            return false;
        }
        parked.push(pg);
        true
    }
    fn unpark_page(&self) -> Option<usize> {
        self.locked();
        self.parked.borrow_mut().pop()
    }
}

#[test]
fn slots_fill_pages_and_pages_are_reclaimed() {
    let c = SimCache::new(15);
    let n = c.slots_per_page();
    assert_eq!(n, 273);
    let slots: Vec<usize> = (0..n + 1).map(|_| get_insn_slot(&c).unwrap()).collect();
    assert_eq!(c.linked_pages(), 2);
    assert_eq!(slots[1] - slots[0], 15);
    assert!(slots.iter().all(|&s| is_insn_slot_addr(&c, s)));
    assert!(!is_insn_slot_addr(&c, 0x10));
    // Free the lone slot of the second page: it is not the last page, so it goes.
    assert!(free_insn_slot(&c, slots[n], false));
    assert_eq!(c.linked_pages(), 1);
    assert_eq!(c.freed_pages.get(), 1);
    for &s in &slots[..n] {
        assert!(free_insn_slot(&c, s, false));
    }
    assert_eq!(c.linked_pages(), 1, "the last page is kept");
    assert!(c.take_warns().is_empty());
    assert!(
        !free_insn_slot(&c, slots[0], false),
        "double free is reported"
    );
    assert_eq!(c.take_warns(), [WarnSite::FreeInsnSlot], "and WARNs, as C");
    c.alloc_fails.set(true);
    assert!(
        get_insn_slot(&c).is_some(),
        "the kept page serves without allocating"
    );
}

#[test]
fn bad_frees_change_nothing() {
    let c = SimCache::new(16);
    let a = get_insn_slot(&c).unwrap();
    let b = get_insn_slot(&c).unwrap();
    let nused = |c: &SimCache| c.pages.borrow()[0].nused;
    // Just below the page: C divides the negative difference as unsigned, a huge index, so no
    // page holds it (a signed division would give slot 0 and free `a`).
    assert!(!free_insn_slot(&c, a - 8, false));
    assert!(!free_insn_slot(&c, a - 1, true));
    assert_eq!(
        c.take_warns(),
        [WarnSite::FreeInsnSlot; 2],
        "each WARNs, as C"
    );
    assert_eq!(nused(&c), 2);
    assert!(free_insn_slot(&c, b, true));
    assert_eq!(
        (nused(&c), c.nr_garbage()),
        (2, 1),
        "a dirty slot still counts as used"
    );
    // Double frees, clean or dirty, of a dirty slot and of a clean one.
    for (s, dirty) in [(b, false), (b, true), (a + 32, false), (a + 32, true)] {
        assert!(!free_insn_slot(&c, s, dirty));
    }
    assert_eq!(c.take_warns(), [WarnSite::FreeInsnSlot; 4]);
    assert_eq!((nused(&c), c.nr_garbage()), (2, 1));
    assert!(free_insn_slot(&c, a, false));
    assert_eq!(nused(&c), 1);
    assert!(c.take_warns().is_empty(), "a good free does not WARN");
}

#[test]
fn dirty_slots_wait_for_collection() {
    let c = SimCache::new(16);
    let n = c.slots_per_page();
    let all: Vec<usize> = (0..n).map(|_| get_insn_slot(&c).unwrap()).collect();
    assert!(free_insn_slot(&c, all[0], true));
    assert_eq!(c.nr_garbage(), 1);
    // No clean slot left: garbage is collected (after a grace period) before a new page.
    let gp = c.gp.get();
    let again = get_insn_slot(&c).unwrap();
    assert_eq!(again, all[0]);
    assert!(c.gp.get() > gp);
    assert_eq!(c.linked_pages(), 1);
    c.alloc_fails.set(true);
    assert_eq!(
        get_insn_slot(&c),
        None,
        "-ENOMEM when full and nothing to collect"
    );
}

#[test]
fn kallsyms_enumeration_chains() {
    let c = SimCache::new(2048);
    let a = get_insn_slot(&c).unwrap();
    let _ = get_insn_slot(&c).unwrap();
    let b = get_insn_slot(&c).unwrap();
    // Newest page first.
    let mut n = 0;
    assert_eq!(cache_get_kallsym(&c, &mut n), Some(b & !(PAGE - 1)));
    let mut n = 1;
    assert_eq!(cache_get_kallsym(&c, &mut n), Some(a));
    let mut n = 5;
    assert_eq!(cache_get_kallsym(&c, &mut n), None);
    assert_eq!(n, 3, "the next cache continues the count");
}

#[derive(Clone, Debug)]
enum Op {
    Get,
    Free {
        pick: usize,
        dirty: bool,
    },
    /// Opens a [`with_deferred_grace`] window (the ops up to its `Close` run inside it).
    Open,
    Close,
}

/// What the allocator proptest tracks between ops.
#[derive(Default)]
struct Seen {
    held: Vec<usize>,
    /// Slot -> grace-period count when it was freed dirty.
    dirty_at: BTreeMap<usize, u64>,
}

/// Runs `ops` up to the `Close` of the current window (or the end), opening a window at each
/// `Open`, and checks the cache's invariants after each op.
fn run_ops(
    c: &SimCache,
    ops: &mut std::vec::IntoIter<Op>,
    seen: &mut Seen,
) -> Result<(), TestCaseError> {
    while let Some(op) = ops.next() {
        match op {
            Op::Get => {
                let s = get_insn_slot(c).unwrap();
                prop_assert!(!seen.held.contains(&s), "slot {:#x} handed out twice", s);
                if let Some(gp) = seen.dirty_at.remove(&s) {
                    prop_assert!(c.gp.get() > gp, "dirty slot reused before a grace period");
                }
                seen.held.push(s);
            }
            Op::Free { pick, dirty } => {
                if seen.held.is_empty() {
                    continue;
                }
                let s = seen.held.swap_remove(pick % seen.held.len());
                let gp = c.gp.get();
                prop_assert!(free_insn_slot(c, s, dirty));
                if dirty {
                    seen.dirty_at.insert(s, gp);
                }
            }
            Op::Open => with_deferred_grace(c, || run_ops(c, ops, seen))?,
            Op::Close => return Ok(()),
        }
        // Invariants of the page list.
        let pages = c.pages.borrow();
        let order = c.order.borrow();
        let mut dirty_total = 0;
        for &pg in order.iter() {
            let p = &pages[pg];
            let used = p.slots.iter().filter(|&&s| s != SlotState::Clean).count();
            prop_assert_eq!(p.nused, used);
            dirty_total += p.slots.iter().filter(|&&s| s == SlotState::Dirty).count();
        }
        prop_assert_eq!(c.nr_garbage.get(), dirty_total);
        prop_assert!(dirty_total <= c.slots_per_page(), "garbage not collected");
        // No page without a used or dirty slot, except the one kept.
        let empty = order.iter().filter(|&&pg| pages[pg].nused == 0).count();
        prop_assert!(empty <= 1 && (empty == 0 || order.len() == 1));
        drop(pages);
        drop(order);
        for &s in &seen.held {
            prop_assert!(is_insn_slot_addr(c, s));
        }
    }
    Ok(())
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![6 => Just(Op::Get),
                5 => (any::<usize>(), any::<bool>())
                    .prop_map(|(pick, dirty)| Op::Free { pick, dirty }),
                1 => Just(Op::Open),
                1 => Just(Op::Close)]
}

/// Everything a cache's user can see of it (and the pages it freed): equal on two caches
/// that went through the same calls.
fn cache_state(c: &SimCache) -> impl PartialEq + std::fmt::Debug {
    let pages = c.pages.borrow();
    let pages: Vec<_> = pages
        .iter()
        .map(|p| (p.insns, p.slots.clone(), p.nused, p.ngarbage, p.linked))
        .collect();
    (
        pages,
        c.order.borrow().clone(),
        c.nr_garbage.get(),
        c.freed_pages.get(),
    )
}

#[test]
fn deferred_grace_costs_one_wait() {
    let c = SimCache {
        park_room: 64,
        ..SimCache::new(15)
    };
    let plain = SimCache::new(15);
    let n = 4 * c.slots_per_page();
    let slots: Vec<usize> = (0..n).map(|_| get_insn_slot(&c).unwrap()).collect();
    for _ in 0..n {
        get_insn_slot(&plain).unwrap();
    }
    let (gp, gp_plain) = (c.gp.get(), plain.gp.get());
    with_deferred_grace(&c, || {
        for &s in &slots {
            assert!(free_insn_slot(&c, s, true));
        }
        assert_eq!(
            c.freed_pages.get(),
            0,
            "pages wait for the window's grace period"
        );
        assert!(c.owed.get().is_some());
    });
    for &s in &slots {
        assert!(free_insn_slot(&plain, s, true));
    }
    assert_eq!(c.gp.get() - gp, 1, "one grace period for the window");
    assert!(
        plain.gp.get() - gp_plain >= 4,
        "C's frees wait at every collection and page"
    );
    assert_eq!(
        cache_state(&c),
        cache_state(&plain),
        "and the same cache after"
    );
    assert!(c.parked.borrow().is_empty() && c.owed.get().is_none());
}

#[test]
fn a_get_in_a_window_pays_what_is_owed() {
    let c = SimCache::new(512);
    let n = c.slots_per_page();
    // Two pages: one full, one with a single slot.
    let all: Vec<usize> = (0..=n).map(|_| get_insn_slot(&c).unwrap()).collect();
    with_deferred_grace(&c, || {
        let gp = c.gp.get();
        for &s in &all {
            assert!(free_insn_slot(&c, s, true));
        }
        // The last free collected: every slot clean, one page unlinked and parked.
        assert_eq!((c.nr_garbage(), c.linked_pages()), (0, 1));
        assert_eq!(c.gp.get(), gp, "the collection owes its grace period");
        assert_eq!((c.freed_pages.get(), c.parked.borrow().len()), (0, 1));
        // Every slot is clean now, but was dirty: taking one waits first.
        let s = get_insn_slot(&c).unwrap();
        assert!(all.contains(&s));
        assert_eq!(c.gp.get(), gp + 1);
        assert_eq!(c.freed_pages.get(), 1, "and frees the parked page");
        assert!(c.owed.get().is_none());
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn allocator_invariants(slot_bytes in prop_oneof![Just(15usize), Just(8), Just(512), Just(1000)],
                            ops in prop::collection::vec(op(), 1..400)) {
        let c = SimCache::new(slot_bytes);
        let mut seen = Seen::default();
        let mut ops = ops.into_iter();
        // A `Close` outside every window ends nothing: go on with the next op.
        while ops.len() > 0 {
            run_ops(&c, &mut ops, &mut seen)?;
        }
        prop_assert!(c.parked.borrow().is_empty(), "a closed window left pages parked");
        prop_assert!(c.owed.get().is_none(), "a closed window left a grace period owed");
        prop_assert_eq!(c.deferring.get(), 0);
        // Everything back: one page is kept.
        for s in seen.held.drain(..) {
            prop_assert!(free_insn_slot(&c, s, false));
        }
        if c.nr_garbage() > 0 {
            c.with_mutex(|| rkprobes_core::insn_slot::collect_garbage_slots(&c));
        }
        prop_assert!(c.linked_pages() <= 1);
        let unlinked = c.pages.borrow().iter().filter(|p| p.removed_at_gp.is_some()).count();
        prop_assert_eq!(c.freed_pages.get(), unlinked, "an unlinked page not freed");
    }

    /// Windows move only the grace periods: the same calls on a cache without them give the
    /// same slots, warnings and cache, once the windows are closed, with no more waits.
    #[test]
    fn deferred_grace_changes_no_state(slot_bytes in prop_oneof![Just(15usize), Just(512), Just(1000)],
                                       ops in prop::collection::vec(op(), 1..600)) {
        let windowed = SimCache::new(slot_bytes);
        let plain = SimCache::new(slot_bytes);
        let mut held = Vec::new();
        let frees: Vec<Op> = ops.iter().filter(|op| matches!(op, Op::Get | Op::Free { .. })).cloned().collect();
        let mut seen = Seen::default();
        let mut it = ops.clone().into_iter();
        while it.len() > 0 {
            run_ops(&windowed, &mut it, &mut seen)?;
        }
        for op in frees {
            match op {
                Op::Get => held.push(get_insn_slot(&plain).unwrap()),
                Op::Free { pick, dirty } if !held.is_empty() => {
                    let s = held.swap_remove(pick % held.len());
                    prop_assert!(free_insn_slot(&plain, s, dirty));
                }
                _ => {}
            }
        }
        prop_assert_eq!(windowed.take_warns(), plain.take_warns());
        prop_assert_eq!(cache_state(&windowed), cache_state(&plain));
        prop_assert!(windowed.gp.get() <= plain.gp.get(), "a window waited more than C");
    }

    /// The page hint of `free_insn_slot` changes nothing: the same calls on a cache whose frees
    /// always walk the pages (as C's) give the same results, warnings, pages and slots.
    #[test]
    fn free_hint_matches_the_walk(slot_bytes in prop_oneof![Just(15usize), Just(512), Just(1000)],
                                  ops in prop::collection::vec(
                                      prop_oneof![3 => Just(Op::Get),
                                                  3 => (any::<usize>(), any::<bool>())
                                                      .prop_map(|(pick, dirty)| Op::Free { pick, dirty })],
                                      1..600),
                                  bad in prop::collection::vec(any::<usize>(), 0..8)) {
        let hinted = SimCache::new(slot_bytes);
        let walked = SimCache { use_hint: false, ..SimCache::new(slot_bytes) };
        let mut held: Vec<usize> = Vec::new();
        let mut bad = bad.into_iter();
        for (i, op) in ops.into_iter().enumerate() {
            match op {
                Op::Get => {
                    let s = get_insn_slot(&hinted);
                    prop_assert_eq!(s, get_insn_slot(&walked));
                    held.extend(s);
                }
                Op::Free { pick, dirty } => {
                    // Now and then a slot no page holds, or one freed already.
                    let s = match (i % 17 == 0).then(|| bad.next()).flatten() {
                        Some(addr) => addr % (0x10_0000 + 64 * PAGE),
                        None if held.is_empty() => continue,
                        None => held.swap_remove(pick % held.len()),
                    };
                    prop_assert_eq!(free_insn_slot(&hinted, s, dirty), free_insn_slot(&walked, s, dirty));
                }
                Op::Open | Op::Close => unreachable!("not generated here"),
            }
            prop_assert_eq!(hinted.take_warns(), walked.take_warns());
            prop_assert_eq!(&*hinted.order.borrow(), &*walked.order.borrow());
            prop_assert_eq!(hinted.nr_garbage.get(), walked.nr_garbage.get());
            prop_assert_eq!(hinted.freed_pages.get(), walked.freed_pages.get());
            let (hp, wp) = (hinted.pages.borrow(), walked.pages.borrow());
            for (h, w) in hp.iter().zip(wp.iter()) {
                prop_assert_eq!((h.insns, &h.slots, h.nused, h.ngarbage, h.linked),
                                (w.insns, &w.slots, w.nused, w.ngarbage, w.linked));
            }
        }
    }
}

// SPDX-License-Identifier: GPL-2.0

//! The objpool kretprobe path (`!KRETPROBE_ON_RETHOOK`, arm64): per-task instance lists, the
//! trampoline handler, `kretprobe_find_ret_addr()` and `kprobe_flush_task()`, against a small
//! simulated task/pool model with a simulated arch (`arch_prepare_kretprobe` saves the link
//! register and frame pointer, as arm64's does). A growing kretprobe (issue 40) has extra
//! holders, each with its own pool; the model holds C's rules per holder: an instance goes back
//! to its own holder's pool while the kretprobe is there, is dropped from it once it is gone,
//! and a holder goes with its released pool's last object.

use std::cell::RefCell;

use rkprobes_core::kretprobe::{
    find_ret_addr, hook_instance, kprobe_flush_task, kretprobe_find_ret_addr,
    kretprobe_trampoline_handler, TaskInstances,
};

const TRAMPOLINE: usize = 0xffff_0000_dead_0000;

#[derive(Clone, Debug, Default)]
struct Inst {
    next: Option<usize>,
    ret_addr: usize,
    fp: usize,
    holder: usize,
}

#[derive(Clone, Debug, Default)]
struct Holder {
    /// `rph->rp`: the kretprobe, `None` once unregistered.
    rp: Option<usize>,
    /// Objects in the pool.
    free: Vec<usize>,
    /// Objects dropped through call_rcu() (`free_rp_inst_rcu`).
    dropped: Vec<usize>,
    /// Objects the pool was created with.
    objects: usize,
    /// `objpool_fini()` ran (the release after unregistration).
    fini: bool,
    /// The pool's last object is gone after its `objpool_fini()`: the holder is freed.
    freed: bool,
}

impl Holder {
    /// `kretprobe_fini_pool()` once the released pool has every object back or dropped.
    fn check_freed(&mut self) {
        if self.fini && self.free.len() + self.dropped.len() == self.objects {
            self.freed = true;
        }
    }
}

/// One return-handler call: (kretprobe, instance, `ri->ret_addr`, `current_kprobe`, regs ip).
type Call = (usize, usize, usize, Option<usize>, usize);

#[derive(Default)]
struct State {
    insts: Vec<Inst>,
    holders: Vec<Holder>,
    /// Per kretprobe: its holder and whether it has a return handler.
    rps: Vec<(usize, bool)>,
    /// Per kretprobe: its extra holders (a growing pool), in the order they are tried.
    extra: Vec<Vec<usize>>,
    /// Per kretprobe: instances a growing pool counted back (`grow_note_put`).
    backs: Vec<u32>,
    /// Per task: `kretprobe_instances.first`.
    tasks: Vec<Option<usize>>,
    current: usize,
    current_kprobe: Option<usize>,
    busy_depth: i32,
    initialized: bool,
    /// The arch's registers at a hit or return: link register, frame pointer, pc.
    lr: usize,
    fp: usize,
    ip: usize,
    fixups: Vec<usize>,
    warnings: u32,
    calls: Vec<Call>,
}

struct Sim(RefCell<State>);

impl State {
    /// A holder of `rp` with a pool of `n` objects, each pointing back to it.
    fn new_holder(&mut self, rp: usize, n: usize) -> usize {
        let h = self.holders.len();
        let mut holder = Holder {
            rp: Some(rp),
            objects: n,
            ..Holder::default()
        };
        for _ in 0..n {
            holder.free.push(self.insts.len());
            self.insts.push(Inst {
                holder: h,
                ..Inst::default()
            });
        }
        self.holders.push(holder);
        h
    }
}

impl TaskInstances for Sim {
    type Kretprobe = usize;
    type Instance = usize;
    type Task = usize;
    type Probe = usize;
    type Regs = ();

    fn kprobes_initialized(&self) -> bool {
        self.0.borrow().initialized
    }
    fn current_task(&self) -> usize {
        self.0.borrow().current
    }
    fn first_instance(&self, t: usize) -> Option<usize> {
        self.0.borrow().tasks[t]
    }
    fn set_first_instance(&self, t: usize, ri: Option<usize>) {
        self.0.borrow_mut().tasks[t] = ri;
    }
    fn next_instance(&self, ri: usize) -> Option<usize> {
        self.0.borrow().insts[ri].next
    }
    fn set_next_instance(&self, ri: usize, next: Option<usize>) {
        self.0.borrow_mut().insts[ri].next = next;
    }
    fn ret_addr(&self, ri: usize) -> usize {
        self.0.borrow().insts[ri].ret_addr
    }
    fn set_ret_addr(&self, ri: usize, addr: usize) {
        self.0.borrow_mut().insts[ri].ret_addr = addr;
    }
    fn frame_pointer(&self, ri: usize) -> usize {
        self.0.borrow().insts[ri].fp
    }
    fn kretprobe_trampoline_addr(&self) -> usize {
        TRAMPOLINE
    }
    fn get_kretprobe(&self, ri: usize) -> Option<usize> {
        let st = self.0.borrow();
        st.holders[st.insts[ri].holder].rp
    }
    fn kretprobe_probe(&self, rp: usize) -> usize {
        rp
    }
    fn has_return_handler(&self, rp: usize) -> bool {
        self.0.borrow().rps[rp].1
    }
    fn call_return_handler(&self, rp: usize, ri: usize, _regs: ()) {
        let mut st = self.0.borrow_mut();
        assert_eq!(
            st.busy_depth, 1,
            "handlers run inside kprobe_busy_begin/end"
        );
        let call = (rp, ri, st.insts[ri].ret_addr, st.current_kprobe, st.ip);
        st.calls.push(call);
    }
    fn kprobe_running(&self) -> Option<usize> {
        self.0.borrow().current_kprobe
    }
    fn set_current_kprobe(&self, p: Option<usize>) {
        self.0.borrow_mut().current_kprobe = p;
    }
    fn kprobe_busy_begin(&self) {
        let mut st = self.0.borrow_mut();
        st.busy_depth += 1;
        st.current_kprobe = Some(BUSY);
    }
    fn kprobe_busy_end(&self) {
        let mut st = self.0.borrow_mut();
        st.busy_depth -= 1;
        st.current_kprobe = None;
    }
    fn arch_prepare_kretprobe(&self, ri: usize, _regs: ()) {
        let mut st = self.0.borrow_mut();
        let (lr, fp) = (st.lr, st.fp);
        st.insts[ri].ret_addr = lr;
        st.insts[ri].fp = fp;
        st.lr = TRAMPOLINE;
    }
    fn instruction_pointer_set(&self, _regs: (), addr: usize) {
        self.0.borrow_mut().ip = addr;
    }
    fn arch_kretprobe_fixup_return(&self, _regs: (), addr: usize) {
        self.0.borrow_mut().fixups.push(addr);
    }
    fn pool_push(&self, rp: usize, ri: usize) {
        let mut st = self.0.borrow_mut();
        let h = st.insts[ri].holder;
        assert!(
            h == st.rps[rp].0 || st.extra[rp].contains(&h),
            "an instance goes back to a pool of its kretprobe"
        );
        assert_eq!(st.holders[h].rp, Some(rp), "pushed to a detached holder");
        assert!(!st.holders[h].fini, "pushed to a released pool");
        assert!(!st.holders[h].free.contains(&ri), "pushed twice");
        st.holders[h].free.push(ri);
    }
    fn note_instance_back(&self, rp: usize) {
        let mut st = self.0.borrow_mut();
        assert!(
            st.holders[st.rps[rp].0].rp.is_some(),
            "counted back after the kretprobe was detached"
        );
        st.backs[rp] += 1;
    }
    fn drop_instance_rcu(&self, ri: usize) {
        let mut st = self.0.borrow_mut();
        let h = st.insts[ri].holder;
        assert!(!st.holders[h].freed, "dropped into a freed holder");
        assert!(!st.holders[h].dropped.contains(&ri), "dropped twice");
        st.holders[h].dropped.push(ri);
        st.holders[h].check_freed();
    }
    fn warn_frame_mismatch(&self) {
        self.0.borrow_mut().warnings += 1;
    }
}

/// `current_kprobe` while kprobe_busy_begin() is in effect.
const BUSY: usize = 999;

impl Sim {
    /// `tasks` tasks, and one kretprobe with a pool of `n` per entry of `kretprobes` (its
    /// return handler present or not).
    fn new(tasks: usize, kretprobes: &[(usize, bool)]) -> Self {
        let mut st = State {
            tasks: vec![None; tasks],
            initialized: true,
            ..State::default()
        };
        for (rp, &(n, handler)) in kretprobes.iter().enumerate() {
            let h = st.new_holder(rp, n);
            st.rps.push((h, handler));
            st.extra.push(vec![]);
            st.backs.push(0);
        }
        Sim(RefCell::new(st))
    }

    /// The grow worker publishes one more holder of `n` instances for `rp`.
    fn grow(&self, rp: usize, n: usize) -> usize {
        let mut st = self.0.borrow_mut();
        let h = st.new_holder(rp, n);
        st.extra[rp].push(h);
        h
    }

    /// `unregister_kretprobe()`: `rph->rp = NULL` on every holder (the detach), a grace period,
    /// then `objpool_fini()` of every holder (the release).
    fn unregister(&self, rp: usize) {
        let mut st = self.0.borrow_mut();
        let mut hs = vec![st.rps[rp].0];
        hs.extend(st.extra[rp].iter().copied());
        for &h in &hs {
            st.holders[h].rp = None;
        }
        for &h in &hs {
            st.holders[h].fini = true;
            st.holders[h].check_freed();
        }
    }

    /// Every holder of `rp`, first one first.
    fn holders_of(&self, rp: usize) -> Vec<usize> {
        let st = self.0.borrow();
        let mut hs = vec![st.rps[rp].0];
        hs.extend(st.extra[rp].iter().copied());
        hs
    }

    /// A hit of kretprobe `rp` at entry to a function called from `ret` with frame `fp` on the
    /// current task: pop an instance and hook it (what pre_handler_kretprobe does).
    fn enter(&self, rp: usize, ret: usize, fp: usize) -> Option<usize> {
        let hs = self.holders_of(rp);
        let ri = {
            let mut st = self.0.borrow_mut();
            st.lr = ret;
            st.fp = fp;
            // `instance_try_get()`: the first pool, then the extra ones in order.
            hs.iter().find_map(|&h| st.holders[h].free.pop())?
        };
        hook_instance(self, ri, ());
        Some(ri)
    }

    /// The function with frame `fp` returns to the trampoline (the arch wraps the handler in
    /// kprobe_busy_begin/end).
    fn ret(&self, fp: usize) -> Option<usize> {
        self.kprobe_busy_begin();
        let r = kretprobe_trampoline_handler(self, (), fp);
        self.kprobe_busy_end();
        r
    }

    fn list(&self, t: usize) -> Vec<usize> {
        let st = self.0.borrow();
        let mut v = vec![];
        let mut n = st.tasks[t];
        while let Some(ri) = n {
            v.push(ri);
            n = st.insts[ri].next;
        }
        v
    }

    fn calls(&self) -> Vec<Call> {
        std::mem::take(&mut self.0.borrow_mut().calls)
    }

    fn free(&self, rp: usize) -> usize {
        let st = self.0.borrow();
        st.holders[st.rps[rp].0].free.len()
    }
}

#[test]
fn nested_frames_return_innermost_first() {
    let s = Sim::new(1, &[(4, true)]);
    let outer = s.enter(0, 0x1000, 0x8000).unwrap();
    let inner = s.enter(0, 0x2000, 0x7f00).unwrap();
    assert_eq!(s.list(0), vec![inner, outer]);
    assert_eq!(s.free(0), 2);

    assert_eq!(s.ret(0x7f00), Some(0x2000));
    // The handler saw the real return address in ri->ret_addr and in regs, and its own probe
    // as current_kprobe.
    assert_eq!(s.calls(), vec![(0, inner, 0x2000, Some(0), 0x2000)]);
    assert_eq!(s.list(0), vec![outer]);
    assert_eq!(s.free(0), 3);
    assert_eq!(s.0.borrow().fixups, vec![0x2000]);

    assert_eq!(s.ret(0x8000), Some(0x1000));
    assert_eq!(s.calls(), vec![(0, outer, 0x1000, Some(0), 0x1000)]);
    assert_eq!(s.list(0), vec![]);
    assert_eq!(s.free(0), 4);
    let st = s.0.borrow();
    assert_eq!(st.busy_depth, 0);
    assert_eq!(st.current_kprobe, None);
    assert_eq!(st.warnings, 0);
}

#[test]
fn two_kretprobes_on_one_function_share_the_frame() {
    let s = Sim::new(1, &[(2, true), (2, true)]);
    let outer = s.enter(0, 0x1000, 0x8000).unwrap();
    let a = s.enter(0, 0x3000, 0x7000).unwrap();
    // The second probe on the same entry sees the link register already diverted.
    let b = s.enter(1, TRAMPOLINE, 0x7000).unwrap();
    assert_eq!(s.list(0), vec![b, a, outer]);

    assert_eq!(s.ret(0x7000), Some(0x3000));
    // Newest first, both told the real return address; current_kprobe restored after each.
    assert_eq!(
        s.calls(),
        vec![
            (1, b, 0x3000, Some(1), 0x3000),
            (0, a, 0x3000, Some(0), 0x3000)
        ]
    );
    assert_eq!(s.list(0), vec![outer]);
    assert_eq!((s.free(0), s.free(1)), (1, 2));
}

#[test]
fn handler_less_and_unregistered_kretprobes() {
    let s = Sim::new(1, &[(1, false), (1, true)]);
    let a = s.enter(0, 0x1000, 0x8000).unwrap();
    let b = s.enter(1, 0x2000, 0x7000).unwrap();
    // unregister_kretprobe() of probe 1: rcu_assign_pointer(rph->rp, NULL).
    s.0.borrow_mut().holders[1].rp = None;

    assert_eq!(s.ret(0x7000), Some(0x2000));
    assert_eq!(s.calls(), vec![]);
    // The orphan goes through call_rcu(), not back to the pool.
    assert_eq!(s.0.borrow().holders[1].dropped, vec![b]);
    assert_eq!(s.free(1), 0);

    // No return handler: nothing called, the instance is recycled.
    assert_eq!(s.ret(0x8000), Some(0x1000));
    assert_eq!(s.calls(), vec![]);
    assert_eq!(s.free(0), 1);
    assert_eq!(s.list(0), vec![]);
    let _ = a;
}

#[test]
fn no_instance_means_no_return_address_and_no_change() {
    let s = Sim::new(1, &[(1, true)]);
    assert_eq!(s.ret(0x8000), None);
    // Only trampoline addresses on the list: still none.
    let ri = s.enter(0, TRAMPOLINE, 0x8000).unwrap();
    assert_eq!(s.ret(0x8000), None);
    assert_eq!(s.list(0), vec![ri]);
    assert_eq!(s.calls(), vec![]);
    assert!(s.0.borrow().fixups.is_empty());
}

#[test]
fn frame_mismatch_warns_and_still_unlinks_the_frame() {
    let s = Sim::new(1, &[(3, true)]);
    let outer = s.enter(0, 0x1000, 0x8000).unwrap();
    let inner = s.enter(0, 0x2000, 0x7000).unwrap();
    // The trampoline is told another frame (a broken arch): C WARNs and runs no handler.
    assert_eq!(s.ret(0x6000), Some(0x2000));
    assert_eq!(s.0.borrow().warnings, 1);
    assert_eq!(s.calls(), vec![]);
    assert_eq!(s.list(0), vec![outer]);
    let _ = inner;
}

#[test]
fn find_ret_addr_skips_trampoline_entries_and_walks_frames() {
    let s = Sim::new(2, &[(5, true)]);
    let f1 = s.enter(0, 0x1000, 0x8000).unwrap();
    let f2 = s.enter(0, 0x2000, 0x7000).unwrap();
    let t = s.enter(0, TRAMPOLINE, 0x7000).unwrap();
    let f3 = s.enter(0, 0x3000, 0x6000).unwrap();
    assert_eq!(s.list(0), vec![f3, t, f2, f1]);

    let mut cur = None;
    assert_eq!(find_ret_addr(&s, 0, &mut cur), 0x3000);
    assert_eq!(cur, Some(f3));
    assert_eq!(find_ret_addr(&s, 0, &mut cur), 0x2000);
    assert_eq!(cur, Some(f2));
    assert_eq!(find_ret_addr(&s, 0, &mut cur), 0x1000);
    assert_eq!(find_ret_addr(&s, 0, &mut cur), 0);
    assert_eq!(cur, Some(f1), "the cursor stays on the last match");

    // The unwinder's view: one frame at a time, by frame pointer.
    let mut cur = None;
    assert_eq!(kretprobe_find_ret_addr(&s, 0, 0x7000, &mut cur), 0x2000);
    assert_eq!(kretprobe_find_ret_addr(&s, 0, 0x8000, &mut cur), 0x1000);
    assert_eq!(kretprobe_find_ret_addr(&s, 0, 0x8000, &mut cur), 0);
    let mut cur = None;
    assert_eq!(kretprobe_find_ret_addr(&s, 0, 0x1234, &mut cur), 0);
    // Another task's list is its own.
    assert_eq!(kretprobe_find_ret_addr(&s, 1, 0x7000, &mut None), 0);
}

#[test]
fn flush_task_recycles_everything() {
    let s = Sim::new(2, &[(3, true), (1, true)]);
    s.enter(0, 0x1000, 0x8000).unwrap();
    s.enter(0, 0x2000, 0x7000).unwrap();
    let orphan = s.enter(1, 0x3000, 0x6000).unwrap();
    s.0.borrow_mut().holders[1].rp = None;
    s.0.borrow_mut().current = 1;

    kprobe_flush_task(&s, 0);
    assert_eq!(s.list(0), vec![]);
    assert_eq!(s.free(0), 3);
    assert_eq!(s.0.borrow().holders[1].dropped, vec![orphan]);
    assert_eq!(s.calls(), vec![], "a dead task's functions never return");
    let st = s.0.borrow();
    assert_eq!((st.busy_depth, st.current_kprobe), (0, None));
}

#[test]
fn flush_task_before_init_does_nothing() {
    let s = Sim::new(1, &[(1, true)]);
    let ri = s.enter(0, 0x1000, 0x8000).unwrap();
    s.0.borrow_mut().initialized = false;
    kprobe_flush_task(&s, 0);
    assert_eq!(s.list(0), vec![ri]);
    assert_eq!(s.free(0), 0);
}

#[test]
fn handlers_restore_the_previous_current_kprobe() {
    let s = Sim::new(1, &[(1, true)]);
    s.enter(0, 0x1000, 0x8000).unwrap();
    s.kprobe_busy_begin();
    assert_eq!(kretprobe_trampoline_handler(&s, (), 0x8000), Some(0x1000));
    assert_eq!(s.0.borrow().current_kprobe, Some(BUSY));
    s.kprobe_busy_end();
}

#[test]
fn growing_pool_instances_go_back_to_their_own_holder() {
    let s = Sim::new(1, &[(1, true)]);
    let first = s.holders_of(0)[0];
    let extra = s.grow(0, 2);
    let a = s.enter(0, 0x1000, 0x8000).unwrap();
    let b = s.enter(0, 0x2000, 0x7000).unwrap();
    let c = s.enter(0, 0x3000, 0x6000).unwrap();
    assert_eq!(s.enter(0, 0x4000, 0x5000), None, "every pool empty");
    {
        let st = s.0.borrow();
        assert_eq!(st.insts[a].holder, first);
        assert_eq!((st.insts[b].holder, st.insts[c].holder), (extra, extra));
    }
    assert_eq!(s.ret(0x6000), Some(0x3000));
    assert_eq!(s.ret(0x7000), Some(0x2000));
    assert_eq!(s.ret(0x8000), Some(0x1000));
    let st = s.0.borrow();
    assert_eq!(st.holders[first].free, vec![a]);
    assert_eq!(st.holders[extra].free.len(), 2);
    assert_eq!(st.backs[0], 3, "every return counted back");
    assert_eq!(st.calls.len(), 3);
}

#[test]
fn growing_pool_unregistered_with_instances_in_flight() {
    let s = Sim::new(1, &[(1, true)]);
    let extra = s.grow(0, 1);
    let extra2 = s.grow(0, 2);
    let first = s.holders_of(0)[0];
    let a = s.enter(0, 0x1000, 0x8000).unwrap();
    let b = s.enter(0, 0x2000, 0x7000).unwrap();
    let c = s.enter(0, 0x3000, 0x6000).unwrap();
    s.unregister(0);
    {
        let st = s.0.borrow();
        // Released with objects out: no holder goes before its last object.
        assert!(!st.holders[first].freed && !st.holders[extra].freed);
        assert!(!st.holders[extra2].freed);
    }
    assert_eq!(s.ret(0x6000), Some(0x3000));
    assert_eq!(s.ret(0x7000), Some(0x2000));
    assert_eq!(s.calls(), vec![], "no handler once the kretprobe is gone");
    {
        let st = s.0.borrow();
        assert_eq!(
            st.holders[extra2].dropped,
            vec![c],
            "dropped from its own pool"
        );
        assert_eq!(st.holders[extra].dropped, vec![b]);
        assert!(st.holders[extra].freed && st.holders[extra2].freed);
        assert!(!st.holders[first].freed);
        assert_eq!(st.backs[0], 0, "nothing counted back after the detach");
    }
    // The last object of the first pool goes when its task dies.
    kprobe_flush_task(&s, 0);
    let st = s.0.borrow();
    assert_eq!(st.holders[first].dropped, vec![a]);
    assert!(st.holders[first].freed);
}

#[test]
fn growing_pool_flush_task_counts_back() {
    let s = Sim::new(2, &[(1, true)]);
    let extra = s.grow(0, 1);
    s.enter(0, 0x1000, 0x8000).unwrap();
    let b = s.enter(0, 0x2000, 0x7000).unwrap();
    s.0.borrow_mut().current = 1;
    kprobe_flush_task(&s, 0);
    let st = s.0.borrow();
    assert_eq!(st.holders[extra].free, vec![b]);
    assert_eq!(st.backs[0], 2);
}

// SPDX-License-Identifier: GPL-2.0

//! Simulated architecture, text memory, symbol table and probe storage for the host tests.
//!
//! One [`Sim`] implements every platform trait of the core. Probe memory is an arena; the C list
//! primitives are modelled with their exact link semantics (poisoning included), so walking a
//! poisoned or freed link, double-freeing a slot, or calling an arch hook without the locks C
//! guarantees panics the test. Text is a byte array: arming writes `INT3`, optimizing writes a
//! `JMP` plus four covered bytes, and disarming writes back the opcode the probe saved.

// Each test binary uses a different subset of the simulation; which items are unused varies, so
// `expect` cannot be used here.
#![allow(dead_code)]

use std::cell::{Cell, RefCell, RefMut};
use std::collections::BTreeSet;
use std::ops::ControlFlow;

use rkprobes_core::arch::{Arch, ArchHooks};
use rkprobes_core::blacklist::BlacklistStore;
use rkprobes_core::errno::{Errno, Result};
use rkprobes_core::kretprobe_grow::{kick_from, should_grow, GrowCounts, GROW_MAX_POOLS, NO_KICK};
use rkprobes_core::report::{Message, Report, WarnSite};
use rkprobes_core::store::{
    flags_disabled, Aggr, KprobeState, OptQueue, ProbeStore, KPROBE_TABLE_SIZE,
};
use rkprobes_core::table;
use rkprobes_core::text::{FtraceOps, KernelText, Ksym};

/// Breakpoint byte written by `arm_kprobe`.
pub const INT3: u8 = 0xcc;
/// First byte of an installed optimization jump.
pub const JMP: u8 = 0xe9;
/// Bytes covered by the jump (after its first byte).
pub const JMP_COVER: u8 = 0xaa;
/// Length of the optimization jump.
pub const JMP_LEN: usize = 5;

/// Base of simulated core text.
pub const TEXT_BASE: usize = 0x1000;
/// Size of simulated core text.
pub const TEXT_SIZE: usize = 0x2000;
/// Start of `.kprobes.text`.
pub const KPROBES_TEXT: (usize, usize) = (0x2c00, 0x2d00);
/// Start of `.noinstr.text`.
pub const NOINSTR_TEXT: (usize, usize) = (0x2d00, 0x2e00);
/// Start and end of init memory.
pub const INIT_MEM: (usize, usize) = (0x2e00, 0x2f00);
/// Module text: core then init.
pub const MOD_CORE: (usize, usize) = (0x2f00, 0x2f80);
/// Module init text.
pub const MOD_INIT: (usize, usize) = (0x2f80, 0x3000);

/// Handle of a probe in the arena.
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord, Hash)]
pub struct Pid(pub usize);

/// A `struct list_head` link value.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Link {
    Uninit,
    Node(Pid),
    Poison1,
    Poison2,
}

/// State of a `struct hlist_node`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HState {
    /// `pprev == NULL`.
    Unhashed,
    /// In a bucket.
    Hashed,
    /// Unlinked with `hlist_del_rcu`/`hlist_replace_rcu`: `pprev` poisoned.
    Poisoned,
}

/// What a user handler does.
#[derive(Clone, Debug, Default)]
pub struct HandlerSpec {
    /// Return value of the pre_handler.
    pub ret: i32,
    /// Address the handler "calls" (a nested hit).
    pub reenter: Option<usize>,
}

/// A handler invocation, for the tests' models.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Call {
    /// pre_handler of the probe.
    Pre(Pid),
    /// post_handler of the probe.
    Post(Pid),
}

#[derive(Clone, Debug)]
struct Rec {
    alive: bool,
    aggr: bool,
    addr: usize,
    symbol_name: Option<&'static [u8]>,
    core_alloc: bool,
    offset: u32,
    flags: u32,
    nmissed: u64,
    pre: Option<HandlerSpec>,
    post: Option<HandlerSpec>,
    aggr_post: bool,
    opcode: u8,
    slot: Option<usize>,
    hlist: HState,
    next: Link,
    prev: Link,
    op_queue: Option<OptQueue>,
    optinsn: bool,
    jump_saved: Option<[u8; JMP_LEN - 1]>,
    kret: Option<KretRec>,
}

/// The `struct kretprobe` part of a simulated probe (the kprobe is its first member).
#[derive(Clone, Debug, Default)]
pub struct KretRec {
    /// `rp->data_size`.
    pub data_size: usize,
    /// `rp->maxactive`.
    pub maxactive: i32,
    /// `rp->nmissed`.
    pub nmissed: i64,
    /// Return value of the entry handler, `None` for no entry handler.
    pub entry: Option<i32>,
    /// `pre_handler_kretprobe` installed.
    pub handlers: bool,
    /// The pre-handler installed is `pre_handler_kretprobe_grow` (a pool that may grow).
    pub grow_handlers: bool,
    /// The pool's instances note their return (the rethook handler of a pool that may grow).
    pub returns_noted: bool,
    /// Instances left in the pool; `None` when no pool exists.
    pub pool_free: Option<usize>,
    /// Pool detached at unregistration (in-flight instances are dropped when they return).
    pub detached: bool,
    /// Return hooks installed.
    pub hooked: u32,
    /// Make the pool allocation fail.
    pub alloc_fails: bool,
    /// `rp->grow_max` (Rust only): the most instances a growing pool may reach.
    pub grow_max: i32,
    /// A growing pool's state; `None` for a fixed pool.
    pub grow: Option<SimGrow>,
}

/// The state the kernel keeps for a growing pool, modelled with C's invariants asserted.
#[derive(Clone, Debug, Default)]
pub struct SimGrow {
    /// The cap.
    pub cap: u32,
    /// Instances in all pools.
    pub total: u32,
    /// Extra pools.
    pub pools: usize,
    /// Instances taken and not given back, as the hit and return paths note them.
    pub in_flight: u32,
    /// Misses the worker has not seen yet.
    pub wanted: u32,
    /// A kick is pending (the worker has not run since).
    pub kicked: bool,
    /// Kicks asked for so far.
    pub kicks: u32,
    /// The `kick_from` level stored when the pools last changed.
    pub kick_from: u32,
    /// Extra pools freed (at unregistration).
    pub pools_freed: usize,
}

impl Rec {
    fn new(alive: bool) -> Self {
        Rec {
            alive,
            aggr: false,
            addr: 0,
            symbol_name: None,
            core_alloc: false,
            offset: 0,
            flags: 0,
            nmissed: 0,
            pre: None,
            post: None,
            aggr_post: false,
            opcode: 0,
            slot: None,
            hlist: HState::Unhashed,
            next: Link::Uninit,
            prev: Link::Uninit,
            op_queue: None,
            optinsn: false,
            jump_saved: None,
            kret: None,
        }
    }
}

struct Sym {
    name: &'static str,
    addr: usize,
    size: usize,
    module: bool,
}

struct Inner {
    /// During `with_symbol_batch()`: the modules the batch indexed, as the kernel's
    /// `glue/symbatch.rs` picks them; lookups in other modules are counted in `batch_misses`.
    batch_modules: Option<Vec<u32>>,
    batch_misses: usize,
    recs: Vec<Rec>,
    buckets: Vec<Vec<Pid>>,
    queues: [Vec<Pid>; 3],
    text: Vec<u8>,
    original: Vec<u8>,
    boundaries: BTreeSet<usize>,
    syms: Vec<Sym>,
    blacklist: Vec<(usize, usize)>,
    slots_used: BTreeSet<usize>,
    slot_capacity: usize,
    next_slot: usize,
    log: Vec<Call>,
    current: Option<Pid>,
    module_refs: i64,
    module_coming: bool,
    module_get_fails: bool,
    ftrace_filters: Vec<(FtraceOps, usize)>,
    ftrace_registered: [bool; 2],
    /// Filter updates made (`ftrace_set_filter_ip(s)` calls), each a walk of every call site.
    ftrace_updates: u64,
    /// The next filter addition (single or batched) fails with this.
    ftrace_fail_add: Option<Errno>,
    /// The next batched filter removal fails with this (no memory).
    ftrace_fail_batch_remove: Option<Errno>,
    /// An address another IPMODIFY user owns: adding it to the IPMODIFY ops' filter fails
    /// with -EBUSY, every time (a livepatched function).
    ftrace_busy: Option<usize>,
    /// Whether `alloc_buf` gives batch storage.
    batching: bool,
    /// Probes disarmed through `disarm_kprobes` (the batch hook).
    batch_disarmed: u64,
    optimizable: BTreeSet<usize>,
    rcu_syncs: u64,
    kicks: u64,
    warns: Vec<WarnSite>,
    messages: Vec<Message>,
    init_steps: Vec<&'static str>,
}

/// The simulated platform; `OPT` selects CONFIG_OPTPROBES, `FTRACE` CONFIG_KPROBES_ON_FTRACE.
pub struct Sim<const OPT: bool, const FTRACE: bool> {
    inner: RefCell<Inner>,
    state: RefCell<KprobeState>,
    text_depth: Cell<u32>,
    jump_label_depth: Cell<u32>,
    cpus_depth: Cell<u32>,
}

fn qidx(q: OptQueue) -> usize {
    match q {
        OptQueue::Optimizing => 0,
        OptQueue::Unoptimizing => 1,
        OptQueue::Freeing => 2,
    }
}

/// Names of the simulated symbols; functions are 0x40 bytes from `TEXT_BASE`.
pub const FUNCS: [&str; 8] = [
    "func_a", "func_b", "func_c", "func_d", "func_e", "func_f", "func_g", "func_h",
];

/// An ftrace site (sym+0 of this function).
pub const FTRACED: &str = "ftraced_fn";

/// More ftrace sites (sym+0), for batches: 0x40 bytes each from 0x1600.
pub const FTRACED_MORE: [&str; 4] = ["ftraced_2", "ftraced_3", "ftraced_4", "ftraced_5"];

impl<const OPT: bool, const FTRACE: bool> Sim<OPT, FTRACE> {
    /// `p->pre_handler != NULL`, as the arch's int3 handler tests it.
    fn has_pre_handler(&self, p: Pid) -> bool {
        self.rec(p, |r| {
            r.aggr || r.pre.is_some() || r.kret.as_ref().is_some_and(|k| k.handlers)
        })
    }

    /// A fresh platform: text, symbols, and the state after `init_kprobes`.
    pub fn new() -> Self {
        let mut text = vec![0u8; TEXT_SIZE];
        let mut boundaries = BTreeSet::new();
        // Instructions of lengths 1, 2, 3, 5 repeating; opcodes never 0xcc/0xe9/0xaa.
        let lens = [1usize, 2, 3, 5];
        let mut at = 0;
        let mut i = 0;
        while at < TEXT_SIZE {
            boundaries.insert(TEXT_BASE + at);
            // Each function starts on a boundary.
            let len = if (at % 0x40) + lens[i % 4] > 0x40 {
                0x40 - at % 0x40
            } else {
                lens[i % 4]
            };
            for k in 0..len {
                text[at + k] = 0x10 + ((at + k) % 0x70) as u8;
            }
            at += len;
            i += 1;
        }
        let mut syms = Vec::new();
        for (n, name) in FUNCS.iter().enumerate() {
            syms.push(Sym {
                name,
                addr: TEXT_BASE + n * 0x40,
                size: 0x40,
                module: false,
            });
        }
        syms.push(Sym {
            name: FTRACED,
            addr: 0x1400,
            size: 0x40,
            module: false,
        });
        for (n, name) in FTRACED_MORE.iter().enumerate() {
            syms.push(Sym {
                name,
                addr: 0x1600 + n * 0x40,
                size: 0x40,
                module: false,
            });
        }
        syms.push(Sym {
            name: "blacklisted_fn",
            addr: 0x1440,
            size: 0x40,
            module: false,
        });
        syms.push(Sym {
            name: "blacklisted_fn.isra.0",
            addr: 0x1480,
            size: 0x40,
            module: false,
        });
        syms.push(Sym {
            name: "__cfi_func_x",
            addr: 0x14c0,
            size: 0x10,
            module: false,
        });
        syms.push(Sym {
            name: "func_x",
            addr: 0x14d0,
            size: 0x30,
            module: false,
        });
        syms.push(Sym {
            name: "jump_label_fn",
            addr: 0x1500,
            size: 0x40,
            module: false,
        });
        syms.push(Sym {
            name: "static_call_fn",
            addr: 0x1540,
            size: 0x40,
            module: false,
        });
        syms.push(Sym {
            name: "bug_fn",
            addr: 0x1580,
            size: 0x40,
            module: false,
        });
        syms.push(Sym {
            name: "gate_fn",
            addr: 0x15c0,
            size: 0x40,
            module: false,
        });
        syms.push(Sym {
            name: "kprobe_handler_fn",
            addr: KPROBES_TEXT.0,
            size: 0x80,
            module: false,
        });
        syms.push(Sym {
            name: "kprobe_handler2",
            addr: KPROBES_TEXT.0 + 0x80,
            size: 0x80,
            module: false,
        });
        syms.push(Sym {
            name: "noinstr_fn",
            addr: NOINSTR_TEXT.0,
            size: 0x100,
            module: false,
        });
        syms.push(Sym {
            name: "init_fn",
            addr: INIT_MEM.0,
            size: 0x100,
            module: false,
        });
        syms.push(Sym {
            name: "mod_fn",
            addr: MOD_CORE.0,
            size: 0x80,
            module: true,
        });
        syms.push(Sym {
            name: "mod_init_fn",
            addr: MOD_INIT.0,
            size: 0x80,
            module: true,
        });
        let mut optimizable = BTreeSet::new();
        for n in 0..FUNCS.len() {
            // Two optimizable addresses per function: +0 and +11 (both instruction starts).
            optimizable.insert(TEXT_BASE + n * 0x40);
            optimizable.insert(TEXT_BASE + n * 0x40 + 11);
        }
        optimizable.insert(MOD_CORE.0);
        let original = text.clone();
        let sim = Sim {
            inner: RefCell::new(Inner {
                batch_modules: None,
                batch_misses: 0,
                recs: Vec::new(),
                buckets: vec![Vec::new(); KPROBE_TABLE_SIZE],
                queues: [Vec::new(), Vec::new(), Vec::new()],
                text,
                original,
                boundaries,
                syms,
                blacklist: Vec::new(),
                slots_used: BTreeSet::new(),
                slot_capacity: usize::MAX,
                next_slot: 0,
                log: Vec::new(),
                current: None,
                module_refs: 0,
                module_coming: false,
                module_get_fails: false,
                ftrace_filters: Vec::new(),
                ftrace_registered: [false; 2],
                ftrace_updates: 0,
                ftrace_fail_add: None,
                ftrace_fail_batch_remove: None,
                ftrace_busy: None,
                batching: true,
                batch_disarmed: 0,
                optimizable,
                rcu_syncs: 0,
                kicks: 0,
                warns: Vec::new(),
                messages: Vec::new(),
                init_steps: Vec::new(),
            }),
            state: RefCell::new(KprobeState::new()),
            text_depth: Cell::new(0),
            jump_label_depth: Cell::new(0),
            cpus_depth: Cell::new(0),
        };
        rkprobes_core::register::init_kprobes(&sim, []).expect("arch init");
        if OPT {
            rkprobes_core::optimizer::optimize_all_kprobes(&sim);
        }
        sim
    }

    /// The WARNs reported since the last call, in order.
    pub fn take_warns(&self) -> Vec<WarnSite> {
        std::mem::take(&mut self.inner().warns)
    }

    /// The `kprobes: ` messages reported since the last call (boot messages included), in order.
    pub fn take_messages(&self) -> Vec<Message> {
        std::mem::take(&mut self.inner().messages)
    }

    /// The init steps the core ran, in order (`init_kprobes()`).
    pub fn init_steps(&self) -> Vec<&'static str> {
        self.inner().init_steps.clone()
    }

    /// Lets the arch prepare a detour at `addr` (an instruction start).
    pub fn set_optimizable(&self, addr: usize) {
        self.inner().optimizable.insert(addr);
    }

    /// Lookups in a module the running symbol batch had not indexed (`with_symbol_batch`).
    pub fn batch_misses(&self) -> usize {
        self.inner().batch_misses
    }

    fn inner(&self) -> RefMut<'_, Inner> {
        self.inner.borrow_mut()
    }

    fn rec<R>(&self, p: Pid, f: impl FnOnce(&mut Rec) -> R) -> R {
        let mut i = self.inner();
        let r = &mut i.recs[p.0];
        assert!(r.alive, "access to freed probe {p:?}");
        f(r)
    }

    fn mutex_held(&self) -> bool {
        self.state.try_borrow_mut().is_err()
    }

    fn assert_text_locked(&self, what: &str) {
        assert!(
            self.text_depth.get() > 0,
            "{what} called without text_mutex"
        );
    }

    /// ftrace's own updates take `text_mutex` (x86's `ftrace_arch_code_modify_prepare()`):
    /// reaching them with it held would deadlock.
    fn assert_text_unlocked_for_ftrace(&self) {
        assert!(
            self.text_depth.get() == 0,
            "ftrace called with text_mutex held (it takes text_mutex itself)"
        );
    }

    /// A new caller-owned `struct kprobe` (zeroed, as a static would be).
    pub fn new_probe(&self, addr: usize, sym: Option<&'static str>, offset: u32) -> Pid {
        let mut i = self.inner();
        let mut r = Rec::new(true);
        r.addr = addr;
        r.symbol_name = sym.map(str::as_bytes);
        r.offset = offset;
        i.recs.push(r);
        Pid(i.recs.len() - 1)
    }

    /// Sets the handlers of a caller's probe.
    pub fn set_handlers(&self, p: Pid, pre: Option<HandlerSpec>, post: Option<HandlerSpec>) {
        self.rec(p, |r| {
            r.pre = pre;
            r.post = post;
        });
    }

    /// Sets caller-visible flags (before registering).
    pub fn set_user_flags(&self, p: Pid, flags: u32) {
        self.rec(p, |r| r.flags = flags);
    }

    /// `p->symbol_name = NULL; p->addr = addr`, as a caller re-arming its struct does.
    pub fn reset_probe(&self, p: Pid, addr: usize, sym: Option<&'static str>, offset: u32) {
        self.rec(p, |r| {
            r.addr = addr;
            r.symbol_name = sym.map(str::as_bytes);
            r.offset = offset;
        });
    }

    /// Makes `p` a `struct kretprobe` with these fields.
    pub fn make_kretprobe(&self, p: Pid, k: KretRec) {
        self.rec(p, |r| r.kret = Some(k));
    }

    /// The `struct kretprobe` part of `p`.
    pub fn kret(&self, p: Pid) -> KretRec {
        self.rec(p, |r| r.kret.clone().expect("kretprobe"))
    }

    /// Returns from the probed function: the return hook fires and the instance goes back.
    pub fn function_returns(&self, p: Pid) {
        let detached = self.rec(p, |r| {
            let k = r.kret.as_mut().expect("kretprobe");
            assert!(k.hooked > 0, "no return hook installed");
            k.hooked -= 1;
            if !k.detached {
                *k.pool_free.as_mut().expect("pool") += 1;
            }
            k.detached
        });
        // rethook runs the handler (and so this) only while the pool is not detached, and the
        // handler of a fixed pool's rethook does not note returns.
        if !detached && self.kret(p).returns_noted {
            rkprobes_core::kretprobe::instance_returned(self, p);
        }
    }

    /// Runs a growing pool's worker if a kick is pending, as the kernel's workqueue would.
    pub fn run_grow_worker(&self, p: Pid) {
        let kicked = self.rec(p, |r| {
            let g = r.kret.as_mut().and_then(|k| k.grow.as_mut());
            g.is_some_and(|g| core::mem::take(&mut g.kicked))
        });
        if kicked {
            rkprobes_core::kretprobe::grow_work(self, p);
        }
    }

    /// `p->nmissed`.
    pub fn nmissed(&self, p: Pid) -> u64 {
        self.rec(p, |r| r.nmissed)
    }

    /// `p->nmissed = n`, as a caller's struct may hold from an earlier registration.
    pub fn set_probe_nmissed(&self, p: Pid, n: u64) {
        self.rec(p, |r| r.nmissed = n);
    }

    /// `p->flags`.
    pub fn probe_flags(&self, p: Pid) -> u32 {
        self.rec(p, |r| r.flags)
    }

    /// `p->addr`.
    pub fn probe_addr(&self, p: Pid) -> usize {
        self.rec(p, |r| r.addr)
    }

    /// `hlist_unhashed(&p->hlist)` and `list_empty(&p->list)` as trace_kprobe sees them.
    pub fn looks_registered(&self, p: Pid) -> bool {
        let i = self.inner();
        let r = &i.recs[p.0];
        r.hlist != HState::Unhashed || !(r.next == Link::Node(p) || r.next == Link::Uninit)
    }

    /// Address of a simulated symbol.
    pub fn sym(&self, name: &str) -> usize {
        self.inner()
            .syms
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.addr)
            .expect("symbol")
    }

    /// Whether an instruction starts at `addr`.
    pub fn is_boundary(&self, addr: usize) -> bool {
        self.inner().boundaries.contains(&addr)
    }

    /// Current byte of text at `addr`.
    pub fn text_at(&self, addr: usize) -> u8 {
        self.inner().text[addr - TEXT_BASE]
    }

    /// Original byte of text at `addr`.
    pub fn original_at(&self, addr: usize) -> u8 {
        self.inner().original[addr - TEXT_BASE]
    }

    /// A copy of the original text image.
    pub fn original_image(&self) -> Vec<u8> {
        self.inner().original.clone()
    }

    /// Whole text equals the original.
    pub fn text_pristine(&self) -> bool {
        let i = self.inner();
        i.text == i.original
    }

    /// Addresses whose byte differs from the original.
    pub fn text_diff(&self) -> Vec<usize> {
        let i = self.inner();
        (0..TEXT_SIZE)
            .filter(|&k| i.text[k] != i.original[k])
            .map(|k| k + TEXT_BASE)
            .collect()
    }

    /// Takes the handler log.
    pub fn take_log(&self) -> Vec<Call> {
        std::mem::take(&mut self.inner().log)
    }

    /// Instruction slots in use.
    pub fn slots_in_use(&self) -> usize {
        self.inner().slots_used.len()
    }

    /// Limits the slot pool (for -ENOMEM).
    pub fn set_slot_capacity(&self, n: usize) {
        self.inner().slot_capacity = n;
    }

    /// Live aggregates (core-allocated probes not yet freed).
    pub fn live_aggregates(&self) -> usize {
        self.inner()
            .recs
            .iter()
            .filter(|r| r.alive && r.core_alloc)
            .count()
    }

    /// Makes `try_module_get` fail (module going away).
    pub fn set_module_get_fails(&self, v: bool) {
        self.inner().module_get_fails = v;
    }

    /// Marks the module as COMING (its init text may be probed).
    pub fn set_module_coming(&self, v: bool) {
        self.inner().module_coming = v;
    }

    /// Module references currently held.
    pub fn module_refs(&self) -> i64 {
        self.inner().module_refs
    }

    /// `kprobes_all_disarmed`.
    pub fn all_disarmed(&self) -> bool {
        self.state.borrow().all_disarmed
    }

    /// Whether an ftrace filter is set on `addr` for `ops`.
    pub fn ftrace_filtered(&self, ops: FtraceOps, addr: usize) -> bool {
        self.inner().ftrace_filters.contains(&(ops, addr))
    }

    /// Whether `ops` is registered with ftrace.
    pub fn ftrace_registered(&self, ops: FtraceOps) -> bool {
        self.inner().ftrace_registered[ops as usize]
    }

    /// Filter updates made so far.
    pub fn ftrace_updates(&self) -> u64 {
        self.inner().ftrace_updates
    }

    /// The ftrace filters, sorted.
    pub fn ftrace_filters(&self) -> Vec<(FtraceOps, usize)> {
        let mut v = self.inner().ftrace_filters.clone();
        v.sort_by_key(|&(o, a)| (o as usize, a));
        v
    }

    /// Makes the next filter addition fail with `e`.
    pub fn fail_next_ftrace_add(&self, e: Errno) {
        self.inner().ftrace_fail_add = Some(e);
    }

    /// Makes the next batched filter removal fail with `e`.
    pub fn fail_next_ftrace_batch_remove(&self, e: Errno) {
        self.inner().ftrace_fail_batch_remove = Some(e);
    }

    /// Makes `addr` an address another IPMODIFY ftrace user owns.
    pub fn set_ftrace_busy(&self, addr: usize) {
        self.inner().ftrace_busy = Some(addr);
    }

    /// Probes disarmed through the arch's batch hook so far.
    pub fn batch_disarmed(&self) -> u64 {
        self.inner().batch_disarmed
    }

    /// Whether batches get storage (`alloc_buf`): without it they work probe by probe.
    pub fn set_batching(&self, on: bool) {
        self.inner().batching = on;
    }

    /// The probe of `ap`, checked to be what the kernel's `to_op()` needs: an aggregate the
    /// core allocated (an `optimized_kprobe` in the kernel) and has not freed.
    fn agg(&self, ap: Aggr<Pid>) -> Pid {
        let p = ap.kp();
        assert!(
            self.rec(p, |r| r.core_alloc && r.alive),
            "{p:?} used as an aggregate but not one the core allocated"
        );
        p
    }

    /// The users of each ops the core counts (`kprobe_ftrace_enabled`, `kprobe_ipmodify_enabled`).
    pub fn ftrace_counts(&self) -> (i32, i32) {
        let st = self.state.borrow();
        (st.ftrace_enabled, st.ipmodify_enabled)
    }

    /// Every probe reachable from the hash table, with the aggregate it hangs off (if any).
    pub fn reachable(&self) -> Vec<(Pid, Option<Pid>)> {
        let mut out = Vec::new();
        table::for_each_kprobe(self, |p| {
            out.push((p, None));
            if let Some(ap) = Aggr::of(self, p) {
                let _ = self.for_each_child(ap, |c| {
                    out.push((c, Some(p)));
                    ControlFlow::Continue(())
                });
            }
        });
        out
    }

    /// The optimizer queue `p` is on, if any.
    pub fn is_on_queue(&self, p: Pid) -> Option<OptQueue> {
        self.rec(p, |r| r.op_queue)
    }

    /// Whether the optimization jump of `p` is installed.
    pub fn jump_installed(&self, p: Pid) -> bool {
        self.rec(p, |r| r.jump_saved.is_some())
    }

    /// The module is unloaded (MODULE_STATE_GOING) and loaded again with the same image: probes
    /// in it become GONE, and its text is fresh.
    pub fn module_reload(&self) {
        let areas = rkprobes_core::blacklist::ModuleAreas::default();
        rkprobes_core::register::kprobes_module_callback(
            self,
            1,
            rkprobes_core::register::ModuleEvent::Going,
            &areas,
        );
        let mut i = self.inner();
        let (a, b) = (MOD_CORE.0 - TEXT_BASE, MOD_INIT.1 - TEXT_BASE);
        let fresh = i.original[a..b].to_vec();
        i.text[a..b].copy_from_slice(&fresh);
    }

    /// Runs the delayed optimizer work if it was kicked.
    pub fn run_optimizer(&self) {
        rkprobes_core::optimizer::kprobe_optimizer(self);
    }

    /// A CPU executes the instruction at `addr`: int3 trap, jump into a detour, or nothing.
    pub fn hit(&self, addr: usize) {
        if FTRACE && self.ftrace_location(addr) == addr {
            self.ftrace_hit(addr);
            return;
        }
        let byte = self.text_at(addr);
        let (current, jump) = {
            let i = self.inner();
            let jump = i
                .recs
                .iter()
                .any(|r| r.alive && r.addr == addr && r.jump_saved.is_some());
            (i.current, jump)
        };
        if byte == JMP && jump {
            let p = table::get_kprobe(self, addr).expect("jump without probe");
            assert!(self.is_aggr(p), "jump on a non-aggregate");
            // optimized_callback(): a disabled probe does nothing.
            if flags_disabled(self.flags(p)) {
                return;
            }
            if current.is_some() {
                table::kprobes_inc_nmissed_count(self, p);
                return;
            }
            self.inner().current = Some(p);
            let ap = Aggr::of(self, p).expect("an optimized probe is an aggregate");
            table::opt_pre_handler(self, ap, ());
            self.inner().current = None;
        } else if byte == INT3 {
            let p = table::get_kprobe(self, addr)
                .unwrap_or_else(|| panic!("stale breakpoint at {addr:#x}"));
            if current.is_some() {
                // Reentry: single-step without handlers, count the miss.
                table::kprobes_inc_nmissed_count(self, p);
                return;
            }
            self.inner().current = Some(p);
            let ret = if let Some(ap) = Aggr::of(self, p) {
                table::aggr_pre_handler(self, ap, ())
            } else if self.has_pre_handler(p) {
                self.call_pre_handler(p, ())
            } else {
                0
            };
            if ret == 0 && self.has_post_handler(p) {
                if let Some(ap) = Aggr::of(self, p) {
                    table::aggr_post_handler(self, ap, (), 0);
                } else {
                    self.call_post_handler(p, (), 0);
                }
            }
            self.inner().current = None;
        }
    }

    /// The arch `kprobe_ftrace_handler()` for a call through an ftrace site.
    fn ftrace_hit(&self, addr: usize) {
        let (hooked, current) = {
            let i = self.inner();
            let hooked = i
                .ftrace_filters
                .iter()
                .any(|&(ops, a)| a == addr && i.ftrace_registered[ops as usize]);
            (hooked, i.current)
        };
        if !hooked {
            return;
        }
        let Some(p) = table::get_kprobe(self, addr) else {
            return;
        };
        if flags_disabled(self.flags(p)) {
            return;
        }
        if current.is_some() {
            table::kprobes_inc_nmissed_count(self, p);
            return;
        }
        self.inner().current = Some(p);
        let ret = if let Some(ap) = Aggr::of(self, p) {
            table::aggr_pre_handler(self, ap, ())
        } else {
            self.call_pre_handler(p, ())
        };
        if ret == 0 && self.has_post_handler(p) {
            if let Some(ap) = Aggr::of(self, p) {
                table::aggr_post_handler(self, ap, (), 0);
            } else {
                self.call_post_handler(p, (), 0);
            }
        }
        self.inner().current = None;
    }

    fn slot_alloc(&self) -> Option<usize> {
        let mut i = self.inner();
        if i.slots_used.len() >= i.slot_capacity {
            return None;
        }
        let s = i.next_slot;
        i.next_slot += 1;
        i.slots_used.insert(s);
        Some(s)
    }

    fn link_get(&self, p: Pid, next: bool) -> Link {
        let i = self.inner();
        let r = &i.recs[p.0];
        assert!(r.alive, "list walk reached freed probe {p:?}");
        if next {
            r.next
        } else {
            r.prev
        }
    }

    fn link_set(&self, p: Pid, next: bool, l: Link) {
        let mut i = self.inner();
        let r = &mut i.recs[p.0];
        assert!(r.alive, "list write to freed probe {p:?}");
        if next {
            r.next = l;
        } else {
            r.prev = l;
        }
    }

    fn node(l: Link, what: &str) -> Pid {
        match l {
            Link::Node(p) => p,
            other => panic!("{what}: followed a {other:?} link"),
        }
    }
}

impl<const OPT: bool, const FTRACE: bool> Default for Sim<OPT, FTRACE> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const OPT: bool, const FTRACE: bool> Report for Sim<OPT, FTRACE> {
    fn warn(&self, site: WarnSite) {
        self.inner().warns.push(site);
    }
    fn message(&self, msg: Message) {
        self.inner().messages.push(msg);
    }
}

impl<const OPT: bool, const FTRACE: bool> ProbeStore for Sim<OPT, FTRACE> {
    type Probe = Pid;
    type Regs = ();
    type Guard<'a> = RefMut<'a, KprobeState>;

    fn kprobe_mutex(&self) -> Self::Guard<'_> {
        self.state
            .try_borrow_mut()
            .expect("kprobe_mutex taken recursively (deadlock)")
    }
    fn cpus_read_locked<R>(&self, f: impl FnOnce() -> R) -> R {
        self.cpus_depth.set(self.cpus_depth.get() + 1);
        let r = f();
        self.cpus_depth.set(self.cpus_depth.get() - 1);
        r
    }
    fn assert_kprobe_mutex_held(&self) {
        assert!(self.mutex_held(), "kprobe_mutex not held");
    }
    fn assert_text_mutex_held(&self) {
        self.assert_text_locked("lockdep_assert_held(&text_mutex)");
    }
    fn assert_cpus_held(&self) {
        assert!(self.cpus_depth.get() > 0, "cpus_read_lock not held");
    }
    fn text_locked<R>(&self, jump_label: bool, f: impl FnOnce() -> R) -> R {
        // cpus_read_lock(), then (jump_label_lock() and) text_mutex, which is not recursive:
        // taking it again (say inside a batch that holds it) would deadlock.
        assert!(self.text_depth.get() == 0, "text_mutex taken while held");
        self.cpus_depth.set(self.cpus_depth.get() + 1);
        self.text_depth.set(self.text_depth.get() + 1);
        if jump_label {
            self.jump_label_depth.set(self.jump_label_depth.get() + 1);
        }
        let r = f();
        if jump_label {
            self.jump_label_depth.set(self.jump_label_depth.get() - 1);
        }
        self.text_depth.set(self.text_depth.get() - 1);
        self.cpus_depth.set(self.cpus_depth.get() - 1);
        r
    }
    fn synchronize_rcu(&self) {
        assert!(
            self.inner().current.is_none(),
            "synchronize_rcu from a handler"
        );
        self.inner().rcu_syncs += 1;
    }
    fn synchronize_rcu_tasks(&self) {}
    fn kick_kprobe_optimizer(&self) {
        self.inner().kicks += 1;
    }
    fn flush_kprobe_optimizer(&self) {
        assert!(
            !self.mutex_held(),
            "flush with kprobe_mutex held (deadlock)"
        );
        rkprobes_core::optimizer::kprobe_optimizer(self);
    }

    type Buf<T> = Vec<T>;
    fn alloc_buf<T: Clone>(&self, n: usize, fill: T) -> Option<Vec<T>> {
        self.inner().batching.then(|| vec![fill; n])
    }
    // Every batch of two or more gets an index here, so that the batch tests exercise it;
    // each answer is checked against the hash itself.
    fn entry_index_min_batch(&self) -> usize {
        if self.inner().batching {
            2
        } else {
            usize::MAX
        }
    }
    fn check_indexed_entry(&self, addr: usize, found: Option<Pid>) {
        assert_eq!(
            found,
            table::get_kprobe(self, addr),
            "the entry index and the hash disagree at {addr:#x}"
        );
    }
    fn addr(&self, p: Pid) -> usize {
        self.rec(p, |r| r.addr)
    }
    fn symbol_name(&self, p: Pid) -> Option<&[u8]> {
        self.rec(p, |r| r.symbol_name)
    }
    fn offset(&self, p: Pid) -> u32 {
        self.rec(p, |r| r.offset)
    }
    fn set_addr(&self, p: Pid, addr: usize) {
        self.rec(p, |r| r.addr = addr);
    }
    fn flags(&self, p: Pid) -> u32 {
        self.rec(p, |r| r.flags)
    }
    fn set_flags(&self, p: Pid, flags: u32) {
        self.rec(p, |r| r.flags = flags);
    }
    fn inc_nmissed(&self, p: Pid) {
        self.rec(p, |r| r.nmissed += 1);
    }
    fn reset_nmissed(&self, p: Pid) {
        self.rec(p, |r| r.nmissed = 0);
    }
    fn nmissed(&self, p: Pid) -> u64 {
        self.rec(p, |r| r.nmissed)
    }
    fn set_nmissed(&self, p: Pid, n: u64) {
        self.rec(p, |r| r.nmissed = n);
    }
    fn has_post_handler(&self, p: Pid) -> bool {
        self.rec(p, |r| {
            if r.aggr {
                r.aggr_post
            } else {
                r.post.is_some()
            }
        })
    }
    fn is_aggr(&self, p: Pid) -> bool {
        self.rec(p, |r| r.aggr)
    }
    fn is_kretprobe(&self, p: Pid) -> bool {
        self.rec(p, |r| r.kret.as_ref().is_some_and(|k| k.handlers))
    }
    fn call_pre_handler(&self, p: Pid, _regs: ()) -> i32 {
        if self.is_kretprobe(p) {
            self.inner().log.push(Call::Pre(p));
            if self.kret(p).grow_handlers {
                return rkprobes_core::kretprobe::pre_handler_kretprobe_grow(self, p, ());
            }
            return rkprobes_core::kretprobe::pre_handler_kretprobe(self, p, ());
        }
        let Some(spec) = self.rec(p, |r| {
            assert!(!r.aggr, "aggregate pre_handler called as a user handler");
            r.pre.clone()
        }) else {
            return 0;
        };
        self.inner().log.push(Call::Pre(p));
        if let Some(a) = spec.reenter {
            self.hit(a);
        }
        spec.ret
    }
    fn call_post_handler(&self, p: Pid, _regs: (), _flags: usize) {
        let Some(spec) = self.rec(p, |r| r.post.clone()) else {
            return;
        };
        self.inner().log.push(Call::Post(p));
        if let Some(a) = spec.reenter {
            self.hit(a);
        }
    }
    fn copy_kprobe(&self, from: Pid, to: Pid) {
        let (op, slot) = self.rec(from, |r| (r.opcode, r.slot));
        self.rec(to, |r| {
            r.opcode = op;
            r.slot = slot;
        });
    }

    fn alloc_aggr_kprobe(&self, addr: usize) -> Option<Aggr<Pid>> {
        let mut i = self.inner();
        let mut r = Rec::new(true);
        r.core_alloc = true;
        r.addr = addr;
        i.recs.push(r);
        let p = Pid(i.recs.len() - 1);
        // SAFETY: just allocated as an aggregate (`core_alloc`, checked by `agg`).
        Some(unsafe { Aggr::new_unchecked(p) })
    }
    fn kfree_aggr_kprobe(&self, ap: Aggr<Pid>) {
        let ap = self.agg(ap);
        let mut i = self.inner();
        let r = &mut i.recs[ap.0];
        assert!(r.alive, "double free of aggregate {ap:?}");
        assert!(r.op_queue.is_none(), "freeing a queued aggregate");
        r.alive = false;
        for b in &i.buckets {
            assert!(!b.contains(&ap), "freeing a hashed aggregate");
        }
    }
    fn set_aggr_pre_handler(&self, ap: Aggr<Pid>) {
        let ap = self.agg(ap);
        self.rec(ap, |r| r.aggr = true);
    }
    fn set_aggr_post_handler(&self, ap: Aggr<Pid>, on: bool) {
        let ap = self.agg(ap);
        self.rec(ap, |r| r.aggr_post = on);
    }

    fn for_each_in_bucket(
        &self,
        bucket: usize,
        mut f: impl FnMut(Pid) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let list = self.inner().buckets[bucket].clone();
        for p in list {
            assert!(
                self.inner().recs[p.0].alive,
                "hash reaches freed probe {p:?}"
            );
            f(p)?;
        }
        ControlFlow::Continue(())
    }
    fn hlist_add_head_rcu(&self, bucket: usize, p: Pid) {
        let mut i = self.inner();
        assert!(!i.buckets.iter().any(|b| b.contains(&p)), "double hash add");
        i.buckets[bucket].insert(0, p);
        i.recs[p.0].hlist = HState::Hashed;
    }
    fn hlist_del_rcu(&self, p: Pid) {
        let mut i = self.inner();
        let mut found = false;
        for b in i.buckets.iter_mut() {
            if let Some(k) = b.iter().position(|&q| q == p) {
                b.remove(k);
                found = true;
            }
        }
        assert!(found, "hlist_del_rcu of an unhashed probe {p:?}");
        i.recs[p.0].hlist = HState::Poisoned;
    }
    fn hlist_replace_rcu(&self, old: Pid, new: Pid) {
        let mut i = self.inner();
        let mut found = false;
        for b in i.buckets.iter_mut() {
            if let Some(k) = b.iter().position(|&q| q == old) {
                b[k] = new;
                found = true;
            }
        }
        assert!(found, "hlist_replace_rcu of an unhashed probe");
        i.recs[old.0].hlist = HState::Poisoned;
        i.recs[new.0].hlist = HState::Hashed;
    }
    fn init_hlist_node(&self, p: Pid) {
        self.rec(p, |r| r.hlist = HState::Unhashed);
    }

    fn init_list_head(&self, p: Pid) {
        self.rec(p, |r| {
            r.next = Link::Node(p);
            r.prev = Link::Node(p);
        });
    }
    fn list_add_rcu(&self, p: Pid, ap: Aggr<Pid>) {
        let ap = self.agg(ap);
        let n = Self::node(self.link_get(ap, true), "list_add_rcu");
        self.link_set(p, true, Link::Node(n));
        self.link_set(p, false, Link::Node(ap));
        self.link_set(n, false, Link::Node(p));
        self.link_set(ap, true, Link::Node(p));
    }
    fn list_del_rcu(&self, p: Pid) {
        let n = Self::node(self.link_get(p, true), "list_del_rcu next");
        let pr = Self::node(self.link_get(p, false), "list_del_rcu prev");
        self.link_set(n, false, Link::Node(pr));
        self.link_set(pr, true, Link::Node(n));
        self.link_set(p, false, Link::Poison2);
    }
    fn list_del(&self, p: Pid) {
        self.list_del_rcu(p);
        self.link_set(p, true, Link::Poison1);
    }
    fn list_empty(&self, p: Pid) -> bool {
        self.link_get(p, true) == Link::Node(p)
    }
    fn list_is_singular(&self, p: Pid) -> bool {
        !self.list_empty(p) && self.link_get(p, true) == self.link_get(p, false)
    }
    fn list_next_entry(&self, p: Pid) -> Pid {
        Self::node(self.link_get(p, true), "list_next_entry")
    }
    fn for_each_child(
        &self,
        ap: Aggr<Pid>,
        mut f: impl FnMut(Pid) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let ap = self.agg(ap);
        let mut cur = Self::node(self.link_get(ap, true), "child walk");
        let mut steps = 0;
        while cur != ap {
            steps += 1;
            assert!(steps < 100_000, "child list loops");
            f(cur)?;
            cur = Self::node(self.link_get(cur, true), "child walk");
        }
        ControlFlow::Continue(())
    }

    fn op_list_empty(&self, ap: Aggr<Pid>) -> bool {
        let ap = self.agg(ap);
        self.rec(ap, |r| r.op_queue.is_none())
    }
    fn queue_add(&self, ap: Aggr<Pid>, q: OptQueue) {
        let ap = self.agg(ap);
        assert!(self.mutex_held(), "queue change without kprobe_mutex");
        let mut i = self.inner();
        assert!(
            i.recs[ap.0].op_queue.is_none(),
            "list_add of a queued entry"
        );
        i.recs[ap.0].op_queue = Some(q);
        i.queues[qidx(q)].insert(0, ap);
    }
    fn queue_del_init(&self, ap: Aggr<Pid>) {
        let ap = self.agg(ap);
        let mut i = self.inner();
        if let Some(q) = i.recs[ap.0].op_queue.take() {
            i.queues[qidx(q)].retain(|&x| x != ap);
        }
    }
    fn queue_move(&self, ap: Aggr<Pid>, q: OptQueue) {
        self.queue_del_init(ap);
        self.queue_add(ap, q);
    }
    fn queue_empty(&self, q: OptQueue) -> bool {
        self.inner().queues[qidx(q)].is_empty()
    }
    fn queue_contains(&self, q: OptQueue, ap: Aggr<Pid>) -> bool {
        let ap = self.agg(ap);
        self.inner().queues[qidx(q)].contains(&ap)
    }
    fn queue_for_each_safe(&self, q: OptQueue, mut f: impl FnMut(Aggr<Pid>)) {
        let list = self.inner().queues[qidx(q)].clone();
        for p in list {
            // SAFETY: only aggregates are queued (`queue_add` checks it).
            f(unsafe { Aggr::new_unchecked(p) });
        }
    }
}

impl<const OPT: bool, const FTRACE: bool> KernelText for Sim<OPT, FTRACE> {
    type Module = u32;

    fn kallsyms_lookup_name(&self, name: &[u8]) -> usize {
        self.inner()
            .syms
            .iter()
            .find(|s| s.name.as_bytes() == name)
            .map_or(0, |s| s.addr)
    }
    fn with_symbol_batch<'a, R>(
        &'a self,
        n: usize,
        name_of: impl Fn(usize) -> Option<&'a [u8]>,
        addr_of: impl Fn(usize) -> usize,
        f: impl FnOnce(&Self) -> R,
    ) -> R {
        if n < 2 {
            return f(self);
        }
        // The kernel's batch (glue/symbatch.rs): the modules the names resolve into and the
        // given addresses fall in, each indexed once.
        let mut mods: Vec<u32> = (0..n)
            .filter_map(&name_of)
            .map(|name| self.kallsyms_lookup_name(name))
            .chain((0..n).map(addr_of))
            .filter_map(|addr| self.module_text_address(addr))
            .collect();
        mods.dedup();
        let outer = self.inner().batch_modules.replace(mods);
        assert!(outer.is_none(), "symbol batches nested");
        let r = f(self);
        self.inner().batch_modules = None;
        r
    }
    fn kallsyms_lookup_size_offset(&self, addr: usize) -> Option<(usize, usize)> {
        let m = self.module_text_address(addr);
        let mut i = self.inner();
        if let (Some(m), Some(mods)) = (m, i.batch_modules.as_ref()) {
            if !mods.contains(&m) {
                i.batch_misses += 1;
            }
        }
        i.syms
            .iter()
            .find(|s| addr >= s.addr && addr < s.addr + s.size)
            .map(|s| (s.size, addr - s.addr))
    }
    fn kallsyms_lookup<R>(&self, addr: usize, f: impl FnOnce(Option<Ksym<'_>>) -> R) -> R {
        // Names are 'static, so no borrow is held while `f` runs (it may call back in).
        let k = self
            .inner()
            .syms
            .iter()
            .find(|s| addr >= s.addr && addr < s.addr + s.size)
            .map(|s| Ksym {
                name: s.name.as_bytes(),
                offset: addr - s.addr,
                size: s.size,
                module: s.module.then_some(b"simmod".as_slice()),
            });
        f(k)
    }
    fn lookup_symbol_name<R>(&self, addr: usize, f: impl FnOnce(Option<&[u8]>) -> R) -> R {
        self.kallsyms_lookup(addr, |k| f(k.map(|k| k.name)))
    }
    fn core_kernel_text(&self, addr: usize) -> bool {
        (TEXT_BASE..MOD_CORE.0).contains(&addr)
    }
    fn kernel_text_address(&self, addr: usize) -> bool {
        (TEXT_BASE..TEXT_BASE + TEXT_SIZE).contains(&addr)
    }
    fn module_text_address(&self, addr: usize) -> Option<u32> {
        (MOD_CORE.0..MOD_INIT.1).contains(&addr).then_some(1)
    }
    fn in_gate_area_no_mm(&self, addr: usize) -> bool {
        (0x15c0..0x1600).contains(&addr)
    }
    fn jump_label_text_reserved(&self, addr: usize) -> bool {
        assert!(
            self.jump_label_depth.get() > 0,
            "jump_label_text_reserved without lock"
        );
        addr == 0x1510
    }
    fn static_call_text_reserved(&self, addr: usize) -> bool {
        addr == 0x1550
    }
    fn find_bug(&self, addr: usize) -> bool {
        addr == 0x1590
    }
    fn jump_label_locked<R>(&self, f: impl FnOnce() -> R) -> R {
        self.jump_label_depth.set(self.jump_label_depth.get() + 1);
        let r = f();
        self.jump_label_depth.set(self.jump_label_depth.get() - 1);
        r
    }
    fn kprobes_text(&self) -> (usize, usize) {
        KPROBES_TEXT
    }
    fn noinstr_text(&self) -> (usize, usize) {
        NOINSTR_TEXT
    }
    fn init_mem(&self) -> (usize, usize) {
        INIT_MEM
    }
    fn try_module_get(&self, _m: u32) -> bool {
        let mut i = self.inner();
        if i.module_get_fails {
            return false;
        }
        i.module_refs += 1;
        true
    }
    fn module_put(&self, _m: u32) {
        let mut i = self.inner();
        assert!(i.module_refs > 0, "module_put underflow");
        i.module_refs -= 1;
    }
    fn within_module_init(&self, addr: usize, _m: u32) -> bool {
        (MOD_INIT.0..MOD_INIT.1).contains(&addr)
    }
    fn within_module_core(&self, addr: usize, _m: u32) -> bool {
        (MOD_CORE.0..MOD_CORE.1).contains(&addr)
    }
    fn module_is_coming(&self, _m: u32) -> bool {
        self.inner().module_coming
    }
    fn ftrace_location(&self, addr: usize) -> usize {
        if addr == 0x1400 || ((0x1600..0x1700).contains(&addr) && addr.is_multiple_of(0x40)) {
            addr
        } else {
            0
        }
    }
    fn ftrace_set_filter_ip(&self, ops: FtraceOps, addr: usize, remove: bool) -> Result {
        self.assert_text_unlocked_for_ftrace();
        let mut i = self.inner();
        i.ftrace_updates += 1;
        if !remove {
            if let Some(e) = i.ftrace_fail_add.take() {
                return Err(e);
            }
            // 6.12 checks the other IPMODIFY users of a filter when the ops is registered
            // (`ftrace_hash_ipmodify_enable()`) or when the filter of a registered ops changes
            // (`ftrace_hash_ipmodify_update()`); the filter of an unregistered ops takes any
            // address.
            if ops == FtraceOps::Ipmodify
                && i.ftrace_registered[ops as usize]
                && i.ftrace_busy == Some(addr)
            {
                return Err(Errno::EBUSY);
            }
        }
        if remove {
            // 6.12's __ftrace_match_addr(): removing what the filter lacks is -ENOENT.
            let k = i
                .ftrace_filters
                .iter()
                .position(|&x| x == (ops, addr))
                .ok_or(Errno::ENOENT)?;
            i.ftrace_filters.remove(k);
            // An ops registered with an empty filter traces every function.
            assert!(
                !i.ftrace_registered[ops as usize]
                    || i.ftrace_filters.iter().any(|&(o, _)| o == ops),
                "{ops:?} left registered with an empty filter: ftrace calls it on every function"
            );
        } else if !i.ftrace_filters.contains(&(ops, addr)) {
            // Adding what the filter holds already is a no-op.
            i.ftrace_filters.push((ops, addr));
        }
        Ok(())
    }
    fn register_ftrace_function(&self, ops: FtraceOps) -> Result {
        self.assert_text_unlocked_for_ftrace();
        let mut i = self.inner();
        assert!(!i.ftrace_registered[ops as usize], "ops registered twice");
        let filter: Vec<usize> = i
            .ftrace_filters
            .iter()
            .filter(|&&(o, _)| o == ops)
            .map(|&(_, a)| a)
            .collect();
        // 6.12 registers an ops with an empty filter as tracing every function: kprobes never
        // does that.
        assert!(
            !filter.is_empty(),
            "{ops:?} registered with an empty filter"
        );
        if ops == FtraceOps::Ipmodify && filter.iter().any(|&a| i.ftrace_busy == Some(a)) {
            return Err(Errno::EBUSY);
        }
        i.ftrace_registered[ops as usize] = true;
        Ok(())
    }
    fn unregister_ftrace_function(&self, ops: FtraceOps) -> Result {
        self.assert_text_unlocked_for_ftrace();
        let mut i = self.inner();
        assert!(i.ftrace_registered[ops as usize], "ops not registered");
        i.ftrace_registered[ops as usize] = false;
        Ok(())
    }
    fn kprobe_ftrace_disabled(&self) -> bool {
        false
    }
    fn ftrace_filter_has(&self, ops: FtraceOps, addr: usize) -> bool {
        self.inner().ftrace_filters.contains(&(ops, addr))
    }
    fn ftrace_set_filter_ips(&self, ops: FtraceOps, addrs: &[usize], remove: bool) -> Result {
        self.assert_text_unlocked_for_ftrace();
        assert!(!addrs.is_empty(), "an empty filter update");
        let mut i = self.inner();
        i.ftrace_updates += 1;
        // ftrace builds the new filter aside: all or nothing.
        let mut filters = i.ftrace_filters.clone();
        if remove {
            if let Some(e) = i.ftrace_fail_batch_remove.take() {
                return Err(e);
            }
            for &addr in addrs {
                let k = filters
                    .iter()
                    .position(|&x| x == (ops, addr))
                    .ok_or(Errno::ENOENT)?;
                filters.remove(k);
            }
        } else {
            if let Some(e) = i.ftrace_fail_add.take() {
                return Err(e);
            }
            if ops == FtraceOps::Ipmodify
                && i.ftrace_registered[ops as usize]
                && addrs.iter().any(|&a| i.ftrace_busy == Some(a))
            {
                return Err(Errno::EBUSY);
            }
            for &addr in addrs {
                if !filters.contains(&(ops, addr)) {
                    filters.push((ops, addr));
                }
            }
        }
        i.ftrace_filters = filters;
        Ok(())
    }
}

impl<const OPT: bool, const FTRACE: bool> BlacklistStore for Sim<OPT, FTRACE> {
    fn blacklist_add_tail(&self, start: usize, end: usize) -> Result {
        self.inner().blacklist.push((start, end));
        Ok(())
    }
    fn blacklist_for_each(
        &self,
        mut f: impl FnMut(usize, usize) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let list = self.inner().blacklist.clone();
        for (s, e) in list {
            f(s, e)?;
        }
        ControlFlow::Continue(())
    }
    fn blacklist_remove_if(&self, mut pred: impl FnMut(usize, usize) -> bool) {
        self.inner().blacklist.retain(|&(s, e)| !pred(s, e));
    }
}

/// The simulated architecture: int3-style one-byte breakpoints and 5-byte jumps over the
/// simulated text, as a type separate from the storage, like the kernel's arches.
pub struct SimArch;

impl<const OPT: bool, const FTRACE: bool> Arch for Sim<OPT, FTRACE> {
    type Hooks = SimArch;
}

impl<const OPT: bool, const FTRACE: bool> ArchHooks<Sim<OPT, FTRACE>> for SimArch {
    const OPTPROBES: bool = OPT;
    const KPROBES_ON_FTRACE: bool = FTRACE;
    const OPCODE_SIZE: usize = 1;
    const MAX_OPTIMIZED_LENGTH: usize = if OPT { 15 + 4 } else { 0 };
    const BATCHES_DISARM: bool = true;

    fn prepare_kprobe(s: &Sim<OPT, FTRACE>, p: Pid) -> Result {
        s.assert_text_locked("arch_prepare_kprobe");
        let addr = s.addr(p);
        if !s.inner().boundaries.contains(&addr) {
            return Err(Errno::EILSEQ);
        }
        let slot = s.slot_alloc().ok_or(Errno::ENOMEM)?;
        let op = s.original_at(addr);
        s.rec(p, |r| {
            r.opcode = op;
            r.slot = Some(slot);
        });
        Ok(())
    }
    fn arm_kprobe(s: &Sim<OPT, FTRACE>, p: Pid) {
        s.assert_text_locked("arch_arm_kprobe");
        let addr = s.addr(p);
        let mut i = s.inner();
        i.text[addr - TEXT_BASE] = INT3;
    }
    fn disarm_kprobe(s: &Sim<OPT, FTRACE>, p: Pid) {
        s.assert_text_locked("arch_disarm_kprobe");
        let (addr, op) = s.rec(p, |r| (r.addr, r.opcode));
        let mut i = s.inner();
        i.text[addr - TEXT_BASE] = op;
    }
    fn disarm_kprobes(s: &Sim<OPT, FTRACE>, probes: impl Iterator<Item = Pid>) {
        let probes: Vec<Pid> = probes.collect();
        let addrs: Vec<usize> = probes.iter().map(|&p| s.addr(p)).collect();
        assert!(
            addrs.windows(2).all(|w| w[0] < w[1]),
            "not in address order: {addrs:x?}"
        );
        for p in probes {
            let addr = s.addr(p);
            assert_eq!(s.inner().text[addr - TEXT_BASE], INT3, "{p:?} is not armed");
            // The batch writes a breakpoint before its hash entry leaves the hash.
            assert_eq!(
                s.rec(p, |r| r.hlist),
                HState::Hashed,
                "{p:?} left the hash before its breakpoint at {addr:#x} was written"
            );
            Self::disarm_kprobe(s, p);
            s.inner().batch_disarmed += 1;
        }
    }
    fn remove_kprobe(s: &Sim<OPT, FTRACE>, p: Pid) {
        let slot = s.rec(p, |r| r.slot.take());
        // Children keep stale copies of their aggregate's slot, as in C; only the probe that
        // is removed frees it, and a second free of the same slot is a bug.
        if let Some(slot) = slot {
            assert!(
                s.inner().slots_used.remove(&slot),
                "double free of slot {slot}"
            );
        }
    }
    fn trampoline_kprobe(_s: &Sim<OPT, FTRACE>, _p: Pid) -> bool {
        false
    }
    fn init_kprobes(s: &Sim<OPT, FTRACE>) -> Result {
        // Last: the arch init may register probes (init_runs_in_c_order checks the order).
        s.inner().init_steps.push("arch_init_kprobes");
        Ok(())
    }
    fn init_kretprobe_blacklist(s: &Sim<OPT, FTRACE>) {
        let populated = !s.inner().blacklist.is_empty();
        assert!(populated, "the blacklist is populated first");
        s.inner().init_steps.push("kretprobe_blacklist");
    }
    fn init_optinsn_slots(s: &Sim<OPT, FTRACE>) {
        s.inner().init_steps.push("optinsn_slots");
    }

    fn prepared_optinsn(s: &Sim<OPT, FTRACE>, ap: Aggr<Pid>) -> bool {
        let ap = s.agg(ap);
        s.rec(ap, |r| r.optinsn)
    }
    fn check_optimized_kprobe(s: &Sim<OPT, FTRACE>, ap: Aggr<Pid>) -> Result {
        let ap = s.agg(ap);
        let addr = s.addr(ap);
        for k in 1..JMP_LEN {
            if let Some(q) = table::get_kprobe(s, addr + k) {
                if !rkprobes_core::optimizer::kprobe_disarmed(s, q) {
                    return Err(Errno::EEXIST);
                }
            }
        }
        Ok(())
    }
    fn prepare_optimized_kprobe(s: &Sim<OPT, FTRACE>, ap: Aggr<Pid>, _orig: Pid) {
        let ap = s.agg(ap);
        let addr = s.addr(ap);
        let ok = s.inner().optimizable.contains(&addr);
        s.rec(ap, |r| r.optinsn = ok);
    }
    fn remove_optimized_kprobe(s: &Sim<OPT, FTRACE>, ap: Aggr<Pid>) {
        let ap = s.agg(ap);
        s.rec(ap, |r| {
            // The detour goes; a jump may only still be in the text if that text was freed.
            assert!(
                r.jump_saved.is_none() || r.flags & rkprobes_core::store::KPROBE_FLAG_GONE != 0,
                "detour freed under an installed jump"
            );
            r.optinsn = false;
            r.jump_saved = None;
        });
    }
    fn optimize_kprobes(s: &Sim<OPT, FTRACE>) {
        s.assert_text_locked("arch_optimize_kprobes");
        assert!(s.mutex_held());
        s.queue_for_each_safe(OptQueue::Optimizing, |op| {
            let addr = s.addr(op.kp());
            let mut i = s.inner();
            let at = addr - TEXT_BASE;
            let mut saved = [0u8; JMP_LEN - 1];
            saved.copy_from_slice(&i.text[at + 1..at + JMP_LEN]);
            assert_eq!(i.text[at], INT3, "optimizing a probe that is not armed");
            i.text[at] = JMP;
            for b in &mut i.text[at + 1..at + JMP_LEN] {
                *b = JMP_COVER;
            }
            i.recs[op.kp().0].jump_saved = Some(saved);
            drop(i);
            s.queue_del_init(op);
        });
    }
    fn unoptimize_kprobes(s: &Sim<OPT, FTRACE>) {
        s.assert_text_locked("arch_unoptimize_kprobes");
        s.queue_for_each_safe(OptQueue::Unoptimizing, |op| {
            Self::unoptimize_kprobe(s, op);
            s.queue_move(op, OptQueue::Freeing);
        });
    }
    fn unoptimize_kprobe(s: &Sim<OPT, FTRACE>, ap: Aggr<Pid>) {
        let ap = s.agg(ap);
        s.assert_text_locked("arch_unoptimize_kprobe");
        let (addr, saved) = s.rec(ap, |r| (r.addr, r.jump_saved.take()));
        if let Some(saved) = saved {
            let mut i = s.inner();
            let at = addr - TEXT_BASE;
            i.text[at] = INT3;
            i.text[at + 1..at + JMP_LEN].copy_from_slice(&saved);
        }
    }
    fn within_optimized_kprobe(s: &Sim<OPT, FTRACE>, ap: Aggr<Pid>, addr: usize) -> bool {
        let ap = s.agg(ap);
        let a = s.addr(ap);
        a <= addr && addr < a + JMP_LEN
    }
    fn prepare_kprobe_ftrace(s: &Sim<OPT, FTRACE>, p: Pid) -> Result {
        assert!(FTRACE);
        s.rec(p, |r| r.slot = None);
        Ok(())
    }
}

impl<const OPT: bool, const FTRACE: bool> rkprobes_core::kretprobe::KretprobeStore
    for Sim<OPT, FTRACE>
{
    type Kretprobe = Pid;
    type Instance = ();
    const KRETPROBES: bool = true;

    fn kretprobe_kp(&self, rp: Pid) -> Pid {
        rp
    }
    fn data_size(&self, rp: Pid) -> usize {
        self.kret(rp).data_size
    }
    fn maxactive(&self, rp: Pid) -> i32 {
        self.kret(rp).maxactive
    }
    fn set_maxactive(&self, rp: Pid, n: i32) {
        self.rec(rp, |r| r.kret.as_mut().expect("kretprobe").maxactive = n);
    }
    fn reset_kretprobe_nmissed(&self, rp: Pid) {
        self.rec(rp, |r| r.kret.as_mut().expect("kretprobe").nmissed = 0);
    }
    fn inc_kretprobe_nmissed(&self, rp: Pid) {
        self.rec(rp, |r| r.kret.as_mut().expect("kretprobe").nmissed += 1);
    }
    fn set_kretprobe_handlers(&self, rp: Pid, grows: bool) {
        self.rec(rp, |r| {
            let k = r.kret.as_mut().expect("kretprobe");
            k.handlers = true;
            k.grow_handlers = grows;
            r.post = None;
        });
    }
    fn num_possible_cpus(&self) -> u32 {
        4
    }
    fn alloc_instance_pool(&self, rp: Pid, grows: bool) -> Result {
        self.rec(rp, |r| {
            let k = r.kret.as_mut().expect("kretprobe");
            assert!(k.pool_free.is_none(), "pool allocated twice");
            if k.alloc_fails {
                return Err(Errno::ENOMEM);
            }
            k.returns_noted = grows;
            k.pool_free = Some(usize::try_from(k.maxactive).expect("maxactive > 0"));
            // Instances still out from an earlier registration belong to the old pool.
            k.hooked = 0;
            k.detached = false;
            Ok(())
        })
    }
    fn free_instance_pool(&self, rp: Pid) {
        self.rec(rp, |r| {
            let k = r.kret.as_mut().expect("kretprobe");
            k.pool_free = None;
            k.grow = None;
        });
    }
    fn detach_instance_pool(&self, rp: Pid) {
        // C's invariant at `rethook_free()`: the kretprobe's probe is neither hashed nor
        // reachable through an aggregate, and its breakpoint is gone unless another probe's
        // aggregate keeps the address armed. The pool's memory is freed after the next grace
        // period; a hit after that must not find this probe.
        let addr = self.addr(rp);
        if addr != 0 {
            assert_ne!(
                self.rec(rp, |r| r.hlist),
                HState::Hashed,
                "detach_instance_pool: the kretprobe at {addr:#x} is still hashed"
            );
            assert!(
                !self.reachable().iter().any(|&(p, _)| p == rp),
                "detach_instance_pool: the kretprobe at {addr:#x} is still reachable from the hash"
            );
            if table::get_kprobe(self, addr).is_none() {
                assert_eq!(
                    self.text_at(addr),
                    self.original_at(addr),
                    "detach_instance_pool: the breakpoint of the kretprobe at {addr:#x} is still written"
                );
            }
        }
        self.rec(rp, |r| r.kret.as_mut().expect("kretprobe").detached = true);
    }
    fn release_instance_pool(&self, rp: Pid) {
        self.rec(rp, |r| {
            let k = r.kret.as_mut().expect("kretprobe");
            k.pool_free = None;
            // Every extra pool goes with the first one.
            if let Some(g) = k.grow.as_mut() {
                g.pools_freed = g.pools;
            }
        });
    }
    fn instance_try_get(&self, rp: Pid) -> Option<()> {
        self.rec(rp, |r| {
            let free = r
                .kret
                .as_mut()
                .expect("kretprobe")
                .pool_free
                .as_mut()
                .expect("pool");
            if *free == 0 {
                return None;
            }
            *free -= 1;
            Some(())
        })
    }
    fn call_entry_handler(&self, rp: Pid, _ri: (), _regs: ()) -> i32 {
        self.kret(rp).entry.unwrap_or(0)
    }
    fn instance_recycle(&self, rp: Pid, _ri: ()) {
        self.rec(rp, |r| {
            *r.kret
                .as_mut()
                .expect("kretprobe")
                .pool_free
                .as_mut()
                .expect("pool") += 1;
        });
    }
    fn instance_hook(&self, rp: Pid, _ri: (), _regs: (), _mcount: bool) {
        self.rec(rp, |r| r.kret.as_mut().expect("kretprobe").hooked += 1);
    }

    fn grow_max(&self, rp: Pid) -> i32 {
        self.kret(rp).grow_max
    }
    fn grow_alloc(&self, rp: Pid, cap: u32) -> Result {
        self.rec(rp, |r| {
            let k = r.kret.as_mut().expect("kretprobe");
            assert!(k.pool_free.is_some(), "grow state before the pool");
            let total = u32::try_from(k.maxactive).expect("maxactive > 0");
            assert!(
                cap > total,
                "a growing pool whose cap is not above maxactive"
            );
            k.grow = Some(SimGrow {
                cap,
                total,
                kick_from: kick_from(total, cap, 0),
                ..Default::default()
            });
            Ok(())
        })
    }
    fn grow_try_get(&self, rp: Pid) -> Option<()> {
        // The model's one counter holds the instances of every pool, so the first pool is
        // empty only when all are.
        assert_eq!(
            self.kret(rp).pool_free,
            Some(0),
            "extra pools tried before the first was empty"
        );
        None
    }
    fn grow_note_take(&self, rp: Pid, taken: bool) -> bool {
        self.rec(rp, |r| {
            let k = r.kret.as_mut().expect("kretprobe");
            let free = *k.pool_free.as_ref().expect("pool");
            let g = k.grow.as_mut().expect("grow_note_take on a fixed pool");
            let kick = if taken {
                g.in_flight += 1;
                g.in_flight >= g.kick_from
            } else {
                g.wanted += 1;
                g.kick_from != NO_KICK
            };
            // The kernel's in-flight count is its own; here it must match the pool.
            assert_eq!(
                g.total - g.in_flight,
                u32::try_from(free).unwrap(),
                "in-flight count out of step with the pool"
            );
            // The hit path's one compare decides what the policy says (an entry that took an
            // instance leaves out the misses not yet seen: each kicked when it happened).
            let counts = GrowCounts {
                in_flight: g.in_flight,
                total: g.total,
                cap: g.cap,
                pools: g.pools,
                wanted: if taken { 0 } else { g.wanted },
            };
            assert_eq!(
                kick,
                should_grow(&counts),
                "kick_from disagrees with should_grow: {counts:?}"
            );
            kick
        })
    }
    fn grow_note_put(&self, rp: Pid) {
        self.rec(rp, |r| {
            if let Some(g) = r.kret.as_mut().and_then(|k| k.grow.as_mut()) {
                g.in_flight = g.in_flight.checked_sub(1).expect("more puts than takes");
            }
        });
    }
    fn grow_kick(&self, rp: Pid) {
        self.rec(rp, |r| {
            let g = r
                .kret
                .as_mut()
                .and_then(|k| k.grow.as_mut())
                .expect("kick of a fixed pool");
            g.kicked = true;
            g.kicks += 1;
        });
    }
    fn grow_counts(&self, rp: Pid) -> Option<GrowCounts> {
        self.rec(rp, |r| {
            let k = r.kret.as_ref().expect("kretprobe");
            if k.detached {
                return None;
            }
            k.grow.as_ref().map(|g| GrowCounts {
                in_flight: g.in_flight,
                total: g.total,
                cap: g.cap,
                pools: g.pools,
                wanted: g.wanted,
            })
        })
    }
    fn grow_forget_wanted(&self, rp: Pid, n: u32) {
        self.rec(rp, |r| {
            let g = r
                .kret
                .as_mut()
                .and_then(|k| k.grow.as_mut())
                .expect("growing pool");
            g.wanted = g
                .wanted
                .checked_sub(n)
                .expect("forgot more misses than seen");
        });
    }
    fn grow_add_pool(&self, rp: Pid, n: u32) -> Result {
        self.rec(rp, |r| {
            let k = r.kret.as_mut().expect("kretprobe");
            if k.detached || k.alloc_fails {
                return Err(Errno::ENOMEM);
            }
            let g = k.grow.as_mut().expect("growing pool");
            assert!(n > 0 && g.total + n <= g.cap, "a chunk beyond the cap");
            assert!(g.pools < GROW_MAX_POOLS, "more extra pools than allowed");
            g.total += n;
            g.pools += 1;
            g.kick_from = kick_from(g.total, g.cap, g.pools);
            *k.pool_free.as_mut().expect("pool") += usize::try_from(n).unwrap();
            Ok(())
        })
    }
}

impl<const OPT: bool, const FTRACE: bool> rkprobes_core::missed::MissStore for Sim<OPT, FTRACE> {
    fn kretprobe_nmissed_of(&self, p: Pid) -> u64 {
        // `rp->nmissed` is an `unsigned long` in C: a count below zero is a simulation bug.
        self.rec(p, |r| {
            r.kret
                .as_ref()
                .filter(|k| k.handlers)
                .map_or(0, |k| u64::try_from(k.nmissed).expect("rp->nmissed >= 0"))
        })
    }
}

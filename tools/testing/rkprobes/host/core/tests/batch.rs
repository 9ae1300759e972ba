// SPDX-License-Identifier: GPL-2.0

//! `register_kprobes()` as one batch (ftrace additions recorded and applied once per ops at the
//! end) against the same calls registered probe by probe, C's way: random batches over ftrace
//! sites, breakpoint sites, module text and bad entries (unknown names, blacklisted functions,
//! offsets past the end, non-boundaries, NULLs, the same probe twice), on top of probes already
//! registered there, with post handlers (the IPMODIFY ops) and disabled entries, and with an
//! address another IPMODIFY user owns. Both simulations must end identical: the return value,
//! every entry's `addr`, `flags` and `nmissed`, the hash and aggregates, the ftrace filters,
//! registered ops and use counts, the text, the WARNs, and the handlers each site's hit runs;
//! then again after the batch is unregistered (as one batch too: the removals from the ftrace
//! filters recorded and applied once per ops). Batches of breakpoint probes alone, also with
//! optimized ones, are unregistered with their breakpoint removals recorded and written at
//! once before any probe leaves the hash (the simulation fails a probe unhashed while its
//! removal is pending), against C's order.

mod sim;

use proptest::prelude::*;
use rkprobes_core::errno::{Errno, Result};
use rkprobes_core::register::{register_kprobe, register_kprobes, unregister_kprobes};
use rkprobes_core::report::WarnSite;
use rkprobes_core::store::{ProbeStore, KPROBE_FLAG_DISABLED, KPROBE_TABLE_SIZE};
use rkprobes_core::text::FtraceOps;
use sim::{Call, HandlerSpec, Pid, Sim, MOD_CORE};

type Opt = Sim<true, true>;

/// Names an entry may give: ftrace sites, breakpoint sites, module text, and bad ones.
const NAMES: [&str; 10] = [
    "ftraced_fn",
    "ftraced_2",
    "ftraced_3",
    "ftraced_4",
    "ftraced_5",
    "func_a",
    "func_b",
    "mod_fn",
    "no_such_fn",
    "blacklisted_fn",
];
/// Offsets with a name: the function entry mostly, an instruction inside, past the end.
const OFFSETS: [u32; 5] = [0, 0, 0, 3, 0x50];
/// Addresses an entry may give: ftrace sites, breakpoint sites (one not a boundary), module.
const ADDRS: [usize; 7] = [0x1400, 0x1600, 0x1640, 0x1000, 0x1003, 0x1002, MOD_CORE.0];
/// Where the hits go at the end.
const HIT_SITES: [usize; 9] = [
    0x1400, 0x1600, 0x1640, 0x1680, 0x16c0, 0x1000, 0x1003, 0x1040, MOD_CORE.0,
];

#[derive(Clone, Debug)]
enum Entry {
    Name {
        name: usize,
        off: usize,
        post: bool,
        disabled: bool,
    },
    Addr {
        site: usize,
        post: bool,
        disabled: bool,
    },
    /// The probe of an earlier entry again (a fresh one if there is none).
    Again(usize),
    Null,
}

fn entry() -> impl Strategy<Value = Entry> {
    entry_of(0, 0)
}

/// An entry with a name from `NAMES[first_name..]` or an address from `ADDRS[first_addr..]`.
fn entry_of(first_name: usize, first_addr: usize) -> impl Strategy<Value = Entry> {
    prop_oneof![
        6 => (first_name..NAMES.len(), 0..OFFSETS.len(), any::<bool>(), prop::bool::weighted(0.2))
            .prop_map(|(name, off, post, disabled)| Entry::Name { name, off, post, disabled }),
        3 => (first_addr..ADDRS.len(), any::<bool>(), prop::bool::weighted(0.2))
            .prop_map(|(site, post, disabled)| Entry::Addr { site, post, disabled }),
        1 => (0..8usize).prop_map(Entry::Again),
        1 => Just(Entry::Null),
    ]
}

/// Probes registered before the batch, one by one: (name, post handler).
fn pre() -> impl Strategy<Value = Vec<(usize, bool)>> {
    prop::collection::vec((0..7usize, any::<bool>()), 0..4)
}

fn new_probe(s: &Opt, addr: usize, name: Option<&'static str>, off: u32, post: bool) -> Pid {
    let p = s.new_probe(addr, name, off);
    let post = post.then(HandlerSpec::default);
    s.set_handlers(p, Some(HandlerSpec::default()), post);
    p
}

/// What one simulation shows after a step.
#[derive(Debug, PartialEq)]
struct Seen {
    ret: Option<Result>,
    fields: Vec<(usize, u32, u64)>,
    reachable: Vec<(Pid, Option<Pid>)>,
    filters: Vec<(FtraceOps, usize)>,
    registered: [bool; 2],
    counts: (i32, i32),
    /// (address, byte) where the text is not the original.
    text: Vec<(usize, u8)>,
    warns: Vec<WarnSite>,
    hits: Vec<Vec<Call>>,
}

fn seen(s: &Opt, ret: Option<Result>, probes: &[Pid]) -> Seen {
    let mut fields = Vec::new();
    for &p in probes {
        fields.push((s.probe_addr(p), s.probe_flags(p), s.nmissed(p)));
    }
    let mut reachable = s.reachable();
    reachable.sort();
    let text = (0x1000..0x3000)
        .filter(|&a| s.text_at(a) != s.original_at(a))
        .map(|a| (a, s.text_at(a)))
        .collect();
    let warns = s.take_warns();
    let hits = HIT_SITES
        .iter()
        .map(|&a| {
            s.hit(a);
            s.take_log()
        })
        .collect();
    Seen {
        ret,
        fields,
        reachable,
        filters: s.ftrace_filters(),
        registered: [
            s.ftrace_registered(FtraceOps::Plain),
            s.ftrace_registered(FtraceOps::Ipmodify),
        ],
        counts: s.ftrace_counts(),
        text,
        warns,
        hits,
    }
}

/// Breakpoint sites the optimizer may turn into jumps, with `Setup::optimize`.
const OPTIMIZABLE: [usize; 2] = [0x1000, 0x1040];

/// What a scenario runs with besides its probes.
#[derive(Clone, Copy, Default)]
struct Setup {
    /// An address another IPMODIFY user owns.
    busy: Option<usize>,
    /// The optimizer may optimize `OPTIMIZABLE` and runs after each registration.
    optimize: bool,
}

/// Runs the scenario on a fresh simulation; `batching` lets `register_kprobes()` and
/// `unregister_kprobes()` batch.
fn scenario(
    batching: bool,
    pre: &[(usize, bool)],
    entries: &[Entry],
    setup: Setup,
) -> (Vec<Seen>, u64) {
    let s = Opt::new();
    s.set_batching(batching);
    if let Some(b) = setup.busy {
        s.set_ftrace_busy(b);
    }
    if setup.optimize {
        for a in OPTIMIZABLE {
            s.set_optimizable(a);
        }
    }
    let mut pre_probes = Vec::new();
    for &(name, post) in pre {
        let p = new_probe(&s, 0, Some(NAMES[name]), 0, post);
        if register_kprobe(&s, p).is_ok() {
            pre_probes.push(p);
        }
    }
    if setup.optimize {
        s.run_optimizer();
    }
    s.take_warns();
    let mut probes: Vec<Pid> = Vec::new();
    let mut kps: Vec<Option<Pid>> = Vec::new();
    for e in entries {
        let p = match *e {
            Entry::Name {
                name,
                off,
                post,
                disabled,
            } => {
                let p = new_probe(&s, 0, Some(NAMES[name]), OFFSETS[off], post);
                if disabled {
                    s.set_flags(p, KPROBE_FLAG_DISABLED);
                }
                Some(p)
            }
            Entry::Addr {
                site,
                post,
                disabled,
            } => {
                let p = new_probe(&s, ADDRS[site], None, 0, post);
                if disabled {
                    s.set_flags(p, KPROBE_FLAG_DISABLED);
                }
                Some(p)
            }
            Entry::Again(j) => Some(match kps.iter().flatten().nth(j) {
                Some(&p) => p,
                None => new_probe(&s, 0, Some(NAMES[0]), 0, false),
            }),
            Entry::Null => None,
        };
        if let Some(p) = p {
            if !probes.contains(&p) {
                probes.push(p);
            }
        }
        kps.push(p);
    }
    let mut out = Vec::new();
    let before = s.ftrace_updates();
    let ret = register_kprobes(&s, &kps);
    let updates = s.ftrace_updates() - before;
    if setup.optimize {
        s.run_optimizer();
    }
    out.push(seen(&s, Some(ret), &probes));
    if ret.is_ok() {
        unregister_kprobes(&s, &kps);
        out.push(seen(&s, None, &probes));
    }
    unregister_kprobes(&s, &pre_probes);
    s.run_optimizer();
    out.push(seen(&s, None, &probes));
    (out, updates)
}

fn check(pre: &[(usize, bool)], entries: &[Entry], setup: Setup) {
    let (batched, updates) = scenario(true, pre, entries, setup);
    let (one_by_one, c_updates) = scenario(false, pre, entries, setup);
    assert_eq!(
        batched, one_by_one,
        "batched (left) and one by one (right) differ; pre {pre:?}, entries {entries:?}"
    );
    if batched[0].ret == Some(Ok(())) {
        assert!(
            updates <= c_updates,
            "{updates} filter updates for the batch, {c_updates} one by one"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn batch_equals_one_by_one(pre in pre(), entries in prop::collection::vec(entry(), 2..10)) {
        check(&pre, &entries, Setup::default());
    }

    #[test]
    fn batch_equals_one_by_one_with_a_busy_ipmodify_site(
        pre in pre(),
        entries in prop::collection::vec(entry(), 2..10),
        busy in prop::sample::select(vec![0x1400usize, 0x1600, 0x1640]),
    ) {
        check(&pre, &entries, Setup { busy: Some(busy), optimize: false });
    }

    #[test]
    fn breakpoint_batch_equals_one_by_one(
        pre in breakpoint_pre(),
        entries in prop::collection::vec(breakpoint_entry(), 2..10),
        optimize in any::<bool>(),
    ) {
        check(&pre, &entries, Setup { busy: None, optimize });
    }
}

/// An entry of a batch without ftrace sites: breakpoint sites, module text and bad entries.
fn breakpoint_entry() -> impl Strategy<Value = Entry> {
    entry_of(5, 3)
}

/// Breakpoint probes registered before the batch: (name, post handler).
fn breakpoint_pre() -> impl Strategy<Value = Vec<(usize, bool)>> {
    prop::collection::vec((5..8usize, any::<bool>()), 0..4)
}

#[test]
fn breakpoints_removed_together() {
    let s = Opt::new();
    let kps: Vec<Pid> = ["func_b", "func_a", "mod_fn"]
        .into_iter()
        .map(|name| new_probe(&s, 0, Some(name), 0, false))
        .collect();
    // A probe that stays, sharing func_a with the batch: its aggregate keeps the breakpoint.
    let stays = new_probe(&s, 0, Some("func_a"), 0, false);
    register_kprobes(&s, &kps).unwrap();
    register_kprobe(&s, stays).unwrap();
    unregister_kprobes(&s, &kps);
    assert_eq!(s.batch_disarmed(), 2, "func_b and mod_fn, in one batch");
    assert_eq!(s.text_at(0x1040), s.original_at(0x1040));
    assert_eq!(s.text_at(MOD_CORE.0), s.original_at(MOD_CORE.0));
    assert_ne!(
        s.text_at(0x1000),
        s.original_at(0x1000),
        "func_a stays armed"
    );
    unregister_kprobes(&s, &[stays]);
    assert_eq!(s.text_at(0x1000), s.original_at(0x1000));
    assert_eq!(s.batch_disarmed(), 2, "one probe: not a batch");
}

/// A probe by name on each of the simulation's five ftrace sites.
fn on_every_ftrace_site(s: &Opt) -> Vec<Pid> {
    [
        "ftraced_fn",
        "ftraced_2",
        "ftraced_3",
        "ftraced_4",
        "ftraced_5",
    ]
    .into_iter()
    .map(|name| new_probe(s, 0, Some(name), 0, false))
    .collect()
}

#[test]
fn one_filter_update_per_ops() {
    let s = Opt::new();
    let mut kps = on_every_ftrace_site(&s);
    // One with a post handler: the IPMODIFY ops.
    kps.push(new_probe(&s, 0, Some("ftraced_4"), 0, true));
    kps.push(new_probe(&s, 0, Some("func_a"), 0, false));
    register_kprobes(&s, &kps).unwrap();
    assert_eq!(
        s.ftrace_updates(),
        1,
        "five ftrace probes, one filter update"
    );
    assert!(s.ftrace_registered(FtraceOps::Plain));
    assert!(
        !s.ftrace_registered(FtraceOps::Ipmodify),
        "joined an armed aggregate"
    );
    assert_eq!(s.ftrace_counts(), (5, 0));
    for a in [0x1400, 0x1600, 0x1640, 0x1680, 0x16c0] {
        assert!(s.ftrace_filtered(FtraceOps::Plain, a));
    }
    unregister_kprobes(&s, &kps);
    // The aggregate that gained a post_handler is disarmed on the plain ops it is armed on
    // (upstream 6.12 tries the IPMODIFY ops: docs/upstream-behaviours.md, item 4).
    assert_eq!(s.ftrace_counts(), (0, 0));
    assert!(!s.ftrace_registered(FtraceOps::Plain));
    assert_eq!(s.take_warns(), []);
}

#[test]
fn one_filter_update_per_ops_to_unregister() {
    let s = Opt::new();
    let mut kps = on_every_ftrace_site(&s);
    kps.push(new_probe(&s, 0, Some("func_a"), 0, false));
    register_kprobes(&s, &kps).unwrap();
    let before = s.ftrace_updates();
    unregister_kprobes(&s, &kps);
    assert_eq!(
        s.ftrace_updates() - before,
        1,
        "five ftrace probes, one filter update"
    );
    assert!(s.ftrace_filters().is_empty());
    assert_eq!(s.ftrace_counts(), (0, 0));
    assert!(!s.ftrace_registered(FtraceOps::Plain));
    assert!(s.take_warns().is_empty());
}

#[test]
fn a_failed_batched_removal_removes_one_by_one() {
    let s = Opt::new();
    let a = new_probe(&s, 0, Some("ftraced_2"), 0, false);
    let b = new_probe(&s, 0, Some("ftraced_3"), 0, false);
    register_kprobes(&s, &[a, b]).unwrap();
    s.fail_next_ftrace_batch_remove(Errno::ENOMEM);
    unregister_kprobes(&s, &[a, b]);
    assert!(s.ftrace_filters().is_empty(), "removed one by one");
    assert_eq!(s.ftrace_counts(), (0, 0));
    assert!(s.take_warns().is_empty());
    s.hit(0x1600);
    assert!(s.take_log().is_empty());
}

#[test]
fn a_failed_filter_update_registers_one_by_one() {
    // ftrace fails the batched update (no memory): the batch is rolled back, the entries get
    // back what the caller passed, and are registered one by one, as C does; here the failure
    // was transient and the second pass succeeds.
    let s = Opt::new();
    let a = new_probe(&s, 0, Some("ftraced_2"), 0, false);
    let b = new_probe(&s, 0x1640, None, 0, true);
    let c = new_probe(&s, 0, Some("func_b"), 0, false);
    s.fail_next_ftrace_add(Errno::ENOMEM);
    register_kprobes(&s, &[a, b, c]).unwrap();
    assert_eq!(s.probe_addr(a), 0x1600);
    assert_eq!(s.probe_addr(b), 0x1640);
    assert!(s.ftrace_filtered(FtraceOps::Plain, 0x1600));
    assert!(s.ftrace_filtered(FtraceOps::Ipmodify, 0x1640));
    assert_eq!(s.ftrace_counts(), (1, 1));
    assert!(s.take_warns().is_empty());
    s.hit(0x1600);
    assert_eq!(s.take_log(), vec![Call::Pre(a)]);
    unregister_kprobes(&s, &[a, b, c]);
    s.run_optimizer();
    assert!(s.ftrace_filters().is_empty());
    assert_eq!(s.ftrace_counts(), (0, 0));
    assert!(s.text_pristine());
}

#[test]
fn the_same_probe_twice_in_an_unregistration_batch() {
    // Unregistered in one batch, the second time an entry gets -EINVAL and `addr` NULL, as in
    // C's order, whether its hash entry was unlinked at once or after the batch's breakpoints.
    // Without optprobes a probe is its own hash entry; with them, inside an aggregate.
    fn run<const OPT: bool>(batching: bool) -> (Vec<(usize, u32)>, Vec<u8>, u64) {
        let s = Sim::<OPT, true>::new();
        s.set_batching(batching);
        let probe = |name: &'static str, post: bool| {
            let p = s.new_probe(0, Some(name), 0);
            s.set_handlers(
                p,
                Some(HandlerSpec::default()),
                post.then(HandlerSpec::default),
            );
            p
        };
        let a = probe("func_a", false);
        let b = probe("func_b", false);
        let c = probe("func_b", true);
        let d = probe("mod_fn", false);
        register_kprobes(&s, &[a, b, c, d]).unwrap();
        unregister_kprobes(&s, &[a, b, a, c, b, d, d]);
        assert!(s.reachable().is_empty(), "a probe left in the hash");
        let fields = [a, b, c, d]
            .iter()
            .map(|&p| (s.probe_addr(p), s.probe_flags(p)))
            .collect();
        let text = [0x1000, 0x1040, MOD_CORE.0].map(|x| s.text_at(x)).to_vec();
        (fields, text, s.batch_disarmed())
    }
    for (batched, one_by_one) in [
        (run::<false>(true), run::<false>(false)),
        (run::<true>(true), run::<true>(false)),
    ] {
        assert_eq!(batched.0, one_by_one.0);
        assert_eq!(batched.1, one_by_one.1);
        assert_eq!(
            batched.2, 3,
            "func_a, func_b's aggregate and mod_fn in one batch"
        );
    }
}

#[test]
fn a_large_breakpoint_batch_writes_as_it_goes() {
    // More breakpoints than the batch records between two writes (one per hash bucket): some
    // aggregates, one probe given twice; the result is C's order's.
    fn run(batching: bool) -> (Vec<(usize, u32)>, Vec<u8>, u64) {
        let s = Sim::<false, true>::new();
        s.set_batching(batching);
        let sites: Vec<usize> = (0x1000..0x1200).filter(|&a| s.is_boundary(a)).collect();
        assert!(sites.len() > 2 * KPROBE_TABLE_SIZE, "{} sites", sites.len());
        let mut kps: Vec<Pid> = Vec::new();
        for (k, &addr) in sites.iter().enumerate() {
            for _ in 0..1 + usize::from(k % 17 == 0) {
                let p = s.new_probe(addr, None, 0);
                s.set_handlers(p, Some(HandlerSpec::default()), None);
                kps.push(p);
            }
        }
        register_kprobes(&s, &kps).unwrap();
        let mut batch = kps.clone();
        batch.insert(100, kps[3]);
        unregister_kprobes(&s, &batch);
        assert!(s.reachable().is_empty(), "a probe left in the hash");
        let fields = kps
            .iter()
            .map(|&p| (s.probe_addr(p), s.probe_flags(p)))
            .collect();
        let text = (0x1000..0x1200).map(|a| s.text_at(a)).collect();
        (fields, text, s.batch_disarmed())
    }
    let (batched, one_by_one) = (run(true), run(false));
    assert_eq!(batched.0, one_by_one.0);
    assert_eq!(batched.1, one_by_one.1);
    assert!(
        batched.2 > 2 * KPROBE_TABLE_SIZE as u64,
        "{} written in batches",
        batched.2
    );
    assert_eq!(one_by_one.2, 0);
}

/// A batch whose probes with post handlers are the first users of the IPMODIFY ops, one of
/// them on a function another IPMODIFY ftrace user holds: 6.12's ftrace takes the address into
/// the filter of the unregistered ops and refuses the ops' registration with -EBUSY. C fails
/// the call with -EBUSY and rolls back; so must the batch, leaving no filter entry, no ops
/// registered and no count behind, and the next batch must work.
#[test]
fn a_batch_on_a_busy_ipmodify_site_fails_as_c() {
    for busy_first in [true, false] {
        let s = Opt::new();
        s.set_ftrace_busy(s.sym("ftraced_2"));
        let names = if busy_first {
            ["ftraced_2", "ftraced_fn", "ftraced_3"]
        } else {
            ["ftraced_fn", "ftraced_3", "ftraced_2"]
        };
        let kps: Vec<Pid> = names
            .into_iter()
            .map(|n| new_probe(&s, 0, Some(n), 0, true))
            .collect();
        assert_eq!(
            register_kprobes(&s, &kps),
            Err(Errno::EBUSY),
            "busy first: {busy_first}"
        );
        assert!(s.reachable().is_empty());
        assert!(s.ftrace_filters().is_empty(), "{:?}", s.ftrace_filters());
        assert!(!s.ftrace_registered(FtraceOps::Ipmodify));
        assert!(!s.ftrace_registered(FtraceOps::Plain));
        assert_eq!(s.ftrace_counts(), (0, 0));
        // Without the busy function the same ops serve the next batch.
        let ok: Vec<Pid> = ["ftraced_fn", "ftraced_3"]
            .into_iter()
            .map(|n| new_probe(&s, 0, Some(n), 0, true))
            .collect();
        register_kprobes(&s, &ok).unwrap();
        assert!(s.ftrace_registered(FtraceOps::Ipmodify));
        unregister_kprobes(&s, &ok);
        assert!(!s.ftrace_registered(FtraceOps::Ipmodify));
        assert_eq!(s.ftrace_counts(), (0, 0));
    }
}

/// After an arming that fails inside a batch, C never reached the entries after the failing
/// one: their `nmissed` (left from an earlier registration of the caller's struct) stays what
/// the caller had, as their `addr` and `flags` do.
#[test]
fn entries_after_a_failed_arming_keep_their_nmissed() {
    let s = Opt::new();
    s.set_ftrace_busy(s.sym("ftraced_2"));
    let kps = vec![
        new_probe(&s, 0, Some("ftraced_fn"), 0, true),
        new_probe(&s, 0, Some("ftraced_2"), 0, true),
        new_probe(&s, 0, Some("func_a"), 0, false),
        new_probe(&s, 0, Some("ftraced_3"), 0, false),
    ];
    for &p in &kps {
        s.set_probe_nmissed(p, 7);
    }
    assert_eq!(register_kprobes(&s, &kps), Err(Errno::EBUSY));
    let nmissed: Vec<u64> = kps.iter().map(|&p| s.nmissed(p)).collect();
    // Entry 0 registered (reset) and rolled back, entry 1 reset before its arming failed,
    // entries 2 and 3 never reached.
    assert_eq!(nmissed, [0, 0, 7, 7]);
    assert!(s.reachable().is_empty());
    assert!(s.text_pristine());
}

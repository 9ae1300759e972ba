// SPDX-License-Identifier: GPL-2.0

//! Issue 41: a kprobe-on-ftrace aggregate armed on `kprobe_ftrace_ops` that gains a post_handler
//! (a child with one joins) must be disarmed through the ops it is armed on. Upstream 6.12 picks
//! the ops by "has a post_handler now": the disarm goes to `kprobe_ipmodify_ops`, whose filter
//! does not hold the address (-ENOENT, a WARN, `kprobes/enabled` fails), its count goes to -1
//! and the plain ops keeps the address and a user too many, so that it stays registered, and
//! once its last address goes, with an empty filter: ftrace then calls kprobes' handler on every
//! function (docs/findings/ftrace-aggregate-disarm.md).

mod sim;

use rkprobes_core::register::{
    arm_all_kprobes, disable_kprobe, disarm_all_kprobes, enable_kprobe, register_kprobe,
    unregister_kprobe,
};
use rkprobes_core::text::FtraceOps;
use sim::{Call, HandlerSpec, Sim};

type Opt = Sim<true, true>;

/// A probe on the ftrace site without a post_handler (a `p:` event), then one with a
/// post_handler (kprobe_example) joining it.
fn plain_then_post(s: &Opt) -> (sim::Pid, sim::Pid) {
    let p = s.new_probe(0, Some(sim::FTRACED), 0);
    s.set_handlers(p, Some(HandlerSpec::default()), None);
    register_kprobe(s, p).unwrap();
    let q = s.new_probe(0, Some(sim::FTRACED), 0);
    s.set_handlers(
        q,
        Some(HandlerSpec::default()),
        Some(HandlerSpec::default()),
    );
    register_kprobe(s, q).unwrap();
    (p, q)
}

/// Nothing of kprobes left in ftrace: no filter, no registered ops, no users counted.
fn assert_ftrace_clean(s: &Opt) {
    assert_eq!(s.ftrace_filters(), vec![]);
    assert!(!s.ftrace_registered(FtraceOps::Plain));
    assert!(!s.ftrace_registered(FtraceOps::Ipmodify));
    assert_eq!(s.ftrace_counts(), (0, 0));
}

#[test]
fn global_disarm_of_an_aggregate_that_gained_a_post_handler() {
    let s = Opt::new();
    let addr = s.sym(sim::FTRACED);
    let (p, q) = plain_then_post(&s);
    s.hit(addr);
    assert_eq!(
        s.take_log(),
        vec![Call::Pre(q), Call::Pre(p), Call::Post(q)]
    );

    let sw = disarm_all_kprobes(&s);
    assert_eq!((sw.errors, sw.total, sw.ret), (0, 1, Ok(())));
    assert_eq!(s.take_warns(), vec![]);
    assert_ftrace_clean(&s);
    s.hit(addr);
    assert_eq!(s.take_log(), vec![], "globally disarmed: no handler runs");

    // Armed again, now where its post_handler belongs.
    let sw = arm_all_kprobes(&s);
    assert_eq!((sw.errors, sw.total, sw.ret), (0, 1, Ok(())));
    assert_eq!(s.ftrace_filters(), vec![(FtraceOps::Ipmodify, addr)]);
    assert_eq!(s.ftrace_counts(), (0, 1));
    s.hit(addr);
    assert_eq!(
        s.take_log(),
        vec![Call::Pre(q), Call::Pre(p), Call::Post(q)]
    );

    unregister_kprobe(&s, q);
    unregister_kprobe(&s, p);
    assert_eq!(s.take_warns(), vec![]);
    assert_ftrace_clean(&s);
}

#[test]
fn disabling_an_aggregate_that_gained_a_post_handler() {
    let s = Opt::new();
    let addr = s.sym(sim::FTRACED);
    let (p, q) = plain_then_post(&s);
    // Both children disabled: the aggregate is disarmed (the `__disable_kprobe` path).
    disable_kprobe(&s, q).unwrap();
    disable_kprobe(&s, p).unwrap();
    assert_eq!(s.take_warns(), vec![]);
    assert_ftrace_clean(&s);
    s.hit(addr);
    assert_eq!(s.take_log(), vec![]);
    enable_kprobe(&s, p).unwrap();
    s.hit(addr);
    assert_eq!(s.take_log(), vec![Call::Pre(p)]);
    unregister_kprobe(&s, p);
    unregister_kprobe(&s, q);
    assert_eq!(s.take_warns(), vec![]);
    assert_ftrace_clean(&s);
}

#[test]
fn the_issue_41_sequence_leaves_no_ops_behind() {
    // The stress's order: a `p:` event, kprobe_example joins, kprobes/enabled 0 and 1, the
    // module goes, the event goes; then a probe elsewhere comes and goes.
    let s = Opt::new();
    let (p, q) = plain_then_post(&s);
    for _ in 0..3 {
        assert_eq!(disarm_all_kprobes(&s).ret, Ok(()));
        assert_eq!(arm_all_kprobes(&s).ret, Ok(()));
    }
    unregister_kprobe(&s, q);
    disable_kprobe(&s, p).unwrap();
    unregister_kprobe(&s, p);
    assert_eq!(s.take_warns(), vec![]);
    assert_ftrace_clean(&s);

    let r = s.new_probe(0, Some(sim::FTRACED_MORE[0]), 0);
    s.set_handlers(r, Some(HandlerSpec::default()), None);
    register_kprobe(&s, r).unwrap();
    assert_eq!(s.ftrace_counts(), (1, 0));
    unregister_kprobe(&s, r);
    assert_ftrace_clean(&s);
}

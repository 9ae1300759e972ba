// SPDX-License-Identifier: GPL-2.0

//! Registration pipeline against the simulated platform: C's errno per bad input, the
//! aggregation rules, arming and text restoration, module and init-memory handling.

mod sim;

use rkprobes_core::blacklist::kprobe_add_ksym_blacklist;
use rkprobes_core::blacklist::ModuleAreas;
use rkprobes_core::errno::Errno;
use rkprobes_core::optimizer::unoptimize_kprobe;
use rkprobes_core::register::{
    arm_all_kprobes, disable_kprobe, disarm_all_kprobes, enable_kprobe, kprobe_free_init_mem,
    kprobe_on_func_entry, kprobes_module_callback, register_kprobe, register_kprobes,
    unregister_kprobe, unregister_kprobes, ModuleEvent,
};
use rkprobes_core::report::{Message, WarnSite};
use rkprobes_core::store::{
    ProbeStore, KPROBE_FLAG_DISABLED, KPROBE_FLAG_FTRACE, KPROBE_FLAG_GONE,
    KPROBE_FLAG_ON_FUNC_ENTRY, KPROBE_FLAG_OPTIMIZED,
};
use rkprobes_core::table::get_kprobe;
use rkprobes_core::text::FtraceOps;
use sim::{Call, HandlerSpec, Sim, INT3, JMP, MOD_CORE};

type Plain = Sim<false, false>;
type Opt = Sim<true, true>;

fn probe<const O: bool, const F: bool>(s: &Sim<O, F>, sym: &'static str, off: u32) -> sim::Pid {
    let p = s.new_probe(0, Some(sym), off);
    s.set_handlers(p, Some(HandlerSpec::default()), None);
    p
}

fn probe_at<const O: bool, const F: bool>(s: &Sim<O, F>, addr: usize) -> sim::Pid {
    let p = s.new_probe(addr, None, 0);
    s.set_handlers(p, Some(HandlerSpec::default()), None);
    p
}

#[test]
fn symbol_and_addr_combinations() {
    let s = Plain::new();
    let both = s.new_probe(s.sym("func_a"), Some("func_a"), 0);
    assert_eq!(register_kprobe(&s, both), Err(Errno::EINVAL));
    let neither = s.new_probe(0, None, 0);
    assert_eq!(register_kprobe(&s, neither), Err(Errno::EINVAL));
    let unknown = probe(&s, "no_such_function", 0);
    assert_eq!(register_kprobe(&s, unknown), Err(Errno::ENOENT));
    let nosym = probe_at(&s, 0x9000_0000);
    assert_eq!(register_kprobe(&s, nosym), Err(Errno::ENOENT));
    assert_eq!(s.slots_in_use(), 0);
    assert!(s.text_pristine());
}

#[test]
fn resolved_address_is_written_back_even_on_failure() {
    let s = Plain::new();
    // func_a+2 is inside a 2-byte instruction: the arch refuses it, addr stays resolved.
    let p = probe(&s, "func_a", 2);
    assert_eq!(register_kprobe(&s, p), Err(Errno::EILSEQ));
    assert_eq!(s.probe_addr(p), s.sym("func_a") + 2);
    // sym+offset past the symbol start renormalises onto the next symbol.
    let q = probe(&s, "func_a", 0x40);
    register_kprobe(&s, q).unwrap();
    assert_eq!(s.probe_addr(q), s.sym("func_b"));
    assert_ne!(s.probe_flags(q) & KPROBE_FLAG_ON_FUNC_ENTRY, 0);
}

#[test]
fn reserved_and_blacklisted_addresses() {
    let s = Plain::new();
    for (sym, off) in [
        ("kprobe_handler_fn", 0), // .kprobes.text (arch default blacklist)
        ("noinstr_fn", 0),        // .noinstr.text, added by populate
        ("gate_fn", 0),           // gate area
        ("jump_label_fn", 0x10),  // jump_label_text_reserved
        ("static_call_fn", 0x10), // static_call_text_reserved
        ("bug_fn", 0x10),         // find_bug
        ("__cfi_func_x", 0),      // CFI preamble symbol
    ] {
        let p = probe(&s, sym, off);
        assert_eq!(register_kprobe(&s, p), Err(Errno::EINVAL), "{sym}+{off}");
    }
    // The blacklist list, and the base name of a suffixed symbol.
    let p = probe(&s, "blacklisted_fn", 0);
    register_kprobe(&s, p).unwrap();
    unregister_kprobe(&s, p);
    kprobe_add_ksym_blacklist(&s, s.sym("blacklisted_fn")).unwrap();
    let p = probe(&s, "blacklisted_fn", 0);
    assert_eq!(register_kprobe(&s, p), Err(Errno::EINVAL));
    let p = probe(&s, "blacklisted_fn.isra.0", 0);
    assert_eq!(register_kprobe(&s, p), Err(Errno::EINVAL));
    assert_eq!(s.slots_in_use(), 0);
    assert!(s.text_pristine());
}

#[test]
fn ftrace_site_needs_kprobes_on_ftrace() {
    let s = Plain::new();
    let p = probe(&s, sim::FTRACED, 0);
    assert_eq!(register_kprobe(&s, p), Err(Errno::EINVAL));

    let s = Opt::new();
    let p = probe(&s, sim::FTRACED, 0);
    register_kprobe(&s, p).unwrap();
    let addr = s.sym(sim::FTRACED);
    assert_ne!(s.probe_flags(p) & KPROBE_FLAG_FTRACE, 0);
    assert!(s.ftrace_filtered(FtraceOps::Plain, addr));
    assert!(s.ftrace_registered(FtraceOps::Plain));
    assert!(s.text_pristine(), "ftrace probes do not write int3");
    let q = probe(&s, sim::FTRACED, 0);
    register_kprobe(&s, q).unwrap();
    s.hit(addr);
    assert_eq!(s.take_log(), vec![Call::Pre(q), Call::Pre(p)]);
    unregister_kprobes(&s, &[p, q]);
    assert!(!s.ftrace_registered(FtraceOps::Plain));
    assert!(!s.ftrace_filtered(FtraceOps::Plain, addr));

    // A probe with a post_handler is armed on the IPMODIFY ops.
    let r = s.new_probe(0, Some(sim::FTRACED), 0);
    s.set_handlers(
        r,
        Some(HandlerSpec::default()),
        Some(HandlerSpec::default()),
    );
    register_kprobe(&s, r).unwrap();
    assert!(s.ftrace_filtered(FtraceOps::Ipmodify, addr));
    s.hit(addr);
    assert_eq!(s.take_log(), vec![Call::Pre(r), Call::Post(r)]);
    unregister_kprobe(&s, r);
    assert!(!s.ftrace_registered(FtraceOps::Ipmodify));
}

#[test]
fn ftrace_aggregate_gaining_post_handler_disarms_where_armed() {
    // The aggregate was armed on the plain ops; once a child brings a post_handler it is still
    // disarmed there (upstream 6.12 tries the IPMODIFY ops, fails, and sets the last child's
    // addr to NULL: docs/upstream-behaviours.md, item 4; tests/ftrace_aggr.rs).
    let s = Opt::new();
    let addr = s.sym(sim::FTRACED);
    let p = probe(&s, sim::FTRACED, 0);
    register_kprobe(&s, p).unwrap();
    let q = s.new_probe(0, Some(sim::FTRACED), 0);
    s.set_handlers(
        q,
        Some(HandlerSpec::default()),
        Some(HandlerSpec::default()),
    );
    register_kprobe(&s, q).unwrap();
    s.hit(addr);
    assert_eq!(
        s.take_log(),
        vec![Call::Pre(q), Call::Pre(p), Call::Post(q)]
    );
    unregister_kprobes(&s, &[p, q]);
    assert_eq!(s.probe_addr(q), addr);
    assert!(!s.ftrace_registered(FtraceOps::Plain));
    assert!(s.take_warns().is_empty());
}

#[test]
fn twice_registered_is_einval() {
    let s = Plain::new();
    let p = probe(&s, "func_a", 0);
    register_kprobe(&s, p).unwrap();
    // As trace_kprobe would see it after the first registration: addr set, symbol cleared.
    s.reset_probe(p, s.sym("func_a"), None, 0);
    assert_eq!(register_kprobe(&s, p), Err(Errno::EINVAL));
    // A child of an aggregate, too.
    let q = probe(&s, "func_a", 0);
    register_kprobe(&s, q).unwrap();
    s.reset_probe(q, s.sym("func_a"), None, 0);
    assert_eq!(register_kprobe(&s, q), Err(Errno::EINVAL));
}

#[test]
fn module_text_checks_and_refcount() {
    let s = Plain::new();
    let p = probe(&s, "mod_fn", 0);
    register_kprobe(&s, p).unwrap();
    assert_eq!(s.module_refs(), 0, "probes do not pin modules");
    let q = probe(&s, "mod_init_fn", 0);
    assert_eq!(
        register_kprobe(&s, q),
        Err(Errno::ENOENT),
        "init text of a live module"
    );
    s.set_module_coming(true);
    s.reset_probe(q, 0, Some("mod_init_fn"), 0);
    register_kprobe(&s, q).unwrap();
    s.set_module_get_fails(true);
    let r = probe(&s, "mod_fn", 1);
    assert_eq!(
        register_kprobe(&s, r),
        Err(Errno::ENOENT),
        "module going away"
    );
    assert_eq!(s.module_refs(), 0);
}

#[test]
fn slot_exhaustion_is_enomem() {
    let s = Plain::new();
    s.set_slot_capacity(1);
    let p = probe(&s, "func_a", 0);
    register_kprobe(&s, p).unwrap();
    let q = probe(&s, "func_b", 0);
    assert_eq!(register_kprobe(&s, q), Err(Errno::ENOMEM));
    // Joining the existing address needs no new slot.
    let r = probe(&s, "func_a", 0);
    register_kprobe(&s, r).unwrap();
}

#[test]
fn register_masks_flags_and_resets_nmissed() {
    let s = Plain::new();
    let p = probe(&s, "func_a", 0);
    s.set_user_flags(
        p,
        KPROBE_FLAG_GONE | KPROBE_FLAG_OPTIMIZED | KPROBE_FLAG_DISABLED,
    );
    s.inc_nmissed(p);
    register_kprobe(&s, p).unwrap();
    assert_eq!(
        s.probe_flags(p),
        KPROBE_FLAG_DISABLED | KPROBE_FLAG_ON_FUNC_ENTRY
    );
    assert_eq!(s.nmissed(p), 0);
    assert!(s.text_pristine(), "a disabled probe is not armed");
    enable_kprobe(&s, p).unwrap();
    assert_eq!(s.text_at(s.sym("func_a")), INT3);
}

#[test]
fn batch_registration_rolls_back() {
    let s = Plain::new();
    assert_eq!(register_kprobes(&s, &[] as &[sim::Pid]), Err(Errno::EINVAL));
    let a = probe(&s, "func_a", 0);
    let b = probe(&s, "func_b", 0);
    let bad = probe(&s, "func_c", 2);
    assert_eq!(register_kprobes(&s, &[a, b, bad]), Err(Errno::EILSEQ));
    assert!(s.reachable().is_empty());
    assert!(s.text_pristine());
    assert_eq!(s.slots_in_use(), 0);
}

#[test]
fn batch_with_a_null_entry() {
    // A NULL in the C array arrives as `None`: -EINVAL with rollback when registering, skipped
    // when unregistering (C dereferences it in both).
    let s = Plain::new();
    let a = probe(&s, "func_a", 0);
    let b = probe(&s, "func_b", 0);
    assert_eq!(
        register_kprobes(&s, &[Some(a), None, Some(b)]),
        Err(Errno::EINVAL)
    );
    assert!(s.reachable().is_empty());
    assert!(s.text_pristine());
    assert_eq!(
        register_kprobes(&s, &[None::<sim::Pid>]),
        Err(Errno::EINVAL)
    );
    // Fresh structs: an unregistered one keeps its address (C's behaviour).
    let c = probe(&s, "func_a", 0);
    let d = probe(&s, "func_b", 0);
    register_kprobes(&s, &[Some(c), Some(d)]).unwrap();
    assert_eq!(s.reachable().len(), 2);
    unregister_kprobes(&s, &[None, Some(c), None, Some(d)]);
    assert!(s.reachable().is_empty());
    assert!(s.text_pristine());
    unregister_kprobes(&s, &[None::<sim::Pid>]);
}

#[test]
fn invalid_probe_operations() {
    let s = Plain::new();
    let p = probe_at(&s, s.sym("func_a"));
    assert_eq!(enable_kprobe(&s, p), Err(Errno::EINVAL));
    assert_eq!(disable_kprobe(&s, p), Err(Errno::EINVAL));
    unregister_kprobe(&s, p);
    assert_eq!(
        s.probe_addr(p),
        0,
        "unregistering an invalid probe clears addr"
    );
}

#[test]
fn func_entry_check() {
    let s = Plain::new();
    assert_eq!(kprobe_on_func_entry(&s, 0, Some(b"func_a"), 0), Ok(()));
    assert_eq!(
        kprobe_on_func_entry(&s, 0, Some(b"func_a"), 3),
        Err(Errno::EINVAL)
    );
    assert_eq!(kprobe_on_func_entry(&s, s.sym("func_b"), None, 0), Ok(()));
    assert_eq!(
        kprobe_on_func_entry(&s, 0, Some(b"nope"), 0),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        kprobe_on_func_entry(&s, 1, Some(b"func_a"), 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(kprobe_on_func_entry(&s, 0, None, 0), Err(Errno::EINVAL));
}

#[test]
fn aggregate_rules() {
    let s = Plain::new();
    let addr = s.sym("func_c");
    let p1 = probe(&s, "func_c", 0);
    let p2 = probe(&s, "func_c", 0);
    let p3 = probe(&s, "func_c", 0);
    s.set_handlers(
        p1,
        Some(HandlerSpec::default()),
        Some(HandlerSpec::default()),
    );
    register_kprobe(&s, p1).unwrap();
    assert_eq!(
        get_kprobe(&s, addr),
        Some(p1),
        "a lone probe is hashed as itself"
    );
    register_kprobe(&s, p2).unwrap();
    register_kprobe(&s, p3).unwrap();
    let ap = get_kprobe(&s, addr).unwrap();
    assert!(s.is_aggr(ap));
    assert_eq!(
        s.probe_flags(ap),
        s.probe_flags(p1),
        "aggregate copies its first probe's flags"
    );
    assert!(s.looks_registered(p1) && s.looks_registered(p2) && s.looks_registered(p3));

    // Fan-out: newest first, post only for probes that have one.
    s.hit(addr);
    assert_eq!(
        s.take_log(),
        vec![Call::Pre(p3), Call::Pre(p2), Call::Pre(p1), Call::Post(p1)]
    );

    // A non-zero pre_handler skips later children and the single-step (so the post_handler).
    s.set_handlers(
        p2,
        Some(HandlerSpec {
            ret: 1,
            reenter: None,
        }),
        None,
    );
    s.hit(addr);
    assert_eq!(s.take_log(), vec![Call::Pre(p3), Call::Pre(p2)]);

    // DISABLED on the aggregate only when every child is; disarmed only then.
    disable_kprobe(&s, p1).unwrap();
    disable_kprobe(&s, p2).unwrap();
    assert_eq!(s.probe_flags(ap) & KPROBE_FLAG_DISABLED, 0);
    assert_eq!(s.text_at(addr), INT3);
    disable_kprobe(&s, p3).unwrap();
    assert_ne!(s.probe_flags(ap) & KPROBE_FLAG_DISABLED, 0);
    assert!(s.text_pristine());
    enable_kprobe(&s, p2).unwrap();
    assert_eq!(s.text_at(addr), INT3);
    s.hit(addr);
    assert_eq!(s.take_log(), vec![Call::Pre(p2)]);

    // Unregistering children one by one; the text comes back when the last one goes.
    unregister_kprobe(&s, p2);
    assert!(
        s.looks_registered(p2),
        "list_del_rcu leaves the child looking registered"
    );
    assert!(s.text_pristine(), "only disabled children are left");
    unregister_kprobes(&s, &[p1, p3]);
    assert!(s.reachable().is_empty());
    assert_eq!(s.live_aggregates(), 0);
    assert_eq!(s.slots_in_use(), 0);
    assert!(s.text_pristine());
}

#[test]
fn nmissed_on_reentry_counts_every_child() {
    // lib/test_kprobes.c test_kprobe_missed: pre and post each call the probed function.
    let s = Plain::new();
    let addr = s.sym("func_d");
    let p = s.new_probe(0, Some("func_d"), 0);
    let again = HandlerSpec {
        ret: 0,
        reenter: Some(addr),
    };
    s.set_handlers(p, Some(again.clone()), Some(again));
    register_kprobe(&s, p).unwrap();
    s.hit(addr);
    assert_eq!(s.nmissed(p), 2);
    assert_eq!(s.take_log(), vec![Call::Pre(p), Call::Post(p)]);

    // With a (disabled) second probe there, a miss counts on both children.
    let q = probe(&s, "func_d", 0);
    s.set_user_flags(q, KPROBE_FLAG_DISABLED);
    register_kprobe(&s, q).unwrap();
    s.hit(addr);
    assert_eq!((s.nmissed(p), s.nmissed(q)), (4, 2));
}

#[test]
fn global_disarm_and_arm() {
    let s = Plain::new();
    let p = probe(&s, "func_a", 0);
    register_kprobe(&s, p).unwrap();
    let sw = disarm_all_kprobes(&s);
    assert!(sw.changed && sw.total == 1 && sw.errors == 0);
    assert!(s.text_pristine());
    assert!(!disarm_all_kprobes(&s).changed);
    let q = probe(&s, "func_b", 0);
    register_kprobe(&s, q).unwrap();
    assert!(
        s.text_pristine(),
        "nothing is armed while globally disarmed"
    );
    enable_kprobe(&s, q).unwrap();
    assert!(s.text_pristine());
    let sw = arm_all_kprobes(&s);
    assert_eq!((sw.changed, sw.total), (true, 2));
    assert_eq!(s.text_at(s.sym("func_a")), INT3);
    assert_eq!(s.text_at(s.sym("func_b")), INT3);
    // Per-probe DISABLED survives a global cycle.
    disable_kprobe(&s, p).unwrap();
    disarm_all_kprobes(&s);
    arm_all_kprobes(&s);
    assert_eq!(s.text_at(s.sym("func_a")), s.original_at(s.sym("func_a")));
}

#[test]
fn module_unload_makes_probes_gone_and_revives() {
    let s = Plain::new();
    let areas = ModuleAreas::default();
    let p = probe(&s, "mod_fn", 0);
    let q = probe(&s, "mod_fn", 0);
    register_kprobes(&s, &[p, q]).unwrap();
    let used = s.slots_in_use();
    kprobes_module_callback(&s, 1, ModuleEvent::Going, &areas);
    assert_ne!(s.probe_flags(p) & KPROBE_FLAG_GONE, 0);
    assert_ne!(s.probe_flags(q) & KPROBE_FLAG_GONE, 0);
    assert_eq!(
        s.slots_in_use(),
        used - 1,
        "the slot is released, text untouched"
    );
    assert_eq!(enable_kprobe(&s, p), Err(Errno::EINVAL));
    assert!(
        s.reachable().iter().any(|&(c, _)| c == p),
        "GONE probes stay registered"
    );
    // The module is loaded again: a new probe at the address revives the aggregate.
    let r = probe(&s, "mod_fn", 0);
    register_kprobe(&s, r).unwrap();
    let ap = get_kprobe(&s, MOD_CORE.0).unwrap();
    assert_eq!(s.probe_flags(ap) & KPROBE_FLAG_GONE, 0);
    assert_eq!(s.text_at(MOD_CORE.0), INT3);
    unregister_kprobes(&s, &[p, q, r]);
    assert_eq!(s.slots_in_use(), 0);
    assert_eq!(s.live_aggregates(), 0);
}

#[test]
fn module_live_kills_only_init_probes_and_blacklist_follows_events() {
    let s = Plain::new();
    s.set_module_coming(true);
    let p = probe(&s, "mod_init_fn", 0);
    let q = probe(&s, "mod_fn", 0);
    register_kprobes(&s, &[p, q]).unwrap();
    let bl = [MOD_CORE.0];
    let areas = ModuleAreas {
        kprobe_blacklist: &bl,
        ..Default::default()
    };
    kprobes_module_callback(&s, 1, ModuleEvent::Coming, &areas);
    kprobes_module_callback(&s, 1, ModuleEvent::Live, &areas);
    assert_ne!(s.probe_flags(p) & KPROBE_FLAG_GONE, 0);
    assert_eq!(s.probe_flags(q) & KPROBE_FLAG_GONE, 0);
    let r = probe_at(&s, MOD_CORE.0 + 0x41);
    assert_eq!(
        register_kprobe(&s, r),
        Err(Errno::EINVAL),
        "module NOKPROBE_SYMBOL"
    );
    kprobes_module_callback(&s, 1, ModuleEvent::Going, &areas);
    s.reset_probe(r, MOD_CORE.0 + 0x41, None, 0);
    assert_eq!(
        register_kprobe(&s, r),
        Ok(()),
        "blacklist entry removed at GOING"
    );
}

#[test]
fn init_memory_probes_become_gone() {
    let s = Plain::new();
    let p = probe(&s, "init_fn", 0);
    register_kprobe(&s, p).unwrap();
    kprobe_free_init_mem(&s);
    assert_ne!(s.probe_flags(p) & KPROBE_FLAG_GONE, 0);
    assert_eq!(s.slots_in_use(), 0);
}

#[test]
fn optimizer_wraps_optimizes_and_restores() {
    let s = Opt::new();
    let addr = s.sym("func_e");
    let p = probe(&s, "func_e", 0);
    register_kprobe(&s, p).unwrap();
    let ap = get_kprobe(&s, addr).unwrap();
    assert!(
        s.is_aggr(ap),
        "a lone optimizable probe is wrapped in an aggregate"
    );
    assert_ne!(s.probe_flags(ap) & KPROBE_FLAG_OPTIMIZED, 0);
    assert_eq!(s.text_at(addr), INT3, "queued, jump not yet installed");
    s.run_optimizer();
    assert_eq!(s.text_at(addr), JMP);
    assert!(s.jump_installed(ap));
    // The optimized path ignores pre_handler return values.
    s.set_handlers(
        p,
        Some(HandlerSpec {
            ret: 1,
            reenter: None,
        }),
        None,
    );
    s.hit(addr);
    assert_eq!(s.take_log(), vec![Call::Pre(p)]);
    // Arming a probe under the jump forces the optimized one back to a breakpoint.
    let inner = probe_at(&s, addr + 1);
    register_kprobe(&s, inner).unwrap();
    assert_eq!(s.text_at(addr), INT3);
    assert_eq!(s.text_at(addr + 1), INT3);
    // A post_handler forbids optimization.
    let q = s.new_probe(0, Some("func_e"), 0);
    s.set_handlers(
        q,
        Some(HandlerSpec::default()),
        Some(HandlerSpec::default()),
    );
    register_kprobe(&s, q).unwrap();
    unregister_kprobe(&s, inner);
    s.run_optimizer();
    assert_eq!(s.text_at(addr), INT3);
    unregister_kprobe(&s, q);
    s.run_optimizer();
    assert_eq!(
        s.text_at(addr),
        JMP,
        "re-optimized once the post_handler is gone"
    );
    // The last probe leaves an unused aggregate that the optimizer unoptimizes and frees.
    unregister_kprobe(&s, p);
    assert_eq!(s.live_aggregates(), 1);
    s.run_optimizer();
    assert_eq!(s.live_aggregates(), 0);
    assert!(s.text_pristine());
    assert_eq!(s.slots_in_use(), 0);
}

#[test]
fn unused_aggregate_is_reused() {
    let s = Opt::new();
    let addr = s.sym("func_f");
    let p = probe(&s, "func_f", 0);
    register_kprobe(&s, p).unwrap();
    s.run_optimizer();
    let ap = get_kprobe(&s, addr).unwrap();
    unregister_kprobe(&s, p);
    assert_eq!(get_kprobe(&s, addr), Some(ap), "waiting to be unoptimized");
    let q = probe(&s, "func_f", 0);
    register_kprobe(&s, q).unwrap();
    assert_eq!(get_kprobe(&s, addr), Some(ap), "revived");
    s.run_optimizer();
    assert_eq!(s.text_at(addr), JMP);
    s.hit(addr);
    assert_eq!(s.take_log(), vec![Call::Pre(q)]);
    unregister_kprobe(&s, q);
    s.run_optimizer();
    assert!(s.text_pristine());
    assert_eq!(s.live_aggregates(), 0);
}

#[test]
fn optimization_sysctl() {
    use rkprobes_core::optimizer::kprobes_optimization_sysctl;
    let s = Opt::new();
    let addr = s.sym("func_g");
    let p = probe(&s, "func_g", 0);
    register_kprobe(&s, p).unwrap();
    s.run_optimizer();
    assert_eq!(s.text_at(addr), JMP);
    // Writing 0 unoptimizes everything and waits for the optimizer; reads re-apply (no-op).
    assert!(kprobes_optimization_sysctl(&s, false));
    assert_eq!(s.text_at(addr), INT3);
    assert!(!kprobes_optimization_sysctl(&s, false));
    let q = probe(&s, "func_h", 0);
    register_kprobe(&s, q).unwrap();
    s.run_optimizer();
    assert_eq!(
        s.text_at(s.sym("func_h")),
        INT3,
        "nothing is optimized while disallowed"
    );
    assert!(kprobes_optimization_sysctl(&s, true));
    s.run_optimizer();
    assert_eq!(s.text_at(addr), JMP);
    assert_eq!(s.text_at(s.sym("func_h")), JMP);
    unregister_kprobes(&s, &[p, q]);
    s.run_optimizer();
    assert!(s.text_pristine());
}

#[test]
fn revived_from_freeing_list_is_disarmed_globally() {
    // An unused optimized aggregate is forced onto the freeing list by a probe armed under its
    // jump, then revived by a new probe whose re-optimization is refused. It is still "queued",
    // so a global disarm skips arch_disarm_kprobe() and leaves it to the optimizer, which in
    // upstream 6.12 disarms only DISABLED probes: C leaves this int3 while kprobes are globally
    // disabled. The Rust core disarms it there (see the next test).
    let s = Opt::new();
    let addr = s.sym("func_a");
    let p1 = probe(&s, "func_a", 0);
    register_kprobe(&s, p1).unwrap();
    s.run_optimizer();
    assert_eq!(s.text_at(addr), JMP);
    unregister_kprobe(&s, p1);
    let inner = probe_at(&s, addr + 1);
    register_kprobe(&s, inner).unwrap();
    let p0 = probe(&s, "func_a", 0);
    register_kprobe(&s, p0).unwrap();
    disarm_all_kprobes(&s);
    s.run_optimizer();
    assert_eq!(s.text_at(addr + 1), s.original_at(addr + 1));
    assert_eq!(
        s.text_at(addr),
        s.original_at(addr),
        "nothing armed while kprobes are globally disabled (upstream leaves an int3 here)"
    );
    arm_all_kprobes(&s);
    assert_eq!(s.text_at(addr), INT3, "armed again with the others");
    unregister_kprobes(&s, &[inner, p0]);
    s.run_optimizer();
    assert!(s.text_pristine());
}

/// A kprobe on `func_a`, optimized: its address, the probe and its aggregate.
fn optimized_on_func_a(s: &Opt) -> (usize, sim::Pid, sim::Pid) {
    let addr = s.sym("func_a");
    let p = probe(s, "func_a", 0);
    register_kprobe(s, p).unwrap();
    s.run_optimizer();
    assert_eq!(s.text_at(addr), JMP);
    (addr, p, get_kprobe(s, addr).expect("the aggregate"))
}

#[test]
fn global_disarm_racing_the_optimization_sysctl() {
    // Upstream 6.12 race, an "Oops: int3" on C under QEMU (README, "The kprobes/enabled race"):
    // writing 0 to debug.kprobes-optimization queues every optimized probe for unoptimizing and
    // drops kprobe_mutex to wait for the optimizer; a write of 0 to kprobes/enabled takes the
    // mutex first and force-unoptimizes the queued probe (an int3 again), moving it to the
    // freeing list, and so does not disarm it; the optimizer disarms only DISABLED probes. The
    // probe is then disabled and unregistered while kprobes are globally disarmed, which does
    // not touch the text: its int3 stays without a kprobe. The Rust core disarms it in the
    // optimizer, and the text is the original at every step.
    let s = Opt::new();
    let (addr, p, ap) = optimized_on_func_a(&s);
    {
        // unoptimize_all_kprobes() up to its wait_for_kprobe_optimizer().
        let _st = s.kprobe_mutex();
        s.cpus_read_locked(|| unoptimize_kprobe(&s, ap, false));
    }
    assert_eq!(s.text_at(addr), JMP, "queued, not yet unoptimized");
    let sw = disarm_all_kprobes(&s);
    assert_eq!((sw.changed, sw.total, sw.errors), (true, 1, 0));
    assert_eq!(
        s.text_at(addr),
        s.original_at(addr),
        "globally disarmed once the write returned (C: int3)"
    );
    disable_kprobe(&s, p).unwrap();
    unregister_kprobe(&s, p);
    s.run_optimizer();
    assert!(s.text_pristine(), "no breakpoint left without its kprobe");
    arm_all_kprobes(&s);
    assert!(s.text_pristine());
}

#[test]
fn optimizing_a_probe_left_on_the_freeing_list() {
    // Upstream 6.12 WARN (seen once in the 600 s kmemleak stress, reproduced on C by the
    // conformance case rkc_optimize_from_freeing): an aggregate queued for unoptimizing is
    // forced onto the freeing list, still used, when a probe with a post_handler joins it; once
    // that probe goes, optimize_kprobe() finds it on a list without OPTIMIZED and C WARNs
    // ("WARN_ON_ONCE(!list_empty(&op->list))"), leaves [OPTIMIZED] set on an int3 until the
    // optimizer runs, and the probe is never optimized again. The Rust core moves it from the
    // freeing list to the optimizing one.
    let s = Opt::new();
    let (addr, p, ap) = optimized_on_func_a(&s);
    // Its only child disabled: the aggregate is disabled and queued for unoptimizing.
    disable_kprobe(&s, p).unwrap();
    assert_eq!(s.text_at(addr), JMP, "queued, not yet unoptimized");
    // A post_handler joins it: forced back to a breakpoint, onto the freeing list.
    let q = s.new_probe(0, Some("func_a"), 0);
    s.set_handlers(
        q,
        Some(HandlerSpec::default()),
        Some(HandlerSpec::default()),
    );
    register_kprobe(&s, q).unwrap();
    assert_eq!(s.text_at(addr), INT3);
    enable_kprobe(&s, p).unwrap();
    unregister_kprobe(&s, q);
    assert!(s.take_warns().is_empty(), "C: WarnSite::OptimizeKprobe");
    s.run_optimizer();
    assert_eq!(
        s.text_at(addr),
        JMP,
        "optimized again (C: an int3 for good)"
    );
    assert_ne!(s.probe_flags(ap) & KPROBE_FLAG_OPTIMIZED, 0);
    s.hit(addr);
    assert_eq!(s.take_log(), vec![Call::Pre(p)]);
    unregister_kprobe(&s, p);
    s.run_optimizer();
    assert!(s.text_pristine());
    assert_eq!(s.live_aggregates(), 0);
    assert!(s.take_warns().is_empty());
}

#[test]
fn double_registration_warns_once_per_attempt() {
    let s = Plain::new();
    // By address: by name, the address written back makes a second call fail earlier, in
    // _kprobe_addr() (both set), without a WARN, as in C.
    let p = probe_at(&s, s.sym("func_a"));
    register_kprobe(&s, p).unwrap();
    assert!(
        s.take_warns().is_empty(),
        "a first registration does not WARN"
    );
    assert_eq!(register_kprobe(&s, p), Err(Errno::EINVAL));
    assert_eq!(
        s.take_warns(),
        [WarnSite::WarnKprobeRereg { kretprobe: false }]
    );
    let by_name = probe(&s, "func_b", 0);
    register_kprobe(&s, by_name).unwrap();
    assert_eq!(register_kprobe(&s, by_name), Err(Errno::EINVAL));
    assert!(s.take_warns().is_empty());
    unregister_kprobe(&s, by_name);
    // A child of an aggregate is registered too.
    let q = probe_at(&s, s.sym("func_a"));
    register_kprobe(&s, q).unwrap();
    assert_eq!(register_kprobe(&s, q), Err(Errno::EINVAL));
    assert_eq!(
        s.take_warns(),
        [WarnSite::WarnKprobeRereg { kretprobe: false }]
    );
    unregister_kprobes(&s, &[p, q]);
    assert!(s.take_warns().is_empty());
    assert!(s.text_pristine());
}

#[test]
fn messages_as_c_logs_them() {
    use rkprobes_core::optimizer::kprobes_optimization_sysctl;
    let s = Opt::new();
    assert_eq!(
        s.take_messages(),
        [Message::OptimizationEnabled],
        "the boot message of init_optprobes()"
    );
    assert!(kprobes_optimization_sysctl(&s, false));
    assert!(!kprobes_optimization_sysctl(&s, false));
    assert!(kprobes_optimization_sysctl(&s, true));
    assert_eq!(
        s.take_messages(),
        [Message::OptimizationDisabled, Message::OptimizationEnabled],
        "only a change is logged"
    );
    disarm_all_kprobes(&s);
    disarm_all_kprobes(&s);
    arm_all_kprobes(&s);
    assert_eq!(
        s.take_messages(),
        [Message::GloballyDisabled, Message::GloballyEnabled]
    );
    assert!(
        Plain::new().take_messages().is_empty(),
        "no optprobes, no message"
    );
    assert!(s.take_warns().is_empty());
}

#[test]
fn blocked_optprobe_is_retried_when_its_blocker_is_freed() {
    // Upstream fix f76d1c41b609, applied to both cores. `b` is optimized; `p` under b's jump
    // forces it back to a breakpoint and blocks it (the arch check refuses a jump over another
    // probe); `p` itself gets optimized. Unregistering the optimized `p` queues it for
    // unoptimizing, so __disarm_kprobe() does not re-optimize `b`: 6.12 never does.
    let s = Opt::new();
    let addr = s.sym("func_e");
    let b = probe(&s, "func_e", 0);
    register_kprobe(&s, b).unwrap();
    s.run_optimizer();
    assert_eq!(s.text_at(addr), JMP);
    s.set_optimizable(addr + 1);
    let p = probe_at(&s, addr + 1);
    register_kprobe(&s, p).unwrap();
    assert_eq!(
        s.text_at(addr),
        INT3,
        "b unoptimized by a probe under its jump"
    );
    s.run_optimizer();
    assert_eq!(s.text_at(addr + 1), JMP, "p is optimized");
    assert_eq!(s.text_at(addr), INT3, "b is blocked by p");
    unregister_kprobe(&s, p);
    let pa = get_kprobe(&s, addr + 1).unwrap();
    assert_eq!(
        s.is_on_queue(pa),
        Some(rkprobes_core::store::OptQueue::Unoptimizing)
    );
    s.run_optimizer();
    assert_eq!(get_kprobe(&s, addr + 1), None, "p's aggregate freed");
    assert_eq!(s.live_aggregates(), 1);
    let ba = get_kprobe(&s, addr).unwrap();
    assert_eq!(
        s.is_on_queue(ba),
        Some(rkprobes_core::store::OptQueue::Optimizing),
        "b retried when p's aggregate was freed"
    );
    s.run_optimizer();
    assert_eq!(s.text_at(addr), JMP, "b optimized again");
    assert!(s.jump_installed(ba));
    unregister_kprobe(&s, b);
    s.run_optimizer();
    assert!(s.text_pristine());
    assert_eq!(s.live_aggregates(), 0);
    assert!(s.take_warns().is_empty());
}

#[test]
fn init_runs_in_c_order() {
    let s = Plain::new();
    assert_eq!(
        s.init_steps(),
        ["kretprobe_blacklist", "optinsn_slots", "arch_init_kprobes"],
        "init_kprobes(): blacklists, armed state and slot size before arch_init_kprobes()"
    );
}

/// A batch's symbol answers cover the modules its probes are in, whether the probes name a
/// symbol or give an address (the bench's `regn` rows: by address, in its module); the kernel
/// otherwise walks the module's symbol table for each probe's checks.
#[test]
fn symbol_batch_covers_probes_given_by_address() {
    let s = Plain::new();
    let named = [probe(&s, "mod_fn", 0), probe(&s, "mod_fn", 1)];
    register_kprobes(&s, &named).unwrap();
    assert_eq!(s.batch_misses(), 0, "by name");
    unregister_kprobes(&s, &named);
    let by_addr = [probe_at(&s, MOD_CORE.0), probe_at(&s, MOD_CORE.0 + 1)];
    register_kprobes(&s, &by_addr).unwrap();
    assert_eq!(
        s.batch_misses(),
        0,
        "lookups in a module the batch did not index"
    );
    unregister_kprobes(&s, &by_addr);
}

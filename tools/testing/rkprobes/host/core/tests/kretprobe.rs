// SPDX-License-Identifier: GPL-2.0

//! Return probes: registration errno and defaults, the instance-pool rules on a hit, and
//! unregistration ordering, against the simulated platform.

mod sim;

use rkprobes_core::errno::Errno;
use rkprobes_core::kretprobe::{
    default_maxactive, register_kretprobe, register_kretprobes, unregister_kretprobe,
    unregister_kretprobes,
};
use rkprobes_core::register::register_kprobe;
use sim::{KretRec, Pid, Sim, INT3};

type S = Sim<false, false>;

fn kret(s: &S, sym: &'static str, off: u32, k: KretRec) -> Pid {
    let p = s.new_probe(0, Some(sym), off);
    s.make_kretprobe(p, k);
    p
}

#[test]
fn registration_errors_in_c_order() {
    let s = S::new();
    let p = kret(&s, "func_a", 3, KretRec::default());
    assert_eq!(
        register_kretprobe(&s, p),
        Err(Errno::EINVAL),
        "not a function entry"
    );
    let p = kret(&s, "nope", 0, KretRec::default());
    assert_eq!(register_kretprobe(&s, p), Err(Errno::ENOENT));
    let p = s.new_probe(s.sym("func_a"), Some("func_a"), 0);
    s.make_kretprobe(p, KretRec::default());
    assert_eq!(
        register_kretprobe(&s, p),
        Err(Errno::EINVAL),
        "both addr and symbol"
    );
    let big = KretRec {
        data_size: 4097,
        ..Default::default()
    };
    let p = kret(&s, "func_a", 0, big);
    assert_eq!(register_kretprobe(&s, p), Err(Errno::E2BIG));
    let ok = KretRec {
        data_size: 4096,
        ..Default::default()
    };
    let p = kret(&s, "func_a", 0, ok);
    assert_eq!(register_kretprobe(&s, p), Ok(()));
    let again = s.new_probe(s.sym("func_a"), None, 0);
    s.make_kretprobe(again, KretRec::default());
    register_kprobe(&s, again).unwrap();
    // Registered (as a kprobe) with kp.addr set: caught before any pool is allocated.
    assert_eq!(register_kretprobe(&s, again), Err(Errno::EINVAL));
    assert_eq!(s.kret(again).pool_free, None);
    let fail = KretRec {
        alloc_fails: true,
        ..Default::default()
    };
    let p = kret(&s, "func_b", 0, fail);
    assert_eq!(register_kretprobe(&s, p), Err(Errno::ENOMEM));
    // A kprobe-level failure frees the pool again.
    let p = kret(&s, "kprobe_handler_fn", 0, KretRec::default());
    assert_eq!(register_kretprobe(&s, p), Err(Errno::EINVAL));
    assert_eq!(s.kret(p).pool_free, None);
}

#[test]
fn maxactive_default_and_pool_rules() {
    assert_eq!(default_maxactive(1), 10);
    assert_eq!(default_maxactive(64), 128);
    let s = S::new();
    let p = kret(
        &s,
        "func_c",
        0,
        KretRec {
            maxactive: -1,
            ..Default::default()
        },
    );
    register_kretprobe(&s, p).unwrap();
    assert_eq!(s.kret(p).maxactive, 10, "max(10, 2 * 4 possible CPUs)");
    assert_eq!(s.text_at(s.sym("func_c")), INT3);

    let q = kret(
        &s,
        "func_d",
        0,
        KretRec {
            maxactive: 2,
            entry: Some(0),
            ..Default::default()
        },
    );
    register_kretprobe(&s, q).unwrap();
    let addr = s.sym("func_d");
    for _ in 0..3 {
        s.hit(addr);
    }
    let k = s.kret(q);
    assert_eq!(
        (k.hooked, k.nmissed, k.pool_free),
        (2, 1, Some(0)),
        "empty pool counts nmissed"
    );
    s.function_returns(q);
    s.hit(addr);
    assert_eq!(s.kret(q).hooked, 2);

    // A non-zero entry handler gives the instance back and installs no hook.
    let r = kret(
        &s,
        "func_e",
        0,
        KretRec {
            maxactive: 1,
            entry: Some(1),
            ..Default::default()
        },
    );
    register_kretprobe(&s, r).unwrap();
    s.hit(s.sym("func_e"));
    s.hit(s.sym("func_e"));
    let k = s.kret(r);
    assert_eq!((k.hooked, k.nmissed, k.pool_free), (0, 0, Some(1)));
}

#[test]
fn batch_and_unregister() {
    let s = S::new();
    assert_eq!(register_kretprobes(&s, &[] as &[Pid]), Err(Errno::EINVAL));
    let a = kret(&s, "func_a", 0, KretRec::default());
    let b = kret(&s, "func_b", 0, KretRec::default());
    let bad = kret(&s, "func_c", 1, KretRec::default());
    assert_eq!(register_kretprobes(&s, &[a, b, bad]), Err(Errno::EINVAL));
    assert!(s.reachable().is_empty());
    assert!(s.text_pristine());
    assert_eq!(
        s.kret(a).pool_free,
        None,
        "rolled back entries release their pools"
    );
    // KP_CLEAR, as lib/test_kprobes.c does: unregistration left DISABLED set, and register keeps
    // exactly that flag.
    assert_ne!(
        s.probe_flags(a) & rkprobes_core::store::KPROBE_FLAG_DISABLED,
        0
    );
    for (p, sym) in [(a, "func_a"), (b, "func_b")] {
        s.reset_probe(p, 0, Some(sym), 0);
        s.set_user_flags(p, 0);
    }
    register_kretprobes(&s, &[a, b]).unwrap();
    s.hit(s.sym("func_a"));
    unregister_kretprobes(&s, &[a, b]);
    assert!(s.kret(a).detached);
    assert_eq!(s.kret(a).pool_free, None);
    assert!(s.text_pristine());
    assert_eq!(s.slots_in_use(), 0);
    // An in-flight instance returning after unregistration is dropped, not recycled.
    s.function_returns(a);
    // Unregistering a never-registered kretprobe does not crash (C would dereference NULL).
    let n = kret(&s, "func_f", 0, KretRec::default());
    unregister_kretprobe(&s, n);
    assert_eq!(s.probe_addr(n), 0);
}

#[test]
fn batch_with_a_null_entry() {
    // A NULL in the C array arrives as `None`: -EINVAL with rollback when registering, skipped
    // when unregistering (C dereferences it in both).
    let s = S::new();
    let a = kret(&s, "func_a", 0, KretRec::default());
    let b = kret(&s, "func_b", 0, KretRec::default());
    assert_eq!(
        register_kretprobes(&s, &[Some(a), None, Some(b)]),
        Err(Errno::EINVAL)
    );
    assert!(s.reachable().is_empty());
    assert!(s.text_pristine());
    assert_eq!(
        s.kret(a).pool_free,
        None,
        "the rolled back entry released its pool"
    );
    for (p, sym) in [(a, "func_a"), (b, "func_b")] {
        s.reset_probe(p, 0, Some(sym), 0);
        s.set_user_flags(p, 0);
    }
    register_kretprobes(&s, &[Some(a), Some(b)]).unwrap();
    assert_eq!(s.reachable().len(), 2);
    unregister_kretprobes(&s, &[None, Some(a), None, Some(b)]);
    assert!(s.reachable().is_empty());
    assert!(s.text_pristine());
    unregister_kretprobes(&s, &[None::<Pid>]);
}

/// An unregistration batch of lone breakpoint kretprobes, with the breakpoint removals written
/// together (the Rust x86 and arm64 arches): each pool is detached only once its probe has
/// left the text and the hash, as C's `__unregister_kprobe_top()` leaves them before
/// `rethook_free()`. The simulation's `detach_instance_pool` checks that; detaching before
/// the batched write would let a hit after the next grace period take an instance from a
/// freed rethook.
#[test]
fn batched_unregistration_detaches_pools_after_the_write() {
    for opt in [false, true] {
        let s = S::new();
        s.set_batching(true);
        let names = ["func_a", "func_b", "func_c", "func_d", "mod_fn"];
        let rps: Vec<Pid> = names
            .into_iter()
            .map(|n| kret(&s, n, 0, KretRec::default()))
            .collect();
        register_kretprobes(&s, &rps).unwrap();
        if opt {
            // A probe that stays on func_a: that address keeps its breakpoint.
            let stays = s.new_probe(0, Some("func_a"), 0);
            register_kprobe(&s, stays).unwrap();
            unregister_kretprobes(&s, &rps);
            let reachable: Vec<Pid> = s.reachable().into_iter().map(|(p, _)| p).collect();
            assert!(reachable.contains(&stays), "the probe that stays");
            assert!(!rps.iter().any(|rp| reachable.contains(rp)));
            assert_ne!(s.text_at(s.sym("func_a")), s.original_at(s.sym("func_a")));
            rkprobes_core::register::unregister_kprobe(&s, stays);
        } else {
            unregister_kretprobes(&s, &rps);
        }
        assert!(
            s.batch_disarmed() >= 4,
            "the breakpoints written as a batch"
        );
        for &rp in &rps {
            assert!(s.kret(rp).detached);
            assert_eq!(s.kret(rp).pool_free, None);
        }
        assert!(s.reachable().is_empty());
        assert!(s.text_pristine());
    }
}

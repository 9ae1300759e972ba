// SPDX-License-Identifier: GPL-2.0

//! The kprobe blacklist: population order, area walks, errno, module add/remove, suffix rule.

mod sim;

use std::ops::ControlFlow;

use rkprobes_core::blacklist::{
    add_module_kprobe_blacklist, kprobe_add_area_blacklist, kprobe_add_ksym_blacklist,
    kprobe_remove_area_blacklist, remove_module_kprobe_blacklist, within_kprobe_blacklist,
    BlacklistStore, ModuleAreas,
};
use rkprobes_core::errno::Errno;
use sim::{Sim, KPROBES_TEXT, MOD_CORE, NOINSTR_TEXT};

type S = Sim<false, false>;

fn entries(s: &S) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let _ = s.blacklist_for_each(|a, b| {
        v.push((a, b));
        ControlFlow::Continue(())
    });
    v
}

#[test]
fn populated_in_c_order() {
    let s = S::new();
    // .kprobes.text symbol by symbol, then .noinstr.text; the arch adds nothing by default.
    assert_eq!(
        entries(&s),
        vec![
            (KPROBES_TEXT.0, KPROBES_TEXT.0 + 0x80),
            (KPROBES_TEXT.0 + 0x80, KPROBES_TEXT.1),
            (NOINSTR_TEXT.0, NOINSTR_TEXT.1),
        ]
    );
}

#[test]
fn ksym_and_area_rules() {
    let s = S::new();
    assert_eq!(
        kprobe_add_ksym_blacklist(&s, 0x9000),
        Err(Errno::EINVAL),
        "not text"
    );
    assert_eq!(
        kprobe_add_ksym_blacklist(&s, 0x1700),
        Err(Errno::EINVAL),
        "no symbol"
    );
    // Not a symbol start (the upstream fix of April 2026): nothing is added, and a walk moves
    // on to the next symbol. 6.12 added [func_b+8, func_b+0x48), past func_b's end into func_c.
    let before = entries(&s).len();
    assert_eq!(kprobe_add_ksym_blacklist(&s, s.sym("func_b") + 8), Ok(0x38));
    assert_eq!(entries(&s).len(), before);
    assert!(!within_kprobe_blacklist(&s, s.sym("func_c") + 4));
    assert!(!within_kprobe_blacklist(&s, s.sym("func_b") + 8));
    assert_eq!(kprobe_add_ksym_blacklist(&s, s.sym("func_b")), Ok(0x40));
    assert_eq!(
        entries(&s).last(),
        Some(&(s.sym("func_b"), s.sym("func_b") + 0x40))
    );
    // An area walk steps symbol by symbol; one that starts inside a symbol skips its rest.
    let before = entries(&s).len();
    kprobe_add_area_blacklist(&s, s.sym("func_e") - 0x20, s.sym("func_g")).unwrap();
    let added = &entries(&s)[before..];
    assert_eq!(added, &[(0x1100, 0x1140), (0x1140, 0x1180)]);
    assert_eq!(
        kprobe_add_area_blacklist(&s, 0x1700, 0x1800),
        Err(Errno::EINVAL)
    );
    assert!(within_kprobe_blacklist(&s, 0x1150));
    kprobe_remove_area_blacklist(&s, 0x1100, 0x1101);
    assert!(!within_kprobe_blacklist(&s, 0x1110));
    assert!(within_kprobe_blacklist(&s, 0x1150));
    // The arch default range.
    assert!(within_kprobe_blacklist(&s, KPROBES_TEXT.0 + 1));
}

#[test]
fn module_areas_follow_coming_and_going() {
    let s = S::new();
    let bl = [MOD_CORE.0];
    let areas = ModuleAreas {
        kprobe_blacklist: &bl,
        kprobes_text: (MOD_CORE.0, 0x80),
        noinstr_text: (0, 0x1000),
    };
    let n = entries(&s).len();
    add_module_kprobe_blacklist(&s, &areas);
    assert!(within_kprobe_blacklist(&s, MOD_CORE.0 + 4));
    assert_eq!(
        entries(&s).len(),
        n + 2,
        "absent noinstr section (start 0) is skipped"
    );
    remove_module_kprobe_blacklist(&s, &areas);
    assert_eq!(entries(&s).len(), n);
    assert!(!within_kprobe_blacklist(&s, MOD_CORE.0 + 4));
}

#[test]
fn suffixed_symbols_check_their_base() {
    let s = S::new();
    let isra = s.sym("blacklisted_fn.isra.0");
    assert!(!within_kprobe_blacklist(&s, isra));
    kprobe_add_ksym_blacklist(&s, s.sym("blacklisted_fn")).unwrap();
    assert!(
        within_kprobe_blacklist(&s, isra + 5),
        "base symbol blacklisted"
    );
}

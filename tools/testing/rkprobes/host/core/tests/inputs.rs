// SPDX-License-Identifier: GPL-2.0

//! Bad input never panics and always gets one of C's errnos; errno conversions.

mod sim;

use proptest::prelude::*;
use rkprobes_core::errno::{from_c_ret, to_c_ret, Errno};
use rkprobes_core::register::{
    disable_kprobe, enable_kprobe, kprobe_on_func_entry, register_kprobe, unregister_kprobe,
};
use sim::Sim;

#[test]
fn errno_conversions() {
    assert_eq!(Errno::EINVAL.to_neg(), -22);
    assert_eq!(Errno::EILSEQ.to_errno(), 84);
    assert_eq!(Errno::from_neg(-2), Some(Errno::ENOENT));
    assert_eq!(Errno::from_neg(0), None);
    assert_eq!(Errno::from_neg(-4096), None);
    assert_eq!(from_c_ret(-7), Err(Errno::E2BIG));
    assert_eq!(from_c_ret(1), Ok(()));
    assert_eq!(from_c_ret(-100_000), Err(Errno::EINVAL));
    assert_eq!(to_c_ret(Err(Errno::EOPNOTSUPP)), -95);
    assert_eq!(to_c_ret(Ok(())), 0);
}

const NAMES: [&str; 6] = [
    "func_a",
    "func_h",
    "",
    "no_such",
    "mod_init_fn",
    "__cfi_func_x",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_probe_fields(addr in prop_oneof![Just(0usize), any::<usize>(),
                                                  0x0f00usize..0x3100],
                              sym in prop::option::of(0..NAMES.len()),
                              offset in prop_oneof![0u32..0x100, any::<u32>()]) {
        let s: Sim<true, true> = Sim::new();
        let p = s.new_probe(addr, sym.map(|i| NAMES[i]), offset);
        let r = register_kprobe(&s, p);
        let allowed = [Errno::EINVAL, Errno::ENOENT, Errno::EILSEQ];
        prop_assert!(r.is_ok() || allowed.contains(&r.unwrap_err()), "{:?}", r);
        let e = kprobe_on_func_entry(&s, addr, sym.map(|i| NAMES[i].as_bytes()), offset as usize);
        prop_assert!(e.is_ok() || [Errno::EINVAL, Errno::ENOENT].contains(&e.unwrap_err()));
        if r.is_ok() {
            prop_assert_eq!(disable_kprobe(&s, p), Ok(()));
            prop_assert_eq!(enable_kprobe(&s, p), Ok(()));
        } else {
            prop_assert_eq!(enable_kprobe(&s, p), Err(Errno::EINVAL));
        }
        unregister_kprobe(&s, p);
        s.run_optimizer();
        prop_assert!(s.text_pristine());
        prop_assert_eq!(s.slots_in_use(), 0);
        prop_assert_eq!(s.live_aggregates(), 0);
        prop_assert_eq!(s.module_refs(), 0);
    }
}

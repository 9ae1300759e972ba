// SPDX-License-Identifier: GPL-2.0
//! Smoke test.
mod sim;
use sim::*;
#[test]
fn smoke() {
    let s: Sim<true, true> = Sim::new();
    let p = s.new_probe(0, Some("func_a"), 0);
    s.set_handlers(p, Some(HandlerSpec::default()), None);
    rkprobes_core::register::register_kprobe(&s, p).unwrap();
    assert_eq!(s.text_at(s.sym("func_a")), INT3);
}

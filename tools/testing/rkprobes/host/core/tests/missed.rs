// SPDX-License-Identifier: GPL-2.0

//! debugfs `kprobes/missed`: each probe that missed, its misses by cause, the causes adding up
//! to the probe's misses as `trace_kprobe` counts them, against the simulated platform.

mod sim;

use rkprobes_core::debugfs::SeqSink;
use rkprobes_core::kretprobe::register_kretprobe;
use rkprobes_core::missed::{
    missed_line, missed_of, put_dec, show_missed_bucket, MissCause, Missed,
};
use rkprobes_core::register::register_kprobe;
use rkprobes_core::store::{ProbeStore, KPROBE_TABLE_SIZE};
use rkprobes_core::text::Ksym;
use sim::{HandlerSpec, KretRec, Pid, Sim};

type S = Sim<false, false>;

struct VecSink(Vec<u8>);

impl SeqSink for VecSink {
    fn put(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}

fn file(s: &S, show: bool) -> String {
    let mut w = VecSink(Vec::new());
    for bucket in 0..KPROBE_TABLE_SIZE {
        show_missed_bucket(s, bucket, show, &mut w);
    }
    String::from_utf8(w.0).unwrap()
}

fn kret(s: &S, sym: &'static str, maxactive: i32) -> Pid {
    let p = s.new_probe(0, Some(sym), 0);
    s.make_kretprobe(
        p,
        KretRec {
            maxactive,
            ..Default::default()
        },
    );
    p
}

/// A kprobe on `outer` whose handler calls `inner`: every hit of `outer` is a recursion miss
/// for each probe at `inner`.
fn nesting_probe(s: &S, outer: &'static str, inner: &'static str) -> Pid {
    let p = s.new_probe(0, Some(outer), 0);
    let calls = HandlerSpec {
        ret: 0,
        reenter: Some(s.sym(inner)),
    };
    s.set_handlers(p, Some(calls), None);
    register_kprobe(s, p).unwrap();
    p
}

#[test]
fn line_bytes() {
    let mut w = VecSink(Vec::new());
    let sym = Some(Ksym {
        name: b"vfs_read",
        offset: 0,
        size: 0x40,
        module: None,
    });
    let m = Missed {
        recursion: 3,
        no_instance: 0,
    };
    missed_line(
        &mut w,
        0xffff_ffff_8108_1234,
        0xffff_ffff_8108_1234,
        false,
        sym,
        &m,
    );
    let msym = Some(Ksym {
        name: b"f",
        offset: 0x1c,
        size: 0x30,
        module: Some(b"m"),
    });
    let m = Missed {
        recursion: 1,
        no_instance: 18_446_744_073_709_551_615,
    };
    missed_line(&mut w, 0, 0x10, true, msym, &m);
    missed_line(&mut w, 0xdead, 0xdead, false, None, &Missed::default());
    assert_eq!(
        String::from_utf8(w.0).unwrap(),
        "ffffffff81081234  k  vfs_read+0x0     nmissed=3 recursion=3 no_instance=0\n\
         0000000000000000  r  f+0x1c  m  nmissed=0 recursion=1 no_instance=18446744073709551615\n\
         000000000000dead  k  0xdead  nmissed=0 recursion=0 no_instance=0\n"
    );
}

#[test]
fn decimal() {
    for v in [0u64, 7, 10, 99, 100, 1234567890, u64::MAX] {
        let mut w = VecSink(Vec::new());
        put_dec(&mut w, v);
        assert_eq!(String::from_utf8(w.0).unwrap(), v.to_string());
    }
}

#[test]
fn causes_add_up_to_what_trace_kprobe_counts() {
    let m = Missed {
        recursion: 2,
        no_instance: 5,
    };
    let sum: u64 = MissCause::ALL.iter().map(|&c| m.by_cause(c)).sum();
    assert_eq!((sum, m.total()), (7, 7));
}

#[test]
fn lists_only_probes_that_missed_each_by_cause() {
    let s = S::new();
    // No miss: not listed.
    let quiet = s.new_probe(0, Some("func_a"), 0);
    register_kprobe(&s, quiet).unwrap();
    s.hit(s.sym("func_a"));
    assert_eq!(file(&s, true), "");

    // Recursion: a kprobe and a kretprobe at func_b (an aggregate), hit from a handler.
    let inner = s.new_probe(0, Some("func_b"), 0);
    register_kprobe(&s, inner).unwrap();
    let inner_ret = kret(&s, "func_b", 4);
    register_kretprobe(&s, inner_ret).unwrap();
    nesting_probe(&s, "func_d", "func_b");
    s.hit(s.sym("func_d"));
    s.hit(s.sym("func_d"));

    // No instance: maxactive 1, three calls in flight.
    let pool = kret(&s, "func_c", 1);
    register_kretprobe(&s, pool).unwrap();
    for _ in 0..3 {
        s.hit(s.sym("func_c"));
    }

    assert_eq!(
        missed_of(&s, inner),
        Missed {
            recursion: 2,
            no_instance: 0
        }
    );
    assert_eq!(
        missed_of(&s, inner_ret),
        Missed {
            recursion: 2,
            no_instance: 0
        }
    );
    assert_eq!(
        missed_of(&s, pool),
        Missed {
            recursion: 0,
            no_instance: 2
        }
    );
    // trace_kprobe's figure: rp->kp.nmissed + rp->nmissed, p->nmissed for a kprobe.
    for p in [quiet, inner, inner_ret, pool] {
        let rp_nmissed = if s.is_kretprobe(p) {
            u64::try_from(s.kret(p).nmissed).unwrap()
        } else {
            0
        };
        assert_eq!(missed_of(&s, p).total(), s.nmissed(p) + rp_nmissed);
    }

    let text = file(&s, true);
    let b = format!("{:016x}", s.sym("func_b"));
    let c = format!("{:016x}", s.sym("func_c"));
    let mut want = vec![
        // Children of the aggregate, newest first, as kprobes/list prints them.
        format!("{b}  r  func_b+0x0     nmissed=2 recursion=2 no_instance=0"),
        format!("{b}  k  func_b+0x0     nmissed=2 recursion=2 no_instance=0"),
        format!("{c}  r  func_c+0x0     nmissed=2 recursion=0 no_instance=2"),
    ];
    if rkprobes_core::store::hash_ptr(s.sym("func_c"))
        < rkprobes_core::store::hash_ptr(s.sym("func_b"))
    {
        want.rotate_right(1);
    }
    assert_eq!(text.lines().collect::<Vec<_>>(), want);
    // Values hidden from the reader: the address column is zero, nothing else changes.
    let hidden = file(&s, false);
    assert_eq!(
        hidden.replace(&"0".repeat(16), "ADDR"),
        text.replace(&b, "ADDR").replace(&c, "ADDR")
    );
}

// SPDX-License-Identifier: GPL-2.0

//! debugfs `kprobes/{list,blacklist,enabled}` bytes, against lines derived by hand from C's
//! format strings (`"%px  %s  %s+0x%x  %s "`, `"%px  %s  %pS "`, `"0x%px-0x%px\t%ps\n"`).

mod sim;

use rkprobes_core::blacklist::kprobe_add_ksym_blacklist;
use rkprobes_core::debugfs::{
    blacklist_line, report_probe, show_blacklist, show_kprobe_addr, ProbeLine, SeqSink, SliceSink,
};
use rkprobes_core::register::{disable_kprobe, register_kprobe, register_kprobes};
use rkprobes_core::store::{
    hash_ptr, KPROBE_FLAG_DISABLED, KPROBE_FLAG_FTRACE, KPROBE_FLAG_GONE, KPROBE_FLAG_OPTIMIZED,
    KPROBE_TABLE_SIZE,
};
use rkprobes_core::text::Ksym;
use sim::{HandlerSpec, Sim};

struct VecSink(Vec<u8>);

impl SeqSink for VecSink {
    fn put(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}

fn line(l: &ProbeLine<'_>) -> String {
    let mut w = VecSink(Vec::new());
    report_probe(&mut w, l);
    String::from_utf8(w.0).unwrap()
}

#[test]
fn report_probe_formats() {
    let sym = Some(Ksym {
        name: b"kernel_clone",
        offset: 0,
        size: 0x40,
        module: None,
    });
    let base = ProbeLine {
        shown_addr: 0xffff_ffff_8108_1234,
        addr: 0xffff_ffff_8108_1234,
        kretprobe: false,
        sym,
        flags: 0,
        entry_flags: 0,
    };
    assert_eq!(line(&base), "ffffffff81081234  k  kernel_clone+0x0    \n");
    let l = ProbeLine {
        kretprobe: true,
        flags: KPROBE_FLAG_DISABLED,
        ..base
    };
    assert_eq!(
        line(&l),
        "ffffffff81081234  r  kernel_clone+0x0    [DISABLED]\n"
    );
    let l = ProbeLine {
        shown_addr: 0,
        flags: KPROBE_FLAG_GONE | KPROBE_FLAG_DISABLED,
        entry_flags: KPROBE_FLAG_OPTIMIZED | KPROBE_FLAG_FTRACE,
        sym: Some(Ksym {
            name: b"foo",
            offset: 0x1a,
            size: 0x40,
            module: Some(b"mymod"),
        }),
        ..base
    };
    assert_eq!(
        line(&l),
        "0000000000000000  k  foo+0x1a  mymod [GONE][OPTIMIZED][FTRACE]\n"
    );
    let l = ProbeLine {
        sym: None,
        shown_addr: 0,
        ..base
    };
    assert_eq!(line(&l), "0000000000000000  k  0xffffffff81081234 \n");
}

#[test]
fn blacklist_and_enabled_formats() {
    let mut w = VecSink(Vec::new());
    let sym = Some(Ksym {
        name: b"do_int3",
        offset: 0,
        size: 0x30,
        module: None,
    });
    blacklist_line(
        &mut w,
        0xffff_ffff_8100_0000,
        0xffff_ffff_8100_0030,
        true,
        sym,
    );
    blacklist_line(
        &mut w,
        0xffff_ffff_8100_0000,
        0xffff_ffff_8100_0030,
        false,
        sym,
    );
    let msym = Some(Ksym {
        name: b"h",
        offset: 0,
        size: 8,
        module: Some(b"m"),
    });
    blacklist_line(&mut w, 0x10, 0x18, true, msym);
    blacklist_line(&mut w, 0x10, 0x18, true, None);
    assert_eq!(
        String::from_utf8(w.0).unwrap(),
        "0xffffffff81000000-0xffffffff81000030\tdo_int3\n\
         0x0000000000000000-0x0000000000000000\tdo_int3\n\
         0x0000000000000010-0x0000000000000018\th [m]\n\
         0x0000000000000010-0x0000000000000018\t0x10\n"
    );
}

#[test]
fn list_walks_buckets_and_children_newest_first() {
    let s: Sim<false, false> = Sim::new();
    let a = s.new_probe(0, Some("func_a"), 0);
    let b = s.new_probe(0, Some("func_a"), 0);
    let c = s.new_probe(0, Some("func_b"), 3);
    for p in [a, b, c] {
        s.set_handlers(p, Some(HandlerSpec::default()), None);
    }
    register_kprobes(&s, &[a, b, c]).unwrap();
    disable_kprobe(&s, a).unwrap();
    let mut out = Vec::new();
    for bucket in 0..KPROBE_TABLE_SIZE {
        let mut w = VecSink(Vec::new());
        show_kprobe_addr(&s, bucket, true, &mut w);
        out.extend(w.0);
    }
    let fa = format!("{:016x}", s.sym("func_a"));
    let fb = format!("{:016x}", s.sym("func_b") + 3);
    let la = format!("{fa}  k  func_a+0x0    \n{fa}  k  func_a+0x0    [DISABLED]\n");
    let lb = format!("{fb}  k  func_b+0x3    \n");
    let expect = if hash_ptr(s.sym("func_a")) <= hash_ptr(s.sym("func_b") + 3) {
        la + &lb
    } else {
        lb + &la
    };
    assert_eq!(String::from_utf8(out).unwrap(), expect);
}

#[test]
fn blacklist_file_and_slice_sink() {
    let s: Sim<false, false> = Sim::new();
    // An address inside a symbol adds no entry (the upstream fix of April 2026); the symbol
    // start adds one, named with %ps.
    kprobe_add_ksym_blacklist(&s, s.sym("func_c") + 2).unwrap();
    kprobe_add_ksym_blacklist(&s, s.sym("func_d")).unwrap();
    let mut w = VecSink(Vec::new());
    show_blacklist(&s, true, &mut w);
    let text = String::from_utf8(w.0).unwrap();
    // Populated at init: .kprobes.text (two symbols), .noinstr.text; then ours.
    let last = text.lines().last().unwrap();
    let start = s.sym("func_d");
    assert_eq!(
        last,
        format!("0x{:016x}-0x{:016x}\tfunc_d", start, start + 0x40)
    );
    assert_eq!(text.lines().count(), 4);
    let mut buf = [0u8; 8];
    let mut sink = SliceSink::new(&mut buf);
    sink.put(b"0123456789");
    assert!(sink.overflowed());
    assert_eq!(sink.bytes(), b"01234567");
    let p = s.new_probe(0, Some("func_c"), 3);
    assert_eq!(register_kprobe(&s, p), Ok(()), "func_c is not blacklisted");
    let q = s.new_probe(0, Some("func_d"), 3);
    assert_eq!(
        register_kprobe(&s, q),
        Err(rkprobes_core::errno::Errno::EINVAL)
    );
}

#[test]
fn dump_kprobe_message() {
    use rkprobes_core::debugfs::dump_kprobe;
    let mut w = VecSink(Vec::new());
    let sym = Some(Ksym {
        name: b"kernel_clone",
        offset: 0,
        size: 0x4a0,
        module: None,
    });
    dump_kprobe(&mut w, Some(b"kernel_clone"), 0, 0xffff_ffff_8108_1234, sym);
    let msym = Some(Ksym {
        name: b"f",
        offset: 0x1c,
        size: 0x30,
        module: Some(b"m"),
    });
    dump_kprobe(&mut w, None, 0x1c, 0x10, msym);
    dump_kprobe(&mut w, None, 0, 0xdead, None);
    assert_eq!(
        String::from_utf8(w.0).unwrap(),
        "Dump kprobe:\n.symbol_name = kernel_clone, .offset = 0, .addr = kernel_clone+0x0/0x4a0\n\
         Dump kprobe:\n.symbol_name = (null), .offset = 1c, .addr = f+0x1c/0x30 [m]\n\
         Dump kprobe:\n.symbol_name = (null), .offset = 0, .addr = 0xdead\n"
    );
}

#[test]
fn hash_buckets_match_hash_64() {
    // hash_64(addr, 6) = addr * GOLDEN_RATIO_64 >> 58, computed independently (Python).
    for (addr, bucket) in [
        (0xffff_ffff_8108_1234usize, 11),
        (0x1000, 34),
        (0xffff_ffff_c0a0_1000, 53),
        (0, 0),
    ] {
        assert_eq!(hash_ptr(addr), bucket, "{addr:#x}");
    }
}

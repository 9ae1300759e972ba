// SPDX-License-Identifier: GPL-2.0

//! The generic hit-path state machine (`kernel/kprobes/hit.rs`) against a mock CPU that
//! records every arch call, checked against the transitions of upstream's x86 and arm64
//! `kprobes/core.c`.

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use rkprobes_core::hit::{self, HitArch, Skip};
use rkprobes_core::hit::{KPROBE_HIT_ACTIVE, KPROBE_HIT_SS, KPROBE_HIT_SSDONE, KPROBE_REENTER};

const SLOT: usize = 0x9000;

#[derive(Default, Clone)]
struct Probe {
    addr: usize,
    nmissed: u32,
    disabled: bool,
    pre_takes_over: bool,
    emulated: bool,
    /// The emulation declines at the hit (powerpc's `emulate_step()` returning 0).
    declines: bool,
    skip: Option<Skip>,
}

#[derive(Default)]
struct State {
    probes: Vec<Probe>,
    current: Option<usize>,
    status: u32,
    saved: Option<(Option<usize>, u32)>,
    ip: usize,
    log: Vec<String>,
}

/// One CPU; `STEP_REENTER` is `HitArch::REENTER_WHILE_STEPPING`.
#[derive(Default)]
struct Cpu<const STEP_REENTER: bool>(RefCell<State>);

impl<const STEP_REENTER: bool> Cpu<STEP_REENTER> {
    fn with(probes: Vec<Probe>) -> Self {
        let c = Self::default();
        c.0.borrow_mut().probes = probes;
        c
    }
    fn log(&self) -> Vec<String> {
        self.0.borrow().log.clone()
    }
    fn push(&self, s: String) {
        self.0.borrow_mut().log.push(s);
    }
    fn current(&self) -> Option<usize> {
        self.0.borrow().current
    }
    fn status(&self) -> u32 {
        self.0.borrow().status
    }
    fn ip(&self) -> usize {
        self.0.borrow().ip
    }
    fn set_ip(&self, ip: usize) {
        self.0.borrow_mut().ip = ip;
    }
    fn nmissed(&self, p: usize) -> u32 {
        self.0.borrow().probes[p].nmissed
    }
}

impl<const STEP_REENTER: bool> HitArch for Cpu<STEP_REENTER> {
    type Probe = usize;
    type Regs = ();
    const REENTER_WHILE_STEPPING: bool = STEP_REENTER;

    fn current(&self) -> Option<usize> {
        self.0.borrow().current
    }
    fn set_current(&self, p: Option<usize>) {
        self.0.borrow_mut().current = p;
    }
    fn set_current_kprobe(&self, p: usize, _regs: ()) {
        self.push(format!("set_current {p}"));
        self.0.borrow_mut().current = Some(p);
    }
    fn status(&self) -> u32 {
        self.0.borrow().status
    }
    fn set_status(&self, status: u32) {
        self.0.borrow_mut().status = status;
    }
    fn save_previous(&self) {
        let mut s = self.0.borrow_mut();
        assert!(s.saved.is_none(), "one level of saved probe only");
        s.saved = Some((s.current, s.status));
    }
    fn restore_previous(&self) {
        let mut s = self.0.borrow_mut();
        let (cur, status) = s.saved.take().expect("restore without save");
        s.current = cur;
        s.status = status;
    }
    fn inc_nmissed(&self, p: usize) {
        self.0.borrow_mut().probes[p].nmissed += 1;
    }
    fn disabled(&self, p: usize) -> bool {
        self.0.borrow().probes[p].disabled
    }
    fn call_pre_handler(&self, p: usize, _regs: ()) -> bool {
        let (ip, st, cur) = {
            let s = self.0.borrow();
            (s.ip, s.status, s.current)
        };
        self.push(format!("pre {p} ip={ip:#x} status={st} current={cur:?}"));
        self.0.borrow().probes[p].pre_takes_over
    }
    fn call_post_handler(&self, p: usize, _regs: ()) {
        let (ip, st) = (self.ip(), self.status());
        self.push(format!("post {p} ip={ip:#x} status={st}"));
    }
    fn skip_step(&self, p: usize, _regs: (), reenter: bool) -> Skip {
        let skip = self.0.borrow().probes[p].skip.unwrap_or(Skip::No);
        if skip != Skip::No {
            self.push(format!("skip {p} {skip:?} reenter={reenter}"));
        }
        skip
    }
    fn emulates(&self, p: usize) -> bool {
        self.0.borrow().probes[p].emulated
    }
    fn emulate(&self, p: usize, _regs: ()) {
        self.push(format!("emulate {p}"));
    }
    fn try_emulate(&self, p: usize, regs: ()) -> bool {
        if !self.emulates(p) {
            return false;
        }
        self.emulate(p, regs);
        !self.0.borrow().probes[p].declines
    }
    fn start_step(&self, p: usize, _regs: ()) {
        self.push(format!("step {p}"));
        self.set_ip(SLOT + p * 16);
    }
    fn in_step(&self, p: usize, _regs: ()) -> bool {
        let ip = self.ip();
        ip > SLOT + p * 16 && ip < SLOT + p * 16 + 16
    }
    fn finish_step(&self, p: usize, _regs: ()) {
        self.push(format!("finish {p}"));
        let a = self.0.borrow().probes[p].addr;
        self.set_ip(a + 1);
    }
    fn faulted_in_step(&self, p: usize, _regs: ()) -> bool {
        self.ip() == SLOT + p * 16
    }
    fn unwind_fault(&self, p: usize, _regs: ()) {
        self.push(format!("unwind {p}"));
        let a = self.0.borrow().probes[p].addr;
        self.set_ip(a);
    }
    fn unrecoverable(&self, p: usize) -> ! {
        panic!("BUG: unrecoverable kprobe {p}");
    }
    fn warn_bad_status(&self) {
        self.push("WARN bad status".into());
    }
    fn warn_fault_status(&self) {
        self.push("WARN fault status".into());
    }
    fn ip(&self, _regs: ()) -> usize {
        self.0.borrow().ip
    }
    fn set_ip(&self, _regs: (), ip: usize) {
        self.0.borrow_mut().ip = ip;
    }
}

fn probe(addr: usize) -> Probe {
    Probe {
        addr,
        ..Probe::default()
    }
}

/// The int3 trap of a probe at `addr`: ip is one past the breakpoint.
fn trap<const R: bool>(cpu: &Cpu<R>, p: usize) -> bool {
    let a = cpu.0.borrow().probes[p].addr;
    cpu.set_ip(a + 1);
    hit::handle_hit(cpu, p, ())
}

/// The trap that ends the step of `p` (the breakpoint after the copy in its slot).
fn step_trap<const R: bool>(cpu: &Cpu<R>, p: usize, len: usize) -> bool {
    cpu.set_ip(SLOT + p * 16 + len + 1);
    hit::step_done(cpu, ())
}

#[test]
fn hit_steps_then_post_handler() {
    let cpu = Cpu::<true>::with(vec![probe(0x100)]);
    assert!(trap(&cpu, 0));
    assert_eq!(cpu.status(), KPROBE_HIT_SS);
    assert_eq!(cpu.current(), Some(0));
    assert!(hit::stepping(&cpu));
    assert!(step_trap(&cpu, 0, 3));
    assert_eq!(cpu.current(), None);
    assert_eq!(cpu.status(), KPROBE_HIT_SSDONE);
    assert_eq!(
        cpu.log(),
        [
            "set_current 0",
            "pre 0 ip=0x101 status=1 current=Some(0)",
            "step 0",
            "finish 0",
            "post 0 ip=0x101 status=8",
        ]
    );
}

#[test]
fn pre_handler_taking_over_skips_the_step() {
    let mut p = probe(0x100);
    p.pre_takes_over = true;
    let cpu = Cpu::<true>::with(vec![p]);
    assert!(trap(&cpu, 0));
    assert_eq!(cpu.current(), None);
    assert_eq!(cpu.log().len(), 2, "{:?}", cpu.log());
    assert!(!step_trap(&cpu, 0, 3), "no step is in flight");
}

#[test]
fn emulated_instruction_posts_in_the_same_trap() {
    let mut p = probe(0x100);
    p.emulated = true;
    let cpu = Cpu::<true>::with(vec![p]);
    assert!(trap(&cpu, 0));
    assert_eq!(cpu.current(), None);
    assert_eq!(cpu.status(), KPROBE_HIT_SSDONE);
    assert_eq!(cpu.log()[2..], ["emulate 0", "post 0 ip=0x101 status=8"]);
}

#[test]
fn declined_emulation_steps_instead() {
    let mut p = probe(0x100);
    p.emulated = true;
    p.declines = true;
    let cpu = Cpu::<true>::with(vec![p]);
    assert!(trap(&cpu, 0));
    assert_eq!(cpu.current(), Some(0), "the step is in flight");
    assert_eq!(cpu.status(), KPROBE_HIT_SS);
    assert_eq!(cpu.log()[2..], ["emulate 0", "step 0"]);
    assert!(step_trap(&cpu, 0, 4));
    assert_eq!(cpu.current(), None);
    assert_eq!(cpu.log()[4..], ["finish 0", "post 0 ip=0x101 status=8"]);
}

#[test]
fn boost_and_detour_leave_early() {
    let mut b = probe(0x100);
    b.skip = Some(Skip::Boost);
    let mut d = probe(0x200);
    d.skip = Some(Skip::Detour);
    let cpu = Cpu::<true>::with(vec![b, d]);
    assert!(trap(&cpu, 0));
    assert_eq!(cpu.current(), None, "a boosted probe is no longer current");
    assert_eq!(cpu.status(), KPROBE_HIT_ACTIVE);
    assert!(trap(&cpu, 1));
    assert_eq!(cpu.current(), None, "nor is one sent through its detour");
    assert!(!cpu
        .log()
        .iter()
        .any(|l| l.starts_with("post") || l.starts_with("step")));
}

#[test]
fn reentry_from_a_handler_counts_a_miss_and_restores() {
    let cpu = Cpu::<true>::with(vec![probe(0x100), probe(0x200)]);
    // Outer probe hit; its pre-handler is "running" (ACTIVE) when the inner one traps.
    cpu.set_ip(0x101);
    cpu.set_current_kprobe(0, ());
    cpu.set_status(KPROBE_HIT_ACTIVE);
    assert!(trap(&cpu, 1));
    assert_eq!(cpu.nmissed(1), 1);
    assert_eq!(cpu.status(), KPROBE_REENTER);
    assert_eq!(cpu.current(), Some(1));
    assert!(step_trap(&cpu, 1, 2));
    assert_eq!(cpu.current(), Some(0), "the outer probe is current again");
    assert_eq!(cpu.status(), KPROBE_HIT_ACTIVE);
    assert!(!cpu
        .log()
        .iter()
        .any(|l| l.starts_with("pre 1") || l.starts_with("post 1")));
}

#[test]
fn reentry_from_post_handler_and_emulated_reentry() {
    let mut inner = probe(0x200);
    inner.emulated = true;
    let cpu = Cpu::<true>::with(vec![probe(0x100), inner]);
    cpu.set_current_kprobe(0, ());
    cpu.set_status(KPROBE_HIT_SSDONE);
    assert!(trap(&cpu, 1));
    assert_eq!(cpu.nmissed(1), 1);
    assert_eq!((cpu.current(), cpu.status()), (Some(0), KPROBE_HIT_SSDONE));
}

#[test]
fn reentry_while_stepping_depends_on_the_arch() {
    let x86 = Cpu::<true>::with(vec![probe(0x100), probe(0x200)]);
    x86.set_current_kprobe(0, ());
    x86.set_status(KPROBE_HIT_SS);
    assert!(trap(&x86, 1));
    assert_eq!(x86.nmissed(1), 1);

    let arm = Cpu::<false>::with(vec![probe(0x100), probe(0x200)]);
    arm.set_current_kprobe(0, ());
    arm.set_status(KPROBE_HIT_SS);
    let r = catch_unwind(AssertUnwindSafe(|| trap(&arm, 1)));
    assert!(r.is_err(), "arm64 BUG()s on a hit while stepping");
}

#[test]
fn reentry_while_reentering_is_unrecoverable() {
    let cpu = Cpu::<true>::with(vec![probe(0x100), probe(0x200)]);
    cpu.set_current_kprobe(0, ());
    cpu.set_status(KPROBE_REENTER);
    let r = catch_unwind(AssertUnwindSafe(|| trap(&cpu, 1)));
    assert!(r.is_err());
}

#[test]
fn unknown_status_warns_and_is_not_handled() {
    let cpu = Cpu::<true>::with(vec![probe(0x100), probe(0x200)]);
    cpu.set_current_kprobe(0, ());
    cpu.set_status(0);
    assert!(!trap(&cpu, 1));
    assert!(cpu.log().contains(&"WARN bad status".to_string()));
    assert_eq!(cpu.nmissed(1), 0);
}

#[test]
fn step_done_only_for_the_current_step() {
    let cpu = Cpu::<true>::with(vec![probe(0x100)]);
    assert!(!hit::step_done(&cpu, ()), "nothing running");
    assert!(trap(&cpu, 0));
    cpu.set_ip(0x5000);
    assert!(
        !hit::step_done(&cpu, ()),
        "a trap elsewhere is not the step's"
    );
    assert_eq!(cpu.current(), Some(0));
    assert!(step_trap(&cpu, 0, 1));
}

#[test]
fn fault_in_the_slot_unwinds_to_the_probe() {
    let cpu = Cpu::<true>::with(vec![probe(0x100)]);
    assert!(trap(&cpu, 0));
    cpu.set_ip(SLOT);
    assert!(!hit::step_faulted(&cpu, ()));
    assert_eq!(cpu.ip(), 0x100);
    assert_eq!(cpu.current(), None);
    assert!(!cpu.log().iter().any(|l| l.starts_with("WARN")));
}

#[test]
fn fault_in_a_reentered_step_restores_the_outer_probe() {
    let cpu = Cpu::<true>::with(vec![probe(0x100), probe(0x200)]);
    cpu.set_current_kprobe(0, ());
    cpu.set_status(KPROBE_HIT_ACTIVE);
    assert!(trap(&cpu, 1));
    cpu.set_ip(SLOT + 16);
    assert!(!hit::step_faulted(&cpu, ()));
    assert_eq!((cpu.current(), cpu.status()), (Some(0), KPROBE_HIT_ACTIVE));
}

#[test]
fn fault_elsewhere_is_left_alone_and_fault_outside_a_step_warns() {
    let cpu = Cpu::<true>::with(vec![probe(0x100)]);
    assert!(!hit::step_faulted(&cpu, ()), "nothing running");
    assert!(trap(&cpu, 0));
    cpu.set_ip(0x7777);
    assert!(!hit::step_faulted(&cpu, ()));
    assert_eq!(cpu.current(), Some(0));
    cpu.set_status(KPROBE_HIT_ACTIVE);
    cpu.set_ip(SLOT);
    hit::step_faulted(&cpu, ());
    assert!(cpu.log().contains(&"WARN fault status".to_string()));
    assert_eq!(cpu.current(), None);
}

#[test]
fn ftrace_hit_sets_ip_like_a_breakpoint_and_a_step() {
    let cpu = Cpu::<true>::with(vec![probe(0x100), probe(0x200)]);
    cpu.set_ip(0x4242);
    hit::ftrace_hit(&cpu, 0, (), 0x100, 1, 5);
    assert_eq!(cpu.ip(), 0x4242, "the ip is restored");
    assert_eq!(cpu.current(), None);
    assert_eq!(
        cpu.log(),
        [
            "pre 0 ip=0x101 status=1 current=Some(0)",
            "post 0 ip=0x105 status=8"
        ]
    );
    // Running: a miss. Disabled: nothing at all.
    cpu.set_current(Some(1));
    hit::ftrace_hit(&cpu, 0, (), 0x100, 1, 5);
    assert_eq!(cpu.nmissed(0), 1);
    cpu.set_current(None);
    cpu.0.borrow_mut().probes[0].disabled = true;
    hit::ftrace_hit(&cpu, 0, (), 0x100, 1, 5);
    assert_eq!((cpu.nmissed(0), cpu.log().len()), (1, 2));
}

#[test]
fn ftrace_pre_handler_taking_over_keeps_its_ip() {
    let mut p = probe(0x100);
    p.pre_takes_over = true;
    let cpu = Cpu::<true>::with(vec![p]);
    cpu.set_ip(0x4242);
    hit::ftrace_hit(&cpu, 0, (), 0x100, 1, 5);
    assert_eq!(
        cpu.ip(),
        0x101,
        "no post-handler and the ip is the handler's"
    );
    assert_eq!(cpu.log().len(), 1);
    assert_eq!(cpu.current(), None);
}

#[test]
fn optimized_hit_runs_handlers_with_the_probe_current() {
    let cpu = Cpu::<true>::with(vec![probe(0x100), probe(0x200)]);
    let mut ran = Vec::new();
    hit::optimized_hit(
        &cpu,
        0,
        (),
        |_| cpu.set_ip(0x101),
        |p, _| ran.push((p, cpu.current(), cpu.status(), cpu.ip())),
    );
    assert_eq!(ran, [(0, Some(0), KPROBE_HIT_ACTIVE, 0x101)]);
    assert_eq!(cpu.current(), None);
    cpu.set_current(Some(1));
    hit::optimized_hit(
        &cpu,
        0,
        (),
        |_| panic!("no fixup"),
        |_, _| panic!("no handler"),
    );
    assert_eq!(cpu.nmissed(0), 1);
}

#[test]
fn reentered_detour_and_boost_keep_the_outer_probe() {
    let mut b = probe(0x200);
    b.skip = Some(Skip::Boost);
    let mut d = probe(0x300);
    d.skip = Some(Skip::Detour);
    let cpu = Cpu::<true>::with(vec![probe(0x100), b, d]);
    for inner in [1, 2] {
        cpu.set_current_kprobe(0, ());
        cpu.set_status(KPROBE_HIT_ACTIVE);
        assert!(trap(&cpu, inner));
        assert_eq!(cpu.nmissed(inner), 1);
        assert_eq!((cpu.current(), cpu.status()), (Some(0), KPROBE_HIT_ACTIVE));
    }
}

// SPDX-License-Identifier: GPL-2.0

//! Registration, aggregation, arming, enable/disable, unregistration and probe killing: the
//! middle of `kernel/kprobes.c`, function for function.
//!
//! Constraints: process context, may sleep (through the store's locks and RCU waits); no
//! allocation in the logic itself (aggregates come from [`ProbeStore::alloc_aggr_kprobe`]);
//! `no_std`; does not name the `kernel` crate. Functions taking `&mut KprobeState` or
//! `&KprobeState` are called with `kprobe_mutex` held (only its guard hands the state out); the
//! others take it themselves, in C's order. Every error is the errno C returns in the same case,
//! checked in the same order (`UPSTREAM-CONTRACT.md` 1.1, 3.2).
//!
//! [`ProbeStore::alloc_aggr_kprobe`]: super::store::ProbeStore::alloc_aggr_kprobe

use core::ops::ControlFlow;

use super::arch::{Arch, ArchHooks};
use super::batch::Batch;
use super::blacklist::{
    add_module_kprobe_blacklist, remove_module_kprobe_blacklist, within_kprobe_blacklist,
    BlacklistStore, ModuleAreas,
};
use super::errno::{Errno, Result};
use super::ftrace::{
    apply_ftrace_batch_one_by_one, arm_kprobe_ftrace, disarm_kprobe_ftrace, flush_ftrace_batch,
    flush_ftrace_removals, settle_ftrace_batch,
};
use super::optimizer::{
    alloc_aggr_kprobe, get_optimized_kprobe, kill_optimized_kprobe, kprobe_disarmed, kprobe_queued,
    optimize_kprobe, prepare_optimized_kprobe, reoptimize_around, reuse_unused_kprobe,
    try_to_optimize_kprobe, unoptimize_kprobe, wait_for_kprobe_optimizer,
};
use super::report::{Message, WarnSite};
use super::store::{
    flags_disabled, flags_ftrace, flags_gone, hash_ptr, Aggr, KprobeState, OptQueue,
    KPROBE_FLAG_DISABLED, KPROBE_FLAG_FTRACE, KPROBE_FLAG_GONE, KPROBE_FLAG_ON_FUNC_ENTRY,
    KPROBE_TABLE_SIZE,
};
use super::table::{
    aggr_kprobe_disabled, for_each_kprobe, get_kprobe, get_valid_kprobe, kprobe_unused, owner_among,
};
use super::text::{FtraceOps, ProbeFields};

/// Everything the core needs from its environment: arch hooks, probe storage, kernel services
/// and blacklist storage (implemented once for the kernel, once for the host simulation).
pub trait Platform: Arch + BlacklistStore {}

impl<T: Arch + BlacklistStore> Platform for T {}

fn set_flag<A: Arch>(a: &A, p: A::Probe, flag: u32) {
    a.set_flags(p, a.flags(p) | flag);
}

fn clear_flag<A: Arch>(a: &A, p: A::Probe, flag: u32) {
    a.set_flags(p, a.flags(p) & !flag);
}

/// `_kprobe_addr()`: resolve `addr` or `symbol_name` + `offset` to `(address, on_func_entry)`.
pub fn kprobe_addr<A: Arch>(
    a: &A,
    addr: usize,
    symbol_name: Option<&[u8]>,
    offset: usize,
) -> Result<(usize, bool)> {
    let mut addr = match (symbol_name, addr) {
        (Some(_), a) if a != 0 => return Err(Errno::EINVAL),
        (None, 0) => return Err(Errno::EINVAL),
        (Some(name), _) => {
            // kprobe_lookup_name() does NOT fold the offset into its result.
            let base = A::Hooks::lookup_name(a, name, offset);
            if base == 0 {
                return Err(Errno::ENOENT);
            }
            base
        }
        (None, addr) => addr,
    };
    addr = addr.wrapping_add(offset);
    let Some((_size, sym_offset)) = a.kallsyms_lookup_size_offset(addr) else {
        return Err(Errno::ENOENT);
    };
    addr = addr.wrapping_sub(sym_offset);
    A::Hooks::adjust_kprobe_addr(a, addr, sym_offset).ok_or(Errno::EINVAL)
}

/// `kprobe_on_func_entry()`: 0 if `addr`/`sym` + `offset` is a function entry.
pub fn kprobe_on_func_entry<A: Arch>(
    a: &A,
    addr: usize,
    sym: Option<&[u8]>,
    offset: usize,
) -> Result {
    let (_, on_func_entry) = kprobe_addr(a, addr, sym, offset)?;
    if on_func_entry {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

/// `warn_kprobe_rereg()`: WARN and `EINVAL` if `p` is already registered; `kretprobe` says
/// whether `register_kretprobe()` asks (C's WARN_ON_ONCE has a flag in each caller).
pub fn warn_kprobe_rereg<A: Arch>(a: &A, p: A::Probe, kretprobe: bool) -> Result {
    let _st = a.kprobe_mutex();
    kprobe_rereg_locked(a, p, kretprobe)
}

/// `warn_kprobe_rereg()` with `kprobe_mutex` held.
fn kprobe_rereg_locked<A: Arch>(a: &A, p: A::Probe, kretprobe: bool) -> Result {
    if get_valid_kprobe(a, p).is_some() {
        a.warn(WarnSite::WarnKprobeRereg { kretprobe });
        return Err(Errno::EINVAL);
    }
    Ok(())
}

fn check_ftrace_location<A: Arch>(a: &A, p: A::Probe) -> Result {
    let addr = a.addr(p);
    if a.ftrace_location(addr) == addr {
        if !A::KPROBES_ON_FTRACE {
            return Err(Errno::EINVAL);
        }
        set_flag(a, p, KPROBE_FLAG_FTRACE);
    }
    Ok(())
}

fn is_cfi_preamble_symbol<A: Arch>(a: &A, addr: usize) -> bool {
    a.lookup_symbol_name(addr, |name| {
        name.is_some_and(|n| n.starts_with(b"__cfi_") || n.starts_with(b"__pfx_"))
    })
}

/// `check_kprobe_address_safe()`: the register-time safety checks, in C's order.
///
/// Returns the module that contains the probe with a reference held (the caller drops it).
pub fn check_kprobe_address_safe<A: Platform>(a: &A, p: A::Probe) -> Result<Option<A::Module>> {
    check_ftrace_location(a, p)?;
    let addr = a.addr(p);
    a.jump_label_locked(|| {
        let mut probed_mod = None;
        if !a.core_kernel_text(addr) {
            probed_mod = Some(a.module_text_address(addr).ok_or(Errno::EINVAL)?);
        }
        if a.in_gate_area_no_mm(addr)
            || within_kprobe_blacklist(a, addr)
            || a.jump_label_text_reserved(addr)
            || a.static_call_text_reserved(addr)
            || a.find_bug(addr)
            || is_cfi_preamble_symbol(a, addr)
        {
            return Err(Errno::EINVAL);
        }
        if let Some(m) = probed_mod {
            if !a.try_module_get(m) {
                return Err(Errno::ENOENT);
            }
            if a.within_module_init(addr, m) && !a.module_is_coming(m) {
                a.module_put(m);
                return Err(Errno::ENOENT);
            }
        }
        Ok(probed_mod)
    })
}

fn prepare_kprobe<A: Arch>(a: &A, p: A::Probe) -> Result {
    if flags_ftrace(a.flags(p)) {
        return A::Hooks::prepare_kprobe_ftrace(a, p);
    }
    A::Hooks::prepare_kprobe(a, p)
}

fn arm_kprobe_locked<A: Arch>(a: &A, st: &KprobeState, p: A::Probe) {
    a.assert_text_mutex_held();
    if let Some(op) = get_optimized_kprobe(a, a.addr(p)) {
        unoptimize_kprobe(a, op.kp(), true);
    }
    A::Hooks::arm_kprobe(a, p);
    optimize_kprobe(a, st, p);
}

/// `__disarm_kprobe()`, with the text locks held. Inline for the same reason as
/// [`disarm_kprobe_in`].
#[inline(always)]
fn disarm_kprobe_locked<A: Arch>(
    a: &A,
    st: &mut KprobeState,
    batch: &mut Batch<A>,
    p: A::Probe,
    reopt: bool,
) {
    a.assert_text_mutex_held();
    unoptimize_kprobe(a, p, st.all_disarmed);
    // A queued probe is left to the optimizer, which disarms only DISABLED ones. That is what a
    // probe being disabled needs, but a global disarm does not set DISABLED: upstream 6.12 then
    // leaves the breakpoint of a probe found waiting on the freeing list (forced there just now,
    // its unoptimization having been queued by the optimization sysctl, or revived there) while
    // kprobes are globally disabled, and once that probe is disabled and unregistered in this
    // state the breakpoint stays without its kprobe: an "Oops: int3" on the next hit (README,
    // "The kprobes/enabled race"). On the freeing list the jump is already gone, so the global
    // disarm disarms it here.
    let on_freeing_list =
        || Aggr::of(a, p).is_some_and(|ap| a.queue_contains(OptQueue::Freeing, ap));
    if !kprobe_queued(a, p) || (st.all_disarmed && on_freeing_list()) {
        // In a batch, written with its other breakpoints, before the optimizer (which needs
        // kprobe_mutex) can act on what follows.
        if !batch.record_disarm(a, p) {
            A::Hooks::disarm_kprobe(a, p);
        }
        if reopt {
            reoptimize_around(a, st, a.addr(p));
        }
    }
}

/// `arm_kprobe()`: through ftrace, or `__arm_kprobe` under `cpus_read_lock` + `text_mutex`.
pub fn arm_kprobe<A: Arch>(a: &A, st: &mut KprobeState, p: A::Probe) -> Result {
    arm_kprobe_in(a, st, &mut Batch::none(), p)
}

/// `arm_kprobe()` inside a registration batch, which records arming through ftrace.
fn arm_kprobe_in<A: Arch>(
    a: &A,
    st: &mut KprobeState,
    batch: &mut Batch<A>,
    p: A::Probe,
) -> Result {
    if flags_ftrace(a.flags(p)) {
        return arm_kprobe_ftrace(a, st, batch, p);
    }
    let st = &*st;
    a.text_locked(false, || arm_kprobe_locked(a, st, p));
    Ok(())
}

/// `disarm_kprobe()`: through ftrace, or `__disarm_kprobe` under the text locks.
pub fn disarm_kprobe<A: Arch>(a: &A, st: &mut KprobeState, p: A::Probe, reopt: bool) -> Result {
    disarm_kprobe_in(a, st, &mut Batch::none(), p, reopt)
}

/// `disarm_kprobe()` inside an unregistration batch, which may hold the text locks already and
/// record the breakpoint removal for a later write. Inline: a batch of 1000 optimized probes
/// pays its call once a probe (`bench`'s optimization-on unregistration row).
#[inline(always)]
fn disarm_kprobe_in<A: Arch>(
    a: &A,
    st: &mut KprobeState,
    batch: &mut Batch<A>,
    p: A::Probe,
    reopt: bool,
) -> Result {
    if flags_ftrace(a.flags(p)) {
        return disarm_kprobe_ftrace(a, st, batch, p);
    }
    if batch.text_locks_held() {
        disarm_kprobe_locked(a, st, batch, p, reopt);
    } else {
        a.text_locked(false, || disarm_kprobe_locked(a, st, batch, p, reopt));
    }
    Ok(())
}

fn add_new_kprobe<A: Arch>(a: &A, ap: Aggr<A::Probe>, p: A::Probe) {
    if a.has_post_handler(p) {
        unoptimize_kprobe(a, ap.kp(), true);
    }
    a.list_add_rcu(p, ap);
    if a.has_post_handler(p) && !a.has_post_handler(ap.kp()) {
        a.set_aggr_post_handler(ap, true);
    }
}

/// `register_aggr_kprobe()`: register `p` at an address that already has `orig_p`.
fn register_aggr_kprobe<A: Arch>(
    a: &A,
    st: &mut KprobeState,
    batch: &mut Batch<A>,
    orig_p: A::Probe,
    p: A::Probe,
) -> Result {
    let ro: &KprobeState = st;
    let agg = a.text_locked(true, || -> Result<Aggr<A::Probe>> {
        let agg = match Aggr::of(a, orig_p) {
            None => {
                let agg = alloc_aggr_kprobe(a, orig_p).ok_or(Errno::ENOMEM)?;
                super::aggr::init_aggr_kprobe(a, agg, orig_p);
                agg
            }
            Some(agg) => {
                if kprobe_unused(a, orig_p) {
                    reuse_unused_kprobe(a, ro, agg)?;
                }
                agg
            }
        };
        let ap = agg.kp();
        if flags_gone(a.flags(ap)) {
            // The slot went with the freed text: prepare again; on failure `ap` stays for reuse.
            A::Hooks::prepare_kprobe(a, ap)?;
            prepare_optimized_kprobe(a, agg);
            a.set_flags(ap, (a.flags(ap) & !KPROBE_FLAG_GONE) | KPROBE_FLAG_DISABLED);
        }
        a.copy_kprobe(ap, p);
        add_new_kprobe(a, agg, p);
        Ok(agg)
    })?;
    let ap = agg.kp();
    if flags_disabled(a.flags(ap)) && !flags_disabled(a.flags(p)) {
        clear_flag(a, ap, KPROBE_FLAG_DISABLED);
        if !st.all_disarmed {
            if let Err(e) = arm_kprobe_in(a, st, batch, ap) {
                set_flag(a, ap, KPROBE_FLAG_DISABLED);
                a.list_del_rcu(p);
                a.synchronize_rcu();
                return Err(e);
            }
        }
    }
    Ok(())
}

/// `register_kprobe()`.
pub fn register_kprobe<A: Platform>(a: &A, p: A::Probe) -> Result {
    register_kprobe_in(a, p, None)
}

/// `register_kprobe()`, taking `kprobe_mutex` where C does, or (`held`, a registration batch)
/// with it held throughout.
fn register_kprobe_in<A: Platform>(
    a: &A,
    p: A::Probe,
    mut held: Option<(&mut KprobeState, &mut Batch<A>)>,
) -> Result {
    let (addr, on_func_entry) = kprobe_addr(a, a.addr(p), a.symbol_name(p), a.offset(p) as usize)?;
    a.set_addr(p, addr);
    match held {
        // Registered already: the WARN is seen, so only if C gets this far.
        Some((_, ref mut batch)) if get_valid_kprobe(a, p).is_some() => {
            settle_ftrace_batch(a, batch)?;
            return kprobe_rereg_locked(a, p, false);
        }
        Some(_) => {}
        None => warn_kprobe_rereg(a, p, false)?,
    }

    a.set_flags(p, a.flags(p) & KPROBE_FLAG_DISABLED);
    a.reset_nmissed(p);
    a.init_list_head(p);

    let probed_mod = check_kprobe_address_safe(a, p)?;

    let ret = match held {
        Some((st, batch)) => register_kprobe_locked(a, st, batch, p, addr, on_func_entry),
        None => {
            let mut st = a.kprobe_mutex();
            register_kprobe_locked(a, &mut st, &mut Batch::none(), p, addr, on_func_entry)
        }
    };

    if let Some(m) = probed_mod {
        a.module_put(m);
    }
    ret
}

fn register_kprobe_locked<A: Arch>(
    a: &A,
    st: &mut KprobeState,
    batch: &mut Batch<A>,
    p: A::Probe,
    addr: usize,
    on_func_entry: bool,
) -> Result {
    if on_func_entry {
        set_flag(a, p, KPROBE_FLAG_ON_FUNC_ENTRY);
    }
    if let Some(old_p) = get_kprobe(a, addr) {
        // Joining changes a probe the batch may not own (an aggregate made, a post_handler
        // marked).
        settle_ftrace_batch(a, batch)?;
        return register_aggr_kprobe(a, st, batch, old_p, p);
    }
    a.text_locked(false, || prepare_kprobe(a, p))?;

    a.init_hlist_node(p);
    a.hlist_add_head_rcu(hash_ptr(addr), p);

    if !st.all_disarmed && !flags_disabled(a.flags(p)) {
        if let Err(e) = arm_kprobe_in(a, st, batch, p) {
            a.hlist_del_rcu(p);
            a.synchronize_rcu();
            return Err(e);
        }
    }
    try_to_optimize_kprobe(a, st, p);
    Ok(())
}

/// `register_kprobes()`: all or nothing.
///
/// The entries are probes or `Option`s of them: a `None` (a NULL in the caller's array, which C
/// dereferences) fails with -EINVAL as an entry that cannot be registered does, after the
/// entries before it are unregistered again.
pub fn register_kprobes<A: Platform, P: Copy + Into<Option<A::Probe>>>(a: &A, kps: &[P]) -> Result {
    if kps.is_empty() {
        return Err(Errno::EINVAL);
    }
    let name_of = |i: usize| kps[i].into().and_then(|p| a.symbol_name(p));
    let addr_of = |i: usize| kps[i].into().map_or(0, |p| a.addr(p));
    a.with_symbol_batch(kps.len(), name_of, addr_of, |a| {
        if let Some(ret) = register_kprobes_batched(a, kps) {
            return ret;
        }
        register_all(
            kps,
            |p| register_kprobe(a, p),
            |done| unregister_kprobes(a, done),
        )
    })
}

/// `register_kprobes()` as one batch (Rust only): `kprobe_mutex` held across the entries, and
/// the probes armed through ftrace added to each ops' filter at once at the end (C updates
/// every call site of the kernel for each such probe). `None` when the batch cannot be done
/// this way (fewer than two entries, no storage): the caller registers probe by probe.
///
/// The result is C's, entry for entry. Entries are registered in order with C's checks. Arming
/// through ftrace is recorded; the records are applied in one filter update per ops at the end,
/// and before an entry joins a probe already at its address (joining changes that probe: an
/// aggregate made, a post_handler marked), so that a join happens only once every arming
/// before it is known to succeed, as in C. When ftrace refuses a batched update, the records
/// are applied one by one in entry order to find the first entry whose arming fails, as C's
/// did: the entries after it are unregistered (their records forgotten) and get back the
/// fields the caller passed (C never reached them), that entry is unregistered and keeps the
/// fields C's failed registration leaves, and the entries before it are unregistered as C's
/// rollback does. A failure of an entry's own checks rolls back the entries before it, as in C.
/// Nothing of the batch can be hit before `register_kprobes()` returns here that C promises to
/// be hittable: C arms as it goes, which only makes hits during the call possible.
fn register_kprobes_batched<A: Platform, P: Copy + Into<Option<A::Probe>>>(
    a: &A,
    kps: &[P],
) -> Option<Result> {
    if !A::KPROBES_ON_FTRACE || kps.len() < 2 {
        return None;
    }
    // The batch this call owns, dropped (its storage freed) when the call returns, after the
    // mutex.
    let mut batch = Batch::registering(a, kps.len())?;
    let mut st = a.kprobe_mutex();
    let probe = |i: usize| kps[i].into();
    for i in 0..kps.len() {
        if let Some(p) = probe(i) {
            let saved = ProbeFields {
                addr: a.addr(p),
                flags: a.flags(p),
                nmissed: a.nmissed(p),
            };
            batch.save_entry(i, saved);
        }
    }
    // The entry that failed its own checks, or (`arming`) whose arming ftrace refused.
    let mut failed = None;
    let mut registered = kps.len();
    for i in 0..kps.len() {
        batch.set_entry(i);
        let Some(p) = probe(i) else {
            failed = Some((i, Errno::EINVAL, false));
            registered = i;
            break;
        };
        let mut ret = register_kprobe_in(a, p, Some((&mut st, &mut batch)));
        if ret.is_err() && batch.take_failed() {
            // The records before a join could not be applied in one update.
            if let Some((k, e)) = apply_ftrace_batch_one_by_one(a, &mut batch) {
                failed = Some((k, e, true));
                registered = i;
                break;
            }
            // All applied after all: this entry again, as the caller passed it.
            restore_entry(a, &batch, i, p);
            ret = register_kprobe_in(a, p, Some((&mut st, &mut batch)));
        }
        if let Err(e) = ret {
            failed = Some((i, e, false));
            registered = i;
            break;
        }
    }
    if !matches!(failed, Some((_, _, true))) && flush_ftrace_batch(a, &mut batch).is_err() {
        if let Some((k, e)) = apply_ftrace_batch_one_by_one(a, &mut batch) {
            failed = Some((k, e, true));
        }
    }
    let Some((k, err, arming)) = failed else {
        batch.end_registering();
        return Some(Ok(()));
    };
    // Roll back. With `arming`: first the entries after `k` and `k` itself (their records
    // forgotten), then, as C's rollback, those before `k`; else those before `k`.
    let first_rollback = if arming { k } else { registered };
    let k_flags = if arming {
        probe(k).map(|p| a.flags(p))
    } else {
        None
    };
    for range in [first_rollback..registered, 0..first_rollback.min(k)] {
        let entries = &kps[range];
        let ftrace = any_ftrace_probe(a, entries, &|p: P| p.into());
        unregister_tops_locked(
            a,
            &mut st,
            &mut batch,
            entries,
            |p| p.into(),
            |_| {},
            ftrace,
        );
    }
    // Left only by an upstream quirk (an aggregate armed on one ops, disarmed on the other):
    // C would have applied them, and keeps them after its failed removal, as here.
    if let Err(e) = flush_ftrace_batch(a, &mut batch) {
        a.warn(WarnSite::FtraceBatchLeftover { err: e.to_neg() });
        for ops in [FtraceOps::Plain, FtraceOps::Ipmodify] {
            batch.forget_armings(ops);
        }
    }
    batch.end_registering();
    drop(st);
    a.synchronize_rcu();
    unregister_kprobes_bottom_all(a, &kps[..registered]);
    let _st = a.kprobe_mutex();
    if arming {
        if let (Some(p), Some(f)) = (probe(k), k_flags) {
            a.set_flags(p, f);
        }
        for i in k + 1..kps.len() {
            // A probe also given at or before `k` keeps what C left it (a failure path: the
            // quadratic scan is fine).
            if let Some(p) = probe(i).filter(|&p| !(0..=k).any(|j| probe(j) == Some(p))) {
                restore_entry(a, &batch, i, p);
            }
        }
    }
    Some(Err(err))
}

/// Gives batch entry `i` (probe `p`) back the `addr`, `flags` and `nmissed` its caller passed.
fn restore_entry<A: Arch>(a: &A, batch: &Batch<A>, i: usize, p: A::Probe) {
    let saved = batch.saved_entry(i);
    a.set_addr(p, saved.addr);
    a.set_flags(p, saved.flags);
    a.set_nmissed(p, saved.nmissed);
}

/// The loop of `register_kprobes()` and `register_kretprobes()`: `register_one` on every entry,
/// all or nothing. A `None` entry fails with -EINVAL; on the first failure the entries before
/// it are handed to `unregister_all` and the failure returned.
pub fn register_all<T, P: Copy + Into<Option<T>>>(
    entries: &[P],
    register_one: impl Fn(T) -> Result,
    unregister_all: impl FnOnce(&[P]),
) -> Result {
    for (i, &p) in entries.iter().enumerate() {
        if let Err(e) = p.into().ok_or(Errno::EINVAL).and_then(&register_one) {
            if i > 0 {
                unregister_all(&entries[..i]);
            }
            return Err(e);
        }
    }
    Ok(())
}

/// `__disable_kprobe()`: disable `p`, disarming its hash entry when nothing there stays enabled.
pub fn disable_kprobe_locked<A: Arch>(
    a: &A,
    st: &mut KprobeState,
    p: A::Probe,
) -> Result<A::Probe> {
    a.assert_kprobe_mutex_held();
    let orig_p = get_valid_kprobe(a, p).ok_or(Errno::EINVAL)?;
    disable_found_locked(a, st, &mut Batch::none(), p, orig_p)
}

/// The rest of [`disable_kprobe_locked`], `orig_p` being what `get_valid_kprobe(p)` found.
#[inline(always)]
fn disable_found_locked<A: Arch>(
    a: &A,
    st: &mut KprobeState,
    batch: &mut Batch<A>,
    p: A::Probe,
    orig_p: A::Probe,
) -> Result<A::Probe> {
    if !flags_disabled(a.flags(p)) {
        if p != orig_p {
            set_flag(a, p, KPROBE_FLAG_DISABLED);
        }
        if p == orig_p || Aggr::of(a, orig_p).is_some_and(|ap| aggr_kprobe_disabled(a, ap)) {
            // Not lazy: even with kprobes armed globally, orig_p may not have been armed.
            if !st.all_disarmed && !flags_disabled(a.flags(orig_p)) {
                if let Err(e) = disarm_kprobe_in(a, st, batch, orig_p, true) {
                    clear_flag(a, p, KPROBE_FLAG_DISABLED);
                    return Err(e);
                }
            }
            set_flag(a, orig_p, KPROBE_FLAG_DISABLED);
        }
    }
    Ok(orig_p)
}

/// `__unregister_kprobe_top()`: disable, disarm, unlink (no RCU wait), as one entry of the
/// unregistration `batch`.
fn unregister_kprobe_top<A: Arch>(
    a: &A,
    st: &mut KprobeState,
    batch: &mut Batch<A>,
    p: A::Probe,
) -> Result {
    a.assert_kprobe_mutex_held();
    let mut orig_p = valid_entry(a, batch, p);
    // C has unlinked the hash entry at this address already (the same probe given twice in
    // the batch): what the batch deferred is done now, so that `p` is found gone, as in C.
    // An entry whose unlink waits is disabled, so only a disabled one is looked up.
    if orig_p.is_some_and(|o| flags_disabled(a.flags(o))) && batch.unlink_deferred(a.addr(p)) {
        flush_disarms(a, batch);
        orig_p = valid_entry(a, batch, p);
    }
    let ap = disable_found_locked(a, st, batch, p, orig_p.ok_or(Errno::EINVAL)?)?;
    if ap == p {
        unlink_kprobe(a, batch, ap);
        return Ok(());
    }
    // What follows expects an aggregate (`ap` owns `p`, so it is one): C WARNs and goes on
    // treating `ap` as one; here a probe that is not one is left as it is.
    let Some(agg) = Aggr::of(a, ap) else {
        a.warn(WarnSite::UnregisterKprobeTop);
        return Ok(());
    };
    if a.list_is_singular(ap) && kprobe_disarmed(a, ap) {
        unlink_kprobe(a, batch, ap);
        return Ok(());
    }
    if a.has_post_handler(p) && !flags_gone(a.flags(p)) {
        let other_post = a
            .for_each_child(agg, |lp| {
                if lp != p && a.has_post_handler(lp) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .is_break();
        // An ftrace aggregate keeps its post_handler: it marks the IPMODIFY ops it is armed on.
        if !other_post && !flags_ftrace(a.flags(ap)) {
            a.set_aggr_post_handler(agg, false);
        }
    }
    a.list_del_rcu(p);
    if !flags_disabled(a.flags(ap)) && !st.all_disarmed {
        optimize_kprobe(a, st, ap);
    }
    Ok(())
}

/// `hlist_del_rcu(&ap->hlist)`; in a batch that records its breakpoint removals, after the
/// breakpoint of `ap` is written, if it is recorded (`unregister_tops_locked`).
fn unlink_kprobe<A: Arch>(a: &A, batch: &mut Batch<A>, ap: A::Probe) {
    if batch.defer_unlink(a.addr(ap)) {
        return;
    }
    batch.hash_del(a, ap);
}

/// `get_valid_kprobe(p)`, through the batch's entry index if there is one.
fn valid_entry<A: Arch>(a: &A, batch: &Batch<A>, p: A::Probe) -> Option<A::Probe> {
    match batch.indexed(a, a.addr(p)) {
        Some(entry) => owner_among(a, p, entry),
        None => get_valid_kprobe(a, p),
    }
}

/// Indexes the hash entries for the top halves of an unregistration batch; true when the
/// index is complete.
fn build_entry_index<A: Arch>(a: &A, batch: &mut Batch<A>) -> bool {
    let mut entries = 0usize;
    for bucket in 0..KPROBE_TABLE_SIZE {
        let _ = a.for_each_in_bucket(bucket, |_| {
            entries += 1;
            ControlFlow::Continue(())
        });
    }
    if !batch.begin_index(a, entries) {
        return false;
    }
    for bucket in 0..KPROBE_TABLE_SIZE {
        let r = a.for_each_in_bucket(bucket, |p| {
            if batch.index_insert(a, p) {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            }
        });
        if r.is_break() {
            return false;
        }
    }
    true
}

/// `__unregister_kprobe_bottom()`: after the grace period, release what `p` held.
#[inline(always)]
pub fn unregister_kprobe_bottom<A: Arch>(a: &A, p: A::Probe) {
    if a.list_empty(p) {
        A::Hooks::remove_kprobe(a, p);
    } else if a.list_is_singular(p) {
        // The only other entry of a child's list is its aggregate's head.
        let ap = Aggr::of(a, a.list_next_entry(p));
        a.list_del(p);
        if let Some(ap) = ap {
            super::optimizer::free_aggr_kprobe(a, ap);
        }
    }
}

/// `unregister_kprobes()`: tops under the mutex, one `synchronize_rcu()`, then bottoms.
///
/// An unregistered entry gets `addr = 0` and is skipped by the bottom half; a `None` entry (a
/// NULL in the caller's array) is skipped.
pub fn unregister_kprobes<A: Arch, P: Copy + Into<Option<A::Probe>>>(a: &A, kps: &[P]) {
    if kps.is_empty() {
        return;
    }
    unregister_tops(a, &mut a.kprobe_mutex(), kps, |p| p.into(), |_| {});
    a.synchronize_rcu();
    a.with_slot_free_batch(kps.len(), || unregister_kprobes_bottom_all(a, kps));
}

/// The top halves of `unregister_kprobes()`, or of `unregister_kretprobes()` (the probe of an
/// entry is `kp_of(entry)`, a `None` entry is skipped, and `after(entry)` follows each top
/// half: the kretprobe's instance pool is detached), with `kprobe_mutex` held.
///
/// Rust only: the probes disarmed through ftrace leave its filters in one update per ops (C
/// updates every call site of the kernel for each), and a batch of breakpoint probes has its
/// breakpoints written together (`unregister_tops_locked`).
pub fn unregister_tops<A: Arch, E: Copy>(
    a: &A,
    st: &mut KprobeState,
    entries: &[E],
    kp_of: impl Fn(E) -> Option<A::Probe>,
    after: impl FnMut(E),
) {
    // The batch this call owns: dropped (its storage freed) when the call ends.
    let mut batch = Batch::none();
    let ftrace = any_ftrace_probe(a, entries, &kp_of);
    let batched = A::KPROBES_ON_FTRACE && ftrace && batch.begin_ftrace_removals(a, entries.len());
    unregister_tops_locked(a, st, &mut batch, entries, kp_of, after, ftrace);
    if batched {
        flush_ftrace_removals(a, &mut batch);
        batch.end_ftrace_removals();
    }
}

/// Whether an entry of a batch of two or more is a probe on an ftrace site (one pass over the
/// entries, which the callers of [`unregister_tops_locked`] make once).
fn any_ftrace_probe<A: Arch, E: Copy>(
    a: &A,
    entries: &[E],
    kp_of: &impl Fn(E) -> Option<A::Probe>,
) -> bool {
    entries.len() > 1
        && entries
            .iter()
            .filter_map(|&e| kp_of(e))
            .any(|p| flags_ftrace(a.flags(p)))
}

/// The loop of [`unregister_tops`], with `kprobe_mutex` held; `ftrace` is
/// [`any_ftrace_probe`] of `entries`.
///
/// `after(e)` releases what must not outlive the probe's reachability (a kretprobe's instance
/// pool, freed after the next grace period): as in C it runs once the top half has taken the
/// probe out of the text and the hash. Where the breakpoint writes and the unlinks of a batch
/// are deferred, so is `after`: the entries waiting for it are `entries[pending..]`, run by
/// [`AfterQueue::run`] right behind each write. `batch` is the caller's: an unregistration
/// batch, or a registration batch rolling back.
fn unregister_tops_locked<A: Arch, E: Copy>(
    a: &A,
    st: &mut KprobeState,
    batch: &mut Batch<A>,
    entries: &[E],
    kp_of: impl Fn(E) -> Option<A::Probe>,
    after: impl FnMut(E),
    ftrace: bool,
) {
    let mut queue = AfterQueue {
        entries,
        kp_of: &kp_of,
        after,
        pending: 0,
    };
    let tops = |st: &mut KprobeState, batch: &mut Batch<A>, queue: &mut AfterQueue<'_, E, _, _>| {
        for (i, &e) in entries.iter().enumerate() {
            let Some(p) = kp_of(e) else { continue };
            if unregister_kprobe_top(a, st, batch, p).is_err() {
                a.set_addr(p, 0);
            }
            if !batch.defers_disarms() {
                queue.run(i + 1);
                continue;
            }
            // Deferred unlinks lengthen the hash chains every lookup walks: a few at a time.
            if batch.recorded() >= DISARM_BATCH_WRITE {
                flush_disarms(a, batch);
                queue.run(i + 1);
            }
        }
    };
    // Rust only: a large batch looks its hash entries up in an index of them.
    if entries.len() >= a.entry_index_min_batch() {
        build_entry_index(a, batch);
    }
    // A batch of int3 probes is disarmed under one hold of the text locks rather than one per
    // probe (C's order kept: kprobe_mutex, cpus_read_lock, text_mutex). Not with an ftrace
    // probe in it: ftrace takes text_mutex itself.
    if entries.len() > 1 && !ftrace {
        a.text_locked(false, || {
            // Rust only, where the arch batches: the breakpoints the top halves remove are
            // recorded and written together, every `DISARM_BATCH_WRITE` and at the end, and a
            // hash entry whose breakpoint is recorded leaves the hash only after that (a hit
            // there would find no probe and oops). An entry that C's order has unlinked
            // already is disabled (so it blocks no optimization, as an absent one does not)
            // and not optimized, so what the top halves look up finds what it finds in C, but
            // for the entry itself given again: then the deferred work is done first
            // (`unregister_kprobe_top`). Nothing can arm or optimize before the mutex is
            // dropped.
            batch.hold_text_locks();
            if A::BATCHES_DISARM {
                batch.begin_disarms(a, DISARM_BATCH_WRITE);
            }
            tops(st, batch, &mut queue);
            flush_disarms(a, batch);
            queue.run(entries.len());
            batch.end_disarms();
        });
    } else {
        tops(st, batch, &mut queue);
    }
    batch.end_index();
}

/// The entries of an unregistration batch whose `after` has not run yet: `entries[pending..]`.
///
/// # Invariants
///
/// Every entry before `pending` whose probe is `Some` has had `after` run exactly once, and only
/// once its top half's breakpoint write and hash unlink (if deferred) were done.
struct AfterQueue<'a, E, K, F> {
    entries: &'a [E],
    kp_of: &'a K,
    after: F,
    pending: usize,
}

impl<E: Copy, P, K: Fn(E) -> Option<P>, F: FnMut(E)> AfterQueue<'_, E, K, F> {
    /// Runs `after` for the entries up to `end`: call it only once what their top halves
    /// deferred has been written and unlinked.
    fn run(&mut self, end: usize) {
        let end = end.min(self.entries.len());
        for &e in self.entries.get(self.pending..end).unwrap_or(&[]) {
            if (self.kp_of)(e).is_some() {
                (self.after)(e);
            }
        }
        // INVARIANT: every entry before `end` has now had `after`.
        self.pending = self.pending.max(end);
    }
}

/// How many breakpoint removals an unregistration batch records before it writes them: as
/// many as the hash table has buckets, so that the unlinks waiting for the write add about one
/// entry to each chain that the top halves walk.
const DISARM_BATCH_WRITE: usize = KPROBE_TABLE_SIZE;

/// Writes the breakpoint removals a batch recorded, then unlinks the hash entries whose
/// removal was waiting for that (`unregister_tops_locked`).
fn flush_disarms<A: Arch>(a: &A, batch: &mut Batch<A>) {
    batch.flush(a, |probes| A::Hooks::disarm_kprobes(a, probes));
}

/// The bottom halves of `unregister_kprobes()`, after the grace period.
fn unregister_kprobes_bottom_all<A: Arch, P: Copy + Into<Option<A::Probe>>>(a: &A, kps: &[P]) {
    for p in kps.iter().filter_map(|&p| p.into()) {
        if a.addr(p) != 0 {
            unregister_kprobe_bottom(a, p);
        }
    }
}

/// `unregister_kprobe()`.
pub fn unregister_kprobe<A: Arch>(a: &A, p: A::Probe) {
    unregister_kprobes(a, &[p]);
}

/// `disable_kprobe()`.
pub fn disable_kprobe<A: Arch>(a: &A, kp: A::Probe) -> Result {
    let mut st = a.kprobe_mutex();
    disable_kprobe_locked(a, &mut st, kp).map(|_| ())
}

/// `enable_kprobe()`.
pub fn enable_kprobe<A: Arch>(a: &A, kp: A::Probe) -> Result {
    let mut st = a.kprobe_mutex();
    let p = get_valid_kprobe(a, kp).ok_or(Errno::EINVAL)?;
    if flags_gone(a.flags(kp)) {
        return Err(Errno::EINVAL);
    }
    if p != kp {
        clear_flag(a, kp, KPROBE_FLAG_DISABLED);
    }
    if !st.all_disarmed && flags_disabled(a.flags(p)) {
        clear_flag(a, p, KPROBE_FLAG_DISABLED);
        if let Err(e) = arm_kprobe(a, &mut st, p) {
            set_flag(a, p, KPROBE_FLAG_DISABLED);
            if p != kp {
                set_flag(a, kp, KPROBE_FLAG_DISABLED);
            }
            return Err(e);
        }
    }
    Ok(())
}

/// `kill_kprobe()`: the probed text is going away; mark GONE and drop the slot, text untouched.
pub fn kill_kprobe<A: Arch>(a: &A, st: &mut KprobeState, p: A::Probe) {
    a.assert_kprobe_mutex_held();
    if flags_ftrace(a.flags(p)) && !flags_disabled(a.flags(p)) && !st.all_disarmed {
        let _ = disarm_kprobe_ftrace(a, st, &mut Batch::none(), p);
    }
    set_flag(a, p, KPROBE_FLAG_GONE);
    if let Some(ap) = Aggr::of(a, p) {
        let _ = a.for_each_child(ap, |kp| {
            set_flag(a, kp, KPROBE_FLAG_GONE);
            ControlFlow::Continue(())
        });
        a.set_aggr_post_handler(ap, false);
        kill_optimized_kprobe(a, ap);
    }
    A::Hooks::remove_kprobe(a, p);
}

/// Module notifier events the core reacts to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ModuleEvent {
    /// `MODULE_STATE_COMING`: add the module's blacklist.
    Coming,
    /// `MODULE_STATE_LIVE`: its `.init` text is about to be freed.
    Live,
    /// `MODULE_STATE_GOING`: all its text is about to be freed.
    Going,
}

/// `kprobes_module_callback()`.
pub fn kprobes_module_callback<A: Platform>(
    a: &A,
    m: A::Module,
    event: ModuleEvent,
    areas: &ModuleAreas<'_>,
) {
    if event == ModuleEvent::Coming {
        let _st = a.kprobe_mutex();
        add_module_kprobe_blacklist(a, areas);
        return;
    }
    let checkcore = event == ModuleEvent::Going;
    let mut st = a.kprobe_mutex();
    for_each_kprobe(a, |p| {
        let addr = a.addr(p);
        if a.within_module_init(addr, m) || (checkcore && a.within_module_core(addr, m)) {
            kill_kprobe(a, &mut st, p);
        }
    });
    if event == ModuleEvent::Going {
        remove_module_kprobe_blacklist(a, areas);
    }
}

/// `kprobe_free_init_mem()`: kill every probe in `[__init_begin, __init_end)`.
pub fn kprobe_free_init_mem<A: Arch>(a: &A) {
    let (start, end) = a.init_mem();
    let mut st = a.kprobe_mutex();
    for_each_kprobe(a, |p| {
        let addr = a.addr(p);
        if start <= addr && addr < end {
            kill_kprobe(a, &mut st, p);
        }
    });
}

/// Outcome of a global arm/disarm (the message C logs is reported before the mutex drops).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct GlobalSwitch {
    /// Whether the global state changed (false: it already was as requested; nothing logged).
    pub changed: bool,
    /// Probes that failed to (dis)arm.
    pub errors: u32,
    /// Probes attempted.
    pub total: u32,
    /// The last per-probe error, returned to the debugfs writer.
    pub ret: Result,
}

/// `arm_all_kprobes()`: clear `kprobes_all_disarmed`, arm every enabled hash entry, and report
/// [`Message::GloballyEnabled`] or, with errors, [`Message::GloballyEnabledPartly`].
pub fn arm_all_kprobes<A: Arch>(a: &A) -> GlobalSwitch {
    let mut st = a.kprobe_mutex();
    let mut out = GlobalSwitch {
        changed: false,
        errors: 0,
        total: 0,
        ret: Ok(()),
    };
    if !st.all_disarmed {
        return out;
    }
    out.changed = true;
    st.all_disarmed = false;
    for_each_kprobe(a, |p| {
        if !flags_disabled(a.flags(p)) {
            if let Err(e) = arm_kprobe(a, &mut st, p) {
                out.errors += 1;
                out.ret = Err(e);
            }
            out.total += 1;
        }
    });
    a.message(if out.errors != 0 {
        Message::GloballyEnabledPartly {
            errors: out.errors,
            total: out.total,
        }
    } else {
        Message::GloballyEnabled
    });
    drop(st);
    out
}

/// `disarm_all_kprobes()`: set `kprobes_all_disarmed`, disarm all but arch trampoline probes,
/// report [`Message::GloballyDisabled`] (or [`Message::GloballyDisabledPartly`]), then wait for
/// the optimizer.
pub fn disarm_all_kprobes<A: Arch>(a: &A) -> GlobalSwitch {
    let mut out = GlobalSwitch {
        changed: false,
        errors: 0,
        total: 0,
        ret: Ok(()),
    };
    {
        let mut st = a.kprobe_mutex();
        if st.all_disarmed {
            return out;
        }
        out.changed = true;
        st.all_disarmed = true;
        for_each_kprobe(a, |p| {
            if !A::Hooks::trampoline_kprobe(a, p) && !flags_disabled(a.flags(p)) {
                if let Err(e) = disarm_kprobe(a, &mut st, p, false) {
                    out.errors += 1;
                    out.ret = Err(e);
                }
                out.total += 1;
            }
        });
        a.message(if out.errors != 0 {
            Message::GloballyDisabledPartly {
                errors: out.errors,
                total: out.total,
            }
        } else {
            Message::GloballyDisabled
        });
    }
    wait_for_kprobe_optimizer(a);
    out
}

/// First half of `init_kprobes()`, in C's order: the blacklist (on error C logs and carries
/// on), the kretprobe blacklist, the global arm state, the optprobe slot size, and last
/// `arch_init_kprobes()`, which may itself register probes (powerpc does) and so finds every
/// other part ready.
///
/// Returns the arch init result; the glue then registers the die and module notifiers and sets
/// `kprobes_initialized`. The mutex is not held across the arch init.
pub fn init_kprobes<A: Platform>(a: &A, nokprobe: impl IntoIterator<Item = usize>) -> Result {
    if let Err(e) = super::blacklist::populate_kprobe_blacklist(a, nokprobe) {
        a.message(Message::PopulateBlacklistFailed(e.to_neg()));
    }
    A::Hooks::init_kretprobe_blacklist(a);
    a.kprobe_mutex().all_disarmed = false;
    A::Hooks::init_optinsn_slots(a);
    A::Hooks::init_kprobes(a)
}

// SPDX-License-Identifier: GPL-2.0

//! What the native arch layers' [`HitArch`](crate::hit::HitArch) implementations share: this
//! CPU's `current_kprobe` and `kprobe_ctlblk` (each arch's own struct), and the `HitArch`
//! methods that are the same on every arch ([`hit_arch_common!`]).
//!
//! Constraints: used only in the probe-hit path, with preemption off on one CPU; everything is
//! `#[inline(always)]`, so it compiles into the arch's unprobeable entry points.

use core::ptr::{self, NonNull};

use kernel::bindings;

use super::handle::Kp;

/// This CPU's kprobe state: the arch's `struct kprobe_ctlblk` (`K`) and `current_kprobe`.
///
/// # Invariants
///
/// Both pointers are this CPU's instances, and the CPU does not change while the value lives
/// (every context that builds one runs with preemption off). Only this CPU touches them, from
/// one handler at a time: no reference to them is formed, every access is a raw place access.
pub(crate) struct CpuState<K> {
    kcb: *mut K,
    current: *mut *mut bindings::kprobe,
}

impl<K> CpuState<K> {
    /// The state behind this CPU's instances `kcb` and `current`.
    ///
    /// # Safety
    ///
    /// `kcb` and `current` are this CPU's `kprobe_ctlblk` and `current_kprobe`, and preemption
    /// is disabled until the value is dropped.
    #[inline(always)]
    pub(crate) unsafe fn new(kcb: *mut K, current: *mut *mut bindings::kprobe) -> Self {
        // INVARIANT: by the caller's contract.
        Self { kcb, current }
    }

    /// This CPU's control block, for raw place accesses ([`kcb!`]).
    #[inline(always)]
    pub(crate) fn kcb(&self) -> *mut K {
        self.kcb
    }

    /// `kprobe_running()`.
    #[inline(always)]
    pub(crate) fn current(&self) -> Option<Kp> {
        // SAFETY: this CPU's `current_kprobe` (invariant).
        let p = unsafe { ptr::read_volatile(self.current) };
        // SAFETY: a current probe is live until it stops being current.
        NonNull::new(p).map(|p| unsafe { Kp::from_raw(p) })
    }

    /// `__this_cpu_write(current_kprobe, p)`, NULL for `None`.
    #[inline(always)]
    pub(crate) fn set_current(&self, p: Option<Kp>) {
        self.set_current_raw(p.map_or(ptr::null_mut(), Kp::as_ptr));
    }

    /// `__this_cpu_write(current_kprobe, p)` of a saved `prev_kprobe.kp`.
    #[inline(always)]
    pub(crate) fn set_current_raw(&self, p: *mut bindings::kprobe) {
        // SAFETY: this CPU's `current_kprobe` (invariant).
        unsafe { ptr::write_volatile(self.current, p) };
    }
}

#[cfg(all(CONFIG_KPROBES_RUST_ARCH, not(CONFIG_X86)))]
impl CpuState<bindings::kprobe_ctlblk> {
    /// This CPU's state, through `rkp_arch_this_cpu()` (an arch whose kernel crate has an
    /// inline `this_cpu_ptr()`, x86_64, builds it with [`CpuState::new`] instead).
    ///
    /// # Safety
    ///
    /// Preemption is disabled until the value is dropped.
    #[inline(always)]
    pub(crate) unsafe fn this_cpu() -> Self {
        let mut kcb = ptr::null_mut();
        let mut current = ptr::null_mut();
        // SAFETY: out-pointers to locals; the NOKPROBE C function stores this CPU's instances
        // of `kprobe_ctlblk` and `current_kprobe`.
        unsafe { bindings::rkp_arch_this_cpu(&mut kcb, &mut current) };
        // SAFETY: this CPU's instances; the caller keeps preemption off (`# Safety`).
        unsafe { Self::new(kcb, current) }
    }
}

/// The trapped registers of one trap (`struct pt_regs *`): a break, a fault while a probe
/// runs, or the registers ftrace saved for a callback. Each arch reads and writes its own fields
/// in an `impl TrapRegs` of its arch layer (x86: `services.rs`), through [`TrapRegs::as_ptr`].
///
/// # Invariants
///
/// Points to the frame of a trap being handled on this CPU; only that trap's handler uses it,
/// and only until the handler returns. No reference to the frame is formed: every access is a
/// raw place access.
#[derive(Clone, Copy)]
pub(crate) struct TrapRegs(NonNull<bindings::pt_regs>);

impl TrapRegs {
    /// # Safety
    ///
    /// `regs` is non-NULL and the frame of the trap being handled on this CPU, used by nobody
    /// else until the handler returns.
    #[inline(always)]
    pub(crate) unsafe fn new(regs: *mut bindings::pt_regs) -> Self {
        // INVARIANT: by the caller's contract.
        // SAFETY: non-NULL by the caller's contract.
        TrapRegs(unsafe { NonNull::new_unchecked(regs) })
    }

    /// The frame, for C that takes a `struct pt_regs *` and for the arch's raw place accesses.
    #[inline(always)]
    pub(crate) fn as_ptr(self) -> *mut bindings::pt_regs {
        self.0.as_ptr()
    }
}

/// Reads (`kcb!(cpu.field)`) or writes (`kcb!(cpu.field = v)`) a field of the control block of
/// `cpu`, whose `state` is a [`CpuState`].
macro_rules! kcb {
    ($cpu:ident . $($f:ident).+) => {
        // SAFETY: this CPU's control block, a raw place access (invariant of `CpuState`).
        unsafe { (*$cpu.state.kcb()).$($f).+ }
    };
    ($cpu:ident . $($f:ident).+ = $v:expr) => {{
        let v = $v;
        // SAFETY: as above.
        unsafe { (*$cpu.state.kcb()).$($f).+ = v }
    }};
}

/// The methods of `HitArch` that are the same on every arch, for an `impl HitArch` whose
/// `Self` has a `state: CpuState<_>` field, `Probe = Kp` and `Regs` with `as_ptr()`.
macro_rules! hit_arch_common {
    () => {
        #[inline(always)]
        fn current(&self) -> Option<Kp> {
            self.state.current()
        }
        #[inline(always)]
        fn set_current(&self, p: Option<Kp>) {
            self.state.set_current(p);
        }
        #[inline(always)]
        fn inc_nmissed(&self, p: Kp) {
            // kprobes_inc_nmissed_count(): an aggregate counts the miss in each of its probes.
            $crate::table::kprobes_inc_nmissed_count(&KERNEL, p);
        }
        #[inline(always)]
        fn disabled(&self, p: Kp) -> bool {
            // `kprobe_disabled()`: DISABLED or GONE.
            $crate::store::flags_disabled(KERNEL.flags(p))
        }
        #[inline(always)]
        fn call_pre_handler(&self, p: Kp, regs: Self::Regs) -> bool {
            KERNEL.call_pre_handler(p, regs.as_ptr()) != 0
        }
        #[inline(always)]
        fn call_post_handler(&self, p: Kp, regs: Self::Regs) {
            KERNEL.call_post_handler(p, regs.as_ptr(), 0);
        }
    };
}

/// The methods of `HitArch` on the control block that arm64, riscv and loongarch share: their
/// `kprobe_ctlblk` holds `kprobe_status` and `prev_kprobe { kp, status }`, and each field named
/// in the call (arm64: `saved_irqflag`) is saved to and restored from the `prev_kprobe` field of
/// the same name. Making a probe current saves nothing else on these arches.
#[cfg(any(CONFIG_ARM64, CONFIG_RISCV, CONFIG_LOONGARCH))]
macro_rules! hit_arch_kcb {
    ($($saved:ident),*) => {
        #[inline(always)]
        fn set_current_kprobe(&self, p: Kp, _regs: Self::Regs) {
            self.set_current(Some(p));
        }
        #[inline(always)]
        fn status(&self) -> u32 {
            kcb!(self.kprobe_status)
        }
        #[inline(always)]
        fn set_status(&self, status: u32) {
            kcb!(self.kprobe_status = status);
        }
        #[inline(always)]
        fn save_previous(&self) {
            let cur = self.current().map_or(core::ptr::null_mut(), Kp::as_ptr);
            kcb!(self.prev_kprobe.kp = cur);
            kcb!(self.prev_kprobe.status = kcb!(self.kprobe_status));
            $(kcb!(self.prev_kprobe.$saved = kcb!(self.$saved));)*
        }
        #[inline(always)]
        fn restore_previous(&self) {
            let prev = kcb!(self.prev_kprobe.kp);
            self.state.set_current_raw(prev);
            kcb!(self.kprobe_status = kcb!(self.prev_kprobe.status));
            $(kcb!(self.$saved = kcb!(self.prev_kprobe.$saved));)*
        }
    };
}

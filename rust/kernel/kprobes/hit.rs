// SPDX-License-Identifier: GPL-2.0

//! What a handler sees when its probe fires: the registers ([`PtRegs`]) and the probe
//! ([`KprobeHit`], [`KretprobeHit`]), each only with what can be read without a lock.
//!
//! Constraints: everything here but [`KprobeHit`]'s enabling and disabling (which only the probe
//! objects reach, never a handler) runs in atomic context, in the handlers.

use crate::{bindings, error::to_result, prelude::*, types::Opaque};
#[cfg(CONFIG_KRETPROBES)]
use core::ptr::addr_of_mut;
use core::ptr::{self, addr_of};

/// The registers of the CPU that hit a probe, as saved by the probe's exception or trampoline.
///
/// Wraps the C `struct pt_regs`. Handlers get it read-only: they can look, not change.
///
/// # Examples
///
/// ```
/// use core::sync::atomic::{AtomicUsize, Ordering};
/// use kernel::kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs};
///
/// #[inline(never)]
/// extern "C" fn probed(a: usize, b: usize, c: usize) -> usize {
///     // Opaque to the optimiser, so every call really happens.
///     let (a, b, c) = core::hint::black_box((a, b, c));
///     a ^ b ^ c
/// }
///
/// #[derive(Default)]
/// struct Seen {
///     first: AtomicUsize,
///     third: AtomicUsize,
///     ip: AtomicUsize,
///     sp: AtomicUsize,
/// }
///
/// #[vtable]
/// impl KprobeHandler for Seen {
///     fn pre_handler(&self, _hit: &KprobeHit, regs: &PtRegs) {
///         self.first.store(regs.argument(0), Ordering::Relaxed);
///         self.third.store(regs.argument(2), Ordering::Relaxed);
///         self.ip.store(regs.instruction_pointer(), Ordering::Relaxed);
///         self.sp.store(regs.stack_pointer(), Ordering::Relaxed);
///     }
/// }
///
/// let point = ProbePoint::function(probed as *const () as usize);
/// let probe = Kprobe::register(point, Seen::default())?;
/// probed(1234, 5, 0x7777);
/// let h = probe.handler();
/// let (first, third) = (h.first.load(Ordering::Relaxed), h.third.load(Ordering::Relaxed));
/// let (ip, sp) = (h.ip.load(Ordering::Relaxed), h.sp.load(Ordering::Relaxed));
/// let addr = probe.address();
/// drop(probe);
/// assert_eq!((first, third), (1234, 0x7777));
/// // At or just past the probed instruction (x86 reports the address after its breakpoint).
/// assert!(ip >= addr && ip < addr + 16);
/// // The caller's stack, close below a local of this test.
/// let local = 0u64;
/// let here = core::hint::black_box(&local) as *const u64 as usize;
/// assert!(sp != 0 && sp % core::mem::size_of::<usize>() == 0);
/// assert!(sp.abs_diff(here) < 4096);
/// # Ok::<(), Error>(())
/// ```
#[repr(transparent)]
pub struct PtRegs(Opaque<bindings::pt_regs>);

impl PtRegs {
    /// Creates a reference to the registers at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a valid `struct pt_regs` that stays valid for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::pt_regs) -> &'a Self {
        // SAFETY: `PtRegs` is a transparent wrapper of `Opaque<pt_regs>`, which has the layout of
        // `pt_regs`; the caller guarantees validity for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the instruction pointer (program counter).
    ///
    /// In a pre handler it is at or just past the probed instruction, depending on the
    /// architecture: x86 reports the address after its one-byte breakpoint.
    pub fn instruction_pointer(&self) -> usize {
        // SAFETY: `self.0` holds valid registers by the type invariant of the reference.
        unsafe { bindings::instruction_pointer(self.0.get()) as usize }
    }

    /// Returns the kernel stack pointer.
    pub fn stack_pointer(&self) -> usize {
        // SAFETY: `self.0` holds valid registers by the type invariant of the reference.
        unsafe { bindings::kernel_stack_pointer(self.0.get()) as usize }
    }

    /// Returns the function return value register; meaningful in a return handler.
    pub fn return_value(&self) -> usize {
        // SAFETY: `self.0` holds valid registers by the type invariant of the reference.
        unsafe { bindings::regs_return_value(self.0.get()) as usize }
    }

    /// Returns argument `n` (from zero) of the called function; meaningful at function entry.
    ///
    /// It follows the architecture's C calling convention (Rust functions must be `extern "C"`
    /// for it to be exact), and reads 0 for arguments the architecture cannot locate.
    pub fn argument(&self, n: u32) -> usize {
        // SAFETY: `self.0` holds valid registers by the type invariant of the reference; the C
        // function bounds-checks `n` and any stack slot it reads.
        unsafe { bindings::regs_get_kernel_argument(self.0.get(), n) as usize }
    }
}

/// The misses of a probe, by cause: hits that ran no handler, or calls whose return was not
/// followed.
///
/// Every miss the kprobes core counts has one of these causes, each counted in a field of its
/// own, so [`Missed::total`] is the probe's whole count (what tracing's `kprobe_profile` shows).
/// The Rust kprobes core lists the same counts in debugfs `kprobes/missed`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Missed {
    recursion: usize,
    no_instance: usize,
}

impl Missed {
    /// Returns the hits that came while a kprobe handler ran on the same CPU.
    pub fn recursion(&self) -> usize {
        self.recursion
    }

    /// Returns the calls of a return probe's function that found no free instance to follow
    /// them: more calls in flight than the probe's `maxactive`. Always 0 for a [`KprobeHit`].
    pub fn no_instance(&self) -> usize {
        self.no_instance
    }

    /// Returns all misses, every cause together.
    pub fn total(&self) -> usize {
        self.recursion.wrapping_add(self.no_instance)
    }
}

/// Reads a field of a registered probe that the kprobes core may write concurrently.
///
/// # Safety
///
/// `field` must point into a live `struct kprobe` or `struct kretprobe`.
unsafe fn read_once<T: Copy>(field: *const T) -> T {
    // SAFETY: valid by the caller's guarantee; a volatile read is READ_ONCE.
    unsafe { ptr::read_volatile(field) }
}

/// The kprobe that was hit, as its handler sees it: what can be read without a lock.
///
/// # Invariants
///
/// The wrapped `struct kprobe` is registered (or being unregistered) for as long as the
/// reference exists.
#[repr(transparent)]
pub struct KprobeHit(Opaque<bindings::kprobe>);

impl KprobeHit {
    /// Creates a reference to the probe at `p`.
    ///
    /// # Safety
    ///
    /// `p` must point to a `struct kprobe` that stays registered for `'a`.
    pub(super) unsafe fn from_raw<'a>(p: *mut bindings::kprobe) -> &'a Self {
        // SAFETY: `KprobeHit` is a transparent wrapper of `Opaque<kprobe>`; valid for `'a` by
        // the caller's guarantee.
        unsafe { &*p.cast::<Self>() }
    }

    /// Returns the address the kprobes core resolved the probe point to.
    pub fn address(&self) -> usize {
        // SAFETY: the probe is live by the type invariant.
        unsafe { read_once(addr_of!((*self.0.get()).addr)) as usize }
    }

    /// Returns how many hits ran no handler because a handler was already running on that CPU.
    pub fn nmissed(&self) -> usize {
        // SAFETY: the probe is live by the type invariant.
        unsafe { read_once(addr_of!((*self.0.get()).nmissed)) as usize }
    }

    /// Returns the probe's misses by cause (all of them recursion, for a kprobe).
    pub fn missed(&self) -> Missed {
        Missed {
            recursion: self.nmissed(),
            no_instance: 0,
        }
    }

    /// Returns whether the probe is enabled (neither disabled nor gone with its module text).
    pub(super) fn is_enabled(&self) -> bool {
        // SAFETY: the probe is live by the type invariant.
        let flags = unsafe { read_once(addr_of!((*self.0.get()).flags)) };
        flags & (bindings::KPROBE_FLAG_DISABLED | bindings::KPROBE_FLAG_GONE) == 0
    }

    /// `enable_kprobe()` or `disable_kprobe()`; may sleep.
    pub(super) fn set_enabled(&self, enable: bool) -> Result {
        let kp = self.0.get();
        // SAFETY: the probe is registered by the type invariant; the C functions serialise with
        // `kprobe_mutex`, so they are called from process context only (`Kprobe` and
        // `Kretprobe` never give handlers a way to reach this).
        to_result(unsafe {
            if enable {
                bindings::enable_kprobe(kp)
            } else {
                bindings::disable_kprobe(kp)
            }
        })
    }
}

/// The kretprobe whose handler runs, as the handler sees it: what can be read without a lock.
///
/// # Invariants
///
/// The wrapped `struct kretprobe` is registered (or being unregistered) for as long as the
/// reference exists.
#[cfg(CONFIG_KRETPROBES)]
#[repr(transparent)]
pub struct KretprobeHit(Opaque<bindings::kretprobe>);

#[cfg(CONFIG_KRETPROBES)]
impl KretprobeHit {
    /// Creates a reference to the return probe at `rp`.
    ///
    /// # Safety
    ///
    /// `rp` must point to a `struct kretprobe` that stays registered for `'a`.
    pub(super) unsafe fn from_raw<'a>(rp: *mut bindings::kretprobe) -> &'a Self {
        // SAFETY: `KretprobeHit` is a transparent wrapper of `Opaque<kretprobe>`; valid for `'a`
        // by the caller's guarantee.
        unsafe { &*rp.cast::<Self>() }
    }

    /// Returns the probe's `struct kprobe`, as [`KprobeHit`].
    pub(super) fn kprobe(&self) -> &KprobeHit {
        // SAFETY: `kp` is a field of the live `struct kretprobe` (type invariant), registered
        // with it; the reference lives no longer than `self`.
        unsafe { KprobeHit::from_raw(addr_of_mut!((*self.0.get()).kp)) }
    }

    /// Returns the address of the function entry the kprobes core resolved the probe point to.
    pub fn address(&self) -> usize {
        self.kprobe().address()
    }

    /// Returns how many calls were not followed: beyond `maxactive`, or while a handler ran.
    pub fn nmissed(&self) -> usize {
        self.missed().total()
    }

    /// Returns the probe's misses by cause.
    pub fn missed(&self) -> Missed {
        // SAFETY: the probe is live by the type invariant.
        let rp_missed = unsafe { read_once(addr_of!((*self.0.get()).nmissed)) };
        Missed {
            recursion: self.kprobe().nmissed(),
            no_instance: rp_missed as usize,
        }
    }
}

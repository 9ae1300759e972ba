// SPDX-License-Identifier: GPL-2.0

//! Kernel probes: run a handler when the kernel reaches an instruction or returns from a function.
//!
//! # Constraints
//!
//! - Handlers run in atomic context, on the CPU that hit the probe, with preemption disabled and
//!   often with interrupts disabled too. They must not sleep: no `GFP_KERNEL` allocation, no
//!   mutex, no `msleep`. Keep them short; use atomics or spinlocks for shared state.
//! - Handlers of one probe run concurrently on several CPUs, so handler types are [`Sync`].
//! - A probe hit while a handler is already running on that CPU (for example because the handler
//!   calls the probed function) does not run the handler again; it is counted as missed
//!   (see [`Kprobe::nmissed`]).
//! - Handlers observe: they get the registers read-only and cannot redirect execution.
//! - Registering, unregistering (dropping the handle), enabling and disabling may sleep: do them
//!   in process context.
//! - The handler functions themselves are not blacklisted; probing them only produces misses.
//!
//! # Design
//!
//! A [`Kprobe`] owns a C `struct kprobe`, a [`Kretprobe`] a C `struct kretprobe`. Each is built in
//! place by a pin-initialiser that registers it, and unregisters itself when dropped, so a
//! registered probe never moves and nothing can use it after it is gone: dropping the handle
//! waits until no handler runs any more, and the borrow checker refuses any later use: after
//! `drop(probe)`, `probe.nmissed()` is a "borrow of moved value" error. While the probe is
//! registered the C structure belongs to the kprobes core, so it is kept in an [`Opaque`] and only
//! touched through raw pointers.
//!
//! A probe that is leaked instead (with [`core::mem::forget`], or in a reference cycle) stays
//! registered; in a module that is then unloaded its handlers would point into freed text. Keep
//! probes in the module's state, so that they are dropped when it exits.
//!
//! What a probe does is given by a handler type: [`KprobeHandler`] for the pre and post handlers
//! of a [`Kprobe`], [`KretprobeHandler`] for the entry and return handlers of a [`Kretprobe`],
//! which pass a typed value from function entry to function return. Where to probe is a
//! [`ProbePoint`]: a symbol plus an offset, or an address. Bad input is refused by the kprobes core
//! with its usual error codes and comes back as an [`Error`].
//!
//! # Examples
//!
//! Count the calls of a function:
//!
//! ```
//! use core::sync::atomic::{AtomicUsize, Ordering};
//! use kernel::kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs};
//!
//! #[inline(never)]
//! extern "C" fn probed(x: usize) -> usize {
//!     // Opaque to the optimiser, so every call really happens.
//!     let x = core::hint::black_box(x);
//!     x.wrapping_mul(3)
//! }
//!
//! struct CallCounter {
//!     calls: AtomicUsize,
//! }
//!
//! #[vtable]
//! impl KprobeHandler for CallCounter {
//!     fn pre_handler(probe: &Kprobe<Self>, _regs: &PtRegs) {
//!         probe.handler().calls.fetch_add(1, Ordering::Relaxed);
//!     }
//! }
//!
//! let counter = CallCounter { calls: AtomicUsize::new(0) };
//! let probe = Kprobe::register(ProbePoint::function(probed as *const () as usize), counter)?;
//! for i in 0..3 {
//!     probed(i);
//! }
//! let calls = probe.handler().calls.load(Ordering::Relaxed);
//! // Unregisters the probe; waits until no handler runs.
//! drop(probe);
//! assert_eq!(calls, 3);
//! # Ok::<(), Error>(())
//! ```
//!
//! C header: [`include/linux/kprobes.h`](srctree/include/linux/kprobes.h)

use crate::{
    bindings,
    error::{to_result, VTABLE_DEFAULT_ERROR},
    ffi::{c_int, c_ulong},
    prelude::*,
    types::Opaque,
};
use core::{
    mem::{offset_of, MaybeUninit},
    ptr::{self, addr_of, addr_of_mut},
};

/// Where a probe is placed: a symbol plus an offset, or an address plus an offset.
///
/// This mirrors the `symbol_name`, `offset` and `addr` fields of the C `struct kprobe`, and like
/// them it can describe invalid places; registration then fails with the C error code:
/// `EINVAL` if both or neither of symbol and address are given, `ENOENT` if the symbol is
/// unknown, `EINVAL` if the place may not be probed (blacklisted, not text), `EILSEQ` (on some
/// architectures) if it is not on an instruction boundary.
///
/// # Examples
///
/// ```
/// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs}};
///
/// struct Nothing;
///
/// #[vtable]
/// impl KprobeHandler for Nothing {
///     fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {}
/// }
///
/// let entry = ProbePoint::symbol(c_str!("kernel_clone"));
/// let probe = Kprobe::register(entry, Nothing)?;
/// assert!(probe.address() != 0);
/// drop(probe);
///
/// let unknown = ProbePoint::symbol(c_str!("rkprobes_no_such_symbol"));
/// assert_eq!(Kprobe::register(unknown, Nothing).err(), Some(ENOENT));
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct ProbePoint {
    symbol: Option<&'static CStr>,
    addr: usize,
    offset: u32,
}

/// The address at which direct calls enter the function at `addr`.
///
/// That is `addr` on most architectures. On 64-bit powerpc with the ELFv2 ABI a function that
/// sets up its TOC pointer has a global entry (what a function pointer holds) and, past that
/// setup, a local entry that direct calls use; a probe at the global entry would miss them, so
/// this returns the local one (C's `ppc_function_entry()`). An address outside kernel text is
/// returned unchanged.
pub fn function_entry(addr: usize) -> usize {
    // SAFETY: the helper reads memory only at an address in kernel text.
    unsafe { bindings::kprobes_function_entry(addr as _) as usize }
}

impl ProbePoint {
    /// Creates a probe point at the first instruction of the symbol `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {}
    /// }
    ///
    /// let probe = Kprobe::register(ProbePoint::symbol(c_str!("kernel_clone")), Nothing)?;
    /// assert!(probe.address() != 0);
    /// # Ok::<(), Error>(())
    /// ```
    pub const fn symbol(name: &'static CStr) -> Self {
        Self {
            symbol: Some(name),
            addr: 0,
            offset: 0,
        }
    }

    /// Creates a probe point at the instruction at address `addr`.
    ///
    /// An address of zero gives a probe point with neither symbol nor address, which registration
    /// refuses with `EINVAL`.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x ^ 0x5a
    /// }
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {}
    /// }
    ///
    /// // Computed at run time: objtool refuses a relocation to `probed + 4` with IBT.
    /// let entry = core::hint::black_box(probed as *const () as usize);
    /// let probe = Kprobe::register(ProbePoint::address(entry), Nothing)?;
    /// // With IBT the probe moves past the `endbr64` that starts the function.
    /// assert!(probe.address() >= entry && probe.address() <= entry + 4);
    /// drop(probe);
    ///
    /// assert_eq!(Kprobe::register(ProbePoint::address(0), Nothing).err(), Some(EINVAL));
    /// # Ok::<(), Error>(())
    /// ```
    pub const fn address(addr: usize) -> Self {
        Self {
            symbol: None,
            addr,
            offset: 0,
        }
    }

    /// Creates a probe point at the entry of the function at `addr` (a function pointer cast to
    /// `usize`), where direct calls enter it: see [`function_entry`].
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::kprobes::{function_entry, Kprobe, KprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     core::hint::black_box(x) + 1
    /// }
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {}
    /// }
    ///
    /// let f = core::hint::black_box(probed as *const () as usize);
    /// let probe = Kprobe::register(ProbePoint::function(f), Nothing)?;
    /// assert!(probe.address() >= function_entry(f) && probe.address() <= function_entry(f) + 4);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn function(addr: usize) -> Self {
        Self::address(function_entry(addr))
    }

    /// Moves the probe point `offset` bytes into the symbol, or past the address.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {}
    /// }
    ///
    /// let entry = Kprobe::register(ProbePoint::symbol(c_str!("kernel_clone")), Nothing)?;
    /// let entry_address = entry.address();
    /// drop(entry);
    ///
    /// // The offset is added to an address too: one byte before the entry, plus one.
    /// let point = ProbePoint::address(entry_address - 1).offset(1);
    /// let same = Kprobe::register(point, Nothing)?;
    /// assert_eq!(same.address(), entry_address);
    /// # Ok::<(), Error>(())
    /// ```
    pub const fn offset(self, offset: u32) -> Self {
        Self { offset, ..self }
    }

    /// Sets the address as well as the symbol, as the C structure allows.
    ///
    /// A probe point with both a symbol and an address is refused by registration with `EINVAL`;
    /// this exists so that Rust callers get exactly the C behaviour for every combination.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs}};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x + 1
    /// }
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {}
    /// }
    ///
    /// let entry = probed as *const () as usize;
    /// let both = ProbePoint::symbol(c_str!("kernel_clone")).with_address(entry);
    /// assert_eq!(Kprobe::register(both, Nothing).err(), Some(EINVAL));
    /// ```
    pub const fn with_address(self, addr: usize) -> Self {
        Self { addr, ..self }
    }

    /// The C `struct kprobe` for this point, with the given handlers and everything else zero.
    fn to_kprobe(
        self,
        pre_handler: bindings::kprobe_pre_handler_t,
        post_handler: bindings::kprobe_post_handler_t,
    ) -> bindings::kprobe {
        let mut kp = MaybeUninit::<bindings::kprobe>::zeroed();
        let raw = kp.as_mut_ptr();
        // SAFETY: `raw` points to a local that no one else can see; every field of the C
        // `struct kprobe` (pointers, integers, optional function pointers, list heads) is valid
        // when all its bits are zero, so `assume_init` below is sound as well.
        unsafe {
            (*raw).symbol_name = self.symbol.map_or(ptr::null(), |s| s.as_char_ptr());
            (*raw).addr = self.addr as *mut bindings::kprobe_opcode_t;
            (*raw).offset = self.offset;
            (*raw).pre_handler = pre_handler;
            (*raw).post_handler = post_handler;
            kp.assume_init()
        }
    }
}

/// The registers of the CPU that hit a probe, as saved by the probe's exception or trampoline.
///
/// Wraps the C `struct pt_regs`. Handlers get it read-only: they can look, not change.
///
/// # Examples
///
/// ```
/// use core::sync::atomic::{AtomicUsize, Ordering};
/// use kernel::kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs};
///
/// #[inline(never)]
/// extern "C" fn probed(a: usize, b: usize) -> usize {
///     // Opaque to the optimiser, so every call really happens.
///     let (a, b) = core::hint::black_box((a, b));
///     a.wrapping_sub(b)
/// }
///
/// struct FirstArgument(AtomicUsize);
///
/// #[vtable]
/// impl KprobeHandler for FirstArgument {
///     fn pre_handler(probe: &Kprobe<Self>, regs: &PtRegs) {
///         probe.handler().0.store(regs.argument(0), Ordering::Relaxed);
///     }
/// }
///
/// let probe = Kprobe::register(
///     ProbePoint::function(probed as *const () as usize),
///     FirstArgument(AtomicUsize::new(0)),
/// )?;
/// probed(1234, 5);
/// let seen = probe.handler().0.load(Ordering::Relaxed);
/// drop(probe);
/// assert_eq!(seen, 1234);
/// # Ok::<(), Error>(())
/// ```
#[repr(transparent)]
pub struct PtRegs(Opaque<bindings::pt_regs>);

impl PtRegs {
    /// Creates a reference to the registers at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a valid `struct pt_regs` that stays valid and is not written for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::pt_regs) -> &'a Self {
        // SAFETY: `PtRegs` is a transparent wrapper of `Opaque<pt_regs>`, which has the layout of
        // `pt_regs`; the caller guarantees validity for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the instruction pointer (program counter).
    ///
    /// In a pre handler it is at or just past the probed instruction, depending on the
    /// architecture: x86 reports the address after its one-byte breakpoint.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x.rotate_left(3)
    /// }
    ///
    /// struct Ip(AtomicUsize);
    ///
    /// #[vtable]
    /// impl KprobeHandler for Ip {
    ///     fn pre_handler(probe: &Kprobe<Self>, regs: &PtRegs) {
    ///         probe.handler().0.store(regs.instruction_pointer(), Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = Kprobe::register(point, Ip(AtomicUsize::new(0)))?;
    /// probed(7);
    /// let ip = probe.handler().0.load(Ordering::Relaxed);
    /// let addr = probe.address();
    /// drop(probe);
    /// assert!(ip >= addr && ip < addr + 16);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn instruction_pointer(&self) -> usize {
        // SAFETY: `self.0` holds valid registers by the type invariant of the reference.
        unsafe { bindings::instruction_pointer(self.0.get()) as usize }
    }

    /// Returns the kernel stack pointer.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x.rotate_right(5)
    /// }
    ///
    /// struct Sp(AtomicUsize);
    ///
    /// #[vtable]
    /// impl KprobeHandler for Sp {
    ///     fn pre_handler(probe: &Kprobe<Self>, regs: &PtRegs) {
    ///         probe.handler().0.store(regs.stack_pointer(), Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = Kprobe::register(point, Sp(AtomicUsize::new(0)))?;
    /// probed(9);
    /// let sp = probe.handler().0.load(Ordering::Relaxed);
    /// drop(probe);
    /// // The caller's stack, close below a local of this test.
    /// let local = 0u64;
    /// let here = core::hint::black_box(&local) as *const u64 as usize;
    /// assert!(sp != 0 && sp % core::mem::size_of::<usize>() == 0);
    /// assert!(sp.abs_diff(here) < 4096);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn stack_pointer(&self) -> usize {
        // SAFETY: `self.0` holds valid registers by the type invariant of the reference.
        unsafe { bindings::kernel_stack_pointer(self.0.get()) as usize }
    }

    /// Returns the function return value register; meaningful in a return handler.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x * 2 + 1
    /// }
    ///
    /// struct Returned(AtomicUsize);
    ///
    /// impl KretprobeHandler for Returned {
    ///     type Data = ();
    ///
    ///     fn entry_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs) -> Option<()> {
    ///         Some(())
    ///     }
    ///
    ///     fn return_handler(probe: &Kretprobe<Self>, regs: &PtRegs, _data: ()) {
    ///         probe.handler().0.store(regs.return_value(), Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let probe = Kretprobe::register(
    ///     ProbePoint::function(probed as *const () as usize),
    ///     None,
    ///     Returned(AtomicUsize::new(0)),
    /// )?;
    /// probed(20);
    /// let returned = probe.handler().0.load(Ordering::Relaxed);
    /// drop(probe);
    /// assert_eq!(returned, 41);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn return_value(&self) -> usize {
        // SAFETY: `self.0` holds valid registers by the type invariant of the reference.
        unsafe { bindings::regs_return_value(self.0.get()) as usize }
    }

    /// Returns argument `n` (from zero) of the called function; meaningful at function entry.
    ///
    /// It follows the architecture's C calling convention (Rust functions must be `extern "C"`
    /// for it to be exact), and reads 0 for arguments the architecture cannot locate.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(a: usize, b: usize, c: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let (a, b, c) = core::hint::black_box((a, b, c));
    ///     a ^ b ^ c
    /// }
    ///
    /// struct Third(AtomicUsize);
    ///
    /// #[vtable]
    /// impl KprobeHandler for Third {
    ///     fn pre_handler(probe: &Kprobe<Self>, regs: &PtRegs) {
    ///         probe.handler().0.store(regs.argument(2), Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = Kprobe::register(point, Third(AtomicUsize::new(0)))?;
    /// probed(1, 2, 0x7777);
    /// let third = probe.handler().0.load(Ordering::Relaxed);
    /// drop(probe);
    /// assert_eq!(third, 0x7777);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn argument(&self, n: u32) -> usize {
        // SAFETY: `self.0` holds valid registers by the type invariant of the reference; the C
        // function bounds-checks `n` and any stack slot it reads.
        unsafe { bindings::regs_get_kernel_argument(self.0.get(), n) as usize }
    }
}

/// The handlers of a [`Kprobe`].
///
/// Implement the handlers the probe needs, with `#[vtable]`; a handler that is not implemented is
/// not installed in the C structure at all. Without a post handler the kprobes core may optimise
/// the probe into a jump (on x86), which makes hits cheaper.
///
/// Handlers run in atomic context and must not sleep; see the [module documentation](self).
///
/// # Examples
///
/// ```
/// use core::sync::atomic::{AtomicUsize, Ordering};
/// use kernel::kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs};
///
/// #[inline(never)]
/// extern "C" fn probed(x: usize) -> usize {
///     // Opaque to the optimiser, so every call really happens.
///     let x = core::hint::black_box(x);
///     x.count_ones() as usize
/// }
///
/// #[derive(Default)]
/// struct PrePost {
///     pre: AtomicUsize,
///     post: AtomicUsize,
/// }
///
/// #[vtable]
/// impl KprobeHandler for PrePost {
///     fn pre_handler(probe: &Kprobe<Self>, _regs: &PtRegs) {
///         probe.handler().pre.fetch_add(1, Ordering::Relaxed);
///     }
///
///     fn post_handler(probe: &Kprobe<Self>, _regs: &PtRegs) {
///         // The pre handler of the same hit has run.
///         let h = probe.handler();
///         if h.pre.load(Ordering::Relaxed) > h.post.load(Ordering::Relaxed) {
///             h.post.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// let point = ProbePoint::function(probed as *const () as usize);
/// let probe = Kprobe::register(point, PrePost::default())?;
/// probed(0xff);
/// probed(0xf0);
/// let (pre, post) = (
///     probe.handler().pre.load(Ordering::Relaxed),
///     probe.handler().post.load(Ordering::Relaxed),
/// );
/// drop(probe);
/// assert_eq!((pre, post), (2, 2));
/// # Ok::<(), Error>(())
/// ```
#[vtable]
pub trait KprobeHandler: Send + Sync + Sized {
    /// Called when the CPU reaches the probed instruction, before it runs.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicBool, Ordering};
    /// use kernel::kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x.reverse_bits()
    /// }
    ///
    /// struct Seen(AtomicBool);
    ///
    /// #[vtable]
    /// impl KprobeHandler for Seen {
    ///     fn pre_handler(probe: &Kprobe<Self>, _regs: &PtRegs) {
    ///         probe.handler().0.store(true, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = Kprobe::register(point, Seen(AtomicBool::new(false)))?;
    /// let before = probe.handler().0.load(Ordering::Relaxed);
    /// probed(1);
    /// let after = probe.handler().0.load(Ordering::Relaxed);
    /// drop(probe);
    /// assert!(!before && after);
    /// # Ok::<(), Error>(())
    /// ```
    fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Called after the probed instruction ran (single-stepped or emulated).
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x.wrapping_add(0x1234)
    /// }
    ///
    /// // Only a post handler.
    /// struct After(AtomicUsize);
    ///
    /// #[vtable]
    /// impl KprobeHandler for After {
    ///     fn post_handler(probe: &Kprobe<Self>, _regs: &PtRegs) {
    ///         probe.handler().0.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = Kprobe::register(point, After(AtomicUsize::new(0)))?;
    /// probed(1);
    /// probed(2);
    /// let hits = probe.handler().0.load(Ordering::Relaxed);
    /// drop(probe);
    /// assert_eq!(hits, 2);
    /// # Ok::<(), Error>(())
    /// ```
    fn post_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }
}

/// A registered kprobe with handlers `T`.
///
/// Created registered by [`Kprobe::new`] (in place) or [`Kprobe::register`] (in a [`KBox`]);
/// dropping it unregisters it, which may sleep and waits for running handlers to finish.
///
/// # Invariants
///
/// `kp` is registered with the kprobes core from the end of initialisation until the start of
/// `drop`, with handlers for `T`; `kp` is only accessed through raw pointers meanwhile.
///
/// # Examples
///
/// ```
/// use core::sync::atomic::{AtomicUsize, Ordering};
/// use kernel::kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs};
///
/// #[inline(never)]
/// extern "C" fn probed(x: usize) -> usize {
///     // Opaque to the optimiser, so every call really happens.
///     let x = core::hint::black_box(x);
///     x.leading_zeros() as usize
/// }
///
/// struct Hits(AtomicUsize);
///
/// #[vtable]
/// impl KprobeHandler for Hits {
///     fn pre_handler(probe: &Kprobe<Self>, _regs: &PtRegs) {
///         probe.handler().0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// // In place, here in a `KBox` with a specific allocation flag.
/// let probe = KBox::pin_init(
///     Kprobe::new(ProbePoint::function(probed as *const () as usize), Hits(AtomicUsize::new(0))),
///     GFP_KERNEL,
/// )?;
/// probed(1);
/// let hits = probe.handler().0.load(Ordering::Relaxed);
/// drop(probe);
/// assert_eq!(hits, 1);
/// # Ok::<(), Error>(())
/// ```
#[pin_data(PinnedDrop)]
#[repr(C)]
pub struct Kprobe<T> {
    #[pin]
    kp: Opaque<bindings::kprobe>,
    handler: T,
}

// SAFETY: The C kprobe may be unregistered from any thread; the handler is owned and `Send`.
unsafe impl<T: Send> Send for Kprobe<T> {}

// SAFETY: Through `&Kprobe` the C functions (which lock internally) are called and the handler
// is shared, also with the handlers running on any CPU; that needs `T: Sync` only.
unsafe impl<T: Sync> Sync for Kprobe<T> {}

impl<T: KprobeHandler> Kprobe<T> {
    /// Creates an initialiser that registers a kprobe at `point` with `handler`.
    ///
    /// Initialisation fails with the C error code if the kprobes core refuses the probe.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {}
    /// }
    ///
    /// let unknown = ProbePoint::symbol(c_str!("rkprobes_no_such_symbol"));
    /// let result = KBox::pin_init(Kprobe::new(unknown, Nothing), GFP_KERNEL);
    /// assert_eq!(result.err(), Some(ENOENT));
    ///
    /// // `get_kprobe` is on the kprobes blacklist.
    /// let blacklisted = ProbePoint::symbol(c_str!("get_kprobe"));
    /// let result = KBox::pin_init(Kprobe::new(blacklisted, Nothing), GFP_KERNEL);
    /// assert_eq!(result.err(), Some(EINVAL));
    /// ```
    pub fn new(point: ProbePoint, handler: T) -> impl PinInit<Self, Error> {
        let pre_handler: bindings::kprobe_pre_handler_t = if T::HAS_PRE_HANDLER {
            Some(Self::pre_handler_callback)
        } else {
            None
        };
        let post_handler: bindings::kprobe_post_handler_t = if T::HAS_POST_HANDLER {
            Some(Self::post_handler_callback)
        } else {
            None
        };
        let init = move |slot: *mut Self| -> Result {
            // SAFETY: `slot` is valid for writes and does not move (see below); the fields are
            // written through raw pointers, and `kp` only through `Opaque::raw_get`.
            let kp = unsafe {
                addr_of_mut!((*slot).handler).write(handler);
                let kp = Opaque::raw_get(addr_of!((*slot).kp));
                kp.write(point.to_kprobe(pre_handler, post_handler));
                kp
            };
            // SAFETY: `kp` is a fully initialised `struct kprobe` at its final address, and the
            // handler it calls is initialised. From here on C owns it until it is unregistered.
            let ret = unsafe { bindings::register_kprobe(kp) };
            if let Err(e) = to_result(ret) {
                // SAFETY: The handler was written above; C refused the probe and keeps no
                // pointer to it, so the slot can be given back without dropping `kp`.
                unsafe { ptr::drop_in_place(addr_of_mut!((*slot).handler)) };
                return Err(e);
            }
            // INVARIANT: `kp` is registered with handlers for `T`.
            Ok(())
        };
        // SAFETY: On success every field is initialised; on failure the slot holds nothing that
        // needs dropping and the kprobes core does not refer to it. The closure relies on the
        // slot not moving, which pinning guarantees.
        unsafe { crate::init::pin_init_from_closure(init) }
    }

    /// Registers a kprobe at `point` with `handler` in a new [`KBox`].
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {}
    /// }
    ///
    /// let probe = Kprobe::register(ProbePoint::symbol(c_str!("kernel_clone")), Nothing)?;
    /// assert!(probe.is_enabled());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn register(point: ProbePoint, handler: T) -> Result<Pin<KBox<Self>>> {
        KBox::pin_init(Self::new(point, handler), GFP_KERNEL)
    }

    /// The C pre handler: finds the [`Kprobe`] and calls [`KprobeHandler::pre_handler`].
    ///
    /// # Safety
    ///
    /// `p` must be the `kp` of a registered `Kprobe<T>` and `regs` valid for the call.
    unsafe extern "C" fn pre_handler_callback(
        p: *mut bindings::kprobe,
        regs: *mut bindings::pt_regs,
    ) -> c_int {
        // SAFETY: By the caller's guarantee `p` is in a live `Kprobe<T>`, and so are `regs`.
        let (probe, regs) = unsafe { (Self::from_raw(p), PtRegs::from_raw(regs)) };
        T::pre_handler(probe, regs);
        // Zero: single-step the probed instruction as usual.
        0
    }

    /// The C post handler: finds the [`Kprobe`] and calls [`KprobeHandler::post_handler`].
    ///
    /// # Safety
    ///
    /// `p` must be the `kp` of a registered `Kprobe<T>` and `regs` valid for the call.
    unsafe extern "C" fn post_handler_callback(
        p: *mut bindings::kprobe,
        regs: *mut bindings::pt_regs,
        _flags: c_ulong,
    ) {
        // SAFETY: By the caller's guarantee `p` is in a live `Kprobe<T>`, and so are `regs`.
        let (probe, regs) = unsafe { (Self::from_raw(p), PtRegs::from_raw(regs)) };
        T::post_handler(probe, regs);
    }

    /// Returns the [`Kprobe`] whose `kp` is at `p`.
    ///
    /// # Safety
    ///
    /// `p` must point to the `kp` field of a `Kprobe<T>` that stays alive for `'a`.
    unsafe fn from_raw<'a>(p: *mut bindings::kprobe) -> &'a Self {
        // SAFETY: `Opaque<kprobe>` has the layout of `kprobe`, so `kp` starts at `p` and the
        // containing `Kprobe<T>` starts `offset_of!(Self, kp)` bytes before it.
        unsafe { &*p.cast::<u8>().sub(offset_of!(Self, kp)).cast::<Self>() }
    }
}

impl<T> Kprobe<T> {
    /// Returns the handler.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct Named(&'static str);
    ///
    /// #[vtable]
    /// impl KprobeHandler for Named {
    ///     fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {}
    /// }
    ///
    /// let probe = Kprobe::register(ProbePoint::symbol(c_str!("kernel_clone")), Named("clone"))?;
    /// assert_eq!(probe.handler().0, "clone");
    /// # Ok::<(), Error>(())
    /// ```
    pub fn handler(&self) -> &T {
        &self.handler
    }

    /// Returns the address the kprobes core resolved the probe point to.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {}
    /// }
    ///
    /// let by_symbol = Kprobe::register(ProbePoint::symbol(c_str!("kernel_clone")), Nothing)?;
    /// let addr = by_symbol.address();
    /// drop(by_symbol);
    /// let by_address = Kprobe::register(ProbePoint::address(addr), Nothing)?;
    /// assert_eq!(by_address.address(), addr);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn address(&self) -> usize {
        // SAFETY: `kp` is valid; `addr` is written by registration before `self` exists and is
        // read with READ_ONCE semantics.
        unsafe { ptr::read_volatile(addr_of!((*self.kp.get()).addr)) as usize }
    }

    /// Returns how many hits did not run the handlers: they came while a handler ran on that CPU.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x.trailing_zeros() as usize
    /// }
    ///
    /// struct Recursive(AtomicUsize);
    ///
    /// #[vtable]
    /// impl KprobeHandler for Recursive {
    ///     fn pre_handler(probe: &Kprobe<Self>, _regs: &PtRegs) {
    ///         probe.handler().0.fetch_add(1, Ordering::Relaxed);
    ///         // Hits the probe again, from inside its handler: a miss.
    ///         probed(8);
    ///     }
    /// }
    ///
    /// let probe = Kprobe::register(
    ///     ProbePoint::function(probed as *const () as usize),
    ///     Recursive(AtomicUsize::new(0)),
    /// )?;
    /// probed(4);
    /// let (hits, missed) = (probe.handler().0.load(Ordering::Relaxed), probe.nmissed());
    /// drop(probe);
    /// assert_eq!((hits, missed), (1, 1));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn nmissed(&self) -> usize {
        // SAFETY: `kp` is valid; C increments `nmissed` concurrently, so read it with READ_ONCE
        // semantics.
        unsafe { ptr::read_volatile(addr_of!((*self.kp.get()).nmissed)) as usize }
    }

    /// Disables the probe: its handlers stop running until [`Kprobe::enable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x.swap_bytes()
    /// }
    ///
    /// struct Hits(AtomicUsize);
    ///
    /// #[vtable]
    /// impl KprobeHandler for Hits {
    ///     fn pre_handler(probe: &Kprobe<Self>, _regs: &PtRegs) {
    ///         probe.handler().0.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = Kprobe::register(point, Hits(AtomicUsize::new(0)))?;
    /// probe.disable()?;
    /// let disabled = !probe.is_enabled();
    /// probed(1);
    /// let hits_while_disabled = probe.handler().0.load(Ordering::Relaxed);
    /// probe.enable()?;
    /// probed(2);
    /// let hits = probe.handler().0.load(Ordering::Relaxed);
    /// drop(probe);
    /// assert!(disabled);
    /// assert_eq!((hits_while_disabled, hits), (0, 1));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn disable(&self) -> Result {
        // SAFETY: `kp` is registered by the type invariant; C serialises with `kprobe_mutex`.
        to_result(unsafe { bindings::disable_kprobe(self.kp.get()) })
    }

    /// Enables the probe again after [`Kprobe::disable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {}
    /// }
    ///
    /// let probe = Kprobe::register(ProbePoint::symbol(c_str!("kernel_clone")), Nothing)?;
    /// probe.disable()?;
    /// assert!(!probe.is_enabled());
    /// probe.enable()?;
    /// assert!(probe.is_enabled());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn enable(&self) -> Result {
        // SAFETY: `kp` is registered by the type invariant; C serialises with `kprobe_mutex`.
        to_result(unsafe { bindings::enable_kprobe(self.kp.get()) })
    }

    /// Returns whether the probe is enabled (neither disabled nor gone with its module text).
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(_probe: &Kprobe<Self>, _regs: &PtRegs) {}
    /// }
    ///
    /// let probe = Kprobe::register(ProbePoint::symbol(c_str!("kernel_clone")), Nothing)?;
    /// assert!(probe.is_enabled());
    /// probe.disable()?;
    /// assert!(!probe.is_enabled());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn is_enabled(&self) -> bool {
        // SAFETY: `kp` is valid; `flags` changes under `kprobe_mutex`, so read it once.
        let flags = unsafe { ptr::read_volatile(addr_of!((*self.kp.get()).flags)) };
        flags & (bindings::KPROBE_FLAG_DISABLED | bindings::KPROBE_FLAG_GONE) == 0
    }
}

#[pinned_drop]
impl<T> PinnedDrop for Kprobe<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `kp` is registered by the type invariant. Unregistering waits until no handler
        // runs, so afterwards C no longer refers to `kp` or `handler`.
        unsafe { bindings::unregister_kprobe(self.kp.get()) };
    }
}

/// The handlers of a [`Kretprobe`], and the value they pass from function entry to return.
///
/// The entry handler runs when the probed function is called and may return a
/// [`KretprobeHandler::Data`]; the return handler of that call then gets it when the function
/// returns. Returning [`None`] skips the return handler for that call. The value lives in the
/// C instance (`data_size` is its size), so entry and return handlers are atomic-context code and
/// the value is moved, not allocated. If the probe is dropped while a call is still running, the
/// return handler of that call does not run and its value is leaked, never dropped.
///
/// # Examples
///
/// ```
/// use core::sync::atomic::{AtomicUsize, Ordering};
/// use kernel::kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs};
///
/// #[inline(never)]
/// extern "C" fn probed(x: usize) -> usize {
///     // Opaque to the optimiser, so every call really happens.
///     let x = core::hint::black_box(x);
///     x + 100
/// }
///
/// // Sums argument + return value over the calls with an even argument.
/// struct EvenSum(AtomicUsize);
///
/// impl KretprobeHandler for EvenSum {
///     type Data = usize;
///
///     fn entry_handler(_probe: &Kretprobe<Self>, regs: &PtRegs) -> Option<usize> {
///         let arg = regs.argument(0);
///         (arg % 2 == 0).then_some(arg)
///     }
///
///     fn return_handler(probe: &Kretprobe<Self>, regs: &PtRegs, arg: usize) {
///         probe.handler().0.fetch_add(arg.wrapping_add(regs.return_value()), Ordering::Relaxed);
///     }
/// }
///
/// let probe = Kretprobe::register(
///     ProbePoint::function(probed as *const () as usize),
///     None,
///     EvenSum(AtomicUsize::new(0)),
/// )?;
/// for i in 1..=4 {
///     probed(i);
/// }
/// let sum = probe.handler().0.load(Ordering::Relaxed);
/// drop(probe);
/// // (2 + 102) + (4 + 104)
/// assert_eq!(sum, 212);
/// # Ok::<(), Error>(())
/// ```
#[cfg(CONFIG_KRETPROBES)]
pub trait KretprobeHandler: Send + Sync + Sized {
    /// The value passed from the entry handler to the return handler of the same call.
    ///
    /// It needs no particular alignment and may own resources: it is moved, not copied.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(a: usize, b: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let (a, b) = core::hint::black_box((a, b));
    ///     a.wrapping_mul(b)
    /// }
    ///
    /// struct Product(AtomicUsize);
    ///
    /// impl KretprobeHandler for Product {
    ///     // Both arguments; the instance needs no particular alignment for them.
    ///     type Data = (u8, usize, usize);
    ///
    ///     fn entry_handler(_probe: &Kretprobe<Self>, regs: &PtRegs) -> Option<Self::Data> {
    ///         Some((1, regs.argument(0), regs.argument(1)))
    ///     }
    ///
    ///     fn return_handler(probe: &Kretprobe<Self>, regs: &PtRegs, (_, a, b): Self::Data) {
    ///         if a.wrapping_mul(b) == regs.return_value() {
    ///             probe.handler().0.fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = Kretprobe::register(point, None, Product(AtomicUsize::new(0)))?;
    /// probed(6, 7);
    /// probed(11, 13);
    /// let checked = probe.handler().0.load(Ordering::Relaxed);
    /// drop(probe);
    /// assert_eq!(checked, 2);
    /// # Ok::<(), Error>(())
    /// ```
    type Data: Send;

    /// Called at function entry; returns the value for the return handler, or [`None`] to skip
    /// the return handler for this call.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x / 3
    /// }
    ///
    /// #[derive(Default)]
    /// struct Counts {
    ///     entries: AtomicUsize,
    ///     returns: AtomicUsize,
    /// }
    ///
    /// impl KretprobeHandler for Counts {
    ///     type Data = ();
    ///
    ///     // Follows the calls with an argument above 10 only.
    ///     fn entry_handler(probe: &Kretprobe<Self>, regs: &PtRegs) -> Option<()> {
    ///         probe.handler().entries.fetch_add(1, Ordering::Relaxed);
    ///         (regs.argument(0) > 10).then_some(())
    ///     }
    ///
    ///     fn return_handler(probe: &Kretprobe<Self>, _regs: &PtRegs, _data: ()) {
    ///         probe.handler().returns.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = Kretprobe::register(point, None, Counts::default())?;
    /// for x in [5, 50, 500] {
    ///     probed(x);
    /// }
    /// let h = probe.handler();
    /// let counts = (h.entries.load(Ordering::Relaxed), h.returns.load(Ordering::Relaxed));
    /// drop(probe);
    /// assert_eq!(counts, (3, 2));
    /// # Ok::<(), Error>(())
    /// ```
    fn entry_handler(probe: &Kretprobe<Self>, regs: &PtRegs) -> Option<Self::Data>;

    /// Called when the function returns, with the value from the entry handler.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x + 5
    /// }
    ///
    /// struct LastReturn(AtomicUsize);
    ///
    /// impl KretprobeHandler for LastReturn {
    ///     type Data = ();
    ///
    ///     fn entry_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs) -> Option<()> {
    ///         Some(())
    ///     }
    ///
    ///     fn return_handler(probe: &Kretprobe<Self>, regs: &PtRegs, _data: ()) {
    ///         probe.handler().0.store(regs.return_value(), Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = Kretprobe::register(point, None, LastReturn(AtomicUsize::new(0)))?;
    /// probed(95);
    /// let last = probe.handler().0.load(Ordering::Relaxed);
    /// drop(probe);
    /// assert_eq!(last, 100);
    /// # Ok::<(), Error>(())
    /// ```
    fn return_handler(probe: &Kretprobe<Self>, regs: &PtRegs, data: Self::Data);
}

/// A registered return probe (kretprobe) with handlers `T`.
///
/// Created registered by [`Kretprobe::new`] (in place) or [`Kretprobe::register`] (in a
/// [`KBox`]); dropping it unregisters it, which may sleep and waits for running handlers. The
/// probe point must be a function entry.
///
/// # Invariants
///
/// `rp` is registered with the kprobes core from the end of initialisation until the start of
/// `drop`, with handlers for `T` and `data_size` of `T::Data`; `rp` is only accessed through raw
/// pointers meanwhile.
///
/// # Examples
///
/// ```
/// use kernel::{c_str, kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs}};
///
/// struct Nothing;
///
/// impl KretprobeHandler for Nothing {
///     type Data = ();
///
///     fn entry_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs) -> Option<()> {
///         None
///     }
///
///     fn return_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs, _data: ()) {}
/// }
///
/// // Not a function entry.
/// let inside = ProbePoint::symbol(c_str!("kernel_clone")).offset(1);
/// assert_eq!(Kretprobe::register(inside, None, Nothing).err(), Some(EINVAL));
/// ```
#[cfg(CONFIG_KRETPROBES)]
#[pin_data(PinnedDrop)]
#[repr(C)]
pub struct Kretprobe<T> {
    #[pin]
    rp: Opaque<bindings::kretprobe>,
    handler: T,
}

// SAFETY: The C kretprobe may be unregistered from any thread; the handler is owned and `Send`.
#[cfg(CONFIG_KRETPROBES)]
unsafe impl<T: Send> Send for Kretprobe<T> {}

// SAFETY: Through `&Kretprobe` the C functions (which lock internally) are called and the handler
// is shared, also with the handlers running on any CPU; that needs `T: Sync` only.
#[cfg(CONFIG_KRETPROBES)]
unsafe impl<T: Sync> Sync for Kretprobe<T> {}

#[cfg(CONFIG_KRETPROBES)]
impl<T: KretprobeHandler> Kretprobe<T> {
    /// Creates an initialiser that registers a return probe at `point` with `handler`.
    ///
    /// `maxactive` is how many calls of the function can be followed at once; [`None`] lets the
    /// kprobes core choose (`max(10, 2 * possible CPUs)`). Calls beyond it are counted in
    /// [`Kretprobe::nmissed`]. Values above `i32::MAX` fail with `EINVAL`, a
    /// [`KretprobeHandler::Data`] larger than 4096 bytes with `E2BIG`.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct TooBig;
    ///
    /// impl KretprobeHandler for TooBig {
    ///     type Data = [u8; 4097];
    ///
    ///     fn entry_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs) -> Option<[u8; 4097]> {
    ///         None
    ///     }
    ///
    ///     fn return_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs, _data: [u8; 4097]) {}
    /// }
    ///
    /// let point = ProbePoint::symbol(c_str!("kernel_clone"));
    /// let result = KBox::pin_init(Kretprobe::new(point, None, TooBig), GFP_KERNEL);
    /// assert_eq!(result.err(), Some(E2BIG));
    /// let result = KBox::pin_init(Kretprobe::new(point, Some(u32::MAX), TooBig), GFP_KERNEL);
    /// assert_eq!(result.err(), Some(EINVAL));
    /// ```
    pub fn new(point: ProbePoint, maxactive: Option<u32>, handler: T) -> impl PinInit<Self, Error> {
        let init = move |slot: *mut Self| -> Result {
            let maxactive = match maxactive {
                None => 0,
                Some(n) => c_int::try_from(n).map_err(|_| EINVAL)?,
            };
            let mut rp = MaybeUninit::<bindings::kretprobe>::zeroed();
            let raw = rp.as_mut_ptr();
            // SAFETY: `raw` points to a local; every field of the C `struct kretprobe` is valid
            // when all its bits are zero, so `assume_init` is sound as well.
            let rp = unsafe {
                (*raw).kp = point.to_kprobe(None, None);
                (*raw).handler = Some(Self::return_callback);
                (*raw).entry_handler = Some(Self::entry_callback);
                (*raw).maxactive = maxactive;
                (*raw).data_size = core::mem::size_of::<T::Data>();
                rp.assume_init()
            };
            // SAFETY: `slot` is valid for writes and does not move (see below); the fields are
            // written through raw pointers, and `rp` only through `Opaque::raw_get`.
            let raw = unsafe {
                addr_of_mut!((*slot).handler).write(handler);
                let raw = Opaque::raw_get(addr_of!((*slot).rp));
                raw.write(rp);
                raw
            };
            // SAFETY: `raw` is a fully initialised `struct kretprobe` at its final address, and
            // the handler it calls is initialised. From here on C owns it until unregistered.
            let ret = unsafe { bindings::register_kretprobe(raw) };
            if let Err(e) = to_result(ret) {
                // SAFETY: The handler was written above; C refused the probe, freed what it
                // allocated for it and keeps no pointer to it.
                unsafe { ptr::drop_in_place(addr_of_mut!((*slot).handler)) };
                return Err(e);
            }
            // INVARIANT: `rp` is registered with handlers for `T` and the size of `T::Data`.
            Ok(())
        };
        // SAFETY: On success every field is initialised; on failure the slot holds nothing that
        // needs dropping and the kprobes core does not refer to it. The closure relies on the
        // slot not moving, which pinning guarantees.
        unsafe { crate::init::pin_init_from_closure(init) }
    }

    /// Registers a return probe at `point` with `handler` in a new [`KBox`].
    ///
    /// See [`Kretprobe::new`] for `maxactive`.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// impl KretprobeHandler for Nothing {
    ///     type Data = ();
    ///
    ///     fn entry_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs) -> Option<()> {
    ///         None
    ///     }
    ///
    ///     fn return_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs, _data: ()) {}
    /// }
    ///
    /// let point = ProbePoint::symbol(c_str!("kernel_clone"));
    /// let probe = Kretprobe::register(point, Some(20), Nothing)?;
    /// assert!(probe.is_enabled());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn register(
        point: ProbePoint,
        maxactive: Option<u32>,
        handler: T,
    ) -> Result<Pin<KBox<Self>>> {
        KBox::pin_init(Self::new(point, maxactive, handler), GFP_KERNEL)
    }

    /// The C entry handler: calls [`KretprobeHandler::entry_handler`] and stores its value.
    ///
    /// # Safety
    ///
    /// `ri` must be an instance of a registered `Kretprobe<T>` and `regs` valid for the call.
    unsafe extern "C" fn entry_callback(
        ri: *mut bindings::kretprobe_instance,
        regs: *mut bindings::pt_regs,
    ) -> c_int {
        // SAFETY: By the caller's guarantee `ri` belongs to a live `Kretprobe<T>`.
        let (probe, regs) = unsafe { (Self::from_instance(ri), PtRegs::from_raw(regs)) };
        match T::entry_handler(probe, regs) {
            Some(data) => {
                // SAFETY: The instance has `data_size` = `size_of::<T::Data>()` bytes of data,
                // owned by this call until the return handler; they may be unaligned.
                unsafe { Self::instance_data(ri).write_unaligned(data) };
                0
            }
            // Non-zero: C recycles the instance and does not call the return handler.
            None => 1,
        }
    }

    /// The C return handler: takes the value back and calls [`KretprobeHandler::return_handler`].
    ///
    /// # Safety
    ///
    /// `ri` must be an instance of a registered `Kretprobe<T>` whose entry handler returned 0,
    /// and `regs` valid for the call.
    unsafe extern "C" fn return_callback(
        ri: *mut bindings::kretprobe_instance,
        regs: *mut bindings::pt_regs,
    ) -> c_int {
        // SAFETY: By the caller's guarantee `ri` belongs to a live `Kretprobe<T>`.
        let (probe, regs) = unsafe { (Self::from_instance(ri), PtRegs::from_raw(regs)) };
        // SAFETY: C calls the return handler only for instances whose entry handler returned 0,
        // which wrote a `T::Data` there; it is moved out once, as C recycles the instance next.
        let data = unsafe { Self::instance_data(ri).read_unaligned() };
        T::return_handler(probe, regs, data);
        0
    }

    /// Returns the [`Kretprobe`] that instance `ri` belongs to.
    ///
    /// # Safety
    ///
    /// `ri` must be an instance of a `Kretprobe<T>` that stays alive for `'a`, in one of its
    /// handlers.
    unsafe fn from_instance<'a>(ri: *mut bindings::kretprobe_instance) -> &'a Self {
        // SAFETY: Within a handler the instance is valid and refers to its kretprobe.
        let rp = unsafe { bindings::get_kretprobe(ri) };
        // SAFETY: `rp` is the `rp` field of a `Kretprobe<T>`, at `offset_of!(Self, rp)` from its
        // start, because `Opaque<kretprobe>` has the layout of `kretprobe`.
        unsafe { &*rp.cast::<u8>().sub(offset_of!(Self, rp)).cast::<Self>() }
    }

    /// Returns where instance `ri` keeps its [`KretprobeHandler::Data`]; possibly unaligned.
    ///
    /// # Safety
    ///
    /// `ri` must be a valid instance.
    unsafe fn instance_data(ri: *mut bindings::kretprobe_instance) -> *mut T::Data {
        // SAFETY: `data` is the flexible array at the end of a valid instance.
        unsafe { addr_of_mut!((*ri).data) }.cast::<T::Data>()
    }
}

#[cfg(CONFIG_KRETPROBES)]
impl<T> Kretprobe<T> {
    /// Returns the handler.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct Named(&'static str);
    ///
    /// impl KretprobeHandler for Named {
    ///     type Data = ();
    ///
    ///     fn entry_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs) -> Option<()> {
    ///         None
    ///     }
    ///
    ///     fn return_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs, _data: ()) {}
    /// }
    ///
    /// let point = ProbePoint::symbol(c_str!("kernel_clone"));
    /// let probe = Kretprobe::register(point, None, Named("clone"))?;
    /// assert_eq!(probe.handler().0, "clone");
    /// # Ok::<(), Error>(())
    /// ```
    pub fn handler(&self) -> &T {
        &self.handler
    }

    /// Returns a pointer to the `kp` inside the C `struct kretprobe`.
    fn kp(&self) -> *mut bindings::kprobe {
        // SAFETY: `rp` is valid; no reference is formed.
        unsafe { addr_of_mut!((*self.rp.get()).kp) }
    }

    /// Returns the address of the function entry the kprobes core resolved the probe point to.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x | 1
    /// }
    ///
    /// struct Nothing;
    ///
    /// impl KretprobeHandler for Nothing {
    ///     type Data = ();
    ///
    ///     fn entry_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs) -> Option<()> {
    ///         None
    ///     }
    ///
    ///     fn return_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs, _data: ()) {}
    /// }
    ///
    /// // Computed at run time: objtool refuses a relocation to `probed + 4` with IBT.
    /// let entry = core::hint::black_box(probed as *const () as usize);
    /// let probe = Kretprobe::register(ProbePoint::address(entry), None, Nothing)?;
    /// // With IBT the probe moves past the `endbr64` that starts the function.
    /// assert!(probe.address() >= entry && probe.address() <= entry + 4);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn address(&self) -> usize {
        // SAFETY: `kp` is valid; `addr` is written by registration before `self` exists and is
        // read with READ_ONCE semantics.
        unsafe { ptr::read_volatile(addr_of!((*self.kp()).addr)) as usize }
    }

    /// Returns how many calls were not followed: beyond `maxactive`, or while a handler ran.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn recurse(depth: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let depth = core::hint::black_box(depth);
    ///     if depth == 0 {
    ///         0
    ///     } else {
    ///         recurse(depth - 1) + 1
    ///     }
    /// }
    ///
    /// struct Returns(AtomicUsize);
    ///
    /// impl KretprobeHandler for Returns {
    ///     type Data = ();
    ///
    ///     fn entry_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs) -> Option<()> {
    ///         Some(())
    ///     }
    ///
    ///     fn return_handler(probe: &Kretprobe<Self>, _regs: &PtRegs, _data: ()) {
    ///         probe.handler().0.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// // One instance: the two nested calls cannot be followed.
    /// let probe = Kretprobe::register(
    ///     ProbePoint::function(recurse as *const () as usize),
    ///     Some(1),
    ///     Returns(AtomicUsize::new(0)),
    /// )?;
    /// recurse(2);
    /// let (returns, missed) = (probe.handler().0.load(Ordering::Relaxed), probe.nmissed());
    /// drop(probe);
    /// assert_eq!((returns, missed), (1, 2));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn nmissed(&self) -> usize {
        // SAFETY: `rp` is valid; C increments both counters concurrently, so read them with
        // READ_ONCE semantics.
        let (kp_missed, rp_missed) = unsafe {
            (
                ptr::read_volatile(addr_of!((*self.kp()).nmissed)),
                ptr::read_volatile(addr_of!((*self.rp.get()).nmissed)),
            )
        };
        (kp_missed as usize).wrapping_add(rp_missed as usize)
    }

    /// Disables the probe: its handlers stop running until [`Kretprobe::enable`].
    ///
    /// Calls already entered still get their return handler.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x.wrapping_neg()
    /// }
    ///
    /// struct Returns(AtomicUsize);
    ///
    /// impl KretprobeHandler for Returns {
    ///     type Data = ();
    ///
    ///     fn entry_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs) -> Option<()> {
    ///         Some(())
    ///     }
    ///
    ///     fn return_handler(probe: &Kretprobe<Self>, _regs: &PtRegs, _data: ()) {
    ///         probe.handler().0.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let probe = Kretprobe::register(
    ///     ProbePoint::function(probed as *const () as usize),
    ///     None,
    ///     Returns(AtomicUsize::new(0)),
    /// )?;
    /// probe.disable()?;
    /// probed(1);
    /// let while_disabled = probe.handler().0.load(Ordering::Relaxed);
    /// probe.enable()?;
    /// probed(2);
    /// let returns = probe.handler().0.load(Ordering::Relaxed);
    /// drop(probe);
    /// assert_eq!((while_disabled, returns), (0, 1));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn disable(&self) -> Result {
        // SAFETY: `rp` is registered by the type invariant; C serialises with `kprobe_mutex`.
        to_result(unsafe { bindings::disable_kprobe(self.kp()) })
    }

    /// Enables the probe again after [`Kretprobe::disable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// impl KretprobeHandler for Nothing {
    ///     type Data = ();
    ///
    ///     fn entry_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs) -> Option<()> {
    ///         None
    ///     }
    ///
    ///     fn return_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs, _data: ()) {}
    /// }
    ///
    /// let probe = Kretprobe::register(ProbePoint::symbol(c_str!("kernel_clone")), None, Nothing)?;
    /// probe.disable()?;
    /// probe.enable()?;
    /// assert!(probe.is_enabled());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn enable(&self) -> Result {
        // SAFETY: `rp` is registered by the type invariant; C serialises with `kprobe_mutex`.
        to_result(unsafe { bindings::enable_kprobe(self.kp()) })
    }

    /// Returns whether the probe is enabled (neither disabled nor gone with its module text).
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kretprobe, KretprobeHandler, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// impl KretprobeHandler for Nothing {
    ///     type Data = ();
    ///
    ///     fn entry_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs) -> Option<()> {
    ///         None
    ///     }
    ///
    ///     fn return_handler(_probe: &Kretprobe<Self>, _regs: &PtRegs, _data: ()) {}
    /// }
    ///
    /// let probe = Kretprobe::register(ProbePoint::symbol(c_str!("kernel_clone")), None, Nothing)?;
    /// assert!(probe.is_enabled());
    /// probe.disable()?;
    /// assert!(!probe.is_enabled());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn is_enabled(&self) -> bool {
        // SAFETY: `kp` is valid; `flags` changes under `kprobe_mutex`, so read it once.
        let flags = unsafe { ptr::read_volatile(addr_of!((*self.kp()).flags)) };
        flags & (bindings::KPROBE_FLAG_DISABLED | bindings::KPROBE_FLAG_GONE) == 0
    }
}

#[cfg(CONFIG_KRETPROBES)]
#[pinned_drop]
impl<T> PinnedDrop for Kretprobe<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `rp` is registered by the type invariant. Unregistering waits until no handler
        // runs and detaches the instances still out, so afterwards C no longer calls our handlers
        // or refers to `rp` through them.
        unsafe { bindings::unregister_kretprobe(self.rp.get()) };
    }
}

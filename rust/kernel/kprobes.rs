// SPDX-License-Identifier: GPL-2.0

//! Kernel probes: run a handler when the kernel reaches an instruction or returns from a function.
//!
//! # Constraints
//!
//! - Handlers run in atomic context, on the CPU that hit the probe, with preemption disabled; on
//!   most architectures they run from a breakpoint exception that the kernel enters like an NMI.
//!   They must not sleep: no `GFP_KERNEL` allocation, no mutex, no `msleep`. A handler gets
//!   `&self` and a [`KprobeHit`] or [`KretprobeHit`], which only offer what needs no lock;
//!   enabling, disabling and unregistering (which take `kprobe_mutex` and may sleep) are methods
//!   of the [`Kprobe`] and [`Kretprobe`] objects, which handlers never see.
//! - Handlers of one probe run concurrently on several CPUs, so handler types are [`Sync`]; and
//!   since a probe may fire after the frame that registered it is gone, they own their data:
//!   handler types are `'static` (a handler borrowing a local does not compile).
//! - Handlers do not nest on one CPU: a hit while a handler of any probe runs on that CPU (for
//!   example because the handler calls a probed function) runs no handler and is counted as
//!   missed (see [`Kprobe::nmissed`]).
//! - Locks: a probe can fire anywhere, with interrupts enabled or not, also inside a critical
//!   section on the same CPU. A lock that handlers take must therefore never be held where one of
//!   its probes can fire on the same CPU: a [`SpinLock`] that only the handlers take is safe
//!   (they do not nest), while one also taken in process context deadlocks if the probe fires
//!   inside that critical section (for example in an interrupt, or because the probed function is
//!   called with the lock held). Prefer atomics for state shared with the rest of the module.
//! - Handlers observe: they get the registers read-only and cannot redirect execution.
//! - Registering, unregistering (dropping the probe), enabling and disabling may sleep: do them in
//!   process context.
//! - The handler functions themselves are not blacklisted; probing them only produces misses.
//!
//! # Design
//!
//! A [`Kprobe`] owns a C `struct kprobe`, a [`Kretprobe`] a C `struct kretprobe`, next to the
//! handler value. Each is built in place by a pin-initialiser that initialises the handler (itself
//! in place, so it can hold a lock) and then registers the probe, and it unregisters itself when
//! dropped, so a registered probe never moves and nothing can use it after it is gone: dropping
//! the probe waits until no handler runs any more, and the borrow checker refuses any later use.
//! While the probe is registered the C structure belongs to the kprobes core, so it is kept in an
//! [`Opaque`] and only touched through raw pointers.
//!
//! A probe that is leaked instead (with [`core::mem::forget`], or in a reference cycle) stays
//! registered with its handler, which stays valid because it is `'static` and owned by the leaked
//! allocation; but in a module that is then unloaded the handler's code would be gone. Keep probes
//! in the module's state, so that they are dropped when it exits.
//!
//! What a probe does is given by a handler type: [`KprobeHandler`] for the pre and post handlers
//! of a [`Kprobe`], [`KretprobeHandler`] for the entry and return handlers of a [`Kretprobe`],
//! which pass a typed value from function entry to function return. Where to probe is a
//! [`ProbePoint`]: a symbol plus an offset, or an address. What the type system cannot rule out
//! (an unknown symbol, a place that may not be probed) is refused by the kprobes core with its
//! usual error codes and comes back as an [`Error`].
//!
//! # Examples
//!
//! Count the calls of a function:
//!
//! ```
//! use core::sync::atomic::{AtomicUsize, Ordering};
//! use kernel::kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs};
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
//!     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {
//!         self.calls.fetch_add(1, Ordering::Relaxed);
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
//! A handler cannot borrow data of the frame that registers it: the probe could outlive the frame
//! (with [`core::mem::forget`]) and its handler would then read a dead stack.
//!
//! ```compile_fail,E0597
//! use core::sync::atomic::{AtomicUsize, Ordering};
//! use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs}};
//!
//! struct Borrowing<'a>(&'a AtomicUsize);
//!
//! #[vtable]
//! impl KprobeHandler for Borrowing<'static> {
//!     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {
//!         self.0.fetch_add(1, Ordering::Relaxed);
//!     }
//! }
//!
//! fn plant() -> Result {
//!     let local = AtomicUsize::new(0);
//!     let probe = Kprobe::register(ProbePoint::symbol(c_str!("kernel_clone")), Borrowing(&local))?;
//!     core::mem::forget(probe);
//!     Ok(())
//! }
//! ```
//!
//! C header: [`include/linux/kprobes.h`](srctree/include/linux/kprobes.h)
//!
//! [`SpinLock`]: crate::sync::SpinLock

use crate::{
    bindings,
    error::{to_result, VTABLE_DEFAULT_ERROR},
    ffi::{c_int, c_ulong},
    init::pin_init_from_closure,
    prelude::*,
    types::Opaque,
};
use core::{
    mem::{offset_of, MaybeUninit},
    num::NonZeroU32,
    ptr::{self, addr_of, addr_of_mut},
};

/// Where a probe is placed: a symbol plus an offset, or an address plus an offset.
///
/// It is always exactly one of the two, as the kprobes core requires of the `symbol_name` and
/// `addr` fields of `struct kprobe`. What only the core can check is refused at registration
/// with the C error code: `ENOENT` if the symbol is unknown, `EINVAL` if the place may not be
/// probed (address zero, blacklisted, not text), `EILSEQ` (on some architectures) if it is not on
/// an instruction boundary.
///
/// # Examples
///
/// ```
/// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs}};
///
/// struct Nothing;
///
/// #[vtable]
/// impl KprobeHandler for Nothing {
///     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {}
/// }
///
/// // A function of this example, found by its name as any kernel function is. (Not a kernel
/// // function such as `kernel_clone`: on an arch without kprobes on ftrace, riscv in 6.12, the
/// // entry of a traced function cannot be probed.)
/// #[no_mangle]
/// #[inline(never)]
/// extern "C" fn rkprobes_doctest_point_entry(x: usize) -> usize {
///     core::hint::black_box(x)
/// }
///
/// let entry = ProbePoint::symbol(c_str!("rkprobes_doctest_point_entry"));
/// let probe = Kprobe::register(entry, Nothing)?;
/// assert!(probe.address() != 0);
/// drop(probe);
///
/// let unknown = ProbePoint::symbol(c_str!("rkprobes_no_such_symbol"));
/// assert_eq!(Kprobe::register(unknown, Nothing).err(), Some(ENOENT));
/// assert_eq!(Kprobe::register(ProbePoint::address(0), Nothing).err(), Some(EINVAL));
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct ProbePoint {
    target: Target,
    offset: u32,
}

/// What a [`ProbePoint`] is relative to.
#[derive(Clone, Copy)]
enum Target {
    Symbol(&'static CStr),
    Address(usize),
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
    pub const fn symbol(name: &'static CStr) -> Self {
        Self {
            target: Target::Symbol(name),
            offset: 0,
        }
    }

    /// Creates a probe point at the instruction at address `addr`.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs};
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
    ///     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {}
    /// }
    ///
    /// // Computed at run time: objtool refuses a relocation to `probed + 4` with IBT.
    /// let entry = core::hint::black_box(probed as *const () as usize);
    /// let probe = Kprobe::register(ProbePoint::address(entry), Nothing)?;
    /// // With IBT the probe moves past the `endbr64` that starts the function.
    /// assert!(probe.address() >= entry && probe.address() <= entry + 4);
    /// # Ok::<(), Error>(())
    /// ```
    pub const fn address(addr: usize) -> Self {
        Self {
            target: Target::Address(addr),
            offset: 0,
        }
    }

    /// Creates a probe point at the entry of the function at `addr` (a function pointer cast to
    /// `usize`), where direct calls enter it: see [`function_entry`].
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::kprobes::{function_entry, Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs};
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
    ///     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {}
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
    /// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {}
    /// }
    ///
    /// #[no_mangle]
    /// #[inline(never)]
    /// extern "C" fn rkprobes_doctest_offset_entry(x: usize) -> usize {
    ///     core::hint::black_box(x)
    /// }
    ///
    /// let point = ProbePoint::symbol(c_str!("rkprobes_doctest_offset_entry"));
    /// let entry = Kprobe::register(point, Nothing)?;
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

    /// Writes this point, the handlers and the initial state into the zeroed `kp`.
    ///
    /// # Safety
    ///
    /// `kp` must be valid for writes and not yet registered.
    unsafe fn write_to(
        self,
        kp: *mut bindings::kprobe,
        pre_handler: bindings::kprobe_pre_handler_t,
        post_handler: bindings::kprobe_post_handler_t,
        state: State,
    ) {
        let (symbol_name, addr) = match self.target {
            Target::Symbol(name) => (name.as_char_ptr(), ptr::null_mut()),
            Target::Address(addr) => (ptr::null(), addr as *mut bindings::kprobe_opcode_t),
        };
        let flags = match state {
            State::Enabled => 0,
            // Registration keeps this flag and arms nothing (C: `kprobe_disabled(p)`).
            State::Disabled => bindings::KPROBE_FLAG_DISABLED,
        };
        // SAFETY: every field of `struct kprobe` (pointers, integers, optional function pointers,
        // list heads) is valid when all its bits are zero, and `kp` is valid for writes by the
        // caller's guarantee.
        unsafe {
            kp.write(MaybeUninit::<bindings::kprobe>::zeroed().assume_init());
            (*kp).symbol_name = symbol_name;
            (*kp).addr = addr;
            (*kp).offset = self.offset;
            (*kp).pre_handler = pre_handler;
            (*kp).post_handler = post_handler;
            (*kp).flags = flags;
        }
    }
}

/// Whether a probe starts enabled or disabled.
#[derive(Clone, Copy)]
enum State {
    Enabled,
    Disabled,
}

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
    unsafe fn from_raw<'a>(ptr: *mut bindings::pt_regs) -> &'a Self {
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
    unsafe fn from_raw<'a>(p: *mut bindings::kprobe) -> &'a Self {
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

    /// Returns whether the probe is enabled (neither disabled nor gone with its module text).
    fn is_enabled(&self) -> bool {
        // SAFETY: the probe is live by the type invariant.
        let flags = unsafe { read_once(addr_of!((*self.0.get()).flags)) };
        flags & (bindings::KPROBE_FLAG_DISABLED | bindings::KPROBE_FLAG_GONE) == 0
    }

    /// `enable_kprobe()` or `disable_kprobe()`; may sleep.
    fn set_enabled(&self, enable: bool) -> Result {
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

/// The handlers of a [`Kprobe`].
///
/// Implement the handlers the probe needs, with `#[vtable]`; a handler that is not implemented is
/// not installed in the C structure at all. Without a post handler the kprobes core may optimise
/// the probe into a jump (on x86), which makes hits cheaper.
///
/// Handlers run in atomic context and must not sleep; see the [module documentation](self) for
/// which locks they may take.
///
/// # Examples
///
/// ```
/// use core::sync::atomic::{AtomicUsize, Ordering};
/// use kernel::kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs};
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
///     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {
///         self.pre.fetch_add(1, Ordering::Relaxed);
///     }
///
///     fn post_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {
///         // The pre handler of the same hit has run.
///         if self.pre.load(Ordering::Relaxed) > self.post.load(Ordering::Relaxed) {
///             self.post.fetch_add(1, Ordering::Relaxed);
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
///
/// A handler cannot reach what sleeps: it gets no [`Kprobe`], so it cannot disable its probe.
///
/// ```compile_fail,E0599
/// use kernel::kprobes::{KprobeHandler, KprobeHit, PtRegs};
///
/// struct Disabler;
///
/// #[vtable]
/// impl KprobeHandler for Disabler {
///     fn pre_handler(&self, hit: &KprobeHit, _regs: &PtRegs) {
///         // `disable_kprobe()` takes `kprobe_mutex`: not in atomic context.
///         let _ = hit.disable();
///     }
/// }
/// ```
#[vtable]
pub trait KprobeHandler: Send + Sync + 'static {
    /// Called when the CPU reaches the probed instruction, before it runs.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x.reverse_bits()
    /// }
    ///
    /// // What the hit context tells: the probe's address.
    /// struct SeenAt(AtomicUsize);
    ///
    /// #[vtable]
    /// impl KprobeHandler for SeenAt {
    ///     fn pre_handler(&self, hit: &KprobeHit, _regs: &PtRegs) {
    ///         self.0.store(hit.address(), Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = Kprobe::register(point, SeenAt(AtomicUsize::new(0)))?;
    /// let before = probe.handler().0.load(Ordering::Relaxed);
    /// probed(1);
    /// let (after, addr) = (probe.handler().0.load(Ordering::Relaxed), probe.address());
    /// drop(probe);
    /// assert_eq!((before, after), (0, addr));
    /// # Ok::<(), Error>(())
    /// ```
    fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Called after the probed instruction ran (single-stepped or emulated).
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs};
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
    ///     fn post_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {
    ///         self.0.fetch_add(1, Ordering::Relaxed);
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
    fn post_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }
}

/// A registered kprobe with handlers `T`.
///
/// Created registered by [`Kprobe::new`] or [`Kprobe::new_disabled`] (in place) or
/// [`Kprobe::register`] (in a [`KBox`]); dropping it unregisters it, which may sleep and waits
/// for running handlers to finish, and then drops the handler.
///
/// # Invariants
///
/// `kp` is registered with the kprobes core from the end of initialisation until the start of
/// `drop`, with handlers for `T`; `kp` is only accessed through raw pointers meanwhile.
///
/// # Examples
///
/// The handler is initialised in place, so it can hold a lock. This one is only taken by the
/// handler and, below, by the test at a point where the probe cannot fire on its CPU (only
/// `probed` hits it, and it is not called with the lock held).
///
/// ```
/// use kernel::{
///     kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs},
///     new_spinlock,
///     sync::SpinLock,
/// };
///
/// #[inline(never)]
/// extern "C" fn probed(x: usize) -> usize {
///     // Opaque to the optimiser, so every call really happens.
///     let x = core::hint::black_box(x);
///     x.leading_zeros() as usize
/// }
///
/// #[pin_data]
/// struct Arguments {
///     #[pin]
///     seen: SpinLock<(usize, usize)>,
/// }
///
/// #[vtable]
/// impl KprobeHandler for Arguments {
///     fn pre_handler(&self, _hit: &KprobeHit, regs: &PtRegs) {
///         let mut seen = self.seen.lock();
///         seen.0 += 1;
///         seen.1 = seen.1.wrapping_add(regs.argument(0));
///     }
/// }
///
/// let handler = try_pin_init!(Arguments { seen <- new_spinlock!((0, 0), "rkprobes_doc") }? Error);
/// let point = ProbePoint::function(probed as *const () as usize);
/// let probe = KBox::pin_init(Kprobe::new(point, handler), GFP_KERNEL)?;
/// probed(40);
/// probed(2);
/// let seen = *probe.handler().seen.lock();
/// drop(probe);
/// assert_eq!(seen, (2, 42));
/// # Ok::<(), Error>(())
/// ```
///
/// After the drop the probe cannot be used any more:
///
/// ```compile_fail,E0382
/// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs}};
///
/// struct Nothing;
///
/// #[vtable]
/// impl KprobeHandler for Nothing {
///     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {}
/// }
///
/// let probe = Kprobe::register(ProbePoint::symbol(c_str!("kernel_clone")), Nothing)?;
/// drop(probe);
/// let _ = probe.nmissed();
/// # Ok::<(), Error>(())
/// ```
#[pin_data(PinnedDrop)]
#[repr(C)]
pub struct Kprobe<T> {
    #[pin]
    kp: Opaque<bindings::kprobe>,
    #[pin]
    handler: T,
}

// SAFETY: The C kprobe may be unregistered from any thread, which then drops the handler: that
// needs `T: Send`.
unsafe impl<T: Send> Send for Kprobe<T> {}

// SAFETY: Through `&Kprobe` the C functions (which lock internally) are called and the handler
// is shared, also with the handlers running on any CPU; that needs `T: Sync` only.
unsafe impl<T: Sync> Sync for Kprobe<T> {}

impl<T: KprobeHandler> Kprobe<T> {
    /// Creates an initialiser that initialises `handler` and registers a kprobe at `point` with it.
    ///
    /// Initialisation fails with the C error code if the kprobes core refuses the probe; the
    /// handler is then dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {}
    /// }
    ///
    /// // `get_kprobe` is on the kprobes blacklist.
    /// let blacklisted = ProbePoint::symbol(c_str!("get_kprobe"));
    /// let result = KBox::pin_init(Kprobe::new(blacklisted, Nothing), GFP_KERNEL);
    /// assert_eq!(result.err(), Some(EINVAL));
    /// ```
    pub fn new(point: ProbePoint, handler: impl PinInit<T, Error>) -> impl PinInit<Self, Error> {
        Self::with_state(point, handler, State::Enabled)
    }

    /// Like [`Kprobe::new`], but the probe starts disabled: no handler runs until
    /// [`Kprobe::enable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs};
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
    ///     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {
    ///         self.0.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = KBox::pin_init(Kprobe::new_disabled(point, Hits(AtomicUsize::new(0))), GFP_KERNEL)?;
    /// let disabled = !probe.is_enabled();
    /// probed(1);
    /// let while_disabled = probe.handler().0.load(Ordering::Relaxed);
    /// probe.enable()?;
    /// probed(2);
    /// probe.disable()?;
    /// probed(3);
    /// let hits = probe.handler().0.load(Ordering::Relaxed);
    /// drop(probe);
    /// assert!(disabled);
    /// assert_eq!((while_disabled, hits), (0, 1));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn new_disabled(
        point: ProbePoint,
        handler: impl PinInit<T, Error>,
    ) -> impl PinInit<Self, Error> {
        Self::with_state(point, handler, State::Disabled)
    }

    /// Registers an enabled kprobe at `point` with `handler` in a new [`KBox`].
    pub fn register(point: ProbePoint, handler: impl PinInit<T, Error>) -> Result<Pin<KBox<Self>>> {
        KBox::pin_init(Self::new(point, handler), GFP_KERNEL)
    }

    fn with_state(
        point: ProbePoint,
        handler: impl PinInit<T, Error>,
        state: State,
    ) -> impl PinInit<Self, Error> {
        let (pre_handler, post_handler) =
            handlers::<T>(Self::pre_handler_callback, Self::post_handler_callback);
        let register = move |kp: *mut bindings::kprobe| {
            // SAFETY: `kp` is valid for writes and not registered yet (`register_in_place`).
            unsafe { point.write_to(kp, pre_handler, post_handler, state) };
            // SAFETY: `kp` is a fully initialised `struct kprobe` that does not move; its
            // handlers, if any, are the callbacks of this `Kprobe<T>`.
            to_result(unsafe { bindings::register_kprobe(kp) })
        };
        // SAFETY: `kp` is a field of a pinned `Kprobe<T>` that is initialised after the handler
        // (below), so the callbacks find the handler there once the probe is registered; `kp` is
        // written before it is registered and a failed registration keeps no reference to it.
        let kp = unsafe { register_in_place(register) };
        // The handler is initialised first: the probe may fire as soon as it is registered.
        try_pin_init!(Self {
            handler <- handler,
            kp <- kp,
        }? Error)
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
        probe.handler.pre_handler(probe.hit(), regs);
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
        probe.handler.post_handler(probe.hit(), regs);
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

/// The C handlers to install for `T`: `pre` and `post` where `T` implements the handler, else
/// none (so that a probe without a post handler can be optimised).
fn handlers<T: KprobeHandler>(
    pre: unsafe extern "C" fn(*mut bindings::kprobe, *mut bindings::pt_regs) -> c_int,
    post: unsafe extern "C" fn(*mut bindings::kprobe, *mut bindings::pt_regs, c_ulong),
) -> (
    bindings::kprobe_pre_handler_t,
    bindings::kprobe_post_handler_t,
) {
    (
        T::HAS_PRE_HANDLER.then_some(pre),
        T::HAS_POST_HANDLER.then_some(post),
    )
}

/// Initialises the C probe structure in `slot` and registers it with `register`.
///
/// `register` gets a pointer to the uninitialised structure at its final address, valid for
/// writes.
///
/// # Safety
///
/// The caller guarantees that once `register` succeeds, whatever the registered structure's
/// callbacks reach is initialised and stays so until the structure is unregistered, and that
/// a failed `register` leaves no pointer to the structure in the kprobes core.
unsafe fn register_in_place<C>(
    register: impl FnOnce(*mut C) -> Result,
) -> impl PinInit<Opaque<C>, Error> {
    let init = move |slot: *mut Opaque<C>| register(Opaque::raw_get(slot));
    // SAFETY: On success the structure is initialised by `register`; `Opaque` needs no other
    // initialisation and is never moved after that, which pinning guarantees. On failure it
    // holds nothing that needs dropping.
    unsafe { pin_init_from_closure(init) }
}

impl<T> Kprobe<T> {
    /// Returns the handler.
    pub fn handler(&self) -> &T {
        &self.handler
    }

    /// Returns what handlers see of this probe.
    fn hit(&self) -> &KprobeHit {
        // SAFETY: `kp` is registered until `drop` starts, by the type invariant, and `self` is
        // borrowed for the lifetime of the result.
        unsafe { KprobeHit::from_raw(self.kp.get()) }
    }

    /// Returns the address the kprobes core resolved the probe point to.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {}
    /// }
    ///
    /// #[no_mangle]
    /// #[inline(never)]
    /// extern "C" fn rkprobes_doctest_address_of(x: usize) -> usize {
    ///     core::hint::black_box(x)
    /// }
    ///
    /// let point = ProbePoint::symbol(c_str!("rkprobes_doctest_address_of"));
    /// let by_symbol = Kprobe::register(point, Nothing)?;
    /// let addr = by_symbol.address();
    /// drop(by_symbol);
    /// let by_address = Kprobe::register(ProbePoint::address(addr), Nothing)?;
    /// assert_eq!(by_address.address(), addr);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn address(&self) -> usize {
        self.hit().address()
    }

    /// Returns how many hits did not run the handlers: they came while a handler ran on that CPU.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x.trailing_zeros() as usize
    /// }
    ///
    /// struct Recursive {
    ///     hits: AtomicUsize,
    ///     missed_seen: AtomicUsize,
    /// }
    ///
    /// #[vtable]
    /// impl KprobeHandler for Recursive {
    ///     fn pre_handler(&self, hit: &KprobeHit, _regs: &PtRegs) {
    ///         self.hits.fetch_add(1, Ordering::Relaxed);
    ///         // Hits the probe again, from inside its handler: a miss.
    ///         probed(8);
    ///         self.missed_seen.store(hit.nmissed(), Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let handler = Recursive { hits: AtomicUsize::new(0), missed_seen: AtomicUsize::new(0) };
    /// let probe = Kprobe::register(ProbePoint::function(probed as *const () as usize), handler)?;
    /// probed(4);
    /// let h = probe.handler();
    /// let (hits, seen) = (h.hits.load(Ordering::Relaxed), h.missed_seen.load(Ordering::Relaxed));
    /// let missed = probe.nmissed();
    /// drop(probe);
    /// assert_eq!((hits, seen, missed), (1, 1, 1));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn nmissed(&self) -> usize {
        self.hit().nmissed()
    }

    /// Disables the probe: its handlers stop running until [`Kprobe::enable`]. May sleep.
    pub fn disable(&self) -> Result {
        self.hit().set_enabled(false)
    }

    /// Enables the probe again after [`Kprobe::disable`]. May sleep.
    pub fn enable(&self) -> Result {
        self.hit().set_enabled(true)
    }

    /// Returns whether the probe is enabled (neither disabled nor gone with its module text).
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     core::hint::black_box(x)
    /// }
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KprobeHandler for Nothing {
    ///     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {}
    /// }
    ///
    /// let probe = Kprobe::register(ProbePoint::function(probed as *const () as usize), Nothing)?;
    /// assert!(probe.is_enabled());
    /// probe.disable()?;
    /// assert!(!probe.is_enabled());
    /// probe.enable()?;
    /// assert!(probe.is_enabled());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn is_enabled(&self) -> bool {
        self.hit().is_enabled()
    }
}

#[pinned_drop]
impl<T> PinnedDrop for Kprobe<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `kp` is registered by the type invariant. Unregistering waits until no handler
        // runs, so afterwards C no longer refers to `kp` or `handler`, which is dropped next.
        unsafe { bindings::unregister_kprobe(self.kp.get()) };
    }
}

/// Kprobes that share one handler and are registered and unregistered together: one call to
/// `register_kprobes()` and, when the batch is dropped, one `unregister_kprobes()`.
///
/// A tool that probes many functions at once (every function matching a pattern) should use a
/// batch: the kprobes core registers a batch as a whole (symbols resolved in one pass, text
/// patched together where the architecture allows) and waits for one RCU grace period to
/// unregister it, where probes dropped one by one wait for one each.
///
/// Registration is all or nothing, as `register_kprobes()` is: if any point is refused, the
/// probes registered before it are unregistered again and its C error code is returned. The
/// handler tells the probes apart by [`KprobeHit::address`]; [`KprobeBatch::probes`] gives each
/// probe's address, count of missed hits and an enable switch, in the order of the points.
///
/// # Invariants
///
/// Every `kp` in `probes` is registered (the batch's `register_kprobes()` succeeded) and its
/// `handler` points to the handler in `handler`, until `drop` starts. `probes` is neither grown
/// nor shrunk after registration, so the kprobes core's pointers into it stay valid, and `ptrs`
/// holds those pointers in order.
///
/// # Examples
///
/// ```
/// use core::sync::atomic::{AtomicUsize, Ordering};
/// use kernel::{c_str, kprobes::{KprobeBatch, KprobeHandler, KprobeHit, ProbePoint, PtRegs}};
///
/// #[inline(never)]
/// extern "C" fn first(x: usize) -> usize {
///     // Opaque to the optimiser, so every call really happens.
///     core::hint::black_box(x).rotate_left(3)
/// }
///
/// #[inline(never)]
/// extern "C" fn second(x: usize) -> usize {
///     core::hint::black_box(x).rotate_right(5)
/// }
///
/// // The third point is given by name.
/// #[no_mangle]
/// #[inline(never)]
/// extern "C" fn rkprobes_doctest_batch_third(x: usize) -> usize {
///     core::hint::black_box(x).wrapping_add(7)
/// }
///
/// // Hits of `first` (at the address the handler is told) and of anything else.
/// struct Split {
///     first_at: AtomicUsize,
///     first: AtomicUsize,
///     other: AtomicUsize,
/// }
///
/// #[vtable]
/// impl KprobeHandler for Split {
///     fn pre_handler(&self, hit: &KprobeHit, _regs: &PtRegs) {
///         if hit.address() == self.first_at.load(Ordering::Relaxed) {
///             self.first.fetch_add(1, Ordering::Relaxed);
///         } else {
///             self.other.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// let points = [
///     ProbePoint::function(first as *const () as usize),
///     ProbePoint::function(second as *const () as usize),
///     ProbePoint::symbol(c_str!("rkprobes_doctest_batch_third")),
/// ];
/// let split = Split {
///     first_at: AtomicUsize::new(usize::MAX),
///     first: AtomicUsize::new(0),
///     other: AtomicUsize::new(0),
/// };
/// let batch = KprobeBatch::register(&points, split)?;
/// assert_eq!(batch.len(), 3);
/// let addresses: KVec<usize> = {
///     let mut v = KVec::new();
///     for p in batch.probes() {
///         v.push(p.address(), GFP_KERNEL)?;
///     }
///     v
/// };
/// batch.handler().first_at.store(addresses[0], Ordering::Relaxed);
/// first(1);
/// first(2);
/// second(3);
/// // Only `second` is left enabled.
/// let probe_of_first = batch.probes().next().ok_or(EINVAL)?;
/// probe_of_first.disable()?;
/// assert!(!probe_of_first.is_enabled());
/// first(4);
/// rkprobes_doctest_batch_third(5);
/// let h = batch.handler();
/// let (f, o) = (h.first.load(Ordering::Relaxed), h.other.load(Ordering::Relaxed));
/// drop(batch);
/// assert_eq!(f, 2);
/// assert_eq!(o, 2);
/// // Each probe has the address it gets when registered alone.
/// let alone = KprobeBatch::register(&points[2..], Split {
///     first_at: AtomicUsize::new(0),
///     first: AtomicUsize::new(0),
///     other: AtomicUsize::new(0),
/// })?;
/// assert_eq!(alone.probes().next().map(|p| p.address()), Some(addresses[2]));
/// assert!(addresses[0] != 0 && addresses[1] != 0);
/// # Ok::<(), Error>(())
/// ```
///
/// A point that is refused fails the whole batch: none of its probes stays registered.
///
/// ```
/// use core::sync::atomic::{AtomicUsize, Ordering};
/// use kernel::{c_str, kprobes::{KprobeBatch, KprobeHandler, KprobeHit, ProbePoint, PtRegs}};
///
/// #[inline(never)]
/// extern "C" fn probed(x: usize) -> usize {
///     // Opaque to the optimiser, so every call really happens.
///     core::hint::black_box(x).wrapping_add(7)
/// }
///
/// static HITS: AtomicUsize = AtomicUsize::new(0);
///
/// struct Count;
///
/// #[vtable]
/// impl KprobeHandler for Count {
///     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {
///         HITS.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// let good = ProbePoint::function(probed as *const () as usize);
/// let unknown = ProbePoint::symbol(c_str!("rkprobes_no_such_symbol"));
/// // The unknown symbol first, in the middle, last: the same error, nothing left behind.
/// for points in [[unknown, good, good], [good, unknown, good], [good, good, unknown]] {
///     assert_eq!(KprobeBatch::register(&points, Count).err(), Some(ENOENT));
///     probed(1);
///     assert_eq!(HITS.load(Ordering::Relaxed), 0);
/// }
/// // An empty batch is refused as `register_kprobes()` refuses it.
/// assert_eq!(KprobeBatch::register(&[], Count).err(), Some(EINVAL));
/// // The same point twice: two probes at one address, each with its own hits.
/// let twice = KprobeBatch::register(&[good, good], Count)?;
/// probed(2);
/// drop(twice);
/// assert_eq!(HITS.load(Ordering::Relaxed), 2);
/// # Ok::<(), Error>(())
/// ```
pub struct KprobeBatch<T> {
    probes: KVVec<BatchEntry<T>>,
    ptrs: KVVec<*mut bindings::kprobe>,
    handler: Pin<KBox<T>>,
}

/// One probe of a [`KprobeBatch`]: the C structure, which starts it (so that the callbacks find
/// the entry from the `struct kprobe` they get), and the batch's handler.
#[repr(C)]
struct BatchEntry<T> {
    kp: Opaque<bindings::kprobe>,
    handler: *const T,
}

// SAFETY: The C kprobes may be unregistered from any thread, which then drops the handler: that
// needs `T: Send`. The raw pointers only point into the batch's own allocations.
unsafe impl<T: Send> Send for KprobeBatch<T> {}

// SAFETY: Through `&KprobeBatch` the C functions (which lock internally) are called and the
// handler is shared, also with the handlers running on any CPU; that needs `T: Sync` only.
unsafe impl<T: Sync> Sync for KprobeBatch<T> {}

impl<T: KprobeHandler> KprobeBatch<T> {
    /// Registers an enabled kprobe at each of `points`, all with `handler`, in one batch.
    ///
    /// Fails with the C error code of the first point the kprobes core refuses (then no probe
    /// of the batch stays registered), with `EINVAL` for an empty batch, and with `ENOMEM` if the
    /// batch cannot be allocated.
    pub fn register(points: &[ProbePoint], handler: impl PinInit<T, Error>) -> Result<Self> {
        Self::with_state(points, handler, State::Enabled)
    }

    /// Like [`KprobeBatch::register`], but every probe starts disabled: see
    /// [`BatchedKprobe::enable`].
    pub fn register_disabled(
        points: &[ProbePoint],
        handler: impl PinInit<T, Error>,
    ) -> Result<Self> {
        Self::with_state(points, handler, State::Disabled)
    }

    fn with_state(
        points: &[ProbePoint],
        handler: impl PinInit<T, Error>,
        state: State,
    ) -> Result<Self> {
        let num = c_int::try_from(points.len()).map_err(|_| EINVAL)?;
        let handler = KBox::pin_init(handler, GFP_KERNEL)?;
        let target: *const T = &*handler;
        let mut probes = KVVec::with_capacity(points.len(), GFP_KERNEL)?;
        let mut ptrs = KVVec::with_capacity(points.len(), GFP_KERNEL)?;
        for _ in points {
            probes.push(
                BatchEntry {
                    kp: Opaque::uninit(),
                    handler: target,
                },
                GFP_KERNEL,
            )?;
        }
        let (pre_handler, post_handler) =
            handlers::<T>(Self::pre_handler_callback, Self::post_handler_callback);
        // `probes` is full: it is not reallocated any more, so these pointers stay valid.
        for (entry, point) in probes.iter().zip(points) {
            let kp = entry.kp.get();
            // SAFETY: `kp` is valid for writes and not registered.
            unsafe { point.write_to(kp, pre_handler, post_handler, state) };
            ptrs.push(kp, GFP_KERNEL)?;
        }
        // SAFETY: `ptrs` holds `num` pointers to fully initialised `struct kprobe`s, in
        // `probes`, which does not move or change size from here on; their callbacks reach the
        // handler through `BatchEntry::handler`, which points into `handler`, initialised above
        // and kept with the batch. A failed registration unregisters what it registered.
        to_result(unsafe { bindings::register_kprobes(ptrs.as_mut_ptr(), num) })?;
        // INVARIANT: registered above; neither vector changes size from here on.
        Ok(Self {
            probes,
            ptrs,
            handler,
        })
    }

    /// The C pre handler: finds the batch's handler and calls [`KprobeHandler::pre_handler`].
    ///
    /// # Safety
    ///
    /// `p` must be the `kp` of an entry of a registered `KprobeBatch<T>` and `regs` valid for
    /// the call.
    unsafe extern "C" fn pre_handler_callback(
        p: *mut bindings::kprobe,
        regs: *mut bindings::pt_regs,
    ) -> c_int {
        // SAFETY: By the caller's guarantee `p` is in a live batch entry, and `regs` is valid.
        let (handler, hit, regs) = unsafe {
            (
                Self::handler_of(p),
                KprobeHit::from_raw(p),
                PtRegs::from_raw(regs),
            )
        };
        handler.pre_handler(hit, regs);
        // Zero: single-step the probed instruction as usual.
        0
    }

    /// The C post handler: finds the batch's handler and calls [`KprobeHandler::post_handler`].
    ///
    /// # Safety
    ///
    /// `p` must be the `kp` of an entry of a registered `KprobeBatch<T>` and `regs` valid for
    /// the call.
    unsafe extern "C" fn post_handler_callback(
        p: *mut bindings::kprobe,
        regs: *mut bindings::pt_regs,
        _flags: c_ulong,
    ) {
        // SAFETY: By the caller's guarantee `p` is in a live batch entry, and `regs` is valid.
        let (handler, hit, regs) = unsafe {
            (
                Self::handler_of(p),
                KprobeHit::from_raw(p),
                PtRegs::from_raw(regs),
            )
        };
        handler.post_handler(hit, regs);
    }

    /// Returns the handler of the batch entry whose `kp` is at `p`.
    ///
    /// # Safety
    ///
    /// `p` must point to the `kp` of an entry of a `KprobeBatch<T>` that stays registered for
    /// `'a`.
    unsafe fn handler_of<'a>(p: *mut bindings::kprobe) -> &'a T {
        // SAFETY: `kp` starts the `#[repr(C)]` entry, so the entry is at `p`; its `handler` field
        // is written before registration and never after, and points to the batch's handler,
        // which lives as long as the batch is registered (type invariant).
        unsafe { &*(*p.cast::<BatchEntry<T>>()).handler }
    }
}

impl<T> KprobeBatch<T> {
    /// Returns the handler.
    pub fn handler(&self) -> &T {
        &self.handler
    }

    /// Returns how many probes the batch has.
    pub fn len(&self) -> usize {
        self.probes.len()
    }

    /// Returns whether the batch has no probe (never true: an empty batch is refused).
    pub fn is_empty(&self) -> bool {
        self.probes.is_empty()
    }

    /// Returns the batch's probes, in the order of the points they were registered at.
    pub fn probes(&self) -> impl Iterator<Item = &BatchedKprobe> {
        self.probes.iter().map(|entry| {
            // SAFETY: every entry's `kp` is registered by the type invariant, until `drop`, which
            // the borrow of `self` rules out.
            unsafe { BatchedKprobe::from_raw(entry.kp.get()) }
        })
    }
}

impl<T> Drop for KprobeBatch<T> {
    fn drop(&mut self) {
        let num = self.ptrs.len() as c_int;
        // SAFETY: `ptrs` holds the batch's `num` registered probes (type invariant; `num` fitted
        // in a `c_int` at registration). Unregistering waits until no handler runs, so afterwards
        // C no longer refers to `probes` or `handler`, which are dropped next.
        unsafe { bindings::unregister_kprobes(self.ptrs.as_mut_ptr(), num) };
    }
}

/// One probe of a [`KprobeBatch`].
///
/// # Invariants
///
/// The wrapped `struct kprobe` is registered for as long as the reference exists.
#[repr(transparent)]
pub struct BatchedKprobe(KprobeHit);

impl BatchedKprobe {
    /// Creates a reference to the probe at `p`.
    ///
    /// # Safety
    ///
    /// `p` must point to a `struct kprobe` that stays registered for `'a`.
    unsafe fn from_raw<'a>(p: *mut bindings::kprobe) -> &'a Self {
        // SAFETY: `BatchedKprobe` is a transparent wrapper of `KprobeHit`, itself one of
        // `Opaque<kprobe>`; registered for `'a` by the caller's guarantee, as both require.
        unsafe { &*p.cast::<Self>() }
    }

    /// Returns the address the kprobes core resolved the probe point to.
    pub fn address(&self) -> usize {
        self.0.address()
    }

    /// Returns how many hits ran no handler because a handler was already running on that CPU.
    pub fn nmissed(&self) -> usize {
        self.0.nmissed()
    }

    /// Returns whether the probe is enabled (neither disabled nor gone with its module text).
    pub fn is_enabled(&self) -> bool {
        self.0.is_enabled()
    }

    /// Disables the probe: the handler stops running for it until [`BatchedKprobe::enable`].
    /// May sleep.
    pub fn disable(&self) -> Result {
        self.0.set_enabled(false)
    }

    /// Enables the probe again after [`BatchedKprobe::disable`], or after
    /// [`KprobeBatch::register_disabled`]. May sleep.
    pub fn enable(&self) -> Result {
        self.0.set_enabled(true)
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
    unsafe fn from_raw<'a>(rp: *mut bindings::kretprobe) -> &'a Self {
        // SAFETY: `KretprobeHit` is a transparent wrapper of `Opaque<kretprobe>`; valid for `'a`
        // by the caller's guarantee.
        unsafe { &*rp.cast::<Self>() }
    }

    /// Returns the probe's `struct kprobe`, as [`KprobeHit`].
    fn kprobe(&self) -> &KprobeHit {
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
        // SAFETY: the probe is live by the type invariant.
        let rp_missed = unsafe { read_once(addr_of!((*self.0.get()).nmissed)) };
        self.kprobe().nmissed().wrapping_add(rp_missed as usize)
    }
}

/// The handlers of a [`Kretprobe`], and the value they pass from function entry to return.
///
/// The entry handler runs when the probed function is called and may return a
/// [`KretprobeHandler::Data`]; the return handler of that call then gets it when the function
/// returns. Returning [`None`] skips the return handler for that call. The value lives in the
/// C instance (`data_size` is its size, checked at build time against the core's limit of
/// `KRETPROBE_MAX_DATA_SIZE` bytes), so entry and return handlers are atomic-context code and the
/// value is moved, not allocated.
///
/// The entry handler is optional (`#[vtable]`): without one, C calls none, every call is
/// followed and `Data` must be `()` (a build error otherwise).
///
/// # What happens to the value
///
/// A value returned by the entry handler is dropped exactly once if the return handler of its
/// call runs: it is moved into the return handler, or dropped there if the probe is being
/// unregistered (on architectures whose instances outlive the probe, the instance may find its
/// probe gone; the return handler is then not run). It is leaked, never dropped, when the kprobes
/// core recycles the instance without calling the return handler:
///
/// - the probe is unregistered while the call is still running (the core stops calling the
///   return handler before it waits for the calls in flight);
/// - the task exits, or the function never returns to its caller (for example a `longjmp`-like
///   unwind), while the call is followed.
///
/// So `Data` should not own anything whose leak matters (a reference count, an allocation that is
/// not bounded by `maxactive`).
///
/// # Examples
///
/// ```
/// use core::sync::atomic::{AtomicUsize, Ordering};
/// use kernel::kprobes::{Kretprobe, KretprobeHandler, KretprobeHit, ProbePoint, PtRegs};
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
/// #[vtable]
/// impl KretprobeHandler for EvenSum {
///     type Data = usize;
///
///     fn entry_handler(&self, _hit: &KretprobeHit, regs: &PtRegs) -> Option<usize> {
///         let arg = regs.argument(0);
///         (arg % 2 == 0).then_some(arg)
///     }
///
///     fn return_handler(&self, _hit: &KretprobeHit, regs: &PtRegs, arg: usize) {
///         self.0.fetch_add(arg.wrapping_add(regs.return_value()), Ordering::Relaxed);
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
///
/// A value that counts its drops: each is dropped once, after its return handler.
///
/// ```
/// use core::sync::atomic::{AtomicUsize, Ordering};
/// use kernel::kprobes::{Kretprobe, KretprobeHandler, KretprobeHit, ProbePoint, PtRegs};
///
/// #[inline(never)]
/// extern "C" fn probed(x: usize) -> usize {
///     // Opaque to the optimiser, so every call really happens.
///     let x = core::hint::black_box(x);
///     x * 7
/// }
///
/// static DROPS: AtomicUsize = AtomicUsize::new(0);
///
/// struct Counted(usize);
///
/// impl Drop for Counted {
///     fn drop(&mut self) {
///         DROPS.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// #[derive(Default)]
/// struct Keeper {
///     returns: AtomicUsize,
///     drops_at_return: AtomicUsize,
/// }
///
/// #[vtable]
/// impl KretprobeHandler for Keeper {
///     type Data = Counted;
///
///     fn entry_handler(&self, _hit: &KretprobeHit, regs: &PtRegs) -> Option<Counted> {
///         Some(Counted(regs.argument(0)))
///     }
///
///     fn return_handler(&self, _hit: &KretprobeHit, regs: &PtRegs, data: Counted) {
///         if data.0 * 7 == regs.return_value() {
///             self.returns.fetch_add(1, Ordering::Relaxed);
///         }
///         // Not dropped yet: it is dropped when this handler returns.
///         self.drops_at_return.fetch_max(DROPS.load(Ordering::Relaxed), Ordering::Relaxed);
///     }
/// }
///
/// let point = ProbePoint::function(probed as *const () as usize);
/// let probe = Kretprobe::register(point, None, Keeper::default())?;
/// for i in 0..5 {
///     probed(i);
/// }
/// let h = probe.handler();
/// let (returns, at_return) =
///     (h.returns.load(Ordering::Relaxed), h.drops_at_return.load(Ordering::Relaxed));
/// drop(probe);
/// assert_eq!((returns, at_return, DROPS.load(Ordering::Relaxed)), (5, 4, 5));
/// # Ok::<(), Error>(())
/// ```
///
/// A value with a large alignment: the instance does not align it, the probe moves it in and out.
///
/// ```
/// use core::sync::atomic::{AtomicUsize, Ordering};
/// use kernel::kprobes::{Kretprobe, KretprobeHandler, KretprobeHit, ProbePoint, PtRegs};
///
/// #[inline(never)]
/// extern "C" fn probed(x: usize) -> usize {
///     // Opaque to the optimiser, so every call really happens.
///     let x = core::hint::black_box(x);
///     x ^ 0xaa
/// }
///
/// #[repr(C, align(128))]
/// struct Aligned {
///     tag: u8,
///     arg: usize,
/// }
///
/// struct Checker(AtomicUsize);
///
/// #[vtable]
/// impl KretprobeHandler for Checker {
///     type Data = Aligned;
///
///     fn entry_handler(&self, _hit: &KretprobeHit, regs: &PtRegs) -> Option<Aligned> {
///         Some(Aligned { tag: 0x5a, arg: regs.argument(0) })
///     }
///
///     fn return_handler(&self, _hit: &KretprobeHit, regs: &PtRegs, data: Aligned) {
///         let aligned = core::ptr::addr_of!(data) as usize % 128 == 0;
///         if aligned && data.tag == 0x5a && data.arg ^ 0xaa == regs.return_value() {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// let point = ProbePoint::function(probed as *const () as usize);
/// let probe = Kretprobe::register(point, None, Checker(AtomicUsize::new(0)))?;
/// for i in [1, 0x1234, usize::MAX] {
///     probed(i);
/// }
/// let good = probe.handler().0.load(Ordering::Relaxed);
/// drop(probe);
/// assert_eq!(good, 3);
/// # Ok::<(), Error>(())
/// ```
///
/// A value larger than the instance may hold does not build:
///
/// ```compile_fail,E0080
/// use kernel::{c_str, kprobes::{Kretprobe, KretprobeHandler, KretprobeHit, ProbePoint, PtRegs}};
///
/// struct TooBig;
///
/// #[vtable]
/// impl KretprobeHandler for TooBig {
///     type Data = [u8; 4097];
///
///     fn entry_handler(&self, _hit: &KretprobeHit, _regs: &PtRegs) -> Option<[u8; 4097]> {
///         None
///     }
///
///     fn return_handler(&self, _hit: &KretprobeHit, _regs: &PtRegs, _data: [u8; 4097]) {}
/// }
///
/// let _ = Kretprobe::register(ProbePoint::symbol(c_str!("kernel_clone")), None, TooBig);
/// ```
#[cfg(CONFIG_KRETPROBES)]
#[vtable]
pub trait KretprobeHandler: Send + Sync + 'static {
    /// The value passed from the entry handler to the return handler of the same call.
    ///
    /// It needs no particular alignment and may own resources (see the trait's documentation
    /// for when it is leaked): it is moved, not copied.
    type Data: Send + 'static;

    /// Called at function entry; returns the value for the return handler, or [`None`] to skip
    /// the return handler for this call.
    fn entry_handler(&self, _hit: &KretprobeHit, _regs: &PtRegs) -> Option<Self::Data> {
        crate::build_error(VTABLE_DEFAULT_ERROR)
    }

    /// Called when the function returns, with the value from the entry handler.
    ///
    /// # Examples
    ///
    /// Without an entry handler every call is followed:
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kretprobe, KretprobeHandler, KretprobeHit, ProbePoint, PtRegs};
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     let x = core::hint::black_box(x);
    ///     x + 5
    /// }
    ///
    /// #[derive(Default)]
    /// struct LastReturn {
    ///     value: AtomicUsize,
    ///     address: AtomicUsize,
    /// }
    ///
    /// #[vtable]
    /// impl KretprobeHandler for LastReturn {
    ///     type Data = ();
    ///
    ///     fn return_handler(&self, hit: &KretprobeHit, regs: &PtRegs, _data: ()) {
    ///         self.value.store(regs.return_value(), Ordering::Relaxed);
    ///         self.address.store(hit.address(), Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = Kretprobe::register(point, None, LastReturn::default())?;
    /// probed(95);
    /// let h = probe.handler();
    /// let (last, seen_at) = (h.value.load(Ordering::Relaxed), h.address.load(Ordering::Relaxed));
    /// let addr = probe.address();
    /// drop(probe);
    /// assert_eq!((last, seen_at), (100, addr));
    /// # Ok::<(), Error>(())
    /// ```
    fn return_handler(&self, hit: &KretprobeHit, regs: &PtRegs, data: Self::Data);
}

/// A registered return probe (kretprobe) with handlers `T`.
///
/// Created registered by [`Kretprobe::new`] or [`Kretprobe::new_disabled`] (in place) or
/// [`Kretprobe::register`] (in a [`KBox`]); dropping it unregisters it, which may sleep and waits
/// for running handlers, and then drops the handler. The probe point must be a function entry.
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
/// use kernel::{c_str, kprobes::{Kretprobe, KretprobeHandler, KretprobeHit, ProbePoint, PtRegs}};
///
/// struct Nothing;
///
/// #[vtable]
/// impl KretprobeHandler for Nothing {
///     type Data = ();
///
///     fn return_handler(&self, _hit: &KretprobeHit, _regs: &PtRegs, _data: ()) {}
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
    #[pin]
    handler: T,
}

// SAFETY: The C kretprobe may be unregistered from any thread, which then drops the handler:
// that needs `T: Send`.
#[cfg(CONFIG_KRETPROBES)]
unsafe impl<T: Send> Send for Kretprobe<T> {}

// SAFETY: Through `&Kretprobe` the C functions (which lock internally) are called and the handler
// is shared, also with the handlers running on any CPU; that needs `T: Sync` only.
#[cfg(CONFIG_KRETPROBES)]
unsafe impl<T: Sync> Sync for Kretprobe<T> {}

#[cfg(CONFIG_KRETPROBES)]
impl<T: KretprobeHandler> Kretprobe<T> {
    /// Creates an initialiser that initialises `handler` and registers a return probe at `point`.
    ///
    /// `maxactive` is how many calls of the function can be followed at once; [`None`] lets the
    /// kprobes core choose (`max(10, 2 * possible CPUs)`). Calls beyond it are counted in
    /// [`Kretprobe::nmissed`]. Values above `i32::MAX` fail with `EINVAL`. Initialisation fails
    /// with the C error code if the kprobes core refuses the probe; the handler is then dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroU32;
    /// use kernel::{c_str, kprobes::{Kretprobe, KretprobeHandler, KretprobeHit, ProbePoint, PtRegs}};
    ///
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KretprobeHandler for Nothing {
    ///     type Data = ();
    ///
    ///     fn return_handler(&self, _hit: &KretprobeHit, _regs: &PtRegs, _data: ()) {}
    /// }
    ///
    /// #[no_mangle]
    /// #[inline(never)]
    /// extern "C" fn rkprobes_doctest_kretprobe_new(x: usize) -> usize {
    ///     core::hint::black_box(x)
    /// }
    ///
    /// let point = ProbePoint::symbol(c_str!("rkprobes_doctest_kretprobe_new"));
    /// let too_many = NonZeroU32::new(u32::MAX);
    /// let result = KBox::pin_init(Kretprobe::new(point, too_many, Nothing), GFP_KERNEL);
    /// assert_eq!(result.err(), Some(EINVAL));
    /// let probe = KBox::pin_init(Kretprobe::new(point, NonZeroU32::new(20), Nothing), GFP_KERNEL)?;
    /// assert!(probe.is_enabled());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn new(
        point: ProbePoint,
        maxactive: Option<NonZeroU32>,
        handler: impl PinInit<T, Error>,
    ) -> impl PinInit<Self, Error> {
        Self::with_state(point, maxactive, handler, State::Enabled)
    }

    /// Like [`Kretprobe::new`], but the probe starts disabled: no handler runs until
    /// [`Kretprobe::enable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{Kretprobe, KretprobeHandler, KretprobeHit, ProbePoint, PtRegs};
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
    /// #[vtable]
    /// impl KretprobeHandler for Returns {
    ///     type Data = ();
    ///
    ///     fn return_handler(&self, _hit: &KretprobeHit, _regs: &PtRegs, _data: ()) {
    ///         self.0.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let init = Kretprobe::new_disabled(point, None, Returns(AtomicUsize::new(0)));
    /// let probe = KBox::pin_init(init, GFP_KERNEL)?;
    /// let disabled = !probe.is_enabled();
    /// probed(1);
    /// let while_disabled = probe.handler().0.load(Ordering::Relaxed);
    /// probe.enable()?;
    /// probed(2);
    /// probe.disable()?;
    /// probed(3);
    /// let returns = probe.handler().0.load(Ordering::Relaxed);
    /// drop(probe);
    /// assert!(disabled);
    /// assert_eq!((while_disabled, returns), (0, 1));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn new_disabled(
        point: ProbePoint,
        maxactive: Option<NonZeroU32>,
        handler: impl PinInit<T, Error>,
    ) -> impl PinInit<Self, Error> {
        Self::with_state(point, maxactive, handler, State::Disabled)
    }

    /// Registers an enabled return probe at `point` with `handler` in a new [`KBox`].
    ///
    /// See [`Kretprobe::new`] for `maxactive`.
    pub fn register(
        point: ProbePoint,
        maxactive: Option<NonZeroU32>,
        handler: impl PinInit<T, Error>,
    ) -> Result<Pin<KBox<Self>>> {
        KBox::pin_init(Self::new(point, maxactive, handler), GFP_KERNEL)
    }

    fn with_state(
        point: ProbePoint,
        maxactive: Option<NonZeroU32>,
        handler: impl PinInit<T, Error>,
        state: State,
    ) -> impl PinInit<Self, Error> {
        const {
            assert!(
                core::mem::size_of::<T::Data>() <= bindings::KRETPROBE_MAX_DATA_SIZE as usize,
                "KretprobeHandler::Data is larger than KRETPROBE_MAX_DATA_SIZE"
            )
        };
        build_assert!(
            T::HAS_ENTRY_HANDLER || Self::data_is_unit(),
            "a KretprobeHandler without entry_handler must have Data = ()"
        );
        let entry_handler: bindings::kretprobe_handler_t = if T::HAS_ENTRY_HANDLER {
            Some(Self::entry_callback)
        } else {
            None
        };
        let data_size = if T::HAS_ENTRY_HANDLER {
            core::mem::size_of::<T::Data>()
        } else {
            0
        };
        let register = move |rp: *mut bindings::kretprobe| {
            let maxactive = match maxactive {
                None => 0,
                Some(n) => c_int::try_from(n.get()).map_err(|_| EINVAL)?,
            };
            // SAFETY: `rp` is valid for writes and not registered yet (`register_in_place`); a
            // zeroed `struct kretprobe` is valid, and its `kp` is written by `write_to`.
            unsafe {
                rp.write(MaybeUninit::<bindings::kretprobe>::zeroed().assume_init());
                point.write_to(addr_of_mut!((*rp).kp), None, None, state);
                (*rp).handler = Some(Self::return_callback);
                (*rp).entry_handler = entry_handler;
                (*rp).maxactive = maxactive;
                (*rp).data_size = data_size;
            }
            // SAFETY: `rp` is a fully initialised `struct kretprobe` that does not move; its
            // handlers are the callbacks of this `Kretprobe<T>`.
            to_result(unsafe { bindings::register_kretprobe(rp) })
        };
        // SAFETY: `rp` is a field of a pinned `Kretprobe<T>` that is initialised after the
        // handler (below), so the callbacks find the handler there once the probe is registered;
        // `rp` is written before it is registered and a failed registration frees what it
        // allocated and keeps no reference to it.
        let rp = unsafe { register_in_place(register) };
        // The handler is initialised first: the probe may fire as soon as it is registered.
        try_pin_init!(Self {
            handler <- handler,
            rp <- rp,
        }? Error)
    }

    /// Whether `T::Data` is `()`, the only value a return handler can get without an entry
    /// handler.
    fn data_is_unit() -> bool {
        core::any::TypeId::of::<T::Data>() == core::any::TypeId::of::<()>()
    }

    /// The value for a return handler when there is no entry handler: `()` as `T::Data`.
    fn unit_data() -> Option<T::Data> {
        let unit: &dyn core::any::Any = &();
        // A ZST read from a valid reference to a value of its own type.
        unit.downcast_ref::<T::Data>()
            // SAFETY: `downcast_ref` succeeded, so `T::Data` is `()`, which is `Copy`.
            .map(|data| unsafe { ptr::read(data) })
    }

    /// Returns the [`Kretprobe`] of instance `ri`, or [`None`] if it is being unregistered.
    ///
    /// On the architectures whose instances outlive their probe (no rethook), the instance's
    /// probe pointer is cleared when unregistration starts, also while one of its handlers is
    /// about to run on another CPU.
    ///
    /// # Safety
    ///
    /// `ri` must be an instance of a `Kretprobe<T>`, in one of its handlers, valid for `'a`.
    unsafe fn from_instance<'a>(ri: *mut bindings::kretprobe_instance) -> Option<&'a Self> {
        // SAFETY: Within a handler the instance is valid; it refers to its kretprobe or NULL.
        let rp = unsafe { bindings::get_kretprobe(ri) };
        if rp.is_null() {
            return None;
        }
        // SAFETY: a non-NULL `rp` is the `rp` field of a `Kretprobe<T>` (`Opaque<kretprobe>` has
        // the layout of `kretprobe`), at `offset_of!(Self, rp)` from its start, and unregistering
        // waits for running handlers before the `Kretprobe<T>` goes away.
        Some(unsafe { &*rp.cast::<u8>().sub(offset_of!(Self, rp)).cast::<Self>() })
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
        // SAFETY: By the caller's guarantee `ri` belongs to a `Kretprobe<T>`.
        let Some(probe) = (unsafe { Self::from_instance(ri) }) else {
            // Going away: follow no call.
            return 1;
        };
        // SAFETY: `regs` is valid for the call.
        let regs = unsafe { PtRegs::from_raw(regs) };
        match probe.handler.entry_handler(probe.hit(), regs) {
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
    /// `ri` must be an instance of a registered `Kretprobe<T>` whose entry handler, if it has
    /// one, returned 0; `regs` must be valid for the call.
    unsafe extern "C" fn return_callback(
        ri: *mut bindings::kretprobe_instance,
        regs: *mut bindings::pt_regs,
    ) -> c_int {
        let data = if T::HAS_ENTRY_HANDLER {
            // SAFETY: C calls the return handler only for instances whose entry handler returned
            // 0, which wrote a `T::Data` there; it is moved out once, as C recycles the instance
            // next.
            unsafe { Self::instance_data(ri).read_unaligned() }
        } else {
            match Self::unit_data() {
                Some(data) => data,
                // Ruled out at build time by `with_state`.
                None => return 0,
            }
        };
        // SAFETY: By the caller's guarantee `ri` belongs to a `Kretprobe<T>`.
        let Some(probe) = (unsafe { Self::from_instance(ri) }) else {
            // Going away: drop the value here, run no handler.
            drop(data);
            return 0;
        };
        // SAFETY: `regs` is valid for the call.
        let regs = unsafe { PtRegs::from_raw(regs) };
        probe.handler.return_handler(probe.hit(), regs, data);
        0
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
    pub fn handler(&self) -> &T {
        &self.handler
    }

    /// Returns what handlers see of this probe.
    fn hit(&self) -> &KretprobeHit {
        // SAFETY: `rp` is registered until `drop` starts, by the type invariant, and `self` is
        // borrowed for the lifetime of the result.
        unsafe { KretprobeHit::from_raw(self.rp.get()) }
    }

    /// Returns the address of the function entry the kprobes core resolved the probe point to.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::kprobes::{Kretprobe, KretprobeHandler, KretprobeHit, ProbePoint, PtRegs};
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
    /// #[vtable]
    /// impl KretprobeHandler for Nothing {
    ///     type Data = ();
    ///
    ///     fn return_handler(&self, _hit: &KretprobeHit, _regs: &PtRegs, _data: ()) {}
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
        self.hit().address()
    }

    /// Returns how many calls were not followed: beyond `maxactive`, or while a handler ran.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::{num::NonZeroU32, sync::atomic::{AtomicUsize, Ordering}};
    /// use kernel::kprobes::{Kretprobe, KretprobeHandler, KretprobeHit, ProbePoint, PtRegs};
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
    /// #[vtable]
    /// impl KretprobeHandler for Returns {
    ///     type Data = ();
    ///
    ///     fn return_handler(&self, _hit: &KretprobeHit, _regs: &PtRegs, _data: ()) {
    ///         self.0.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// // One instance: the two nested calls cannot be followed.
    /// let probe = Kretprobe::register(
    ///     ProbePoint::function(recurse as *const () as usize),
    ///     NonZeroU32::new(1),
    ///     Returns(AtomicUsize::new(0)),
    /// )?;
    /// recurse(2);
    /// let (returns, missed) = (probe.handler().0.load(Ordering::Relaxed), probe.nmissed());
    /// drop(probe);
    /// assert_eq!((returns, missed), (1, 2));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn nmissed(&self) -> usize {
        self.hit().nmissed()
    }

    /// Disables the probe: its handlers stop running until [`Kretprobe::enable`]. May sleep.
    ///
    /// Calls already entered still get their return handler.
    pub fn disable(&self) -> Result {
        self.hit().kprobe().set_enabled(false)
    }

    /// Enables the probe again after [`Kretprobe::disable`]. May sleep.
    pub fn enable(&self) -> Result {
        self.hit().kprobe().set_enabled(true)
    }

    /// Returns whether the probe is enabled (neither disabled nor gone with its module text).
    pub fn is_enabled(&self) -> bool {
        self.hit().kprobe().is_enabled()
    }
}

#[cfg(CONFIG_KRETPROBES)]
#[pinned_drop]
impl<T> PinnedDrop for Kretprobe<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `rp` is registered by the type invariant. Unregistering waits until no handler
        // runs and detaches the instances still out, so afterwards C no longer calls our handlers
        // or refers to `rp` through them; the handler is dropped next.
        unsafe { bindings::unregister_kretprobe(self.rp.get()) };
    }
}

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

use crate::{init::pin_init_from_closure, prelude::*, types::Opaque};

mod batch;
mod hit;
mod kprobe;
#[cfg(CONFIG_KRETPROBES)]
mod kretprobe;
mod point;

pub use batch::{BatchedKprobe, KprobeBatch};
#[cfg(CONFIG_KRETPROBES)]
pub use hit::KretprobeHit;
pub use hit::{KprobeHit, Missed, PtRegs};
pub use kprobe::{Kprobe, KprobeHandler};
#[cfg(CONFIG_KRETPROBES)]
pub use kretprobe::{Kretprobe, KretprobeHandler, KretprobeOptions};
pub use point::{function_entry, ProbePoint};

use point::State;

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

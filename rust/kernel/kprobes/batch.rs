// SPDX-License-Identifier: GPL-2.0

//! Many kprobes with one handler, registered and unregistered by one call each:
//! [`KprobeBatch`].
//!
//! Constraints: as for [`Kprobe`](super::Kprobe): the callbacks run in atomic context; building
//! and dropping a batch may sleep.

use super::{kprobe::handlers, KprobeHandler, KprobeHit, ProbePoint, PtRegs, State};
use crate::{
    bindings,
    error::to_result,
    ffi::{c_int, c_ulong},
    prelude::*,
    types::Opaque,
};

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

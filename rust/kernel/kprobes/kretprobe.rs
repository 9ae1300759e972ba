// SPDX-License-Identifier: GPL-2.0

//! A return probe with typed handlers and per-call data: [`KretprobeHandler`] and
//! [`Kretprobe`] (`CONFIG_KRETPROBES`).
//!
//! Constraints: the C callbacks here run in atomic context (at function entry and return) and
//! only reach the handler; registering, enabling, disabling and dropping may sleep.

use super::{register_in_place, KretprobeHit, Missed, ProbePoint, PtRegs, State};
use crate::{
    bindings,
    error::{to_result, VTABLE_DEFAULT_ERROR},
    ffi::c_int,
    prelude::*,
    types::Opaque,
};
use core::{
    mem::{offset_of, MaybeUninit},
    num::NonZeroU32,
    ptr::{self, addr_of_mut},
};

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
/// How a [`Kretprobe`] is registered beyond its point and handler: a builder for
/// [`Kretprobe::with_options`].
///
/// The default: `maxactive` chosen by the kprobes core (`max(10, 2 * possible CPUs)`), a fixed
/// instance pool, enabled.
#[derive(Clone, Copy)]
pub struct KretprobeOptions {
    maxactive: Option<NonZeroU32>,
    grow_max: Option<NonZeroU32>,
    state: State,
}

impl Default for KretprobeOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl KretprobeOptions {
    /// The default options.
    pub const fn new() -> Self {
        Self {
            maxactive: None,
            grow_max: None,
            state: State::Enabled,
        }
    }

    /// Follows up to `n` calls of the function at once (`maxactive`); values above `i32::MAX`
    /// fail with `EINVAL`.
    pub const fn maxactive(self, n: NonZeroU32) -> Self {
        Self {
            maxactive: Some(n),
            ..self
        }
    }

    /// Lets the instance pool grow up to `cap` instances instead of missing calls
    /// (`struct kretprobe`'s `grow_max`; a cap at most `maxactive` keeps the pool fixed).
    ///
    /// With the Rust kprobes core, when the free instances run low a worker adds pools in chunks
    /// (never the probe hit itself); the calls that found the pool empty before it did are
    /// still missed. The C core ignores the option and keeps `maxactive` instances.
    pub const fn grow_to(self, cap: NonZeroU32) -> Self {
        Self {
            grow_max: Some(cap),
            ..self
        }
    }

    /// Registers the probe disabled, as [`Kretprobe::new_disabled`].
    pub const fn disabled(self) -> Self {
        Self {
            state: State::Disabled,
            ..self
        }
    }
}

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
unsafe impl<T: Send> Send for Kretprobe<T> {}

// SAFETY: Through `&Kretprobe` the C functions (which lock internally) are called and the handler
// is shared, also with the handlers running on any CPU; that needs `T: Sync` only.
unsafe impl<T: Sync> Sync for Kretprobe<T> {}

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
        let options = KretprobeOptions {
            maxactive,
            grow_max: None,
            state,
        };
        Self::with_options(point, options, handler)
    }

    /// Creates an initialiser that initialises `handler` and registers a return probe at `point`
    /// with `options` ([`KretprobeOptions`]: `maxactive`, a growing pool, disabled).
    ///
    /// Fails as [`Kretprobe::new`] does; with the Rust core also with `EINVAL` for a growth cap
    /// larger than one instance pool can hold (2^24).
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroU32;
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::kprobes::{
    ///     Kretprobe, KretprobeHandler, KretprobeHit, KretprobeOptions, ProbePoint, PtRegs,
    /// };
    ///
    /// #[inline(never)]
    /// extern "C" fn probed(x: usize) -> usize {
    ///     // Opaque to the optimiser, so every call really happens.
    ///     core::hint::black_box(x).wrapping_add(1)
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
    /// // One instance to start with; the Rust core adds pools up to 64 instances when calls
    /// // in flight use them up (the C core keeps the one instance).
    /// let options = KretprobeOptions::new()
    ///     .maxactive(NonZeroU32::MIN)
    ///     .grow_to(NonZeroU32::new(64).unwrap());
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = KBox::pin_init(
    ///     Kretprobe::with_options(point, options, Returns(AtomicUsize::new(0))),
    ///     GFP_KERNEL,
    /// )?;
    /// probed(1);
    /// probed(2);
    /// assert_eq!(probe.handler().0.load(Ordering::Relaxed), 2);
    /// assert_eq!(probe.nmissed(), 0);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn with_options(
        point: ProbePoint,
        options: KretprobeOptions,
        handler: impl PinInit<T, Error>,
    ) -> impl PinInit<Self, Error> {
        let KretprobeOptions {
            maxactive,
            grow_max,
            state,
        } = options;
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
            let grow_max = match grow_max {
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
                (*rp).grow_max = grow_max;
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

    /// Returns the probe's misses by cause: calls beyond `maxactive`, and hits while a handler
    /// ran.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroU32;
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
    /// struct Nothing;
    ///
    /// #[vtable]
    /// impl KretprobeHandler for Nothing {
    ///     type Data = ();
    ///
    ///     fn return_handler(&self, _hit: &KretprobeHit, _regs: &PtRegs, _data: ()) {}
    /// }
    ///
    /// // Two instances, four calls in flight: the two innermost are not followed.
    /// let probe = Kretprobe::register(
    ///     ProbePoint::function(recurse as *const () as usize),
    ///     NonZeroU32::new(2),
    ///     Nothing,
    /// )?;
    /// recurse(3);
    /// let (missed, nmissed) = (probe.missed(), probe.nmissed());
    /// drop(probe);
    /// assert_eq!((missed.recursion(), missed.no_instance(), missed.total()), (0, 2, 2));
    /// assert_eq!(missed.total(), nmissed);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn missed(&self) -> Missed {
        self.hit().missed()
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

#[pinned_drop]
impl<T> PinnedDrop for Kretprobe<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `rp` is registered by the type invariant. Unregistering waits until no handler
        // runs and detaches the instances still out, so afterwards C no longer calls our handlers
        // or refers to `rp` through them; the handler is dropped next.
        unsafe { bindings::unregister_kretprobe(self.rp.get()) };
    }
}

// SPDX-License-Identifier: GPL-2.0

//! A kprobe with typed handlers: [`KprobeHandler`] and [`Kprobe`].
//!
//! Constraints: the C callbacks here run in the probe's atomic context and only reach the
//! handler; registering, enabling, disabling and dropping may sleep.

use super::{register_in_place, KprobeHit, Missed, ProbePoint, PtRegs, State};
use crate::{
    bindings,
    error::{to_result, VTABLE_DEFAULT_ERROR},
    ffi::{c_int, c_ulong},
    prelude::*,
    types::Opaque,
};
use core::mem::offset_of;

/// The handlers of a [`Kprobe`].
///
/// Implement the handlers the probe needs, with `#[vtable]`; a handler that is not implemented is
/// not installed in the C structure at all. Without a post handler the kprobes core may optimise
/// the probe into a jump (on x86), which makes hits cheaper.
///
/// Handlers run in atomic context and must not sleep; see the [module documentation](super) for
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
pub(super) fn handlers<T: KprobeHandler>(
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

    /// Returns the probe's misses by cause; for a kprobe every miss is a recursion.
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
    ///     x.count_ones() as usize
    /// }
    ///
    /// struct CallsItself;
    ///
    /// #[vtable]
    /// impl KprobeHandler for CallsItself {
    ///     fn pre_handler(&self, _hit: &KprobeHit, _regs: &PtRegs) {
    ///         // Hits the probe again, from inside its handler, twice: two misses.
    ///         probed(1);
    ///         probed(2);
    ///     }
    /// }
    ///
    /// let point = ProbePoint::function(probed as *const () as usize);
    /// let probe = Kprobe::register(point, CallsItself)?;
    /// probed(7);
    /// let (missed, nmissed) = (probe.missed(), probe.nmissed());
    /// drop(probe);
    /// assert_eq!((missed.recursion(), missed.no_instance(), missed.total()), (2, 0, 2));
    /// assert_eq!(missed.total(), nmissed);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn missed(&self) -> Missed {
        self.hit().missed()
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

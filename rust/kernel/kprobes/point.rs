// SPDX-License-Identifier: GPL-2.0

//! Where a probe goes: [`ProbePoint`], and how it is written into a `struct kprobe`.

use crate::{bindings, prelude::*};
use core::{mem::MaybeUninit, ptr};

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
    pub(super) unsafe fn write_to(
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
pub(super) enum State {
    Enabled,
    Disabled,
}

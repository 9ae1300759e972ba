// SPDX-License-Identifier: GPL-2.0

//! Kernel errno values as returned by `kernel/kprobes.c`.
//!
//! Constraints: `no_std`, no allocation, does not name the `kernel` crate; the kernel glue maps
//! [`Errno`] 1:1 onto `kernel::error::Error` (both hold the positive errno), and C callers see
//! exactly the negative value C's kprobes would return.
//!
//! Only the values the core can return (or pass up from the arch and kernel services) are named
//! here; any other errno from a service is carried unchanged through [`Errno::from_neg`].

/// A kernel error number, stored positive (`EINVAL` is 22); C sees its negation.
///
/// # Invariants
///
/// The value is in `1..=MAX_ERRNO` (4095), like the kernel's `IS_ERR_VALUE` range.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Errno(u16);

/// Largest errno value, as in `include/linux/err.h`.
pub const MAX_ERRNO: i32 = 4095;

/// Result type of the core: `Ok` or a kernel errno.
pub type Result<T = ()> = core::result::Result<T, Errno>;

impl Errno {
    /// No such file or directory (`-ENOENT`): unknown symbol, failed lookup, module going.
    pub const ENOENT: Errno = Errno(2);
    /// Out of memory (`-ENOMEM`).
    pub const ENOMEM: Errno = Errno(12);
    /// Device or resource busy (`-EBUSY`).
    pub const EBUSY: Errno = Errno(16);
    /// File exists (`-EEXIST`).
    pub const EEXIST: Errno = Errno(17);
    /// No such device (`-ENODEV`): kprobes-on-ftrace requested without `KPROBES_ON_FTRACE`.
    pub const ENODEV: Errno = Errno(19);
    /// Invalid argument (`-EINVAL`).
    pub const EINVAL: Errno = Errno(22);
    /// No space left on device (`-ENOSPC`).
    pub const ENOSPC: Errno = Errno(28);
    /// Result out of range (`-ERANGE`): end of a kallsyms enumeration.
    pub const ERANGE: Errno = Errno(34);
    /// Illegal byte sequence (`-EILSEQ`): not on an instruction boundary.
    pub const EILSEQ: Errno = Errno(84);
    /// Argument list too long (`-E2BIG`): kretprobe `data_size` above 4096.
    pub const E2BIG: Errno = Errno(7);
    /// Operation not supported (`-EOPNOTSUPP`).
    pub const EOPNOTSUPP: Errno = Errno(95);

    /// Builds an errno from a negative C return value; `None` for 0, positive or out-of-range.
    pub const fn from_neg(ret: i32) -> Option<Errno> {
        if ret < 0 && ret >= -MAX_ERRNO {
            // INVARIANT: `-ret` is in `1..=MAX_ERRNO`, which fits `u16`.
            Some(Errno((-ret) as u16))
        } else {
            None
        }
    }

    /// The positive errno value (what `kernel::error::Error` stores).
    pub const fn to_errno(self) -> i32 {
        self.0 as i32
    }

    /// The negative value a C function returns for this error.
    pub const fn to_neg(self) -> i32 {
        -(self.0 as i32)
    }
}

/// Converts a C-style return value (0 or a negative errno) into a [`Result`].
///
/// A positive value counts as success, as every kprobes caller treats `ret < 0` as the error; a
/// negative value outside the errno range (a broken callee) becomes `-EINVAL`.
pub const fn from_c_ret(ret: i32) -> Result {
    if ret >= 0 {
        return Ok(());
    }
    match Errno::from_neg(ret) {
        Some(e) => Err(e),
        None => Err(Errno::EINVAL),
    }
}

/// Converts a [`Result`] into the C return convention (0 or a negative errno).
pub const fn to_c_ret(r: Result) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_neg(),
    }
}

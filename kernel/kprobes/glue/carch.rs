// SPDX-License-Identifier: GPL-2.0

//! `CArch`: the arch hooks of the Rust core implemented by upstream's C arch code.
//!
//! Constraints: built when the arch stays C (`CONFIG_KPROBES_RUST_ARCH` unset); each hook calls
//! the `arch_*` function of `arch/<arch>/kernel/kprobes*.c` (or its `__weak` default in
//! `kprobes_helpers.c`) on the `struct kprobe` behind the handle, under the locks the core holds
//! as the contract of [`ArchHooks`] says.

use core::mem::MaybeUninit;
#[cfg(CONFIG_OPTPROBES)]
use core::ptr::addr_of_mut;

use kernel::bindings;

// The helpers some arches need: the optimizer's list hooks, a non-x86 `arch_prepared_optinsn`,
// loongarch's `flush_insn_slot`.
use super::blacklist::{c_in_kretprobe_blacklist, c_init_kretprobe_blacklist};
#[cfg(CONFIG_OPTPROBES)]
use super::handle::to_op;
use super::handle::{Kernel, Kp};
#[cfg(any(
    CONFIG_OPTPROBES,
    not(any(CONFIG_X86, CONFIG_ARM64, CONFIG_RISCV, CONFIG_PPC, CONFIG_S390))
))]
use super::helpers::*;
use super::insn_slot::c_init_optinsn_slots;
use super::text::c_name;
use crate::arch::ArchHooks;
use crate::errno::{from_c_ret, Result};
#[cfg(CONFIG_OPTPROBES)]
use crate::store::Aggr;

/// Upstream's C arch code, called through its `arch_*` functions.
pub struct CArch;

impl ArchHooks<Kernel> for CArch {
    const OPTPROBES: bool = cfg!(CONFIG_OPTPROBES);
    const KPROBES_ON_FTRACE: bool = cfg!(CONFIG_KPROBES_ON_FTRACE);
    const OPCODE_SIZE: usize = core::mem::size_of::<bindings::kprobe_opcode_t>();
    #[cfg(all(CONFIG_OPTPROBES, not(CONFIG_PPC)))]
    const MAX_OPTIMIZED_LENGTH: usize = bindings::MAX_OPTIMIZED_LENGTH as usize;
    // powerpc defines it as `sizeof(kprobe_opcode_t)`, which bindgen does not evaluate.
    #[cfg(all(CONFIG_OPTPROBES, CONFIG_PPC))]
    const MAX_OPTIMIZED_LENGTH: usize = Self::OPCODE_SIZE;
    #[cfg(not(CONFIG_OPTPROBES))]
    const MAX_OPTIMIZED_LENGTH: usize = 0;

    fn prepare_kprobe(_s: &Kernel, p: Kp) -> Result {
        // SAFETY: `p` live; text_mutex and cpus_read_lock held by the core.
        from_c_ret(unsafe { bindings::arch_prepare_kprobe(p.as_ptr()) })
    }
    fn arm_kprobe(_s: &Kernel, p: Kp) {
        // SAFETY: `p` prepared; text_mutex and cpus_read_lock held.
        unsafe { bindings::arch_arm_kprobe(p.as_ptr()) };
    }
    fn disarm_kprobe(_s: &Kernel, p: Kp) {
        // SAFETY: `p` armed; text_mutex and cpus_read_lock held.
        unsafe { bindings::arch_disarm_kprobe(p.as_ptr()) };
    }
    fn remove_kprobe(_s: &Kernel, p: Kp) {
        // SAFETY: `p` prepared and no longer reachable by new hits.
        unsafe { bindings::arch_remove_kprobe(p.as_ptr()) };
    }
    fn trampoline_kprobe(_s: &Kernel, p: Kp) -> bool {
        // SAFETY: `p` live.
        unsafe { bindings::arch_trampoline_kprobe(p.as_ptr()) != 0 }
    }
    // C's `__ref` (`.ref.text`, never inlined): runs only at init and calls an `__init`
    // function, which modpost accepts from this section and not from `.text`.
    #[inline(never)]
    #[link_section = ".ref.text"]
    fn init_kprobes(_s: &Kernel) -> Result {
        // SAFETY: called once from init_kprobes(), without kprobe_mutex (it may register).
        from_c_ret(unsafe { bindings::arch_init_kprobes() })
    }

    #[cfg(CONFIG_OPTPROBES)]
    fn prepared_optinsn(_s: &Kernel, ap: Aggr<Kp>) -> bool {
        // SAFETY: `ap` is an optimized_kprobe; only the address of its `optinsn` is formed.
        let optinsn = unsafe { addr_of_mut!((*to_op(ap)).optinsn) };
        // x86's arch_prepared_optinsn() is the static inline `return optinsn->size;`.
        #[cfg(CONFIG_X86)]
        // SAFETY: `optinsn` is live with `ap`; `size` is only written under kprobe_mutex, held.
        let prepared = unsafe { (*optinsn).size } as core::ffi::c_int != 0;
        #[cfg(not(CONFIG_X86))]
        // SAFETY: as above; the arch hook only reads it.
        let prepared = unsafe { arch_prepared_optinsn(optinsn) } != 0;
        prepared
    }
    #[cfg(CONFIG_OPTPROBES)]
    fn check_optimized_kprobe(_s: &Kernel, ap: Aggr<Kp>) -> Result {
        // SAFETY: `ap` is an optimized_kprobe; kprobe_mutex held.
        from_c_ret(unsafe { bindings::arch_check_optimized_kprobe(to_op(ap)) })
    }
    #[cfg(CONFIG_OPTPROBES)]
    fn prepare_optimized_kprobe(_s: &Kernel, ap: Aggr<Kp>, orig: Kp) {
        // SAFETY: as above; text locks held.
        unsafe { bindings::arch_prepare_optimized_kprobe(to_op(ap), orig.as_ptr()) };
    }
    #[cfg(CONFIG_OPTPROBES)]
    fn remove_optimized_kprobe(_s: &Kernel, ap: Aggr<Kp>) {
        // SAFETY: `ap` is an optimized_kprobe.
        unsafe { bindings::arch_remove_optimized_kprobe(to_op(ap)) };
    }
    fn optimize_kprobes(_s: &Kernel) {
        #[cfg(CONFIG_OPTPROBES)]
        // SAFETY: kprobe_mutex, cpus_read_lock and text_mutex held by the optimizer.
        unsafe {
            rkp_arch_optimize_kprobes()
        };
    }
    fn unoptimize_kprobes(_s: &Kernel) {
        #[cfg(CONFIG_OPTPROBES)]
        // SAFETY: as above.
        unsafe {
            rkp_arch_unoptimize_kprobes()
        };
    }
    #[cfg(CONFIG_OPTPROBES)]
    fn unoptimize_kprobe(_s: &Kernel, ap: Aggr<Kp>) {
        // SAFETY: `ap` is an optimized_kprobe; text locks held.
        unsafe { bindings::arch_unoptimize_kprobe(to_op(ap)) };
    }
    #[cfg(CONFIG_OPTPROBES)]
    fn within_optimized_kprobe(_s: &Kernel, ap: Aggr<Kp>, addr: usize) -> bool {
        // SAFETY: `ap` is an optimized_kprobe; the arch only compares addresses.
        unsafe { bindings::arch_within_optimized_kprobe(to_op(ap), addr as *mut _) != 0 }
    }

    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    fn prepare_kprobe_ftrace(_s: &Kernel, p: Kp) -> Result {
        // SAFETY: `p` live; text locks held.
        from_c_ret(unsafe { bindings::arch_prepare_kprobe_ftrace(p.as_ptr()) })
    }
    fn flush_insn_slot(_s: &Kernel, p: Kp) {
        // An empty macro on these arches; a cache flush elsewhere (loongarch).
        #[cfg(not(any(CONFIG_X86, CONFIG_ARM64, CONFIG_RISCV, CONFIG_PPC, CONFIG_S390)))]
        // SAFETY: `p` live.
        unsafe {
            rkp_flush_insn_slot(p.as_ptr())
        };
        #[cfg(any(CONFIG_X86, CONFIG_ARM64, CONFIG_RISCV, CONFIG_PPC, CONFIG_S390))]
        let _ = p;
    }
    fn lookup_name(_s: &Kernel, name: &[u8], offset: usize) -> usize {
        let mut buf = MaybeUninit::uninit();
        let Some(c) = c_name(name, &mut buf) else {
            return 0;
        };
        // SAFETY: NUL-terminated string; the arch (or weak default) may be overridden.
        unsafe { bindings::kprobe_lookup_name(c.as_ptr().cast(), offset as _) as usize }
    }
    fn adjust_kprobe_addr(_s: &Kernel, addr: usize, offset: usize) -> Option<(usize, bool)> {
        let mut on_func_entry = false;
        // SAFETY: out-pointer to a local.
        let a = unsafe {
            bindings::arch_adjust_kprobe_addr(addr as _, offset as _, &mut on_func_entry)
        };
        (!a.is_null()).then_some((a as usize, on_func_entry))
    }
    fn within_kprobe_blacklist(_s: &Kernel, addr: usize) -> bool {
        // SAFETY: pure address query (arch override or weak default).
        unsafe { bindings::arch_within_kprobe_blacklist(addr as _) }
    }
    // `__ref`, as `init_kprobes` above.
    #[inline(never)]
    #[link_section = ".ref.text"]
    fn populate_kprobe_blacklist(
        _s: &Kernel,
        _add_area: impl FnMut(usize, usize) -> Result,
    ) -> Result {
        // The C arch code adds its areas through the exported kprobe_add_area_blacklist().
        // SAFETY: called once at init.
        from_c_ret(unsafe { bindings::arch_populate_kprobe_blacklist() })
    }
    fn init_kretprobe_blacklist(_s: &Kernel) {
        c_init_kretprobe_blacklist();
    }
    fn init_optinsn_slots(_s: &Kernel) {
        c_init_optinsn_slots();
    }
    fn in_kretprobe_blacklist(_s: &Kernel, addr: usize) -> bool {
        c_in_kretprobe_blacklist(addr)
    }
}

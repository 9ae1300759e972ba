// SPDX-License-Identifier: GPL-2.0

//! The riscv kprobes arch layer in Rust (`CONFIG_KPROBES_RUST_ARCH`): what upstream's
//! `arch/riscv/kernel/probes/kprobes.c` provides, and the kprobes side of `decode-insn.c` and
//! `simulate-insn.c`, on the pure decisions and simulators of [`crate::riscv`] and the core's
//! generic hit-path state machine ([`crate::hit`]).
//!
//! Constraints: mounted in the kprobes crate after [`crate::glue`], whose probe handles and
//! kernel services it uses. The hooks of [`Riscv`] run under the locks [`ArchHooks`] documents.
//! The C-linkage entry points (`kprobe_breakpoint_handler` and `kprobe_single_step_handler`,
//! called by `handle_break()` for an `ebreak` in the kernel; `kprobe_fault_handler`, called by
//! `kprobe_page_fault()`; the `rkp_riscv_simulate_*` simulators) run in trap context with
//! interrupts off: they and everything they reach are in `.kprobes.text` (`nokprobe!`) or
//! inlined into it, never allocate, never sleep and contain no panic path. What must be C is
//! in `rust_glue.c`: the per-CPU state and wrappers of macros and linker symbols. `rethook.c`
//! (kretprobes) stays C; upstream's `decode-insn.c` and `simulate-insn.c` are still built for
//! uprobes where `CONFIG_UPROBES` is set, and kprobes no longer call them.
//!
//! Design: [`Cpu`] is this CPU's `kprobe_ctlblk` and `current_kprobe`, and implements
//! [`HitArch`] with riscv's stepping: the probed instruction (2 or 4 bytes) runs from a slot
//! followed by `ebreak`, with `SR_SPIE` cleared so that no interrupt comes in between, or is
//! simulated when it reads or changes the PC. The state machine is upstream's (a hit during
//! another probe's step cannot nest: BUG), with one later fix beside the refusal of probes in
//! these handlers (they are `.kprobes.text`): a fault is the probed instruction's only when the
//! slot raised it. A fault in a handler is fixed up as upstream does (`fixup_exception()`), and
//! a removed probe's slot goes back to the cache (upstream 6.12's `arch_remove_kprobe()` is
//! empty: every stepped probe leaked its slot).

use core::ffi::{c_int, c_uint, c_void};
use core::mem::{offset_of, size_of};
use core::ptr;

use kernel::bindings;
use kernel::ffi::c_ulong;

use crate::arch::ArchHooks;
use crate::errno::{Errno, Result};
use crate::glue::blacklist::{c_in_kretprobe_blacklist, c_init_kretprobe_blacklist};
use crate::glue::handle::{Kernel, Kp, KERNEL};
use crate::glue::hitcpu::{CpuState, TrapRegs};
use crate::glue::insn_slot::c_init_optinsn_slots;
use crate::glue::insn_slot::slots;
use crate::hit::{self, HitArch, Skip};
use crate::riscv::{self as dec, insn::insn_length, Prepared, Simulator};
use crate::store::ProbeStore;
use crate::table;
use crate::text::KernelText as _;

/// `SR_SPIE`: the interrupt enable `sret` restores (checked against C in `rust_glue.c`).
const SR_SPIE: c_ulong = 0x20;

// x1..x31 follow `epc` in `struct pt_regs`, as the simulators' register numbers index them.
const _: () = assert!(offset_of!(bindings::pt_regs, ra) == size_of::<c_ulong>());
const _: () = assert!(offset_of!(bindings::pt_regs, t6) == 31 * size_of::<c_ulong>());

/// `p->ainsn.api`.
#[inline(always)]
fn api(p: Kp) -> *mut bindings::arch_probe_insn {
    // SAFETY: `p` is live; only the field's address is formed.
    unsafe { ptr::addr_of_mut!((*p.as_ptr()).ainsn.api) }
}

/// The slot of `p` (`p->ainsn.api.insn`), NULL for a simulated instruction.
#[inline(always)]
fn slot(p: Kp) -> *mut u32 {
    // SAFETY: `p` is live; a raw place read of a field only the registration writes.
    unsafe { (*api(p)).insn }
}

/// The length of `p`'s instruction in bytes (`GET_INSN_LENGTH(p->opcode)`).
#[inline(always)]
fn opcode_len(p: Kp) -> usize {
    // SAFETY: `p` is live; `opcode` is only written by the registration.
    insn_length(unsafe { (*p.as_ptr()).opcode }) as usize
}

/// Reads the 16-bit parcel at `addr` (`*(u16 *)addr`), `None` if it cannot be read.
fn read_u16(addr: usize) -> Option<u16> {
    let mut parcel = [0u8; 2];
    // SAFETY: `parcel` is valid for 2 bytes of writes; the nofault copy checks the source.
    let ret = unsafe {
        bindings::copy_from_kernel_nofault(parcel.as_mut_ptr().cast(), addr as *const c_void, 2)
    };
    (ret == 0).then(|| u16::from_le_bytes(parcel))
}

/// What the decisions read from the running kernel, for probes being prepared under
/// `kprobe_mutex`.
struct Text<'k>(&'k Kernel);

impl dec::KernelText for Text<'_> {
    fn read_u16(&self, addr: u64) -> Option<u16> {
        read_u16(addr as usize)
    }
    fn lookup_offset(&self, addr: u64) -> Option<u64> {
        self.0
            .kallsyms_lookup_size_offset(addr as usize)
            .map(|(_, offset)| offset as u64)
    }
}

/// `patch_text(addr, &insn, len)`: writes the first `len` bytes of `insn` over live text, with
/// every other CPU stopped (`stop_machine()`), and makes every CPU see them.
///
/// # Safety
///
/// `addr` is the start of an instruction of kernel text, `len` bytes long, that no one else
/// writes; `text_mutex` and `cpus_read_lock()` are held.
unsafe fn patch_text(addr: usize, mut insn: u32, len: usize) {
    // SAFETY: by the function's contract; `insn` holds the 2 or 4 bytes written.
    unsafe { bindings::patch_text(addr as *mut c_void, &mut insn, len.min(4)) };
}

/// This arch's fields of the trap frame.
impl TrapRegs {
    /// `*((unsigned long *)regs + n)`: register x`n`, `n` in 1..=31 (any other `n` is None).
    #[inline(always)]
    fn gpr(self, n: u32) -> Option<*mut c_ulong> {
        if !(1..=31).contains(&n) {
            return None;
        }
        // SAFETY: x1..x31 are the 31 `unsigned long`s after `epc` (asserted above), inside the
        // live frame (invariant); only the address is formed.
        Some(unsafe { self.as_ptr().cast::<c_ulong>().add(n as usize) })
    }
    /// `regs->epc`.
    #[inline(always)]
    fn pc(self) -> usize {
        // SAFETY: a live frame (invariant).
        unsafe { (*self.as_ptr()).epc }
    }
    /// `regs->epc = pc`.
    #[inline(always)]
    fn set_pc(self, pc: usize) {
        // SAFETY: as above; this handler owns the frame.
        unsafe { (*self.as_ptr()).epc = pc }
    }
    /// `regs->status`.
    #[inline(always)]
    fn status(self) -> c_ulong {
        // SAFETY: a live frame (invariant).
        unsafe { (*self.as_ptr()).status }
    }
    /// `regs->status = v`.
    #[inline(always)]
    fn set_status(self, v: c_ulong) {
        // SAFETY: as above; this handler owns the frame.
        unsafe { (*self.as_ptr()).status = v }
    }
}

/// The frame as the simulators see it.
struct SimFrame(TrapRegs);

impl dec::Regs for SimFrame {
    #[inline(always)]
    fn x(&self, n: u32) -> u64 {
        // SAFETY: a register of the live frame (`TrapRegs::gpr`).
        self.0.gpr(n).map_or(0, |r| unsafe { *r } as u64)
    }
    #[inline(always)]
    fn set_x(&mut self, n: u32, val: u64) {
        if let Some(r) = self.0.gpr(n) {
            // SAFETY: as above; this handler owns the frame.
            unsafe { *r = val as c_ulong };
        }
    }
    #[inline(always)]
    fn pc(&self) -> u64 {
        self.0.pc() as u64
    }
    #[inline(always)]
    fn set_pc(&mut self, val: u64) {
        self.0.set_pc(val as usize);
    }
}

/// The simulator handler, as `p->ainsn.api.handler` holds it.
type Handler = unsafe extern "C" fn(u32, c_ulong, *mut bindings::pt_regs) -> bool;

macro_rules! simulators {
    ($($(#[$m:meta])* $name:ident => $class:ident;)*) => {
        $(
            nokprobe! {
                $(#[$m])*
                ///
                /// # Safety
                ///
                /// `addr` is the probe's address, `opcode` its instruction and `regs` the frame
                /// of the `ebreak` that hit it.
                unsafe extern "C" fn $name(
                    opcode: u32,
                    addr: c_ulong,
                    regs: *mut bindings::pt_regs,
                ) -> bool {
                    // SAFETY: the ebreak's frame, ours until the handler returns (`# Safety`).
                    let mut frame = SimFrame(unsafe { TrapRegs::new(regs) });
                    dec::simulate(Simulator::$class, opcode, addr as u64, &mut frame)
                }
            }
        )*

        /// The handler of `simulator` (what `riscv_probe_decode_insn()` stores).
        fn handler(simulator: Simulator) -> Handler {
            match simulator {
                $(Simulator::$class => $name,)*
            }
        }
    };
}

simulators! {
    /// `simulate_jal()`.
    rkp_riscv_simulate_jal => Jal;
    /// `simulate_jalr()`.
    rkp_riscv_simulate_jalr => Jalr;
    /// `simulate_auipc()`.
    rkp_riscv_simulate_auipc => Auipc;
    /// `simulate_branch()`.
    rkp_riscv_simulate_branch => Branch;
    /// `simulate_c_j()`.
    rkp_riscv_simulate_c_j => CJ;
    /// `simulate_c_jr()`.
    rkp_riscv_simulate_c_jr => CJr;
    /// `simulate_c_jalr()`.
    rkp_riscv_simulate_c_jalr => CJalr;
    /// `simulate_c_bnez()`.
    rkp_riscv_simulate_c_bnez => CBnez;
    /// `simulate_c_beqz()`.
    rkp_riscv_simulate_c_beqz => CBeqz;
}

/// The riscv arch.
pub struct Riscv;

impl ArchHooks<Kernel> for Riscv {
    const OPTPROBES: bool = false;
    const KPROBES_ON_FTRACE: bool = false;
    const OPCODE_SIZE: usize = size_of::<bindings::kprobe_opcode_t>();
    const MAX_OPTIMIZED_LENGTH: usize = 0;

    fn prepare_kprobe(s: &Kernel, p: Kp) -> Result {
        let addr = s.addr(p);
        let prep = match dec::prepare_kprobe(&Text(s), addr as u64, cfg!(CONFIG_RISCV_ISA_C)) {
            Ok(prep) => prep,
            Err(e) => {
                if e == dec::errno::EINVAL {
                    // C copies the instruction before it decodes it.
                    let lo = read_u16(addr).map_or(0, u32::from);
                    let hi = if insn_length(lo) == 4 {
                        read_u16(addr.wrapping_add(2)).map_or(0, u32::from)
                    } else {
                        0
                    };
                    // SAFETY: `p` is being registered under kprobe_mutex; nobody else uses it.
                    unsafe { (*p.as_ptr()).opcode = lo | hi << 16 };
                }
                return Err(Errno::from_neg(e).unwrap_or(Errno::EINVAL));
            }
        };
        // SAFETY: as above.
        let api = unsafe { &mut *api(p) };
        match prep {
            Prepared::Simulate { opcode, simulator } => {
                // arch_prepare_simulate(): no slot, nothing to restore after the hit.
                api.insn = ptr::null_mut();
                api.handler = Some(handler(simulator));
                api.restore = 0;
                // SAFETY: as above.
                unsafe { (*p.as_ptr()).opcode = opcode };
            }
            Prepared::Step {
                opcode,
                len,
                slot,
                restore,
            } => {
                let insn = slots::get().cast::<u32>();
                if insn.is_null() {
                    return Err(Errno::ENOMEM);
                }
                // SAFETY: as above.
                unsafe { (*p.as_ptr()).opcode = opcode };
                api.insn = insn;
                api.restore = restore as c_ulong;
                // arch_prepare_ss_slot(): the instruction, then ebreak.
                let n = (len as usize).saturating_add(4).min(slot.len());
                // SAFETY: the slot was just taken, holds `dec::SLOT_BYTES` bytes and is not
                // reachable yet; `slot` holds `n` bytes.
                unsafe { bindings::patch_text_nosync(insn.cast(), slot.as_ptr().cast(), n) };
            }
        }
        Ok(())
    }

    fn arm_kprobe(s: &Kernel, p: Kp) {
        let len = opcode_len(p);
        let brk = if len == 4 {
            dec::BUG_INSN_32
        } else {
            dec::BUG_INSN_16
        };
        // SAFETY: `p`'s address is a prepared instruction of `len` bytes; text_mutex and
        // cpus_read_lock held by the core.
        unsafe { patch_text(s.addr(p), brk, len) };
    }

    fn disarm_kprobe(s: &Kernel, p: Kp) {
        // SAFETY: `p` is live; as for `arm_kprobe`.
        unsafe { patch_text(s.addr(p), (*p.as_ptr()).opcode, opcode_len(p)) };
    }

    fn remove_kprobe(_s: &Kernel, p: Kp) {
        // SAFETY: `p` is no longer reachable by new hits; nobody else uses `ainsn`.
        let api = unsafe { &mut *api(p) };
        if !api.insn.is_null() {
            // SAFETY: the slot came from the kprobe instruction cache and the probe is gone.
            unsafe { slots::free(api.insn.cast(), false) };
            api.insn = ptr::null_mut();
        }
    }

    fn trampoline_kprobe(_s: &Kernel, _p: Kp) -> bool {
        false
    }

    fn init_kprobes(_s: &Kernel) -> Result {
        Ok(())
    }

    fn populate_kprobe_blacklist(
        _s: &Kernel,
        mut add_area: impl FnMut(usize, usize) -> Result,
    ) -> Result {
        let (mut start, mut end) = (0, 0);
        // SAFETY: out-pointers to locals.
        unsafe { bindings::rkp_irqentry_text(&mut start, &mut end) };
        add_area(start, end)
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

/// This CPU's kprobe state (`kprobe_ctlblk` and `current_kprobe`), for the state machine.
struct Cpu {
    state: CpuState<bindings::kprobe_ctlblk>,
}

impl Cpu {
    /// This CPU's state.
    ///
    /// # Safety
    ///
    /// Preemption is disabled until the value is dropped.
    #[inline(always)]
    unsafe fn this() -> Self {
        Cpu {
            // SAFETY: the caller keeps preemption off (`# Safety`).
            state: unsafe { CpuState::this_cpu() },
        }
    }

    /// `kprobes_restore_local_irqflag()`: the status the step changed comes back.
    #[inline(always)]
    fn restore_local_irqflag(&self, regs: TrapRegs) {
        regs.set_status(kcb!(self.saved_status));
    }
}

impl HitArch for Cpu {
    type Probe = Kp;
    type Regs = TrapRegs;
    const REENTER_WHILE_STEPPING: bool = false;

    hit_arch_common!();

    hit_arch_kcb!();

    #[inline(always)]
    fn skip_step(&self, _p: Kp, _regs: TrapRegs, _reenter: bool) -> Skip {
        Skip::No
    }
    #[inline(always)]
    fn emulates(&self, p: Kp) -> bool {
        slot(p).is_null()
    }
    #[inline(always)]
    fn emulate(&self, p: Kp, regs: TrapRegs) {
        // arch_simulate_insn(): the simulator `prepare_kprobe` chose, on the probed
        // instruction; its result is ignored, as upstream ignores it.
        // SAFETY: `p` is live while it hits; the handler is one of ours, and gets the probe's
        // instruction and address and the frame of this trap.
        unsafe {
            if let Some(f) = (*api(p)).handler {
                f((*p.as_ptr()).opcode, KERNEL.addr(p), regs.as_ptr());
            }
        }
    }
    #[inline(always)]
    fn start_step(&self, p: Kp, regs: TrapRegs) {
        // kprobes_save_local_irqflag(): no interrupt between the trap's return and the step.
        let status = regs.status();
        kcb!(self.saved_status = status);
        regs.set_status(status & !SR_SPIE);
        regs.set_pc(slot(p) as usize);
    }
    #[inline(always)]
    fn in_step(&self, p: Kp, regs: TrapRegs) -> bool {
        // The ebreak after the copy.
        regs.pc() == (slot(p) as usize).wrapping_add(opcode_len(p))
    }
    #[inline(always)]
    fn finish_step(&self, p: Kp, regs: TrapRegs) {
        self.restore_local_irqflag(regs);
        // post_kprobe_handler(): a stepped instruction that did not branch resumes after the
        // probe.
        // SAFETY: `p` is live while it hits.
        let restore = unsafe { (*api(p)).restore };
        if restore != 0 {
            regs.set_pc(restore);
        }
    }
    #[inline(always)]
    fn faulted_in_step(&self, p: Kp, regs: TrapRegs) -> bool {
        let slot = slot(p);
        !slot.is_null() && regs.pc() == slot as usize
    }
    #[inline(always)]
    fn unwind_fault(&self, p: Kp, regs: TrapRegs) {
        regs.set_pc(KERNEL.addr(p));
        // As upstream, a re-entered probe's status stays: the outer probe's step goes on.
        if self.status() != hit::KPROBE_REENTER {
            self.restore_local_irqflag(regs);
        }
    }
    #[inline(always)]
    fn unrecoverable(&self, p: Kp) -> ! {
        // SAFETY: `p` is the live probe being hit; the NOKPROBE C function logs it and BUG()s.
        unsafe { bindings::rkp_riscv_unrecoverable(p.as_ptr()) }
    }
    #[inline(always)]
    fn warn_bad_status(&self) {
        // SAFETY: a WARN_ON(1) in a NOKPROBE C function.
        unsafe { bindings::rkp_arch_warn_bad_status() };
    }
    #[inline(always)]
    fn warn_fault_status(&self) {
        // SAFETY: a WARN_ON(1) in a NOKPROBE C function.
        unsafe { bindings::rkp_arch_warn_fault_status() };
    }
    #[inline(always)]
    fn ip(&self, regs: TrapRegs) -> usize {
        regs.pc()
    }
    #[inline(always)]
    fn set_ip(&self, regs: TrapRegs, ip: usize) {
        regs.set_pc(ip);
    }
}

nokprobe! {
    /// `kprobe_breakpoint_handler()`: an `ebreak` in the kernel (`handle_break()`), with
    /// interrupts off. Returns whether it was a probe's.
    ///
    /// # Safety
    ///
    /// `regs` is the frame of an `ebreak` taken in the kernel on this CPU.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_breakpoint_handler(regs: *mut bindings::pt_regs) -> bool {
        // SAFETY: the ebreak's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        // Otherwise the ebreak was removed after this CPU hit it (or is not a probe's): the
        // trap returns to the instruction, which runs as it now is.
        let Some(p) = table::get_kprobe(&KERNEL, regs.pc()) else {
            return false;
        };
        // SAFETY: interrupts are off, so is preemption.
        let cpu = unsafe { Cpu::this() };
        hit::handle_hit(&cpu, p, regs)
    }
}

nokprobe! {
    /// `kprobe_single_step_handler()`: an `ebreak` in the kernel that may end the out-of-line
    /// step of the current probe (`handle_break()` asks this first).
    ///
    /// # Safety
    ///
    /// As for [`kprobe_breakpoint_handler`].
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_single_step_handler(regs: *mut bindings::pt_regs) -> bool {
        // SAFETY: the ebreak's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        // SAFETY: interrupts are off, so is preemption.
        let cpu = unsafe { Cpu::this() };
        hit::step_done(&cpu, regs)
    }
}

nokprobe! {
    /// `kprobe_fault_handler()`: a fault in the kernel while a probe is current on this CPU
    /// (`kprobe_page_fault()`). A fault the slot raised is handled as usual, as if the probed
    /// instruction had raised it (0); one in a handler is fixed up from the exception table
    /// where it can be (1), as upstream does.
    ///
    /// # Safety
    ///
    /// `regs` is the fault's frame; preemption is disabled.
    #[no_mangle]
    pub unsafe extern "C" fn kprobe_fault_handler(
        regs: *mut bindings::pt_regs,
        _trapnr: c_uint,
    ) -> c_int {
        // SAFETY: the fault's frame, ours until we return (`# Safety`).
        let regs = unsafe { TrapRegs::new(regs) };
        // SAFETY: preemption is disabled (`# Safety`).
        let cpu = unsafe { Cpu::this() };
        if matches!(cpu.status(), hit::KPROBE_HIT_ACTIVE | hit::KPROBE_HIT_SSDONE) {
            // SAFETY: the fault's frame; fixup_exception() moves it to a fixup if one exists.
            return c_int::from(unsafe { bindings::fixup_exception(regs.as_ptr()) });
        }
        c_int::from(hit::step_faulted(&cpu, regs))
    }
}

// SPDX-License-Identifier: GPL-2.0

//! Rust kprobe sample, the counterpart of `samples/kprobes/kprobe_example.c`.
//!
//! Plants a kprobe at the entry of `kernel_clone`; its pre handler prints the probe address and
//! the instruction pointer on every hit, its post handler the address and the stack pointer.
//! Fork a process to see them. The handlers run in atomic context: printing is all they do.

use kernel::{
    c_str,
    kprobes::{Kprobe, KprobeHandler, KprobeHit, ProbePoint, PtRegs},
    prelude::*,
};

module! {
    type: RustKprobe,
    name: "rust_kprobe",
    author: "Rust for Linux Contributors",
    description: "Rust sample module showing the use of kprobes",
    license: "GPL",
}

/// The probed function.
const SYMBOL: &CStr = c_str!("kernel_clone");

/// Prints every hit of the probe.
struct HitPrinter;

#[vtable]
impl KprobeHandler for HitPrinter {
    fn pre_handler(&self, hit: &KprobeHit, regs: &PtRegs) {
        pr_info!(
            "<{}> pre_handler: p->addr = {:#x}, ip = {:#x}\n",
            SYMBOL,
            hit.address(),
            regs.instruction_pointer()
        );
    }

    fn post_handler(&self, hit: &KprobeHit, regs: &PtRegs) {
        pr_info!(
            "<{}> post_handler: p->addr = {:#x}, sp = {:#x}\n",
            SYMBOL,
            hit.address(),
            regs.stack_pointer()
        );
    }
}

struct RustKprobe {
    /// The probe; taken out on exit to unregister it before the last message.
    probe: Option<Pin<KBox<Kprobe<HitPrinter>>>>,
}

impl kernel::Module for RustKprobe {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let probe = Kprobe::register(ProbePoint::symbol(SYMBOL), HitPrinter).inspect_err(|e| {
            pr_err!("registering the kprobe failed, returned {}\n", e.to_errno());
        })?;
        pr_info!("Planted kprobe at {:#x}\n", probe.address());
        Ok(Self { probe: Some(probe) })
    }
}

impl Drop for RustKprobe {
    fn drop(&mut self) {
        if let Some(probe) = self.probe.take() {
            let (addr, missed) = (probe.address(), probe.nmissed());
            // Unregisters the probe; no handler runs after this.
            drop(probe);
            pr_info!(
                "kprobe at {:#x} unregistered, {} hits missed\n",
                addr,
                missed
            );
        }
    }
}

// SPDX-License-Identifier: GPL-2.0

//! Rust return probe sample, the counterpart of `samples/kprobes/kretprobe_example.c`.
//!
//! Plants a kretprobe on `kernel_clone`: the entry handler takes a timestamp, which the kprobes
//! core keeps in the call's instance, and the return handler prints the return value (the new
//! process ID) and how long the call took. Fork a process to see it. Up to 20 calls are followed
//! at once; the rest are counted as missed. The handlers run in atomic context.

use core::num::NonZeroU32;
use kernel::{
    c_str,
    kprobes::{Kretprobe, KretprobeHandler, KretprobeHit, ProbePoint, PtRegs},
    prelude::*,
    time::Ktime,
};

module! {
    type: RustKretprobe,
    name: "rust_kretprobe",
    author: "Rust for Linux Contributors",
    description: "Rust sample module showing the use of return probes",
    license: "GPL",
}

/// The probed function.
const SYMBOL: &CStr = c_str!("kernel_clone");

/// How many calls of the function are followed at the same time.
const MAXACTIVE: NonZeroU32 = NonZeroU32::new(20).unwrap();

/// Times every call of the function.
struct CallTimer;

#[vtable]
impl KretprobeHandler for CallTimer {
    /// When the call started.
    type Data = Ktime;

    fn entry_handler(&self, _hit: &KretprobeHit, _regs: &PtRegs) -> Option<Ktime> {
        Some(Ktime::ktime_get())
    }

    fn return_handler(&self, _hit: &KretprobeHit, regs: &PtRegs, entry: Ktime) {
        let took = (Ktime::ktime_get() - entry).to_ns();
        pr_info!(
            "{} returned {} and took {} ns to execute\n",
            SYMBOL,
            regs.return_value() as isize,
            took
        );
    }
}

struct RustKretprobe {
    /// The probe; taken out on exit to unregister it before the last messages.
    probe: Option<Pin<KBox<Kretprobe<CallTimer>>>>,
}

impl kernel::Module for RustKretprobe {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let probe = Kretprobe::register(ProbePoint::symbol(SYMBOL), Some(MAXACTIVE), CallTimer)
            .inspect_err(|e| {
                pr_err!(
                    "registering the kretprobe failed, returned {}\n",
                    e.to_errno()
                );
            })?;
        pr_info!(
            "Planted return probe at {}: {:#x}\n",
            SYMBOL,
            probe.address()
        );
        Ok(Self { probe: Some(probe) })
    }
}

impl Drop for RustKretprobe {
    fn drop(&mut self) {
        if let Some(probe) = self.probe.take() {
            let (addr, missed) = (probe.address(), probe.nmissed());
            // Unregisters the probe; no handler runs after this.
            drop(probe);
            pr_info!("kretprobe at {:#x} unregistered\n", addr);
            // A missed count above zero suggests that `MAXACTIVE` is too low.
            pr_info!("Missed probing {} instances of {}\n", missed, SYMBOL);
        }
    }
}

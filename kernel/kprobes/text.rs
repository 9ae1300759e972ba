// SPDX-License-Identifier: GPL-2.0

//! Kernel services the core consults: kallsyms, text and section checks, modules, ftrace.
//!
//! Constraints: `no_std`, no allocation, does not name the `kernel` crate. Methods are called from
//! process context (registration, module notifier, debugfs), never from the probe-hit path; the
//! kernel glue implements them with the C functions named in each doc line, the host tests with a
//! simulated symbol table and text layout.

/// `KSYM_NAME_LEN`: longest symbol name plus NUL.
pub const KSYM_NAME_LEN: usize = 512;

/// One kallsyms answer for an address (`kallsyms_lookup()`).
#[derive(Clone, Copy, Debug)]
pub struct Ksym<'a> {
    /// Symbol name, without NUL.
    pub name: &'a [u8],
    /// Offset of the address in the symbol.
    pub offset: usize,
    /// Size of the symbol.
    pub size: usize,
    /// Module name, or `None` for the core kernel.
    pub module: Option<&'a [u8]>,
}

/// Which of the two kprobes `ftrace_ops` a probe uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FtraceOps {
    /// `kprobe_ftrace_ops` (`FTRACE_OPS_FL_SAVE_REGS`).
    Plain,
    /// `kprobe_ipmodify_ops` (`SAVE_REGS | IPMODIFY`), used when the probe has a post_handler.
    Ipmodify,
}

/// Symbol, text, module and ftrace services of the kernel.
pub trait KernelText {
    /// Handle to a `struct module`.
    type Module: Copy + Eq + core::fmt::Debug;

    /// Runs `f`, a batch of `n` registrations whose symbol names are `name_of(i)` and given
    /// addresses `addr_of(i)` (0 where a probe names a symbol or is absent), with the batch's
    /// kallsyms answers at hand: `f` gets the platform to register through, which the kernel
    /// makes for the call with the names of module symbols resolved in one walk and each module
    /// a name resolves into or an address falls in indexed once, instead of a symbol table
    /// walked per question. Every answer stays the one the per-call service gives. Default:
    /// `f(self)`.
    fn with_symbol_batch<'a, R>(
        &'a self,
        _n: usize,
        _name_of: impl Fn(usize) -> Option<&'a [u8]>,
        _addr_of: impl Fn(usize) -> usize,
        f: impl FnOnce(&Self) -> R,
    ) -> R {
        f(self)
    }
    /// `kallsyms_lookup_name(name)`; 0 if unknown.
    fn kallsyms_lookup_name(&self, name: &[u8]) -> usize;
    /// `kallsyms_lookup_size_offset(addr, &size, &offset)`: `Some((size, offset))` if found.
    fn kallsyms_lookup_size_offset(&self, addr: usize) -> Option<(usize, usize)>;
    /// `kallsyms_lookup(addr, ...)`, handing the answer (or `None`) to `f`.
    fn kallsyms_lookup<R>(&self, addr: usize, f: impl FnOnce(Option<Ksym<'_>>) -> R) -> R;
    /// `lookup_symbol_name(addr, buf)`, handing the name, without its NUL, (or `None`) to `f`.
    fn lookup_symbol_name<R>(&self, addr: usize, f: impl FnOnce(Option<&[u8]>) -> R) -> R;

    /// `core_kernel_text(addr)`.
    fn core_kernel_text(&self, addr: usize) -> bool;
    /// `kernel_text_address(addr)` (core, module, and other dynamic text).
    fn kernel_text_address(&self, addr: usize) -> bool;
    /// `__module_text_address(addr)`.
    fn module_text_address(&self, addr: usize) -> Option<Self::Module>;
    /// `in_gate_area_no_mm(addr)`.
    fn in_gate_area_no_mm(&self, addr: usize) -> bool;
    /// `jump_label_text_reserved(addr, addr)`.
    fn jump_label_text_reserved(&self, addr: usize) -> bool;
    /// `static_call_text_reserved(addr, addr)`.
    fn static_call_text_reserved(&self, addr: usize) -> bool;
    /// `find_bug(addr) != NULL`.
    fn find_bug(&self, addr: usize) -> bool;
    /// Runs `f` under `jump_label_lock()` with preemption disabled.
    fn jump_label_locked<R>(&self, f: impl FnOnce() -> R) -> R;
    /// `[__kprobes_text_start, __kprobes_text_end)`.
    fn kprobes_text(&self) -> (usize, usize);
    /// `[__noinstr_text_start, __noinstr_text_end)`.
    fn noinstr_text(&self) -> (usize, usize);
    /// `[__init_begin, __init_end)`.
    fn init_mem(&self) -> (usize, usize);

    /// `try_module_get(m)`.
    fn try_module_get(&self, m: Self::Module) -> bool;
    /// `module_put(m)`.
    fn module_put(&self, m: Self::Module);
    /// `within_module_init(addr, m)`.
    fn within_module_init(&self, addr: usize, m: Self::Module) -> bool;
    /// `within_module_core(addr, m)`.
    fn within_module_core(&self, addr: usize, m: Self::Module) -> bool;
    /// `module_is_coming(m)`.
    fn module_is_coming(&self, m: Self::Module) -> bool;

    /// `ftrace_location(addr)`; 0 if `addr` is not an ftrace site.
    fn ftrace_location(&self, addr: usize) -> usize;
    /// `ftrace_set_filter_ip(ops, addr, remove, 0)`.
    fn ftrace_set_filter_ip(
        &self,
        ops: FtraceOps,
        addr: usize,
        remove: bool,
    ) -> super::errno::Result;
    /// `register_ftrace_function(ops)`.
    fn register_ftrace_function(&self, ops: FtraceOps) -> super::errno::Result;
    /// `unregister_ftrace_function(ops)`.
    fn unregister_ftrace_function(&self, ops: FtraceOps) -> super::errno::Result;
    /// `kprobe_ftrace_disabled`: ftrace died and disarming through it is a no-op.
    fn kprobe_ftrace_disabled(&self) -> bool;

    /// `ftrace_set_filter_ips(ops, addrs, addrs.len(), remove, 0)` (Rust only: the batches of
    /// `batch.rs`): one filter update with every address, all or nothing (ftrace builds the
    /// new filter aside). Removing an address the filter lacks is -ENOENT, as
    /// `ftrace_set_filter_ip()`. Default: one address at a time, undone on failure.
    fn ftrace_set_filter_ips(
        &self,
        ops: FtraceOps,
        addrs: &[usize],
        remove: bool,
    ) -> super::errno::Result {
        for (i, &addr) in addrs.iter().enumerate() {
            if let Err(e) = self.ftrace_set_filter_ip(ops, addr, remove) {
                for &done in &addrs[..i] {
                    let _ = self.ftrace_set_filter_ip(ops, done, !remove);
                }
                return Err(e);
            }
        }
        Ok(())
    }
    /// Whether `addr` is in the filter of `ops` (ftrace's own hash, read under its lock), so
    /// that removing it cannot fail but for memory. False when the platform cannot tell.
    fn ftrace_filter_has(&self, _ops: FtraceOps, _addr: usize) -> bool {
        false
    }
}

/// The fields of a batch entry that a failed batch restores before registering its entries
/// again one by one: what the caller passed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeFields {
    /// `addr`.
    pub addr: usize,
    /// `flags`.
    pub flags: u32,
    /// `nmissed` (an entry C never reached keeps the count it had).
    pub nmissed: u64,
}

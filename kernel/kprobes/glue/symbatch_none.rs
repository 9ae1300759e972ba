// SPDX-License-Identifier: GPL-2.0

//! Without modules (or with function descriptors) a registration batch has no module symbols to
//! resolve or index: vmlinux's answers are C's binary searches already. The same interface as
//! `symbatch.rs`, with no batch ever built.

use core::sync::atomic::AtomicUsize;

/// Bumped by the kprobes module notifier on every module event (none without modules).
#[allow(dead_code)]
pub static GENERATION: AtomicUsize = AtomicUsize::new(0);

/// The symbol answers of one registration batch: never any here.
pub enum Batch {}

impl Batch {
    /// No batch.
    pub fn build<'a>(
        _n: usize,
        _name_of: impl Fn(usize) -> Option<&'a [u8]>,
        _addr_of: impl Fn(usize) -> usize,
    ) -> Option<Batch> {
        None
    }

    /// Never called: there is no batch.
    pub fn lookup_name(&self, _name: &[u8]) -> Option<usize> {
        match *self {}
    }

    /// Never called: there is no batch.
    pub fn lookup_size_offset(&self, _addr: usize) -> Option<(usize, usize)> {
        match *self {}
    }

    /// Never called: there is no batch.
    pub fn with_symbol_name<R, F: FnOnce(Option<&[u8]>) -> R>(
        &self,
        _addr: usize,
        _f: F,
    ) -> Result<R, F> {
        match *self {}
    }
}

/// Never called: there is no batch.
#[cfg(CONFIG_DYNAMIC_FTRACE)]
pub fn ftrace_location(b: &Batch, _addr: usize) -> Option<usize> {
    match *b {}
}

// SPDX-License-Identifier: GPL-2.0

//! What a differential run found, and the totals a difftest binary prints over its runs.

use std::collections::BTreeMap;
use std::fmt::Display;

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// What was compared (an image, or loose words).
    pub name: String,
    /// Probe sites (or words) compared.
    pub sites: u64,
    /// Sites where something differed, except for a listed divergence.
    pub mismatches: u64,
    /// Single comparisons made.
    pub checks: u64,
    /// How often each outcome was seen.
    pub outcomes: BTreeMap<String, u64>,
    /// Deliberate divergences seen, by reason.
    pub divergences: BTreeMap<&'static str, u64>,
    /// The first mismatches, described.
    pub shown: Vec<String>,
}

impl Report {
    /// An empty report on `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Report {
            name: name.into(),
            ..Report::default()
        }
    }

    /// Prints the outcomes, the divergences and the `N sites, M mismatches` line.
    pub fn print(&self) {
        println!("{}:", self.name);
        for (k, v) in &self.outcomes {
            println!("  {v:>9}  {k}");
        }
        for (k, v) in &self.divergences {
            println!("  divergence ({v} times): {k}");
        }
        for s in &self.shown {
            println!("  MISMATCH {s}");
        }
        println!(
            "  {} sites, {} mismatches ({} comparisons)",
            self.sites, self.mismatches, self.checks
        );
    }

    /// Counts one more `what` outcome.
    pub fn count(&mut self, what: impl Into<String>) {
        *self.outcomes.entry(what.into()).or_default() += 1;
    }

    /// Counts one more deliberate divergence for `reason`.
    pub fn diverged(&mut self, reason: &'static str) {
        *self.divergences.entry(reason).or_default() += 1;
    }

    /// Ends a site: with `diffs`, a mismatch, kept as `{what}: {diffs}` while fewer than
    /// `show` are.
    pub fn finish_site(&mut self, what: impl FnOnce() -> String, diffs: Vec<String>, show: usize) {
        if !diffs.is_empty() {
            self.mismatches += 1;
            if self.shown.len() < show {
                self.shown.push(format!("{}: {}", what(), diffs.join("; ")));
            }
        }
    }
}

/// The sums over the reports of a difftest binary.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// Sites compared.
    pub sites: u64,
    /// Sites that mismatched.
    pub mismatches: u64,
    /// Deliberate divergences, by reason.
    pub divergences: BTreeMap<&'static str, u64>,
}

impl Totals {
    /// Adds `rep`.
    pub fn add(&mut self, rep: &Report) {
        self.sites += rep.sites;
        self.mismatches += rep.mismatches;
        for (&k, &v) in &rep.divergences {
            *self.divergences.entry(k).or_insert(0) += v;
        }
    }

    /// Prints the divergences (`deliberate divergence ({n} {unit}): {reason}`) and the final
    /// `N sites, M mismatches` line, and exits with status 1 if anything mismatched.
    pub fn finish(&self, unit: &str) {
        for (k, v) in &self.divergences {
            println!("deliberate divergence ({v} {unit}): {k}");
        }
        println!("{} sites, {} mismatches", self.sites, self.mismatches);
        if self.mismatches != 0 {
            std::process::exit(1);
        }
    }
}

/// The fields where a Rust frame and a C frame differ, from `(name, value before, Rust's
/// value after, C's value after)` for each field: `{name} (was {before:#x}): Rust {r:#x}, C
/// {c:#x}`, joined by commas.
pub fn frame_diff<N: Display>(fields: impl IntoIterator<Item = (N, u64, u64, u64)>) -> String {
    let mut out = Vec::new();
    for (name, b, rv, cv) in fields {
        if rv != cv {
            out.push(format!("{name} (was {b:#x}): Rust {rv:#x}, C {cv:#x}"));
        }
    }
    out.join(", ")
}

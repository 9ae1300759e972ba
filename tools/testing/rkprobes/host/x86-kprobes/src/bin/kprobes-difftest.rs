// SPDX-License-Identifier: GPL-2.0

//! Runs the x86 kprobes differential (upstream's C against the Rust decisions) on a vmlinux
//! or, without one, on the built-in corpus. See README.md.

use rkprobes_x86_kprobes::{corpus, diff, Image};
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: kprobes-difftest [--preemption] [--cfi] [--kgdb] [--no-jump-tables] [--ibt] [--smap]\n\
         \x20                       [--opt-full N] [--opt-stride N] [--emulate N] [--show N]\n\
         \x20                       [VMLINUX]   (default: $RKPROBES_VMLINUX, else the built-in corpus)"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut opts = diff::Options {
        progress: true,
        ..diff::Options::default()
    };
    let mut path = std::env::var_os("RKPROBES_VMLINUX").map(std::path::PathBuf::from);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let num =
            |args: &mut dyn Iterator<Item = String>| -> Option<usize> { args.next()?.parse().ok() };
        match a.as_str() {
            "--preemption" => opts.cfg.preemption = true,
            "--cfi" => opts.cfg.cfi_clang = true,
            "--kgdb" => opts.cfg.kgdb = true,
            "--no-jump-tables" => opts.cfg.no_jump_tables = true,
            "--ibt" => {
                opts.cfg.ibt = true;
                opts.cfg.no_jump_tables = true;
            }
            "--smap" => opts.cfg.smap = true,
            "--opt-full" => match num(&mut args) {
                Some(n) => opts.opt_full = n,
                None => return usage(),
            },
            "--opt-stride" => match num(&mut args) {
                Some(n) => opts.opt_stride = n,
                None => return usage(),
            },
            "--emulate" => match num(&mut args) {
                Some(n) => opts.emulate_states = n,
                None => return usage(),
            },
            "--show" => match num(&mut args) {
                Some(n) => opts.show = n,
                None => return usage(),
            },
            s if s.starts_with('-') => return usage(),
            s => path = Some(s.into()),
        }
    }
    let img = match &path {
        Some(p) => {
            let file = match std::fs::read(p) {
                Ok(f) => f,
                Err(e) => {
                    eprintln!("{}: {e}", p.display());
                    return ExitCode::FAILURE;
                }
            };
            match Image::from_vmlinux(&file) {
                Ok(img) => img,
                Err(e) => {
                    eprintln!("{}: {e}", p.display());
                    return ExitCode::FAILURE;
                }
            }
        }
        None => corpus::image(),
    };
    println!(
        "{}: .text {:#x}+{:#x}, {} symbols, {} exception-table sites, {} ftrace sites, {} kCFI traps; {:?}",
        path.as_ref().map_or("built-in corpus".into(), |p| p.display().to_string()),
        img.base,
        img.text.len(),
        img.symbols.len(),
        img.extable.len(),
        img.ftrace.len(),
        img.cfi_traps.len(),
        opts.cfg
    );
    match diff::run(&img, &opts) {
        Ok(rep) => {
            rep.print();
            if rep.mismatches == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

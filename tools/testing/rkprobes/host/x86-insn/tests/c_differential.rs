// SPDX-License-Identifier: GPL-2.0

//! Differential test against the kernel's C decoder (`arch/x86/lib/insn.c` + `inat.c`).
//!
//! `build.rs` compiles the C decoder when the Linux tree is present and sets
//! `cfg(rkprobes_c_decoder)`. Every attribute lookup is compared over its whole domain, and
//! seeded random instruction-like inputs are decoded by both and compared field by field.

#[cfg(not(rkprobes_c_decoder))]
#[path = "../src/paths.rs"]
#[expect(dead_code, reason = "only the tree location is needed here")]
mod paths;

#[cfg(not(rkprobes_c_decoder))]
#[test]
fn c_decoder_is_built_when_the_tree_exists() {
    let insn_c = paths::linux_src().join("tools/arch/x86/lib/insn.c");
    assert!(
        !insn_c.exists(),
        "{} exists but the C decoder was not built; see the build script warning",
        insn_c.display()
    );
    eprintln!(
        "SKIP: C differential test: no Linux tree at {}; run `scripts/rkprobes setup`",
        paths::linux_src().display()
    );
}

#[cfg(rkprobes_c_decoder)]
mod common;

#[cfg(rkprobes_c_decoder)]
#[path = "../src/c_decoder.rs"]
#[expect(dead_code, reason = "the length-only entry point is for insn-bench")]
mod c_decoder;

#[cfg(rkprobes_c_decoder)]
mod with_c {
    use super::c_decoder::{self, CInsn};
    use super::common::{input_count, instruction_like, Rng};
    use rkprobes_x86_insn::{attr, Insn, Mode};

    #[test]
    fn attribute_tables_match() {
        let mut lookups = 0u64;
        for op in 0..=255u8 {
            assert_eq!(
                attr::primary(op),
                c_decoder::inat_primary(op),
                "primary {op:#x}"
            );
            for lpfx in 0..4 {
                for esc in 1..4 {
                    let e = attr::esc(esc);
                    assert_eq!(
                        attr::escaped(op, lpfx, e),
                        c_decoder::inat_escape(op, lpfx, e),
                        "escape {esc} lpfx {lpfx} op {op:#x}"
                    );
                }
                for grp in 1..attr::GRP_COUNT as u32 {
                    // Carry some common bits along: they must come back merged.
                    let g = attr::grp(grp) | attr::imm(attr::IMM_BYTE) | attr::FORCE64;
                    assert_eq!(
                        attr::grouped(op, lpfx, g),
                        c_decoder::inat_group(op, lpfx, g),
                        "group {grp} lpfx {lpfx} modrm {op:#x}"
                    );
                }
                for map in 0..attr::AVX_MAP_COUNT as u8 {
                    assert_eq!(
                        attr::avx(op, map, lpfx as u8),
                        c_decoder::inat_avx(op, map, lpfx as u8),
                        "avx map {map} pp {lpfx} op {op:#x}"
                    );
                }
                lookups += 3 + 31 + 32;
            }
        }
        println!("{lookups} attribute lookups agree with the C tables");
    }

    /// Skips Xen/KVM markers and legacy/REX prefixes: is the next byte an XOP `8f`, which only
    /// the Rust decoder knows?
    fn is_xop(input: &[u8], mode: Mode) -> bool {
        let mut i = 0;
        while let Some(&b) = input.get(i) {
            let rex = mode == Mode::Bits64 && (0x40..=0x4f).contains(&b);
            if !attr::is_legacy_prefix(attr::primary(b)) && !rex {
                break;
            }
            i += 1;
        }
        input.get(i) == Some(&0x8f) && input.get(i + 1).is_some_and(|b| b & 0x1f >= 8)
    }

    fn compare(rust: &Insn, c: &CInsn) -> Result<(), String> {
        let field = |name: &str, r: i64, cv: i64| {
            if r == cv {
                Ok(())
            } else {
                Err(format!("{name}: Rust {r:#x}, C {cv:#x}"))
            }
        };
        field("length", rust.len() as i64, c.length.into())?;
        let prefixes = rust.prefix_bytes();
        field(
            "prefixes",
            i64::from(u32::from_le_bytes(prefixes)),
            i64::from(u32::from_le_bytes(c.prefixes)),
        )?;
        field(
            "prefix nbytes",
            rust.prefix_size() as i64,
            c.prefix_nbytes.into(),
        )?;
        field(
            "emulate prefix",
            rust.emulate_prefix_size() as i64,
            c.emulate_prefix_size.into(),
        )?;
        field("rex nbytes", rust.rex().len() as i64, c.rex_nbytes.into())?;
        field("vex nbytes", rust.vex_size() as i64, c.vex_nbytes.into())?;
        let op = rust.opcode_bytes();
        field("opcode nbytes", op.len() as i64, c.opcode_nbytes.into())?;
        if op != &c.opcode[..op.len()] {
            return Err(format!("opcode: Rust {op:02x?}, C {:02x?}", c.opcode));
        }
        field(
            "modrm nbytes",
            rust.modrm().is_some() as i64,
            c.modrm_nbytes.into(),
        )?;
        field("modrm", rust.modrm().unwrap_or(0).into(), c.modrm.into())?;
        field(
            "sib nbytes",
            rust.sib().is_some() as i64,
            c.sib_nbytes.into(),
        )?;
        field("sib", rust.sib().unwrap_or(0).into(), c.sib.into())?;
        let d = rust.displacement();
        field("disp nbytes", d.size.into(), c.disp_nbytes.into())?;
        field("disp", d.value.into(), c.disp.into())?;
        let (i1, i2) = (rust.immediate(), rust.immediate2());
        field("imm1 nbytes", i1.size.into(), c.imm1_nbytes.into())?;
        field("imm1", i1.value.into(), c.imm1.into())?;
        field("imm2 nbytes", i2.size.into(), c.imm2_nbytes.into())?;
        field("imm2", i2.value.into(), c.imm2.into())?;
        field("attr", rust.attr().into(), c.attr.into())?;
        field(
            "addr bytes",
            rust.address_bytes().into(),
            c.addr_bytes.into(),
        )?;
        // The C decoder takes EVEX.W from the wrong byte (see insn.rs); lengths agree anyway.
        if rust.vex_size() != 4 {
            field(
                "opnd bytes",
                rust.operand_bytes().into(),
                c.opnd_bytes.into(),
            )?;
        }
        field(
            "rip relative",
            rust.is_rip_relative() as i64,
            (c.rip_relative != 0) as i64,
        )
    }

    #[test]
    fn random_inputs_decode_like_c() {
        let count = input_count(2_000_000);
        let mut rng = Rng::new(0x6b70_726f_6265_7322);
        let mut buf = [0u8; 16];
        let (mut compared, mut xop, mut failures) = (0u64, 0u64, Vec::new());
        for i in 0..count {
            let mode = if i % 4 == 3 {
                Mode::Bits32
            } else {
                Mode::Bits64
            };
            let n = instruction_like(&mut rng, &mut buf);
            let input = &buf[..n];
            if is_xop(input, mode) {
                xop += 1;
                continue;
            }
            compared += 1;
            let c = c_decoder::decode(input, mode == Mode::Bits64);
            let verdict = match Insn::decode(input, mode) {
                Ok(insn) if c.ret == 0 => compare(&insn, &c),
                Ok(insn) => Err(format!(
                    "Rust decodes {} bytes, C fails with {}",
                    insn.len(),
                    c.ret
                )),
                Err(e) if e.to_errno() == c.ret => Ok(()),
                Err(e) => Err(format!(
                    "Rust fails with {e:?}, C returns {} (length {})",
                    c.ret, c.length
                )),
            };
            if let Err(why) = verdict {
                if failures.len() < 20 {
                    failures.push(format!("{mode:?} {input:02x?}: {why}"));
                } else {
                    break;
                }
            }
        }
        println!("{compared} random inputs agree with the C decoder ({xop} XOP inputs skipped)");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(compared > count / 2);
    }
}

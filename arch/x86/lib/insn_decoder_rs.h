/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C ABI of insn_decoder_rs.rs, the Rust x86 instruction decoder built
 * into the kernel for its KUnit test (insn_decoder_kunit.c).
 */
#ifndef _ARCH_X86_LIB_INSN_DECODER_RS_H
#define _ARCH_X86_LIB_INSN_DECODER_RS_H

#include <linux/types.h>

/* Mirror of struct RustInsn in insn_decoder_rs.rs; rust_insn_abi checks it. */
struct rust_insn {
	s32 ret;
	u8 length;
	u8 emulate_prefix_size;
	u8 prefix_nbytes;
	u8 rex_nbytes;
	u8 prefixes[4];
	u8 vex_nbytes;
	u8 opcode_nbytes;
	u8 rex[2];
	u8 vex[4];
	u8 opcode[4];
	u8 modrm_nbytes;
	u8 modrm;
	u8 sib_nbytes;
	u8 sib;
	u8 disp_nbytes;
	u8 imm1_nbytes;
	u8 imm2_nbytes;
	u8 opnd_bytes;
	s32 disp;
	s32 imm1;
	s32 imm2;
	u32 attr;
	u8 addr_bytes;
	u8 xop;
	u8 rip_relative;
	u8 branch;
	u8 branch_cc;
	u8 has_jump_target;
	u8 reserved[2];
	u64 rip_target;
	u64 branch_target;
	u64 jump_target;
};

/* struct rust_insn.branch */
enum rust_insn_branch {
	RUST_INSN_BRANCH_NONE,
	RUST_INSN_BRANCH_JMP,
	RUST_INSN_BRANCH_CALL,
	RUST_INSN_BRANCH_JCC,
	RUST_INSN_BRANCH_LOOP,
};

/* The entry points; insn_decoder_rs.rs documents each. */
size_t rust_insn_size(void);
int rust_insn_decode(const u8 *buf, size_t len, u64 addr,
		     struct rust_insn *out);
const u8 *rust_insn_golden(size_t *len);
int rust_insn_golden_check(const u8 *line, size_t len, const u8 **why,
			   size_t *why_len);

#endif /* _ARCH_X86_LIB_INSN_DECODER_RS_H */

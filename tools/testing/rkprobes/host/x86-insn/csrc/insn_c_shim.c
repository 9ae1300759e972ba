// SPDX-License-Identifier: GPL-2.0
/*
 * Host build of the kernel's C x86 instruction decoder, for the differential
 * test and the benchmark of the Rust decoder.
 *
 * It includes arch/x86/lib/{inat,insn}.c (their tools/ copies) the way
 * arch/x86/tools/insn_sanity.c does, and flattens struct insn into a plain
 * struct so Rust need not mirror its layout.
 */

#include <asm/insn.h>
#include <inat.c>
#include <insn.c>

struct rk_c_insn {
	int ret;
	int length;
	int emulate_prefix_size;
	int prefix_nbytes;
	unsigned char prefixes[4];
	int rex_nbytes;
	int vex_nbytes;
	unsigned char opcode[4];
	int opcode_nbytes;
	int modrm_nbytes;
	int modrm;
	int sib_nbytes;
	int sib;
	int disp_nbytes;
	int disp;
	int imm1_nbytes;
	int imm1;
	int imm2_nbytes;
	int imm2;
	unsigned int attr;
	int opnd_bytes;
	int addr_bytes;
	int rip_relative;
};

int rk_c_insn_decode(const unsigned char *buf, int len, int x86_64,
		     struct rk_c_insn *out)
{
	struct insn insn;
	int i;

	out->ret = insn_decode(&insn, buf, len,
			       x86_64 ? INSN_MODE_64 : INSN_MODE_32);
	out->length = insn.length;
	out->emulate_prefix_size = insn.emulate_prefix_size;
	out->prefix_nbytes = insn.prefixes.nbytes;
	for (i = 0; i < 4; i++) {
		out->prefixes[i] = insn.prefixes.bytes[i];
		out->opcode[i] = insn.opcode.bytes[i];
	}
	out->rex_nbytes = insn.rex_prefix.nbytes;
	out->vex_nbytes = insn.vex_prefix.nbytes;
	out->opcode_nbytes = insn.opcode.nbytes;
	out->modrm_nbytes = insn.modrm.nbytes;
	out->modrm = insn.modrm.bytes[0];
	out->sib_nbytes = insn.sib.nbytes;
	out->sib = insn.sib.bytes[0];
	out->disp_nbytes = insn.displacement.nbytes;
	out->disp = insn.displacement.value;
	out->imm1_nbytes = insn.immediate1.nbytes;
	out->imm1 = insn.immediate1.value;
	out->imm2_nbytes = insn.immediate2.nbytes;
	out->imm2 = insn.immediate2.value;
	out->attr = insn.attr;
	out->opnd_bytes = insn.opnd_bytes;
	out->addr_bytes = insn.addr_bytes;
	out->rip_relative = out->ret == 0 ? insn_rip_relative(&insn) : 0;
	return out->ret;
}

/* The length of the instruction at @buf, or a negative errno. */
int rk_c_insn_length(const unsigned char *buf, int len, int x86_64)
{
	struct insn insn;
	int ret;

	ret = insn_decode(&insn, buf, len,
			  x86_64 ? INSN_MODE_64 : INSN_MODE_32);
	return ret < 0 ? ret : insn.length;
}

unsigned int rk_c_inat_primary(unsigned char opcode)
{
	return inat_get_opcode_attribute(opcode);
}

unsigned int rk_c_inat_escape(unsigned char opcode, int lpfx_id,
			      unsigned int esc_attr)
{
	return inat_get_escape_attribute(opcode, lpfx_id, esc_attr);
}

unsigned int rk_c_inat_group(unsigned char modrm, int lpfx_id,
			     unsigned int grp_attr)
{
	return inat_get_group_attribute(modrm, lpfx_id, grp_attr);
}

unsigned int rk_c_inat_avx(unsigned char opcode, unsigned char vex_m,
			   unsigned char vex_p)
{
	return inat_get_avx_attribute(opcode, vex_m, vex_p);
}

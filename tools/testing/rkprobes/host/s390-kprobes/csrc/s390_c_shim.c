// SPDX-License-Identifier: GPL-2.0
/*
 * Host build of upstream's s390 kprobes decisions, for the differential test
 * of the Rust ones (arch/s390/kernel/probes/*.rs).
 *
 * build.rs cuts the helpers and functions that make the decisions out of the
 * tree into rk_pre.c, rk_dis_structs.c, rk_dis.c, rk_probes.c and
 * rk_kprobes.c, and makes the disassembler's tables (dis-defs.h) with the
 * tree's gen_opcode_table.c. The entry points below
 * (rk_*) are what src/ffi.rs calls; the kernel services the cut-out code
 * calls answer from what the harness set and record what they were asked.
 *
 * The probed text is mapped at its kernel address (rk_map_text()), since
 * upstream computes with p->addr and dereferences it; the slot of
 * arch_prepare_kprobe() is only written through s390_kernel_write(), so it
 * is any address the harness likes, and the slot of resume_execution() is a
 * page mapped at a fixed address (rk_map_slot()).
 */

#define _GNU_SOURCE
#include <sys/mman.h>

#include "rk_pre.c"

/* The disassembler's tables, as dis.c defines them, and find_insn(). */
#include "rk_dis_structs.c"
#include "dis-defs.h"
static struct s390_insn opcode[] = OPCODE_TABLE_INITIALIZER;
static struct s390_opcode_offset opcode_offset[] = OPCODE_OFFSET_INITIALIZER;
#include "rk_dis.c"

/*
 * probe_is_prohibited_opcode() hands is_known_insn() the probed halfwords,
 * which the host holds in its own byte order: give the disassembler the
 * bytes as s390 stores them, and record the question.
 */
static int rk_known_asked;
static u16 rk_known_insn;

static int rk_is_known_halfwords(unsigned char *code)
{
	const u16 *h = (const u16 *)code;
	unsigned char be[6] = { h[0] >> 8, h[0], h[1] >> 8, h[1], h[2] >> 8, h[2] };

	rk_known_asked++;
	rk_known_insn = h[0];
	return is_known_insn(be);
}

/* The fields of include/linux/kprobes.h's struct kprobe the arch code uses. */
struct arch_specific_insn {
	kprobe_opcode_t *insn;
};

struct kprobe {
	kprobe_opcode_t *addr;
	kprobe_opcode_t opcode;
	struct arch_specific_insn ainsn;
};

struct kprobe *get_kprobe(void *addr);
kprobe_opcode_t *get_insn_slot(void);

#define is_known_insn rk_is_known_halfwords
#include "rk_probes.c"
#undef is_known_insn
#include "rk_kprobes.c"

/* The text, at its kernel address. */
static unsigned long rk_text_base, rk_text_len;

/* Maps len bytes at base (no other mapping there) and copies text in; 0 or -1. */
int rk_map_text(unsigned long base, const void *text, unsigned long len)
{
	void *p;

	if (rk_text_len)
		munmap((void *)rk_text_base, rk_text_len);
	rk_text_len = 0;
	p = mmap((void *)base, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	if (p != (void *)base) {
		munmap(p, len);
		return -1;
	}
	memcpy(p, text, len);
	rk_text_base = base;
	rk_text_len = len;
	return 0;
}

long copy_from_kernel_nofault(void *dst, const void *src, size_t size)
{
	unsigned long a = (unsigned long)src;

	if (a < rk_text_base || a + size > rk_text_base + rk_text_len)
		return -EFAULT;
	memcpy(dst, src, size);
	return 0;
}

/* kallsyms_lookup_size_offset(): the harness's answer. */
static int rk_sym_found;
static unsigned long rk_sym_offset;

int kallsyms_lookup_size_offset(unsigned long addr, unsigned long *symbolsize,
				unsigned long *offset)
{
	if (rk_sym_found && offset)
		*offset = rk_sym_offset;
	return rk_sym_found;
}

/*
 * get_kprobe(): a probe at some of the breakpoints, with an opcode, both
 * from a hash of the address and rk_probe_seed (src/ffi.rs computes the
 * same).
 */
static unsigned long rk_probe_seed;
static struct kprobe rk_probe;

unsigned long rk_probe_hash(unsigned long addr)
{
	unsigned long z = addr ^ rk_probe_seed;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
	return z ^ (z >> 31);
}

struct kprobe *get_kprobe(void *addr)
{
	unsigned long h = rk_probe_hash((unsigned long)addr);

	if (!(h & 3))
		return NULL;
	rk_probe.addr = addr;
	rk_probe.opcode = (u16)(h >> 16);
	return &rk_probe;
}

/* The slot: any kernel address, written only through s390_kernel_write(). */
static unsigned long rk_slot_addr;
static u16 rk_slot_buf[4];
static int rk_stray;

kprobe_opcode_t *get_insn_slot(void)
{
	return (kprobe_opcode_t *)rk_slot_addr;
}

void *s390_kernel_write(void *dst, const void *src, size_t size)
{
	if ((unsigned long)dst == rk_slot_addr && size <= sizeof(rk_slot_buf))
		memcpy(rk_slot_buf, src, size);
	else
		rk_stray++;
	return dst;
}

static struct kprobe_ctlblk rk_kcb;

struct kprobe_ctlblk *get_kprobe_ctlblk(void)
{
	return &rk_kcb;
}

void __local_ctl_load(int low, int high, struct ctlreg *array)
{
}

/* The word decisions. */
int rk_insn_length(unsigned char code)
{
	return insn_length(code);
}

int rk_prohibited(const u16 *insn, int *asked)
{
	u16 copy[3] = { insn[0], insn[1], insn[2] };
	int r;

	rk_known_asked = 0;
	r = probe_is_prohibited_opcode(copy);
	*asked = rk_known_asked;
	return r;
}

/* is_known_insn() of the instruction whose halfwords are insn. */
int rk_known(const u16 *insn)
{
	unsigned char be[6] = { insn[0] >> 8, insn[0], insn[1] >> 8, insn[1],
				insn[2] >> 8, insn[2] };

	return is_known_insn(be);
}

/* opcode_offset[]: its length, and each entry's opcode, mask, byte and count. */
int rk_opcode_offsets(u8 *opc, u8 *mask, u8 *byte, u16 *count, int max)
{
	int n = ARRAY_SIZE(opcode_offset);

	for (int i = 0; i < n && i < max; i++) {
		opc[i] = opcode_offset[i].opcode;
		mask[i] = opcode_offset[i].mask;
		byte[i] = opcode_offset[i].byte;
		count[i] = opcode_offset[i].count;
	}
	return n;
}

int rk_fixup_type(const u16 *insn)
{
	u16 copy[3] = { insn[0], insn[1], insn[2] };

	return probe_get_fixup_type(copy);
}

int rk_relative_long(u16 insn0)
{
	u16 copy[3] = { insn0, 0, 0 };

	return probe_is_insn_relative_long(copy);
}

/* What arch_prepare_kprobe() did. */
struct rk_prepared {
	u16 opcode;
	int has_slot;
	int known_asked;
	u16 known_insn;
	int stray;
	u16 slot[4];
};

#define RK_POISON 0x5a5a

/*
 * arch_prepare_kprobe() at kaddr (in the mapped text), with its symbol offset
 * (found or not), probes from probe_seed, and the slot at slot (0: none).
 */
int rk_prepare(unsigned long kaddr, int sym_found, unsigned long sym_offset,
	       unsigned long probe_seed, unsigned long slot,
	       struct rk_prepared *out)
{
	struct kprobe p = { 0 };
	int ret;

	p.addr = (kprobe_opcode_t *)kaddr;
	p.opcode = RK_POISON;
	rk_sym_found = sym_found;
	rk_sym_offset = sym_offset;
	rk_known_asked = 0;
	rk_known_insn = 0;
	rk_probe_seed = probe_seed;
	rk_slot_addr = slot;
	rk_stray = 0;
	for (int i = 0; i < 4; i++)
		rk_slot_buf[i] = RK_POISON;
	ret = arch_prepare_kprobe(&p);
	out->opcode = p.opcode;
	out->has_slot = p.ainsn.insn != NULL;
	out->known_asked = rk_known_asked;
	out->known_insn = rk_known_insn;
	out->stray = rk_stray;
	memcpy(out->slot, rk_slot_buf, sizeof(rk_slot_buf));
	return ret;
}

/* The slot page of resume_execution(), at a fixed address. */
static u16 *rk_rslot;

unsigned long rk_map_slot(unsigned long at)
{
	void *p = mmap((void *)at, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED || p != (void *)at)
		return 0;
	rk_rslot = p;
	return at;
}

/*
 * resume_execution() of the probe at addr whose slot (the mapped slot page)
 * holds insn, from the PSW and registers given, with saved_imask in the
 * control block; the PSW and registers after.
 */
void rk_resume(unsigned long addr, const u16 *insn, unsigned long saved_imask,
	       unsigned long *psw_mask, unsigned long *psw_addr, unsigned long *gprs)
{
	struct kprobe p = { 0 };
	struct pt_regs regs = { 0 };

	rk_rslot[0] = insn[0];
	rk_rslot[1] = insn[1];
	rk_rslot[2] = insn[2];
	p.addr = (kprobe_opcode_t *)addr;
	p.ainsn.insn = rk_rslot;
	rk_kcb.kprobe_saved_imask = saved_imask;
	regs.psw.mask = *psw_mask;
	regs.psw.addr = *psw_addr;
	memcpy(regs.gprs, gprs, sizeof(regs.gprs));
	resume_execution(&p, &regs);
	*psw_mask = regs.psw.mask;
	*psw_addr = regs.psw.addr;
	memcpy(gprs, regs.gprs, sizeof(regs.gprs));
}

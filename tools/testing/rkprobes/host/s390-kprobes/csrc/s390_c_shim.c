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

typedef int (*kprobe_pre_handler_t)(struct kprobe *, struct pt_regs *);
typedef void (*kprobe_post_handler_t)(struct kprobe *, struct pt_regs *,
				      unsigned long flags);

struct kprobe {
	kprobe_opcode_t *addr;
	kprobe_opcode_t opcode;
	unsigned long nmissed;
	kprobe_pre_handler_t pre_handler;
	kprobe_post_handler_t post_handler;
	struct arch_specific_insn ainsn;
};

/* This CPU's state and the services the handlers use, recorded for the harness. */
static struct kprobe *rk_current;
static int rk_preempt, rk_bugs, rk_ctl_stores, rk_extable_hit;
static unsigned long rk_extable_fixup;

#define __this_cpu_read(var) (rk_current)
#define __this_cpu_write(var, val) (rk_current = (val))
#define kprobe_running() (rk_current)
#define preempt_disable() (rk_preempt++)
#define preempt_enable_no_resched() (rk_preempt--)
#define pr_err(fmt, ...) do { } while (0)
#define BUG() (rk_bugs++)
#define __local_ctl_store(low, high, array) (rk_ctl_stores++)

static void dump_kprobe(struct kprobe *p)
{
}

static void kprobes_inc_nmissed_count(struct kprobe *p)
{
	p->nmissed++;
}

static int fixup_exception(struct pt_regs *regs)
{
	if (rk_extable_hit)
		regs->psw.addr = rk_extable_fixup;
	return rk_extable_hit;
}

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

/* The handlers' probe, when set: get_kprobe() knows only it. */
static struct kprobe *rk_hit_probe;

struct kprobe *get_kprobe(void *addr)
{
	unsigned long h = rk_probe_hash((unsigned long)addr);

	if (rk_hit_probe)
		return addr == rk_hit_probe->addr ? rk_hit_probe : NULL;
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

unsigned long rk_mcount_insn_size(void)
{
	return MCOUNT_INSN_SIZE;
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

/* A probe hit's state, before and after one of the handlers. */
struct rk_hit {
	/* In. */
	unsigned long addr, psw_mask, psw_addr, status, saved_imask, prev_status;
	unsigned long extable_fixup, gprs[16];
	u16 slot[3];
	int current, prev, found, has_pre, pre_ret, has_post, extable_hit;
	/* Out. */
	unsigned long slot_addr, status_after, saved_imask_after, prev_status_after;
	unsigned long nmissed;
	int current_after, prev_after, bugs, pre_calls, post_calls, preempt, ctl_stores, ret;
};

static int rk_pre_calls, rk_post_calls, rk_pre_ret;

static int rk_pre(struct kprobe *p, struct pt_regs *regs)
{
	rk_pre_calls++;
	return rk_pre_ret;
}

static void rk_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	rk_post_calls++;
}

/*
 * Runs handler 0 kprobe_handler(), 1 post_kprobe_handler() or 2
 * kprobe_trap_handler() with the probe at addr, its slot the mapped slot page
 * (rk_map_slot() first), this CPU's current_kprobe none (0), the probe (1)
 * or another (2), and the frame h->psw_mask, h->psw_addr and h->gprs (which
 * are updated).
 */
int rk_hit(int which, struct rk_hit *h)
{
	struct kprobe p = { 0 }, other = { 0 }, prev = { 0 };
	struct pt_regs regs = { 0 };
	struct kprobe *who[] = { NULL, &p, &other, &prev };

	if (!rk_rslot)
		return -1;
	rk_rslot[0] = h->slot[0];
	rk_rslot[1] = h->slot[1];
	rk_rslot[2] = h->slot[2];
	p.addr = (kprobe_opcode_t *)h->addr;
	p.ainsn.insn = rk_rslot;
	p.pre_handler = h->has_pre ? rk_pre : NULL;
	p.post_handler = h->has_post ? rk_post : NULL;
	h->slot_addr = (unsigned long)rk_rslot;
	rk_hit_probe = h->found ? &p : &other;
	other.addr = (kprobe_opcode_t *)~0UL;
	rk_current = who[h->current & 3];
	rk_kcb.kprobe_status = h->status;
	rk_kcb.kprobe_saved_imask = h->saved_imask;
	rk_kcb.prev_kprobe.kp = h->prev ? &prev : NULL;
	rk_kcb.prev_kprobe.status = h->prev_status;
	regs.psw.mask = h->psw_mask;
	regs.psw.addr = h->psw_addr;
	memcpy(regs.gprs, h->gprs, sizeof(regs.gprs));
	rk_preempt = rk_bugs = rk_ctl_stores = rk_pre_calls = rk_post_calls = 0;
	rk_pre_ret = h->pre_ret;
	rk_extable_hit = h->extable_hit;
	rk_extable_fixup = h->extable_fixup;
	switch (which) {
	case 0:
		h->ret = kprobe_handler(&regs);
		break;
	case 1:
		h->ret = post_kprobe_handler(&regs);
		break;
	case 2:
		h->ret = kprobe_trap_handler(&regs, 0);
		break;
	default:
		rk_hit_probe = NULL;
		return -1;
	}
	rk_hit_probe = NULL;
	h->psw_mask = regs.psw.mask;
	h->psw_addr = regs.psw.addr;
	memcpy(h->gprs, regs.gprs, sizeof(regs.gprs));
	h->status_after = rk_kcb.kprobe_status;
	h->saved_imask_after = rk_kcb.kprobe_saved_imask;
	h->prev_status_after = rk_kcb.prev_kprobe.status;
	for (int i = 0; i < 4; i++) {
		if (rk_current == who[i])
			h->current_after = i;
		if (rk_kcb.prev_kprobe.kp == who[i])
			h->prev_after = i;
	}
	h->nmissed = p.nmissed;
	h->bugs = rk_bugs;
	h->pre_calls = rk_pre_calls;
	h->post_calls = rk_post_calls;
	h->preempt = rk_preempt;
	h->ctl_stores = rk_ctl_stores;
	return 0;
}

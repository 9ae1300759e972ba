// SPDX-License-Identifier: GPL-2.0
/*
 * Host build of upstream's ppc64 kprobes decisions, for the differential test
 * of the Rust ones (arch/powerpc/kernel/probes/*.rs).
 *
 * build.rs cuts the macros, helpers and functions that make the decisions out
 * of the tree into rk_macros.h, rk_pre.c, rk_kprobes.c and rk_optprobes.c.
 * The entry points below (rk_*) are what src/ffi.rs calls; the kernel
 * services the cut-out code calls (get_kprobe(), the slot caches,
 * patch_instruction(), emulate_step(), analyse_instr(), the symbol lookup)
 * answer from what the harness set and record what they were asked.
 *
 * arch_prepare_kprobe() reads the probed text, a host buffer of the harness
 * (rk_set_text()); arch_prepare_optimized_kprobe() only computes with the
 * probe's and the detour's addresses, so those are kernel addresses, and its
 * patch_instruction() writes land in rk_detour[].
 */

#include "rk_macros.h"
#include "rk_pre.c"

/* The fields of include/linux/kprobes.h's struct kprobe the arch code uses. */
#define KPROBE_FLAG_FTRACE 8

struct arch_specific_insn {
	kprobe_opcode_t *insn;
	int boostable;
};

struct kprobe;
typedef int (*kprobe_pre_handler_t)(struct kprobe *, struct pt_regs *);
typedef void (*kprobe_post_handler_t)(struct kprobe *, struct pt_regs *,
				      unsigned long flags);

struct kprobe {
	kprobe_opcode_t *addr;
	kprobe_opcode_t opcode;
	u32 flags;
	unsigned long nmissed;
	kprobe_pre_handler_t pre_handler;
	kprobe_post_handler_t post_handler;
	struct arch_specific_insn ainsn;
};

/* asm/kprobes.h's control block, and this CPU's state, for the handlers. */
struct prev_kprobe {
	struct kprobe *kp;
	unsigned long status;
	unsigned long saved_msr;
};

struct kprobe_ctlblk {
	unsigned long kprobe_status;
	unsigned long kprobe_saved_msr;
	struct prev_kprobe prev_kprobe;
};

static _Thread_local struct kprobe *rk_current;
static _Thread_local struct kprobe_ctlblk rk_kcb;
static _Thread_local int rk_preempt, rk_nofault_ok, rk_extable_hit;
static _Thread_local unsigned int rk_nofault_word;
static _Thread_local unsigned long rk_extable_fixup;

#define kprobe_running() (rk_current)
#define get_kprobe_ctlblk() (&rk_kcb)
#define __this_cpu_write(var, val) (rk_current = (val))
#define reset_current_kprobe() (rk_current = NULL)
#define preempt_disable() (rk_preempt++)
#define preempt_enable() (rk_preempt--)
#define user_mode(regs) (((regs)->msr & MSR_PR) != 0)
#define get_kernel_nofault(val, ptr) \
	({                           \
		(val) = rk_nofault_word;  \
		!rk_nofault_ok;      \
	})

struct exception_table_entry {
	int fixup;
};

static struct exception_table_entry rk_entry;

static const struct exception_table_entry *search_exception_tables(unsigned long addr)
{
	return rk_extable_hit ? &rk_entry : NULL;
}

static unsigned long extable_fixup(const struct exception_table_entry *e)
{
	return rk_extable_fixup;
}

static void kprobes_inc_nmissed_count(struct kprobe *p)
{
	p->nmissed++;
}

struct arch_optimized_insn {
	kprobe_opcode_t copied_insn[1];
	kprobe_opcode_t *insn;
};

struct optimized_kprobe {
	struct kprobe kp;
	struct arch_optimized_insn optinsn;
};

static int kprobe_ftrace(struct kprobe *p)
{
	return p->flags & KPROBE_FLAG_FTRACE;
}

struct kprobe *get_kprobe(void *addr);
kprobe_opcode_t *get_insn_slot(void);
kprobe_opcode_t *get_optinsn_slot(void);
void free_optinsn_slot(kprobe_opcode_t *slot, int dirty);

/* The rethook trampoline can_optimize() compares the probe with. */
static _Thread_local unsigned long rk_rethook;
#define arch_rethook_trampoline (*(char *)rk_rethook)

/* The detour template (optprobes_head.S): the harness's words and labels. */
#define RK_TEMPLATE_MAX 256
static _Thread_local kprobe_opcode_t rk_template[RK_TEMPLATE_MAX];
static _Thread_local long rk_tmpl_op, rk_tmpl_call, rk_tmpl_insn, rk_tmpl_emulate, rk_tmpl_ret,
	rk_tmpl_end;
#define optprobe_template_entry (rk_template)
#define optprobe_template_op_address (rk_template + rk_tmpl_op)
#define optprobe_template_call_handler (rk_template + rk_tmpl_call)
#define optprobe_template_insn (rk_template + rk_tmpl_insn)
#define optprobe_template_call_emulate (rk_template + rk_tmpl_emulate)
#define optprobe_template_ret (rk_template + rk_tmpl_ret)
#define optprobe_template_end (rk_template + rk_tmpl_end)

#include "rk_kprobes.c"
#include "rk_optprobes.c"

#include "rk_text.h" /* difftest-common/csrc */

_Thread_local unsigned long rk_page_size = 65536;

void rk_set_page_size(unsigned long size)
{
	rk_page_size = size;
}

/* Logging. */
#define RK_NOTES 4
static _Thread_local const char *rk_notes[RK_NOTES];
static _Thread_local int rk_nnotes, rk_bugs, rk_warns;

void rk_note(const char *fmt)
{
	if (rk_nnotes < RK_NOTES)
		rk_notes[rk_nnotes] = fmt;
	rk_nnotes++;
}

void rk_bug(void)
{
	rk_bugs++;
}

void rk_warn(const char *fmt)
{
	rk_warns++;
}

/* What was logged since the last call: the count, and the first format strings. */
int rk_take_notes(const char **out)
{
	int n = rk_nnotes;

	for (int i = 0; i < RK_NOTES; i++)
		out[i] = i < n ? rk_notes[i] : NULL;
	rk_nnotes = 0;
	return n;
}

/* get_kprobe(): the harness's previous probe, at the address it gave. */
static _Thread_local struct kprobe rk_prev;
static _Thread_local void *rk_prev_at, *rk_asked;
static _Thread_local int rk_prev_present;
static _Thread_local kprobe_opcode_t rk_prev_slot[2];

struct kprobe *get_kprobe(void *addr)
{
	rk_asked = addr;
	return rk_prev_present && addr == rk_prev_at ? &rk_prev : NULL;
}

/* The single-step slot. */
static _Thread_local _Alignas(8) kprobe_opcode_t rk_slot[2];
static _Thread_local int rk_no_slot;

kprobe_opcode_t *get_insn_slot(void)
{
	return rk_no_slot ? NULL : rk_slot;
}

/* The detour: kernel addresses [rk_opt_slot, rk_opt_slot + 4 * RK_TEMPLATE_MAX). */
static _Thread_local unsigned long rk_opt_slot, rk_freed, rk_flush_start, rk_flush_end;
static _Thread_local kprobe_opcode_t rk_detour[RK_TEMPLATE_MAX];
static _Thread_local int rk_freed_dirty, rk_stray;

kprobe_opcode_t *get_optinsn_slot(void)
{
	return (kprobe_opcode_t *)rk_opt_slot;
}

void free_optinsn_slot(kprobe_opcode_t *slot, int dirty)
{
	rk_freed = (unsigned long)slot;
	rk_freed_dirty = dirty;
}

int patch_instruction(u32 *addr, ppc_inst_t instr)
{
	unsigned long a = (unsigned long)addr;

	if (addr == rk_slot) {
		ppc_inst_write(addr, instr);
		return 0;
	}
	/* a - rk_opt_slot, not a < rk_opt_slot + ...: a slot may end past the top. */
	if (rk_opt_slot && a - rk_opt_slot < 4 * RK_TEMPLATE_MAX &&
	    !(a & 3) && !ppc_inst_prefixed(instr)) {
		rk_detour[(a - rk_opt_slot) / 4] = ppc_inst_val(instr);
		return 0;
	}
	rk_stray++;
	return 0;
}

void flush_icache_range(unsigned long start, unsigned long end)
{
	rk_flush_start = start;
	rk_flush_end = end;
}

/* emulate_step(): the harness's answer. */
static _Thread_local int rk_emulate_ret;
static _Thread_local ppc_inst_t rk_emulated;

int emulate_step(struct pt_regs *regs, ppc_inst_t instr)
{
	rk_emulated = instr;
	return rk_emulate_ret;
}

/* analyse_instr() and emulate_update_regs(): the harness's answer, and the frame seen. */
static _Thread_local int rk_analyse_ret, rk_analysed;
static _Thread_local unsigned long rk_analyse_nip;
static _Thread_local struct pt_regs rk_analyse_regs;
static _Thread_local ppc_inst_t rk_analyse_insn;

int analyse_instr(struct instruction_op *op, const struct pt_regs *regs,
		  ppc_inst_t instr)
{
	rk_analysed++;
	rk_analyse_regs = *regs;
	rk_analyse_insn = instr;
	return rk_analyse_ret;
}

void emulate_update_regs(struct pt_regs *regs, struct instruction_op *op)
{
	regs->nip = rk_analyse_nip;
}

static _Thread_local unsigned long rk_sym_callback, rk_sym_emulate;

unsigned long ppc_kallsyms_lookup_name(const char *name)
{
	if (!strcmp(name, "optimized_callback"))
		return rk_sym_callback;
	if (!strcmp(name, "emulate_step"))
		return rk_sym_emulate;
	return 0;
}

/* The word decisions. */
int rk_can_single_step(u32 w)
{
	return can_single_step(w);
}

int rk_is_trap(u32 w)
{
	return is_trap(w);
}

u32 rk_breakpoint(void)
{
	return BREAKPOINT_INSTRUCTION;
}

int rk_is_conditional_branch(u32 val, u32 suffix)
{
	return is_conditional_branch(ppc_inst_prefix(val, suffix));
}

int rk_is_offset_in_branch_range(long offset)
{
	return is_offset_in_branch_range(offset);
}

/* create_branch(); the instruction in *instr. */
int rk_create_branch(unsigned long addr, unsigned long target, int flags, u32 *instr)
{
	ppc_inst_t i;
	int rc = create_branch(&i, (const u32 *)addr, target, flags);

	*instr = ppc_inst_val(i);
	return rc;
}

/* ppc_function_entry() of the function at kaddr (a word of the text). */
unsigned long rk_function_entry(unsigned long kaddr)
{
	return rk_kaddr((void *)ppc_function_entry(rk_host(kaddr)));
}

/* arch_adjust_kprobe_addr(); *on_entry is what it stores. */
unsigned long rk_adjust_addr(unsigned long addr, unsigned long offset, int *on_entry)
{
	bool e = false;
	unsigned long r = (unsigned long)arch_adjust_kprobe_addr(addr, offset, &e);

	*on_entry = e;
	return r;
}

/* What arch_prepare_kprobe() did. */
struct rk_prepared {
	u32 opcode;
	int has_slot;
	u32 slot[2];
	int boostable;
	unsigned long asked; /* the address it looked a previous probe up at */
};

#define RK_POISON 0x5a5a5a5a

/*
 * arch_prepare_kprobe() at kaddr (a word of the installed text, or 1-3 bytes
 * after one), with a previous probe at kaddr - 4 when prev is 1 (2: on
 * ftrace) whose slot holds prev_word, and no free slot when no_slot.
 */
int rk_prepare(unsigned long kaddr, int prev, u32 prev_word, int no_slot,
	       struct rk_prepared *out)
{
	struct kprobe p = { 0 };
	int ret;

	p.addr = rk_host(kaddr);
	p.opcode = RK_POISON;
	p.ainsn.boostable = 7;
	rk_prev_present = prev != 0;
	rk_prev = (struct kprobe){ 0 };
	rk_prev.flags = prev == 2 ? KPROBE_FLAG_FTRACE : 0;
	rk_prev_slot[0] = prev_word;
	rk_prev_slot[1] = 0;
	rk_prev.ainsn.insn = prev == 2 ? NULL : rk_prev_slot;
	rk_prev_at = p.addr - 1;
	rk_asked = NULL;
	rk_no_slot = no_slot;
	rk_slot[0] = rk_slot[1] = RK_POISON;
	ret = arch_prepare_kprobe(&p);
	out->opcode = p.opcode;
	out->has_slot = p.ainsn.insn != NULL;
	out->slot[0] = rk_slot[0];
	out->slot[1] = rk_slot[1];
	out->boostable = p.ainsn.boostable;
	out->asked = rk_asked ? rk_kaddr(rk_asked) : 0;
	return ret;
}

/*
 * try_to_emulate() of a probe whose slot holds val (and suffix) and whose
 * boostable is *boostable, when emulate_step() returns emulate_ret; *bugs is
 * how often it called BUG().
 */
int rk_try_to_emulate(int *boostable, int emulate_ret, u32 val, u32 suffix,
		      int *bugs, u64 *emulated)
{
	_Alignas(8) kprobe_opcode_t slot[2] = { val, suffix };
	struct kprobe p = { 0 };
	struct pt_regs regs = { 0 };
	int ret;

	p.ainsn.insn = slot;
	p.ainsn.boostable = *boostable;
	rk_emulate_ret = emulate_ret;
	rk_emulated = ppc_inst(0);
	rk_bugs = 0;
	ret = try_to_emulate(&p, &regs);
	*boostable = p.ainsn.boostable;
	*bugs = rk_bugs;
	*emulated = ppc_inst_as_ulong(rk_emulated);
	return ret;
}

/* What arch_prepare_optimized_kprobe() was given and did. */
struct rk_opt {
	/* In. */
	unsigned long addr, rethook, analyse_nip, slot, callback, emulate;
	u32 insn_val, insn_suffix;
	int analyse_ret;
	/* Out. */
	unsigned long op, insn_after, freed, flush_start, flush_end;
	unsigned long analysed_nip, analysed_msr, analysed_trap, analysed_other;
	u64 analysed_insn;
	int analysed, freed_dirty, warns, stray;
	u32 detour[RK_TEMPLATE_MAX];
};

/* The template: n words and the labels' indices. */
int rk_set_template(const u32 *words, long n, long op, long call, long insn,
		    long emulate, long ret)
{
	if (n < 0 || n > RK_TEMPLATE_MAX)
		return -1;
	memcpy(rk_template, words, n * sizeof(u32));
	rk_tmpl_end = n;
	rk_tmpl_op = op;
	rk_tmpl_call = call;
	rk_tmpl_insn = insn;
	rk_tmpl_emulate = emulate;
	rk_tmpl_ret = ret;
	return 0;
}

int rk_prepare_optimized(struct rk_opt *o)
{
	_Alignas(8) kprobe_opcode_t slot[2] = { o->insn_val, o->insn_suffix };
	struct optimized_kprobe op = { 0 };
	struct kprobe p = { 0 };
	unsigned long other = 0;
	int ret;

	p.addr = (kprobe_opcode_t *)o->addr;
	p.ainsn.insn = slot;
	rk_rethook = o->rethook;
	rk_analyse_ret = o->analyse_ret;
	rk_analyse_nip = o->analyse_nip;
	rk_analysed = 0;
	rk_opt_slot = o->slot;
	rk_sym_callback = o->callback;
	rk_sym_emulate = o->emulate;
	rk_freed = rk_flush_start = rk_flush_end = 0;
	rk_freed_dirty = -1;
	rk_warns = rk_stray = 0;
	for (int i = 0; i < RK_TEMPLATE_MAX; i++)
		rk_detour[i] = RK_POISON;
	ret = arch_prepare_optimized_kprobe(&op, &p);
	o->op = (unsigned long)&op;
	o->insn_after = (unsigned long)op.optinsn.insn;
	o->freed = rk_freed;
	o->freed_dirty = rk_freed_dirty;
	o->flush_start = rk_flush_start;
	o->flush_end = rk_flush_end;
	o->analysed = rk_analysed;
	o->analysed_nip = rk_analyse_regs.nip;
	o->analysed_msr = rk_analyse_regs.msr;
	o->analysed_trap = rk_analyse_regs.trap;
	for (int i = 0; i < 32; i++)
		other |= rk_analyse_regs.gpr[i];
	other |= rk_analyse_regs.ctr | rk_analyse_regs.link | rk_analyse_regs.xer |
		 rk_analyse_regs.ccr | rk_analyse_regs.dar | rk_analyse_regs.result;
	o->analysed_other = other;
	o->analysed_insn = ppc_inst_as_ulong(rk_analyse_insn);
	o->warns = rk_warns;
	o->stray = rk_stray;
	memcpy(o->detour, rk_detour, sizeof(rk_detour));
	memset(&rk_analyse_regs, 0xff, sizeof(rk_analyse_regs));
	return ret;
}

int rk_within_optimized(unsigned long kp_addr, unsigned long addr)
{
	struct optimized_kprobe op = { 0 };

	op.kp.addr = (kprobe_opcode_t *)kp_addr;
	return arch_within_optimized_kprobe(&op, (kprobe_opcode_t *)addr);
}

unsigned long rk_mcount_insn_size(void)
{
	return MCOUNT_INSN_SIZE;
}

int rk_on_func_entry(unsigned long offset)
{
	return arch_kprobe_on_func_entry(offset);
}

/* A probe hit's state, before and after one of the handlers. */
struct rk_hit {
	/* In. */
	unsigned long addr, msr, nip, saved_msr, status;
	unsigned long prev_status, prev_saved_msr;
	u32 slot[2];
	int current, prev, has_post, nofault_ok, extable_hit, trapnr;
	unsigned int nofault_word;
	unsigned long extable_fixup;
	/* Out. */
	unsigned long slot_addr;
	unsigned long msr_after, nip_after, saved_msr_after, status_after;
	int current_after; /* 0 none, 1 the probe, 2 the previous one */
	int post_calls, preempt, ret;
	unsigned long nmissed;
};

static _Thread_local int rk_post_calls;

static void rk_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	rk_post_calls++;
}

/* Runs handler 0 kprobe_handler(), 1 kprobe_post_handler(), 2 kprobe_fault_handler(). */
int rk_hit(int which, struct rk_hit *h)
{
	static _Thread_local _Alignas(8) kprobe_opcode_t slot[2];
	struct kprobe p = { 0 }, prev = { 0 };
	struct pt_regs regs = { 0 };

	slot[0] = h->slot[0];
	slot[1] = h->slot[1];
	p.addr = (kprobe_opcode_t *)h->addr;
	p.ainsn.insn = slot;
	p.post_handler = h->has_post ? rk_post : NULL;
	h->slot_addr = (unsigned long)slot;
	regs.msr = h->msr;
	regs.nip = h->nip;
	rk_current = h->current ? &p : NULL;
	rk_kcb.kprobe_status = h->status;
	rk_kcb.kprobe_saved_msr = h->saved_msr;
	rk_kcb.prev_kprobe.kp = h->prev ? &prev : NULL;
	rk_kcb.prev_kprobe.status = h->prev_status;
	rk_kcb.prev_kprobe.saved_msr = h->prev_saved_msr;
	rk_preempt = 0;
	rk_post_calls = 0;
	rk_nofault_ok = h->nofault_ok;
	rk_nofault_word = h->nofault_word;
	rk_extable_hit = h->extable_hit;
	rk_extable_fixup = h->extable_fixup;
	/* kprobe_handler() finds the probe (when there is one) at nip. */
	rk_prev_present = h->current;
	rk_prev_at = (void *)h->nip;
	rk_prev = p;
	switch (which) {
	case 0:
		h->ret = kprobe_handler(&regs);
		break;
	case 1:
		h->ret = kprobe_post_handler(&regs);
		break;
	case 2:
		h->ret = kprobe_fault_handler(&regs, h->trapnr);
		break;
	default:
		return -1;
	}
	h->msr_after = regs.msr;
	h->nip_after = regs.nip;
	h->saved_msr_after = rk_kcb.kprobe_saved_msr;
	h->status_after = rk_kcb.kprobe_status;
	h->current_after = rk_current == &p ? 1 : rk_current == &prev ? 2 :
			   rk_current == &rk_prev ? 3 : rk_current ? 4 : 0;
	h->post_calls = rk_post_calls;
	h->preempt = rk_preempt;
	h->nmissed = p.nmissed + rk_prev.nmissed;
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Host build of upstream's x86 kprobes decisions, for the differential test
 * of the Rust ones (arch/x86/kernel/kprobes/*.rs).
 *
 * build.rs cuts the functions out of the Linux tree into rk_extracted.c; this
 * file provides what they expect from the kernel. The kernel state they read
 * (kallsyms, exception tables, kCFI traps, the probed text...) comes from the
 * Rust harness through the rk_env_*() callbacks, the same answers the Rust
 * side gets. Kernel addresses are plain numbers here: text is read through
 * rk_env_read(), and text_poke() records what it would write.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include <asm/insn.h>
#include <inat.c>
#include <insn.c>

/*
 * The decoder's own mode switch only works inside the kernel, and kernel text
 * is not mapped here: see rk_insn_decode_kernel().
 */
#undef insn_decode_kernel
#define insn_decode_kernel(_insn, _ptr) rk_insn_decode_kernel((_insn), (_ptr))

/* Kconfig, switchable at run time so one build covers every configuration. */
#undef IS_ENABLED
#define IS_ENABLED(CONFIG_option) (rk_cfg_##CONFIG_option)
int rk_cfg_CONFIG_PREEMPTION;
int rk_cfg_CONFIG_CFI_CLANG;
int rk_cfg_CONFIG_MITIGATION_RETPOLINE;
int rk_cfg_CONFIG_X86_KERNEL_IBT;
int rk_cfg_smap;
int rk_cfg_kgdb;
#define CONFIG_X86_64 1
/* Compiled in; kgdb_has_hit_break() answers only when rk_cfg_kgdb is set. */
#define CONFIG_KGDB 1

#include "kprobes_env.h"

typedef u8 kprobe_opcode_t;

#define nokprobe_inline inline
#define GFP_KERNEL 0
#define X86_FEATURE_SMAP (9 * 32 + 20)

static inline void pr_err(const char *fmt, ...)
{
}

static inline void *kzalloc(size_t size, int gfp)
{
	return calloc(1, size);
}

static inline void kfree(void *p)
{
	free(p);
}
#undef abs
#define abs(x) ({ long __x = (x); __x < 0 ? -__x : __x; })

#define INT3_INSN_SIZE 1
#define INT3_INSN_OPCODE 0xCC
#define CALL_INSN_SIZE 5
#define CALL_INSN_OPCODE 0xE8
#define JMP32_INSN_SIZE 5
#define JMP32_INSN_OPCODE 0xE9
#define DISP32_SIZE 4
#define MAX_OPTIMIZED_LENGTH (MAX_INSN_SIZE + DISP32_SIZE)

#define X86_EFLAGS_CF_BIT 0
#define X86_EFLAGS_PF_BIT 2
#define X86_EFLAGS_ZF_BIT 6
#define X86_EFLAGS_SF_BIT 7
#define X86_EFLAGS_IF_BIT 9
#define X86_EFLAGS_OF_BIT 11
#define X86_EFLAGS_CF (1UL << X86_EFLAGS_CF_BIT)
#define X86_EFLAGS_PF (1UL << X86_EFLAGS_PF_BIT)
#define X86_EFLAGS_ZF (1UL << X86_EFLAGS_ZF_BIT)
#define X86_EFLAGS_SF (1UL << X86_EFLAGS_SF_BIT)
#define X86_EFLAGS_IF (1UL << X86_EFLAGS_IF_BIT)
#define X86_EFLAGS_OF (1UL << X86_EFLAGS_OF_BIT)

struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

static inline unsigned long regs_get_register(struct pt_regs *regs,
					      unsigned int offset)
{
	return *(unsigned long *)((char *)regs + offset);
}

struct kprobe;

/* The fields of asm/kprobes.h's struct arch_specific_insn. */
struct arch_specific_insn {
	kprobe_opcode_t *insn;
	unsigned boostable:1;
	unsigned char size;
	union {
		unsigned char opcode;
		struct { unsigned char type; } jcc;
		struct { unsigned char type; unsigned char asize; } loop;
		struct { unsigned char reg; } indirect;
	};
	s32 rel32;
	void (*emulate_op)(struct kprobe *p, struct pt_regs *regs);
	int tp_len;
};

struct arch_optimized_insn {
	kprobe_opcode_t copied_insn[DISP32_SIZE];
	kprobe_opcode_t *insn;
	size_t size;
};

#define KPROBE_FLAG_OPTIMIZED 4

struct kprobe {
	kprobe_opcode_t *addr;
	void *post_handler;
	kprobe_opcode_t opcode;
	unsigned int flags;
	struct arch_specific_insn ainsn;
};

struct optimized_kprobe {
	struct kprobe kp;
	struct list_head list;
	struct arch_optimized_insn optinsn;
};

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

static inline int test_bit(long nr, const unsigned long *addr)
{
	return (addr[nr / 64] >> (nr % 64)) & 1;
}

/* Kernel addresses are in the upper half; anything else is a host buffer. */
static int copy_from_kernel_nofault(void *dst, const void *src, size_t size)
{
	unsigned long addr = (unsigned long)src;

	if (addr >= 0xffff800000000000UL)
		return rk_env_read(addr, dst, size) ? 0 : -EFAULT;
	memcpy(dst, src, size);
	return 0;
}

/*
 * Upstream decodes unmodified text in place; here a kernel address is decoded
 * from a copy. Callers that need the address (can_optimize()) set insn.kaddr
 * and insn.next_byte themselves, as upstream does for recovered bytes.
 */
static int rk_insn_decode_kernel(struct insn *insn, const void *ptr)
{
	static unsigned char text[MAX_INSN_SIZE];

	if ((unsigned long)ptr >= 0xffff800000000000UL) {
		if (copy_from_kernel_nofault(text, ptr, MAX_INSN_SIZE))
			return -EFAULT;
		ptr = text;
	}
	return insn_decode(insn, ptr, MAX_INSN_SIZE, INSN_MODE_64);
}

/*
 * The one other probe the harness may arm: get_kprobe() finds it where
 * rk_env_probe() says, armed and, if so, optimized (neither queued for
 * unoptimizing nor on the optimizing list).
 */
static struct optimized_kprobe rk_other;

static inline struct kprobe *get_kprobe(void *addr)
{
	unsigned char opcode, copied[DISP32_SIZE];
	int optimized;

	if (!rk_env_probe((unsigned long)addr, &opcode, &optimized, copied))
		return NULL;
	memset(&rk_other, 0, sizeof(rk_other));
	rk_other.kp.addr = addr;
	rk_other.kp.opcode = opcode;
	rk_other.kp.flags = optimized ? KPROBE_FLAG_OPTIMIZED : 0;
	memcpy(rk_other.optinsn.copied_insn, copied, DISP32_SIZE);
	rk_other.list.next = &rk_other.list;
	rk_other.list.prev = &rk_other.list;
	return &rk_other.kp;
}

static inline bool kprobe_optimized(struct kprobe *p)
{
	return p->flags & KPROBE_FLAG_OPTIMIZED;
}

static inline int kprobe_disarmed(struct kprobe *p)
{
	return 0;
}

static inline int list_empty(const struct list_head *head)
{
	return head->next == head;
}

static inline bool optprobe_queued_unopt(struct optimized_kprobe *op)
{
	return false;
}

static inline unsigned long ftrace_location(unsigned long ip)
{
	return rk_env_ftrace(ip) ? ip : 0;
}

static const unsigned char rk_nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
static const unsigned char * const x86_nops[] = { [5] = rk_nop5 };

static bool kallsyms_lookup_size_offset(unsigned long addr,
					unsigned long *symbolsize,
					unsigned long *offset)
{
	unsigned long size, off;

	if (!rk_env_lookup(addr, &size, &off))
		return false;
	if (symbolsize)
		*symbolsize = size;
	if (offset)
		*offset = off;
	return true;
}

static inline int search_exception_tables(unsigned long addr)
{
	return rk_env_extable(addr);
}

static inline int is_cfi_trap(unsigned long addr)
{
	return rk_env_cfi_trap(addr);
}

static inline int kgdb_has_hit_break(unsigned long addr)
{
	return rk_cfg_kgdb && rk_env_kgdb(addr);
}

static inline int alternatives_text_reserved(void *start, void *end)
{
	return rk_env_alternatives((unsigned long)start, (unsigned long)end);
}

static inline int ftrace_text_reserved(const void *start, const void *end)
{
	return rk_env_reserved((unsigned long)start, (unsigned long)end);
}

static inline int jump_label_text_reserved(void *start, void *end)
{
	return 0;
}

static inline int static_call_text_reserved(void *start, void *end)
{
	return 0;
}

static inline bool boot_cpu_has(int feature)
{
	return feature == X86_FEATURE_SMAP && rk_cfg_smap;
}

unsigned long rk_entry_text_start, rk_entry_text_end;
#define __entry_text_start ((char *)rk_entry_text_start)
#define __entry_text_end ((char *)rk_entry_text_end)

/* The instruction slot and text_poke(): record instead of writing. */
unsigned long rk_slot;
unsigned char rk_poked[512];
int rk_poked_len;

static inline kprobe_opcode_t *get_insn_slot(void)
{
	return (kprobe_opcode_t *)rk_slot;
}

static inline kprobe_opcode_t *get_optinsn_slot(void)
{
	return (kprobe_opcode_t *)rk_slot;
}

static inline void free_insn_slot(kprobe_opcode_t *slot, int dirty)
{
}

static inline void free_optinsn_slot(kprobe_opcode_t *slot, int dirty)
{
}

static inline void perf_event_text_poke(const void *addr,
					const void *old_bytes,
					unsigned int old_len,
					const void *new_bytes,
					unsigned int new_len)
{
}

static void text_poke(void *addr, const void *opcode, size_t len)
{
	if (len > sizeof(rk_poked))
		abort();
	memcpy(rk_poked, opcode, len);
	rk_poked_len = len;
}

/* The optprobe template: its bytes and offsets are inputs of the harness. */
unsigned char rk_tmpl[256];
unsigned long rk_tmpl_len, rk_tmpl_clac, rk_tmpl_val, rk_tmpl_call;
unsigned long rk_optimized_callback;
#define optprobe_template_entry (rk_tmpl)
#define optprobe_template_clac (rk_tmpl + rk_tmpl_clac)
#define optprobe_template_val (rk_tmpl + rk_tmpl_val)
#define optprobe_template_call (rk_tmpl + rk_tmpl_call)
#define optprobe_template_end (rk_tmpl + rk_tmpl_len)
#define optimized_callback ((void *)rk_optimized_callback)
#define MAX_OPTINSN_SIZE \
	(rk_tmpl_len + MAX_OPTIMIZED_LENGTH + JMP32_INSN_SIZE)

/* ibt.h's is_endbr() is constant false without CONFIG_X86_KERNEL_IBT. */
#define is_endbr rk_ibt_is_endbr
#include "rk_ibt.c"
#undef is_endbr
#define is_endbr(val) \
	(rk_cfg_CONFIG_X86_KERNEL_IBT && rk_ibt_is_endbr(val))
#include "rk_text-patching.c"
#include "rk_core.c"
#include "rk_opt.c"

/* The harness entry points. */

int rk_c_can_probe(unsigned long addr)
{
	return can_probe(addr);
}

/* recover_probed_instruction() and the MAX_INSN_SIZE bytes it points to. */
int rk_c_recover(unsigned long addr, unsigned char *out)
{
	kprobe_opcode_t buf[MAX_INSN_SIZE];
	unsigned long at = recover_probed_instruction(buf, addr);

	if (!at)
		return 0;
	return !copy_from_kernel_nofault(out, (void *)at, MAX_INSN_SIZE);
}

int rk_c_can_optimize(unsigned long addr)
{
	return can_optimize(addr);
}

unsigned long rk_c_adjust_kprobe_addr(unsigned long addr, unsigned long offset,
				      int *on_func_entry)
{
	bool entry = false;
	kprobe_opcode_t *ret;

	ret = arch_adjust_kprobe_addr(addr, offset, &entry);
	*on_func_entry = entry;
	return (unsigned long)ret;
}

/* What arch_prepare_kprobe() left in the kprobe. */
struct rk_c_kprobe {
	int ret;
	int tp_len;
	unsigned char poked[MAX_INSN_SIZE];
	unsigned char opcode;
	unsigned char boostable;
	unsigned char size;
	/* 0 none, then ifmodifiers, ret, call, jmp, jcc, loop, call/jmp indirect */
	unsigned char emulate;
	unsigned char op_byte;
	unsigned char loop_asize;
	int rel32;
};

static struct kprobe rk_probe;

int rk_c_prepare_kprobe(unsigned long addr, unsigned long slot, int post,
			struct rk_c_kprobe *out)
{
	struct kprobe *p = &rk_probe;
	void (*op)(struct kprobe *p, struct pt_regs *regs);

	memset(p, 0, sizeof(*p));
	memset(out, 0, sizeof(*out));
	p->addr = (kprobe_opcode_t *)addr;
	p->post_handler = post ? (void *)1 : NULL;
	rk_slot = slot;
	rk_poked_len = 0;
	out->ret = arch_prepare_kprobe(p);
	if (out->ret)
		return out->ret;
	out->tp_len = p->ainsn.tp_len;
	memcpy(out->poked, rk_poked, rk_poked_len);
	out->opcode = p->opcode;
	out->boostable = p->ainsn.boostable;
	out->size = p->ainsn.size;
	op = p->ainsn.emulate_op;
	out->emulate = !op ? 0 :
		op == kprobe_emulate_ifmodifiers ? 1 :
		op == kprobe_emulate_ret ? 2 :
		op == kprobe_emulate_call ? 3 :
		op == kprobe_emulate_jmp ? 4 :
		op == kprobe_emulate_jcc ? 5 :
		op == kprobe_emulate_loop ? 6 :
		op == kprobe_emulate_call_indirect ? 7 :
		op == kprobe_emulate_jmp_indirect ? 8 : 255;
	out->op_byte = p->ainsn.opcode;
	out->loop_asize = p->ainsn.loop.asize;
	out->rel32 = p->ainsn.rel32;
	return 0;
}

/*
 * Runs the emulation of the probe rk_c_prepare_kprobe() last prepared on
 * @regs, whose sp points into host memory.
 */
void rk_c_emulate(struct pt_regs *regs)
{
	if (rk_probe.ainsn.emulate_op)
		rk_probe.ainsn.emulate_op(&rk_probe, regs);
}

struct rk_c_optprobe {
	int ret;
	int size;
	int len;
	int check;
	unsigned char poked[512];
};

static struct optimized_kprobe rk_optprobe;

int rk_c_prepare_optimized_kprobe(unsigned long addr, unsigned long slot,
				  struct rk_c_optprobe *out)
{
	struct optimized_kprobe *op = &rk_optprobe;

	memset(op, 0, sizeof(*op));
	memset(out, 0, sizeof(*out));
	op->kp.addr = (kprobe_opcode_t *)addr;
	rk_slot = slot;
	rk_poked_len = 0;
	out->ret = arch_prepare_optimized_kprobe(op, NULL);
	if (out->ret)
		return out->ret;
	out->size = op->optinsn.size;
	out->len = rk_poked_len;
	memcpy(out->poked, rk_poked, rk_poked_len);
	out->check = arch_check_optimized_kprobe(op);
	return 0;
}

/* The address arch_prepare_optimized_kprobe() loads as the handler's argument. */
unsigned long rk_c_optprobe_addr(void)
{
	return (unsigned long)&rk_optprobe;
}

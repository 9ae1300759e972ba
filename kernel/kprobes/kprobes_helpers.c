// SPDX-License-Identifier: GPL-2.0
/*
 * C half of the Rust kprobes core (CONFIG_KPROBES_RUST).
 *
 * Two kinds of code live here, and nothing else:
 *
 *  - the __weak defaults of kernel/kprobes.c that an architecture may
 *    override at link time (UPSTREAM-CONTRACT 7.1.3): a weak symbol must
 *    really be weak, which is plain in C;
 *  - thin wrappers around what exists only as C macros or static inlines
 *    (list and hlist RCU primitives on struct kprobe, per-CPU accessors,
 *    arch macros such as flush_insn_slot() and MAX_OPTINSN_SIZE), so that
 *    the Rust glue never re-implements them (UPSTREAM-CONTRACT 7.2).
 *
 * The logic stays in the Rust files beside this one; no wrapper decides
 * anything. Every wrapper is named rkp_<C name> after the primitive it
 * wraps. Wrappers used on the probe-hit path are __kprobes.
 */

#define pr_fmt(fmt) "kprobes: " fmt

#include <linux/cpu.h>
#include <linux/debugfs.h>
#include <linux/execmem.h>
#include <linux/ftrace.h>
#include <linux/hash.h>
#include <linux/irq_work.h>
#include <linux/jump_label.h>
#include <linux/kallsyms.h>
#include <linux/kthread.h>
#include <linux/kdebug.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/memory.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/objpool.h>
#include <linux/kstrtox.h>
#include <linux/perf_event.h>
#include <linux/preempt.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sysctl.h>
#include <linux/workqueue.h>
#include <asm/sections.h>

#include "kprobes_helpers.h"
#ifdef CONFIG_KPROBES_ON_FTRACE
#include "../trace/trace.h"
#endif

/* As in kernel/kprobes.c (store.rs has the same value). */
#define KPROBE_HASH_BITS 6

/* ---- __weak defaults (identical semantics to kernel/kprobes.c) ---- */

/* The offset is deliberately not folded into the result. */
kprobe_opcode_t *__weak kprobe_lookup_name(const char *name,
					   unsigned int offset)
{
	return (kprobe_opcode_t *)kallsyms_lookup_name(name);
}

kprobe_opcode_t *__weak arch_adjust_kprobe_addr(unsigned long addr,
						unsigned long offset,
						bool *on_func_entry)
{
	*on_func_entry = !offset;
	return (kprobe_opcode_t *)(addr + offset);
}

bool __weak arch_within_kprobe_blacklist(unsigned long addr)
{
	return addr >= (unsigned long)__kprobes_text_start &&
	       addr < (unsigned long)__kprobes_text_end;
}

int __weak kprobe_exceptions_notify(struct notifier_block *self,
				    unsigned long val, void *data)
{
	return NOTIFY_DONE;
}
NOKPROBE_SYMBOL(kprobe_exceptions_notify);

int __weak arch_kprobe_get_kallsym(unsigned int *symnum, unsigned long *value,
				   char *type, char *sym)
{
	return -ERANGE;
}

int __init __weak arch_populate_kprobe_blacklist(void)
{
	return 0;
}

#ifdef __ARCH_WANT_KPROBES_INSN_SLOT
/* Within +/- 2GB of kernel and module text, for rip-relative fixups. */
void __weak *alloc_insn_page(void)
{
	return execmem_alloc(EXECMEM_KPROBES, PAGE_SIZE);
}

void rkp_free_insn_page(void *page)
{
	execmem_free(page);
}

#ifdef CONFIG_OPTPROBES
void __weak *alloc_optinsn_page(void)
{
	return alloc_insn_page();
}

void __weak free_optinsn_page(void *page)
{
	rkp_free_insn_page(page);
}
#endif
#endif

#if defined(CONFIG_KRETPROBES) && !defined(CONFIG_KRETPROBE_ON_RETHOOK)
void __weak arch_kretprobe_fixup_return(struct pt_regs *regs,
					kprobe_opcode_t *correct_ret_addr)
{
}
#endif

/* ---- links (callers hold kprobe_mutex, or read under RCU) ---- */

#ifdef CONFIG_LIST_HARDENED
/* With list checking on, list_head updates go through C's checked inlines. */
void rkp_list_add_rcu(struct list_head *new, struct list_head *head)
{
	list_add_rcu(new, head);
}

void rkp_list_del_rcu(struct list_head *entry)
{
	list_del_rcu(entry);
}
#endif

/* ---- per-CPU state and arch macros ---- */

struct kprobe *__kprobes rkp_kprobe_running(void)
{
	return kprobe_running();
}

void __kprobes rkp_set_current_kprobe(struct kprobe *p)
{
	__this_cpu_write(current_kprobe, p);
}

void __kprobes rkp_set_kprobe_status(unsigned long status)
{
	get_kprobe_ctlblk()->kprobe_status = status;
}

/* An empty macro on x86, arm64, riscv, powerpc and s390, where Rust skips the call. */
void rkp_flush_insn_slot(struct kprobe *p)
{
	flush_insn_slot(p);
}

/*
 * kretprobe_blacklist[i], or NULL at its terminator. Arches without the array
 * define kretprobe_blacklist_size as the constant 0, and the reference to the
 * array must then fold away, as it does in kernel/kprobes.c.
 */
struct kretprobe_blackpoint *rkp_kretprobe_blackpoint(int i)
{
	if (!kretprobe_blacklist_size || i < 0 || i >= kretprobe_blacklist_size)
		return NULL;
	if (!kretprobe_blacklist[i].name)
		return NULL;
	return &kretprobe_blacklist[i];
}

/* ---- storage the Rust core drives (all guarded by kprobe_mutex) ---- */

/* Not static: the Rust core takes it with mutex_lock() directly. */
DEFINE_MUTEX(kprobe_mutex);
/*
 * Not static: the Rust core walks the buckets itself on the probe-hit path
 * (an RCU read of each ->next, as hlist_for_each_entry_rcu), without a call per node.
 */
struct hlist_head rkp_kprobe_table[1 << KPROBE_HASH_BITS];
#ifdef CONFIG_OPTPROBES
/*
 * The optimizer's queues (optimizing, unoptimizing, freeing), in the order of
 * the Rust core's queue ids. Not static: the Rust core links an aggregate into
 * one inline, as C's list_add() is, where the list is not hardened.
 */
struct list_head rkp_opt_queues[3] = {
	LIST_HEAD_INIT(rkp_opt_queues[0]),
	LIST_HEAD_INIT(rkp_opt_queues[1]),
	LIST_HEAD_INIT(rkp_opt_queues[2]),
};
#endif

#ifdef CONFIG_PREEMPT_COUNT
/* Without a preempt count both are barrier(), which the Rust core emits itself. */
void rkp_preempt_disable(void)
{
	preempt_disable();
}

void rkp_preempt_enable(void)
{
	preempt_enable();
}
#endif

bool rkp_try_module_get(struct module *mod)
{
	return try_module_get(mod);
}

bool rkp_module_is_coming(struct module *mod)
{
	return module_is_coming(mod);
}

/* A zeroed aggregate: an optimized_kprobe with OPTPROBES, else a kprobe. */
struct kprobe *rkp_alloc_aggr_kprobe(kprobe_opcode_t *addr)
{
#ifdef CONFIG_OPTPROBES
	struct optimized_kprobe *op = kzalloc(sizeof(*op), GFP_KERNEL);

	if (!op)
		return NULL;
	INIT_LIST_HEAD(&op->list);
	op->kp.addr = addr;
	return &op->kp;
#else
	struct kprobe *ap = kzalloc(sizeof(*ap), GFP_KERNEL);

	if (ap)
		ap->addr = addr;
	return ap;
#endif
}

#ifdef CONFIG_OPTPROBES
static struct optimized_kprobe *to_op(struct kprobe *ap)
{
	return container_of(ap, struct optimized_kprobe, kp);
}

static struct list_head *rkp_queue(int q)
{
	return &rkp_opt_queues[q];
}

void rkp_queue_add(struct kprobe *ap, int q)
{
	list_add(&to_op(ap)->list, rkp_queue(q));
}

void rkp_queue_del_init(struct kprobe *ap)
{
	list_del_init(&to_op(ap)->list);
}

void rkp_queue_move(struct kprobe *ap, int q)
{
	list_move(&to_op(ap)->list, rkp_queue(q));
}

bool rkp_queue_empty(int q)
{
	return list_empty(rkp_queue(q));
}

bool rkp_queue_contains(int q, struct kprobe *ap)
{
	struct optimized_kprobe *op;

	list_for_each_entry(op, rkp_queue(q), list)
		if (op == to_op(ap))
			return true;
	return false;
}

/* First entry of queue q, or the entry after ap; NULL at the end. */
struct kprobe *rkp_queue_next(int q, struct kprobe *ap)
{
	struct list_head *head = rkp_queue(q);
	struct list_head *next = ap ? to_op(ap)->list.next : head->next;

	return next == head ? NULL :
		&list_entry(next, struct optimized_kprobe, list)->kp;
}

#ifndef CONFIG_KPROBES_RUST_ARCH
/* The C arch's list-based hooks; a Rust arch walks the queues itself. */
void rkp_arch_optimize_kprobes(void)
{
	arch_optimize_kprobes(&rkp_opt_queues[0]);
}

void rkp_arch_unoptimize_kprobes(void)
{
	arch_unoptimize_kprobes(&rkp_opt_queues[1], &rkp_opt_queues[2]);
}
#endif

/* The optimizer work item; its body is the Rust kprobe_optimizer(). */

static void rkp_optimizer_work_fn(struct work_struct *work)
{
	rkp_kprobe_optimizer();
}

static DECLARE_DELAYED_WORK(optimizing_work, rkp_optimizer_work_fn);
#define OPTIMIZE_DELAY 5

void rkp_kick_kprobe_optimizer(void)
{
	/*
	 * Every caller holds kprobe_mutex. A pending work has not started
	 * (PENDING is cleared before it runs) and takes kprobe_mutex first,
	 * so it finds what the caller queued: schedule_delayed_work() would
	 * return false. Skipping it saves its irq-off test-and-set once per
	 * probe of an unregistration batch.
	 */
	lockdep_assert_held(&kprobe_mutex);
	if (delayed_work_pending(&optimizing_work))
		return;
	schedule_delayed_work(&optimizing_work, OPTIMIZE_DELAY);
}

void rkp_flush_kprobe_optimizer(void)
{
	flush_delayed_work(&optimizing_work);
	/* The work might not have been queued yet: relax, as C does. */
	cpu_relax();
}
#endif /* CONFIG_OPTPROBES */

/* ---- the blacklist (kprobe_mutex or init for writers, RCU for readers) ---- */

/* Not static: the Rust core walks it inline (registration checks every entry). */
LIST_HEAD(rkp_kprobe_blacklist);

int rkp_blacklist_add_tail(unsigned long start, unsigned long end)
{
	struct kprobe_blacklist_entry *ent = kmalloc(sizeof(*ent), GFP_KERNEL);

	if (!ent)
		return -ENOMEM;
	ent->start_addr = start;
	ent->end_addr = end;
	INIT_LIST_HEAD(&ent->list);
	list_add_tail_rcu(&ent->list, &rkp_kprobe_blacklist);
	return 0;
}

void rkp_blacklist_remove(struct kprobe_blacklist_entry *ent)
{
	list_del_rcu(&ent->list);
	kfree_rcu(ent, rcu);
}

#if defined(CONFIG_PREEMPT_RCU) || defined(CONFIG_PREEMPT_COUNT) || defined(CONFIG_LOCKDEP)
/* Elsewhere rcu_read_lock() is barrier(), which the Rust core emits itself. */
void rkp_rcu_read_lock(void)
{
	rcu_read_lock();
}

void rkp_rcu_read_unlock(void)
{
	rcu_read_unlock();
}
#endif

void rkp_synchronize_rcu_tasks(void)
{
	synchronize_rcu_tasks();
}

/* An inline with Tiny RCU. */
void rkp_cond_synchronize_rcu(unsigned long cookie)
{
	cond_synchronize_rcu(cookie);
}

unsigned int rkp_num_possible_cpus(void)
{
	return num_possible_cpus();
}

/* ---- growing kretprobe pools (issue 40; Rust only) ---- */

#ifdef CONFIG_KRETPROBES
/*
 * The workers of the growing pools: a kthread per CPU, at the lowest
 * SCHED_FIFO priority, created for the CPUs online at the first growing
 * kretprobe's registration (and for those onlined since, at the next) and
 * kept. A kick runs the worker of the CPU it was raised on, which preempts
 * whatever runs there as soon as the irq_work returns: the calls that find a
 * pool empty until the worker has run are missed, a worker on another CPU
 * must first be woken across CPUs (milliseconds under QEMU TCG, where one
 * host thread runs every vCPU in turn), and callers that fill a pool are
 * many: it must not wait behind them, nor for a workqueue to create a
 * kworker. A CPU with no worker of its own uses the first one created; a
 * worker whose CPU goes offline is moved by the scheduler and goes on
 * running what is queued on it.
 */
static DEFINE_PER_CPU(struct kthread_worker *, rkp_grow_worker);
static struct kthread_worker *rkp_grow_worker_any;
static DEFINE_MUTEX(rkp_grow_worker_lock);

static bool rkp_grow_workers_get(void)
{
	struct kthread_worker *w;
	unsigned int cpu;

	mutex_lock(&rkp_grow_worker_lock);
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		if (per_cpu(rkp_grow_worker, cpu))
			continue;
		w = kthread_create_worker_on_cpu(cpu, 0, "kretprobe-grow/%u", cpu);
		if (IS_ERR(w))
			continue;
		sched_set_fifo_low(w->task);
		/* Both pair with the kick's READ_ONCE(): the worker first. */
		smp_store_release(per_cpu_ptr(&rkp_grow_worker, cpu), w);
		if (!rkp_grow_worker_any)
			smp_store_release(&rkp_grow_worker_any, w); /* as above */
	}
	cpus_read_unlock();
	w = rkp_grow_worker_any;
	mutex_unlock(&rkp_grow_worker_lock);
	return !!w;
}

/*
 * Runs in hard interrupt context on the CPU a probe hit (maybe in NMI)
 * raised it on. A worker existed before @g did, and @g before its probe was
 * armed.
 */
static void rkp_kretprobe_grow_irq(struct irq_work *kick)
{
	struct rkp_kretprobe_grow *g = container_of(kick, struct rkp_kretprobe_grow, kick);
	struct rkp_kretprobe_grow_work *gw = this_cpu_ptr(g->work);

	if (!gw->worker)
		gw->worker = READ_ONCE(*this_cpu_ptr(&rkp_grow_worker)) ?:
			     READ_ONCE(rkp_grow_worker_any);
	kthread_queue_work(gw->worker, &gw->work);
}

static void rkp_kretprobe_grow_work_fn(struct kthread_work *work)
{
	struct rkp_kretprobe_grow *g =
		container_of(work, struct rkp_kretprobe_grow_work, work)->g;

	mutex_lock(&g->grow_lock);
	rkp_kretprobe_grow_work(g->rp);
	mutex_unlock(&g->grow_lock);
}

/* At registration, before the probe is armed: no pool beyond rp->rh yet. */
struct rkp_kretprobe_grow *rkp_kretprobe_grow_alloc(struct kretprobe *rp, unsigned int cap,
						   unsigned int total)
{
	struct rkp_kretprobe_grow *g;
	unsigned int cpu;

	if (!rkp_grow_workers_get())
		return NULL;
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return NULL;
	g->work = alloc_percpu(struct rkp_kretprobe_grow_work);
	if (!g->work) {
		kfree(g);
		return NULL;
	}
	for_each_possible_cpu(cpu) {
		struct rkp_kretprobe_grow_work *gw = per_cpu_ptr(g->work, cpu);

		kthread_init_work(&gw->work, rkp_kretprobe_grow_work_fn);
		gw->g = g;
	}
	g->rp = rp;
	g->cap = cap;
	g->total = total;
	mutex_init(&g->lock);
	mutex_init(&g->grow_lock);
	init_irq_work(&g->kick, rkp_kretprobe_grow_irq);
	return g;
}

/*
 * Stops @pool from being used by its kretprobe, as unregistration does with
 * rp->rh or rp->rph: rethook_free() (which frees it after a grace period,
 * its in-flight nodes when they return), or the holder loses its kretprobe
 * (instances returning after this are dropped from the pool).
 */
static void rkp_kretprobe_pool_detach(struct rkp_kretprobe_pool *pool)
{
#ifdef CONFIG_KRETPROBE_ON_RETHOOK
	rethook_free(pool);
#else
	rcu_assign_pointer(pool->rp, NULL);
#endif
}

/*
 * After the detach and a grace period: free_rp_inst() of a holder, whose
 * objpool frees it with its last object. A rethook freed itself.
 */
static void rkp_kretprobe_pool_release(struct rkp_kretprobe_pool *pool)
{
#ifndef CONFIG_KRETPROBE_ON_RETHOOK
	objpool_fini(&pool->pool);
#endif
}

/* Probe-hit path, any context (NMI included): irq_work_queue() is NMI-safe. */
void rkp_kretprobe_grow_kick(struct rkp_kretprobe_grow *g)
{
	irq_work_queue(&g->kick);
}
NOKPROBE_SYMBOL(rkp_kretprobe_grow_kick);

/*
 * The worker: publish @pool (@n instances of rp; a holder gets its rp here)
 * as the next pool, or free it when the kretprobe is being unregistered or
 * has every pool.
 */
int rkp_kretprobe_grow_publish(struct rkp_kretprobe_grow *g, struct rkp_kretprobe_pool *pool,
			       unsigned int n)
{
	int ret = -ENOENT;

	mutex_lock(&g->lock);
	if (!g->dying && g->npools < RKP_GROW_MAX_POOLS) {
#ifndef CONFIG_KRETPROBE_ON_RETHOOK
		rcu_assign_pointer(pool->rp, g->rp);
#endif
		WRITE_ONCE(g->pools[g->npools], pool);
		WRITE_ONCE(g->total, g->total + n);
		/* Pairs with the hit path's acquire: pools[] before npools. */
		smp_store_release(&g->npools, g->npools + 1);
		ret = 0;
	}
	mutex_unlock(&g->lock);
	if (ret) {
		rkp_kretprobe_pool_detach(pool);
		rkp_kretprobe_pool_release(pool);
	}
	return ret;
}

/*
 * Unregistration, once the probe is out of the text and the hash, where
 * rp->rh or rp->rph is detached: no pool is published any more, and each
 * extra pool is detached as that one is.
 */
void rkp_kretprobe_grow_detach(struct rkp_kretprobe_grow *g)
{
	unsigned int i, n;

	mutex_lock(&g->lock);
	g->dying = true;
	n = g->npools;
	mutex_unlock(&g->lock);
	for (i = 0; i < n; i++)
		rkp_kretprobe_pool_detach(g->pools[i]);
}

/*
 * After the grace period that follows the detach (or a failed registration):
 * no hit reads @g or kicks it any more; wait for a kick and a worker still
 * running, release the extra pools as the first one is, then free @g.
 */
void rkp_kretprobe_grow_free(struct rkp_kretprobe_grow *g)
{
	unsigned int i, cpu;

	irq_work_sync(&g->kick);
	for_each_possible_cpu(cpu)
		kthread_cancel_work_sync(&per_cpu_ptr(g->work, cpu)->work);
	if (!g->dying)
		rkp_kretprobe_grow_detach(g);
	for (i = 0; i < g->npools; i++)
		rkp_kretprobe_pool_release(g->pools[i]);
	free_percpu(g->work);
	mutex_destroy(&g->grow_lock);
	mutex_destroy(&g->lock);
	kfree(g);
}
#endif

/* ---- kretprobe instances on the objpool path (!KRETPROBE_ON_RETHOOK) ---- */

#if defined(CONFIG_KRETPROBES) && !defined(CONFIG_KRETPROBE_ON_RETHOOK)
/* Set by init_kprobes(); kprobe_flush_task() does nothing before. */
static bool kprobes_initialized;

bool __kprobes rkp_kprobes_initialized(void)
{
	return kprobes_initialized;
}

struct kretprobe_holder *rkp_kzalloc_kretprobe_holder(void)
{
	return kzalloc(sizeof(struct kretprobe_holder), GFP_KERNEL);
}

void rkp_kretprobe_holder_set_rp(struct kretprobe_holder *rph,
				 struct kretprobe *rp)
{
	rcu_assign_pointer(rph->rp, rp);
}

struct kretprobe_instance *__kprobes
rkp_objpool_pop(struct kretprobe_holder *rph)
{
	return objpool_pop(&rph->pool);
}

void __kprobes rkp_objpool_push(struct kretprobe_instance *ri,
				struct kretprobe_holder *rph)
{
	objpool_push(ri, &rph->pool);
}

struct llist_head *__kprobes rkp_current_kretprobe_instances(void)
{
	return &current->kretprobe_instances;
}

struct llist_head *__kprobes rkp_task_kretprobe_instances(struct task_struct *tk)
{
	return &tk->kretprobe_instances;
}

unsigned long __kprobes rkp_kretprobe_trampoline_addr(void)
{
	return (unsigned long)kretprobe_trampoline_addr();
}

void __kprobes rkp_instruction_pointer_set(struct pt_regs *regs,
					   unsigned long addr)
{
	instruction_pointer_set(regs, addr);
}

/* WARN_ON_ONCE() keeps one flag per call site, hence one helper per site. */
void __kprobes rkp_warn_kretprobe_no_cursor(void)
{
	WARN_ON_ONCE(1);
}

void __kprobes rkp_warn_kretprobe_frame_mismatch(void)
{
	WARN_ON_ONCE(1);
}

void __noreturn __kprobes rkp_kretprobe_ret_addr_bug(void)
{
	pr_err("kretprobe: Return address not found, not execute handler. Maybe there is a bug in the kernel.\n");
	BUG();
}
#endif

#ifdef CONFIG_KRETPROBE_ON_RETHOOK
/* kretprobe_rethook_handler(): the rethook's data is NULL (it is broken). */
void __kprobes rkp_warn_kretprobe_rethook_handler(void)
{
	WARN_ON_ONCE(1);
}
#endif

/* ---- per-CPU busy marker and the module-facing exports ---- */

static struct kprobe kprobe_busy = {
	.addr = (void *)get_kprobe,
};

void kprobe_busy_begin(void)
{
	struct kprobe_ctlblk *kcb;

	preempt_disable();
	__this_cpu_write(current_kprobe, &kprobe_busy);
	kcb = get_kprobe_ctlblk();
	kcb->kprobe_status = KPROBE_HIT_ACTIVE;
}

void kprobe_busy_end(void)
{
	__this_cpu_write(current_kprobe, NULL);
	preempt_enable();
}

/* Defined in Rust (kernel/kprobes/glue/exports.rs). */
EXPORT_SYMBOL_GPL(register_kprobe);
EXPORT_SYMBOL_GPL(register_kprobes);
EXPORT_SYMBOL_GPL(unregister_kprobe);
EXPORT_SYMBOL_GPL(unregister_kprobes);
EXPORT_SYMBOL_GPL(register_kretprobe);
EXPORT_SYMBOL_GPL(register_kretprobes);
EXPORT_SYMBOL_GPL(unregister_kretprobe);
EXPORT_SYMBOL_GPL(unregister_kretprobes);
EXPORT_SYMBOL_GPL(enable_kprobe);
EXPORT_SYMBOL_GPL(disable_kprobe);

/* ---- instruction-slot caches (INSN_SLOT); the allocator itself is Rust ---- */

#ifdef __ARCH_WANT_KPROBES_INSN_SLOT
struct kprobe_insn_cache kprobe_insn_slots = {
	.mutex = __MUTEX_INITIALIZER(kprobe_insn_slots.mutex),
	.alloc = alloc_insn_page,
	.free = rkp_free_insn_page,
	.sym = KPROBE_INSN_PAGE_SYM,
	.pages = LIST_HEAD_INIT(kprobe_insn_slots.pages),
	.insn_size = MAX_INSN_SIZE,
	.nr_garbage = 0,
};

#ifdef CONFIG_OPTPROBES
struct kprobe_insn_cache kprobe_optinsn_slots = {
	.mutex = __MUTEX_INITIALIZER(kprobe_optinsn_slots.mutex),
	.alloc = alloc_optinsn_page,
	.free = free_optinsn_page,
	.sym = KPROBE_OPTINSN_PAGE_SYM,
	.pages = LIST_HEAD_INIT(kprobe_optinsn_slots.pages),
	/* .insn_size is set from MAX_OPTINSN_SIZE at init */
	.nr_garbage = 0,
};
#endif

/*
 * The page descriptors of a cache (kernel/kprobes.c's struct kprobe_insn_page)
 * are defined and walked by the Rust glue (kernel/kprobes/glue/insn_slot.rs);
 * these helpers are the parts that need C: locking, allocation, the RCU list
 * updates and the perf ksymbol events. They take the descriptor's list node
 * and text page as arguments, so C never needs its layout.
 */
/* size bytes for a descriptor and, through the cache, a text page for it; NULL on failure. */
void *rkp_insn_page_alloc(struct kprobe_insn_cache *c, size_t size, void **insns)
{
	void *kip = kmalloc(size, GFP_KERNEL);

	if (!kip)
		return NULL;
	*insns = c->alloc();
	if (!*insns) {
		kfree(kip);
		return NULL;
	}
	return kip;
}

void rkp_insn_page_add(struct kprobe_insn_cache *c, struct list_head *list, void *insns)
{
	list_add_rcu(list, &c->pages);
	perf_event_ksymbol(PERF_RECORD_KSYMBOL_TYPE_OOL, (unsigned long)insns,
			   PAGE_SIZE, false, c->sym);
}

void rkp_insn_page_remove(struct kprobe_insn_cache *c, struct list_head *list, void *insns)
{
	perf_event_ksymbol(PERF_RECORD_KSYMBOL_TYPE_OOL, (unsigned long)insns,
			   PAGE_SIZE, true, c->sym);
	list_del_rcu(list);
}

#endif /* __ARCH_WANT_KPROBES_INSN_SLOT */

/* ---- the WARNs and messages of kernel/kprobes.c; the Rust core decides when ---- */

/*
 * One function per WARN site of kernel/kprobes.c, named rkp_warn_<the C
 * function holding it>: WARN_ON_ONCE() and WARN_ONCE() keep one flag per
 * call site, and a splat names the same C function on both cores. The
 * kretprobe hit-path sites are above (rkp_warn_kretprobe_*).
 */
void rkp_warn___get_insn_slot(void)
{
	/* kip->nused was broken (and is repaired). */
	WARN_ON(1);
}

void rkp_warn___free_insn_slot(void)
{
	/* A slot no page holds, or a double free. */
	WARN_ON(1);
}

void rkp_warn_do_free_cleaned_kprobes(void)
{
	WARN_ON_ONCE(1);
}

void rkp_warn_optimize_kprobe(void)
{
	WARN_ON_ONCE(1);
}

void rkp_warn_reuse_unused_kprobe(void)
{
	WARN_ON_ONCE(1);
}

void rkp_warn___disarm_kprobe_ftrace(bool unregister, unsigned long addr, int ret)
{
	if (unregister)
		WARN(1, "Failed to unregister kprobe-ftrace (error %d)\n", ret);
	else
		WARN_ONCE(1, "Failed to disarm kprobe-ftrace at %pS (error %d)\n",
			  (void *)addr, ret);
}

/* A static inline in C: one flag in register_kprobe(), one in register_kretprobe(). */
void rkp_warn_warn_kprobe_rereg(bool kretprobe)
{
	if (kretprobe)
		WARN_ON_ONCE(1);
	else
		WARN_ON_ONCE(1);
}

void rkp_warn___unregister_kprobe_top(void)
{
	WARN_ON(1);
}

/* Rust only: register_kprobes() as one batch (register.rs, register_kprobes_batched). */
void rkp_warn_ftrace_batch_leftover(int err)
{
	WARN_ONCE(1, "Failed to arm kprobe-ftrace left by a rolled-back batch (error %d)\n", err);
}

/* The messages of kernel/kprobes.c that the Rust core decides on. */
void rkp_pr_populate_blacklist_failed(int err)
{
	pr_err("Failed to populate blacklist (error %d), kprobes not restricted, be careful using them!\n",
	       err);
}

void rkp_pr_optimization(bool enabled)
{
	if (enabled)
		pr_info("kprobe jump-optimization is enabled. All kprobes are optimized if possible.\n");
	else
		pr_info("kprobe jump-optimization is disabled. All kprobes are based on software breakpoint.\n");
}

void rkp_pr_globally(bool enabled, unsigned int errors, unsigned int total)
{
	if (enabled && errors)
		pr_warn("Kprobes globally enabled, but failed to enable %d out of %d probes. Please check which kprobes are kept disabled via debugfs.\n",
			errors, total);
	else if (enabled)
		pr_info("Kprobes globally enabled\n");
	else if (errors)
		pr_warn("Kprobes globally disabled, but failed to disable %d out of %d probes. Please check which kprobes are kept enabled via debugfs.\n",
			errors, total);
	else
		pr_info("Kprobes globally disabled\n");
}

/* ---- lockdep assertions where kernel/kprobes.c has them ---- */

#ifdef CONFIG_LOCKDEP
void rkp_lockdep_assert_kprobe_mutex_held(void)
{
	lockdep_assert_held(&kprobe_mutex);
}

void rkp_lockdep_assert_text_mutex_held(void)
{
	lockdep_assert_held(&text_mutex);
}

void rkp_lockdep_assert_cpus_held(void)
{
	lockdep_assert_cpus_held();
}
#endif

/* ---- init and notifiers: C registers, the Rust core decides ---- */

unsigned long rkp_dereference_symbol_descriptor(unsigned long addr)
{
	return (unsigned long)dereference_symbol_descriptor((void *)addr);
}

static struct notifier_block kprobe_exceptions_nb = {
	.notifier_call = kprobe_exceptions_notify,
	.priority = 0x7fffffff /* notified first */
};

#ifdef CONFIG_MODULES
static int kprobes_module_callback(struct notifier_block *nb,
				   unsigned long val, void *data)
{
	struct module *mod = data;
	int event;

	switch (val) {
	case MODULE_STATE_COMING:
		event = 0;
		break;
	case MODULE_STATE_LIVE:
		event = 1;
		break;
	case MODULE_STATE_GOING:
		event = 2;
		break;
	default:
		return NOTIFY_DONE;
	}
	rkp_kprobes_module_event(mod, event, mod->kprobe_blacklist,
				 mod->num_kprobe_blacklist,
				 (unsigned long)mod->kprobes_text_start,
				 mod->kprobes_text_size,
				 (unsigned long)mod->noinstr_text_start,
				 mod->noinstr_text_size);
	return NOTIFY_DONE;
}

static struct notifier_block kprobe_module_nb = {
	.notifier_call = kprobes_module_callback,
	.priority = 0
};
#endif

/* Called by the Rust init_kprobes() after the blacklist, before arch_init_kprobes(). */
void rkp_init_kretprobe_blacklist(void)
{
	int i;

	for (i = 0; rkp_kretprobe_blackpoint(i); i++) {
		struct kretprobe_blackpoint *bp = rkp_kretprobe_blackpoint(i);

		bp->addr = kprobe_lookup_name(bp->name, 0);
		if (!bp->addr)
			pr_err("Failed to lookup symbol '%s' for kretprobe blacklist. Maybe the target function is removed or renamed.\n",
			       bp->name);
	}
}

/* Likewise, before arch_init_kprobes(), which may prepare (and optimize) a probe. */
void rkp_init_optinsn_slots(void)
{
#if defined(CONFIG_OPTPROBES) && defined(__ARCH_WANT_KPROBES_INSN_SLOT)
	kprobe_optinsn_slots.insn_size = MAX_OPTINSN_SIZE;
#endif
}

#if defined(CONFIG_OPTPROBES) && defined(CONFIG_SYSCTL)
static void __init kprobe_sysctls_init(void);
#else
static inline void kprobe_sysctls_init(void) { }
#endif

/*
 * kernel/kprobes.c's init_kprobes(): the blacklists, the global arm state,
 * the optprobe slot size and arch_init_kprobes() in the Rust core, in that
 * order; then the notifiers and the sysctl.
 */
static int __init init_kprobes(void)
{
	int err;

	err = rkp_init_kprobes(__start_kprobe_blacklist, __stop_kprobe_blacklist);
	if (!err)
		err = register_die_notifier(&kprobe_exceptions_nb);
#ifdef CONFIG_MODULES
	if (!err)
		err = register_module_notifier(&kprobe_module_nb);
#endif
#if defined(CONFIG_KRETPROBES) && !defined(CONFIG_KRETPROBE_ON_RETHOOK)
	kprobes_initialized = (err == 0);
#endif
	kprobe_sysctls_init();
	return err;
}
early_initcall(init_kprobes);

#ifdef CONFIG_OPTPROBES
static int __init init_optprobes(void)
{
	/* After early boot: the optimizer needs synchronize_rcu_tasks() and ksoftirqd. */
	rkp_optimize_all_kprobes();
	return 0;
}
subsys_initcall(init_optprobes);
#endif

/* ---- kprobes on ftrace: the two ftrace_ops and the kill switch ---- */

#ifdef CONFIG_KPROBES_ON_FTRACE
static struct ftrace_ops kprobe_ftrace_ops __read_mostly = {
	.func = kprobe_ftrace_handler,
	.flags = FTRACE_OPS_FL_SAVE_REGS,
};

static struct ftrace_ops kprobe_ipmodify_ops __read_mostly = {
	.func = kprobe_ftrace_handler,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY,
};

/* Read directly by the arch ftrace handlers. */
bool kprobe_ftrace_disabled;

void kprobe_ftrace_kill(void)
{
	kprobe_ftrace_disabled = true;
}

bool rkp_kprobe_ftrace_disabled(void)
{
	return READ_ONCE(kprobe_ftrace_disabled);
}

/* ops: 0 for kprobe_ftrace_ops, 1 for kprobe_ipmodify_ops. */
static struct ftrace_ops *rkp_ftrace_ops(int ops)
{
	return ops ? &kprobe_ipmodify_ops : &kprobe_ftrace_ops;
}

int rkp_ftrace_set_filter_ip(int ops, unsigned long addr, bool remove)
{
	return ftrace_set_filter_ip(rkp_ftrace_ops(ops), addr, remove, 0);
}

/*
 * Rust only: the filter additions of a register_kprobes() batch, or the removals of an
 * unregister_kprobes() batch, in one update.
 */
int rkp_ftrace_set_filter_ips(int ops, const unsigned long *addrs, unsigned int cnt,
			      bool remove)
{
	/* ftrace only reads @addrs (__ftrace_match_addr()); its prototype lacks the const. */
	return ftrace_set_filter_ips(rkp_ftrace_ops(ops), (unsigned long *)addrs, cnt, remove, 0);
}

/*
 * Rust only: whether @addr is in the filter of kprobes' ftrace_ops @ops, so that removing it
 * can only fail for memory. Only kprobes changes these filters, under kprobe_mutex.
 */
bool rkp_ftrace_filter_has(int ops, unsigned long addr)
{
	struct ftrace_ops *o = rkp_ftrace_ops(ops);
	struct ftrace_hash *hash;
	bool ret;

	/* Never given a filter: ftrace_ops_init() has not even set func_hash yet. */
	if (!(o->flags & FTRACE_OPS_FL_INITIALIZED))
		return false;
	mutex_lock(&o->func_hash->regex_lock);
	hash = rcu_dereference_protected(o->func_hash->filter_hash,
					 lockdep_is_held(&o->func_hash->regex_lock));
	ret = !ftrace_hash_empty(hash) && ftrace_lookup_ip(hash, addr);
	mutex_unlock(&o->func_hash->regex_lock);
	return ret;
}

int rkp_register_ftrace_function(int ops)
{
	return register_ftrace_function(rkp_ftrace_ops(ops));
}

int rkp_unregister_ftrace_function(int ops)
{
	return unregister_ftrace_function(rkp_ftrace_ops(ops));
}
#endif /* CONFIG_KPROBES_ON_FTRACE */

/* ---- dump_kprobe, debugfs and sysctl: files and messages here, bodies in Rust ---- */

void dump_kprobe(struct kprobe *kp)
{
	char buf[KSYM_SYMBOL_LEN + 128];

	rkp_dump_kprobe(kp, buf, sizeof(buf));
	pr_err("%s", buf);
}
NOKPROBE_SYMBOL(dump_kprobe);

#ifdef CONFIG_DEBUG_FS
static int kprobes_list_show(struct seq_file *m, void *v)
{
	preempt_disable();
	rkp_show_kprobes(m, kallsyms_show_value(m->file->f_cred));
	preempt_enable();
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kprobes_list);

/* Rust only: the probes that missed, by cause (Documentation/trace/kprobes.rst). */
static int kprobes_missed_show(struct seq_file *m, void *v)
{
	preempt_disable();
	rkp_show_missed(m, kallsyms_show_value(m->file->f_cred));
	preempt_enable();
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kprobes_missed);

static int kprobes_blacklist_show(struct seq_file *m, void *v)
{
	rkp_show_blacklist(m, kallsyms_show_value(m->file->f_cred));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kprobes_blacklist);

static ssize_t read_enabled_file_bool(struct file *file, char __user *user_buf,
				      size_t count, loff_t *ppos)
{
	char buf[3] = { rkp_kprobes_all_disarmed() ? '0' : '1', '\n', 0 };

	return simple_read_from_buffer(user_buf, count, ppos, buf, 2);
}

static ssize_t write_enabled_file_bool(struct file *file, const char __user *user_buf,
				       size_t count, loff_t *ppos)
{
	bool enable;
	int ret, err;

	ret = kstrtobool_from_user(user_buf, count, &enable);
	if (ret)
		return ret;

	/* The core logs "Kprobes globally enabled/disabled" (rkp_pr_globally()). */
	err = rkp_set_all_kprobes(enable);
	if (err)
		return err;
	return count;
}

static const struct file_operations fops_kp = {
	.read = read_enabled_file_bool,
	.write = write_enabled_file_bool,
	.llseek = default_llseek,
};

static int __init debugfs_kprobe_init(void)
{
	struct dentry *dir = debugfs_create_dir("kprobes", NULL);

	debugfs_create_file("list", 0400, dir, NULL, &kprobes_list_fops);
	debugfs_create_file("enabled", 0600, dir, NULL, &fops_kp);
	debugfs_create_file("blacklist", 0400, dir, NULL, &kprobes_blacklist_fops);
	debugfs_create_file("missed", 0400, dir, NULL, &kprobes_missed_fops);
	return 0;
}
late_initcall(debugfs_kprobe_init);
#endif /* CONFIG_DEBUG_FS */

#if defined(CONFIG_OPTPROBES) && defined(CONFIG_SYSCTL)
static DEFINE_MUTEX(kprobe_sysctl_mutex);
static int sysctl_kprobes_optimization;

static int proc_kprobes_optimization_handler(const struct ctl_table *table, int write,
					     void *buffer, size_t *length, loff_t *ppos)
{
	int ret;

	mutex_lock(&kprobe_sysctl_mutex);
	sysctl_kprobes_optimization = rkp_kprobes_allow_optimization() ? 1 : 0;
	ret = proc_dointvec_minmax(table, write, buffer, length, ppos);
	rkp_kprobes_optimization_sysctl(sysctl_kprobes_optimization);
	mutex_unlock(&kprobe_sysctl_mutex);
	return ret;
}

static struct ctl_table kprobe_sysctls[] = {
	{
		.procname	= "kprobes-optimization",
		.data		= &sysctl_kprobes_optimization,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_kprobes_optimization_handler,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
};

static void __init kprobe_sysctls_init(void)
{
	register_sysctl_init("debug", kprobe_sysctls);
}
#endif

/* debug.kretprobe-grow: the grow_max of new r: events without a maxactive. */
static int sysctl_kretprobe_grow;

int kretprobe_grow_default(void)
{
	return READ_ONCE(sysctl_kretprobe_grow);
}

#if defined(CONFIG_KRETPROBES) && defined(CONFIG_SYSCTL)
/* One objpool's most objects: a larger grow_max fails the registration. */
static int kretprobe_grow_limit = OBJPOOL_NR_OBJECT_MAX;

static struct ctl_table kretprobe_grow_sysctls[] = {
	{
		.procname	= "kretprobe-grow",
		.data		= &sysctl_kretprobe_grow,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &kretprobe_grow_limit,
	},
};

static int __init kretprobe_grow_sysctl_init(void)
{
	register_sysctl_init("debug", kretprobe_grow_sysctls);
	return 0;
}
late_initcall(kretprobe_grow_sysctl_init);
#endif

#ifdef CONFIG_KPROBES_RUST_ARCH
/*
 * What every Rust arch layer's hit path needs from C, where upstream has a
 * copy in each arch's kprobes.c: this CPU's kprobe state (for the arches
 * whose kernel crate has no inline this_cpu_ptr()), the WARNs of a state the
 * state machine never reaches, and the irqentry text the arches blacklist.
 */
void rkp_arch_this_cpu(struct kprobe_ctlblk **kcb, struct kprobe ***cur)
{
	*kcb = this_cpu_ptr(&kprobe_ctlblk);
	*cur = this_cpu_ptr(&current_kprobe);
}
NOKPROBE_SYMBOL(rkp_arch_this_cpu);

/* reenter_kprobe()'s default case: a status the state machine never sets. */
void rkp_arch_warn_bad_status(void)
{
	WARN_ON(1);
}
NOKPROBE_SYMBOL(rkp_arch_warn_bad_status);

/* kprobe_fault_handler(): a fault in the step slot while not stepping. */
void rkp_arch_warn_fault_status(void)
{
	WARN_ON(1);
}
NOKPROBE_SYMBOL(rkp_arch_warn_fault_status);

/* [__irqentry_text_start, __irqentry_text_end), which arches blacklist. */
void rkp_irqentry_text(unsigned long *start, unsigned long *end)
{
	*start = (unsigned long)__irqentry_text_start;
	*end = (unsigned long)__irqentry_text_end;
}
#endif /* CONFIG_KPROBES_RUST_ARCH */

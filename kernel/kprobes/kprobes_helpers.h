/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of the C half of the Rust kprobes core (kprobes_helpers.c),
 * for -Wmissing-prototypes and for the Rust glue's extern block.
 */
#ifndef _KERNEL_KPROBES_HELPERS_H
#define _KERNEL_KPROBES_HELPERS_H

#include <linux/irq_work.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/memory.h>
#include <linux/mutex.h>
#include <linux/rethook.h>
#include <linux/workqueue.h>

struct module;
struct task_struct;

void rkp_list_add_rcu(struct list_head *new, struct list_head *head);
void rkp_list_del_rcu(struct list_head *entry);
struct kprobe *rkp_kprobe_running(void);
void rkp_set_current_kprobe(struct kprobe *p);
void rkp_set_kprobe_status(unsigned long status);
void rkp_flush_insn_slot(struct kprobe *p);
struct kretprobe_blackpoint *rkp_kretprobe_blackpoint(int i);
extern struct mutex kprobe_mutex;
extern struct hlist_head rkp_kprobe_table[];
extern struct list_head rkp_kprobe_blacklist;
void rkp_preempt_disable(void);
void rkp_preempt_enable(void);
bool rkp_try_module_get(struct module *mod);
bool rkp_module_is_coming(struct module *mod);
struct kprobe *rkp_alloc_aggr_kprobe(kprobe_opcode_t *addr);
int rkp_blacklist_add_tail(unsigned long start, unsigned long end);
void rkp_blacklist_remove(struct kprobe_blacklist_entry *ent);
void rkp_rcu_read_lock(void);
void rkp_rcu_read_unlock(void);
unsigned int rkp_num_possible_cpus(void);
void rkp_synchronize_rcu_tasks(void);
void rkp_cond_synchronize_rcu(unsigned long cookie);
unsigned long rkp_dereference_symbol_descriptor(unsigned long addr);

#if defined(CONFIG_KRETPROBES) && !defined(CONFIG_KRETPROBE_ON_RETHOOK)
bool rkp_kprobes_initialized(void);
struct kretprobe_holder *rkp_kzalloc_kretprobe_holder(void);
void rkp_kretprobe_holder_set_rp(struct kretprobe_holder *rph,
				 struct kretprobe *rp);
struct kretprobe_instance *rkp_objpool_pop(struct kretprobe_holder *rph);
void rkp_objpool_push(struct kretprobe_instance *ri,
		      struct kretprobe_holder *rph);
struct llist_head *rkp_current_kretprobe_instances(void);
struct llist_head *rkp_task_kretprobe_instances(struct task_struct *tk);
unsigned long rkp_kretprobe_trampoline_addr(void);
void rkp_instruction_pointer_set(struct pt_regs *regs, unsigned long addr);
void rkp_warn_kretprobe_no_cursor(void);
void rkp_warn_kretprobe_frame_mismatch(void);
void __noreturn rkp_kretprobe_ret_addr_bug(void);
#endif

#ifdef CONFIG_KRETPROBE_ON_RETHOOK
void rkp_warn_kretprobe_rethook_handler(void);
#endif

#ifdef CONFIG_KRETPROBES
/* kretprobe_grow::GROW_MAX_POOLS: the extra pools of one growing kretprobe. */
#define RKP_GROW_MAX_POOLS 16

/* The kind of a kretprobe's instance pool: rp->rh's, or rp->rph's. */
#ifdef CONFIG_KRETPROBE_ON_RETHOOK
#define rkp_kretprobe_pool rethook
#else
#define rkp_kretprobe_pool kretprobe_holder
#endif

/*
 * A growing kretprobe's work item on one CPU: queued on the worker its
 * first kick there chose, and on that one only (as kthread_queue_work()
 * requires), set and read by that CPU's kicks only.
 */
struct rkp_kretprobe_grow_work {
	struct kthread_work work;
	struct kthread_worker *worker;
	struct rkp_kretprobe_grow *g;
};

/*
 * A growing kretprobe's extra pools (issue 40), rp->grow, tried in order
 * after its first one (rp->rh or rp->rph). On the objpool path each extra
 * pool is a kretprobe_holder of its own, whose instances point back to it:
 * an instance goes back to the pool it came from, is dropped from it once
 * the kretprobe is gone, and the holder goes with its pool's last object,
 * as rp->rph does. total, in_flight, wanted and kick_from (the in_flight
 * count from which a hit kicks the worker) are atomics of the Rust glue
 * (glue/grow.rs); pools[] up to npools, npools and dying change under lock
 * only, npools last with a release. A kick queues work on the kicking CPU's
 * worker (a work item per possible CPU); grow_lock keeps two workers from
 * growing the same pools at once.
 */
struct rkp_kretprobe_grow {
	struct kretprobe *rp;
	unsigned int cap;
	unsigned int total;
	unsigned int in_flight;
	unsigned int wanted;
	unsigned int kick_from;
	unsigned int npools;
	bool dying;
	struct rkp_kretprobe_pool *pools[RKP_GROW_MAX_POOLS];
	struct mutex lock;		/* pools[], npools, dying */
	struct mutex grow_lock;		/* one worker at a time grows */
	struct irq_work kick;
	struct rkp_kretprobe_grow_work __percpu *work;
};

struct rkp_kretprobe_grow *rkp_kretprobe_grow_alloc(struct kretprobe *rp, unsigned int cap,
						   unsigned int total);
void rkp_kretprobe_grow_kick(struct rkp_kretprobe_grow *g);
int rkp_kretprobe_grow_publish(struct rkp_kretprobe_grow *g, struct rkp_kretprobe_pool *pool,
			       unsigned int n);
void rkp_kretprobe_grow_detach(struct rkp_kretprobe_grow *g);
void rkp_kretprobe_grow_free(struct rkp_kretprobe_grow *g);
/* Defined in Rust (glue/grow.rs). */
void rkp_kretprobe_grow_work(struct kretprobe *rp);
#endif
void rkp_warn___get_insn_slot(void);
void rkp_warn___free_insn_slot(void);
void rkp_warn_do_free_cleaned_kprobes(void);
void rkp_warn_optimize_kprobe(void);
void rkp_warn_reuse_unused_kprobe(void);
void rkp_warn___disarm_kprobe_ftrace(bool unregister, unsigned long addr, int ret);
void rkp_warn_warn_kprobe_rereg(bool kretprobe);
void rkp_warn___unregister_kprobe_top(void);
void rkp_warn_ftrace_batch_leftover(int err);
void rkp_pr_populate_blacklist_failed(int err);
void rkp_pr_optimization(bool enabled);
void rkp_pr_globally(bool enabled, unsigned int errors, unsigned int total);
void rkp_lockdep_assert_kprobe_mutex_held(void);
void rkp_lockdep_assert_text_mutex_held(void);
void rkp_lockdep_assert_cpus_held(void);
void rkp_init_kretprobe_blacklist(void);
void rkp_init_optinsn_slots(void);

/* Defined in Rust (kernel/kprobes/glue/). */
int rkp_init_kprobes(unsigned long *start, unsigned long *end);
void rkp_kprobes_module_event(struct module *mod, int event, unsigned long *blacklist,
			      unsigned int nblacklist, unsigned long kprobes_text,
			      unsigned long kprobes_text_size, unsigned long noinstr_text,
			      unsigned long noinstr_text_size);
void rkp_optimize_all_kprobes(void);
void rkp_dump_kprobe(struct kprobe *kp, char *buf, size_t len);
struct seq_file;
void rkp_show_kprobes(struct seq_file *m, bool show_value);
void rkp_show_blacklist(struct seq_file *m, bool show_value);
void rkp_show_missed(struct seq_file *m, bool show_value);
bool rkp_kprobes_all_disarmed(void);
int rkp_set_all_kprobes(bool enable);
bool rkp_kprobes_allow_optimization(void);
void rkp_kprobes_optimization_sysctl(bool value);

void rkp_free_insn_page(void *page);
void *rkp_insn_page_alloc(struct kprobe_insn_cache *c, size_t size, void **insns);
void rkp_insn_page_add(struct kprobe_insn_cache *c, struct list_head *list, void *insns);
void rkp_insn_page_remove(struct kprobe_insn_cache *c, struct list_head *list, void *insns);

#ifdef CONFIG_OPTPROBES
extern struct list_head rkp_opt_queues[3];
void rkp_queue_add(struct kprobe *ap, int q);
void rkp_queue_del_init(struct kprobe *ap);
void rkp_queue_move(struct kprobe *ap, int q);
bool rkp_queue_empty(int q);
bool rkp_queue_contains(int q, struct kprobe *ap);
struct kprobe *rkp_queue_next(int q, struct kprobe *ap);
void rkp_arch_optimize_kprobes(void);
void rkp_arch_unoptimize_kprobes(void);
void rkp_kick_kprobe_optimizer(void);
void rkp_flush_kprobe_optimizer(void);
void rkp_kprobe_optimizer(void);
#endif

#ifdef CONFIG_KPROBES_ON_FTRACE
bool rkp_kprobe_ftrace_disabled(void);
int rkp_ftrace_set_filter_ip(int ops, unsigned long addr, bool remove);
int rkp_ftrace_set_filter_ips(int ops, const unsigned long *addrs, unsigned int cnt,
			      bool remove);
bool rkp_ftrace_filter_has(int ops, unsigned long addr);
int rkp_register_ftrace_function(int ops);
int rkp_unregister_ftrace_function(int ops);
#endif

#ifdef CONFIG_KPROBES_RUST_ARCH
void rkp_arch_this_cpu(struct kprobe_ctlblk **kcb, struct kprobe ***cur);
void rkp_arch_warn_bad_status(void);
void rkp_arch_warn_fault_status(void);
void rkp_irqentry_text(unsigned long *start, unsigned long *end);
#endif

#endif /* _KERNEL_KPROBES_HELPERS_H */

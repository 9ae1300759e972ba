/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of the C half of the Rust kprobes core (kprobes_helpers.c),
 * for -Wmissing-prototypes and for the Rust glue's extern block.
 */
#ifndef _KERNEL_KPROBES_HELPERS_H
#define _KERNEL_KPROBES_HELPERS_H

#include <linux/kprobes.h>

void rkp_hlist_add_head_rcu(struct kprobe *p, struct hlist_head *head);
void rkp_hlist_del_rcu(struct kprobe *p);
void rkp_hlist_replace_rcu(struct kprobe *old, struct kprobe *new);
void rkp_init_hlist_node(struct kprobe *p);
void rkp_init_list_head(struct kprobe *p);
void rkp_list_add_rcu(struct kprobe *p, struct kprobe *ap);
void rkp_list_del_rcu(struct kprobe *p);
void rkp_list_del(struct kprobe *p);
bool rkp_list_empty(struct kprobe *p);
bool rkp_list_is_singular(struct kprobe *p);
struct kprobe *rkp_list_next_entry(struct kprobe *p);
struct kprobe *rkp_hlist_first_rcu(struct hlist_head *head);
struct kprobe *rkp_hlist_next_rcu(struct kprobe *p);
struct kprobe *rkp_list_first_child_rcu(struct kprobe *ap);
struct kprobe *rkp_list_next_child_rcu(struct kprobe *ap, struct kprobe *kp);
struct kprobe *rkp_kprobe_running(void);
void rkp_set_current_kprobe(struct kprobe *p);
void rkp_set_kprobe_status(unsigned long status);
void rkp_flush_insn_slot(struct kprobe *p);
unsigned int rkp_hash_ptr(void *addr);
struct kretprobe_blackpoint *rkp_kretprobe_blackpoint(int i);

#ifdef __ARCH_WANT_KPROBES_INSN_SLOT
void rkp_free_insn_page(void *page);
size_t rkp_max_insn_size(void);
#endif

#ifdef CONFIG_OPTPROBES
size_t rkp_max_optinsn_size(void);
size_t rkp_max_optimized_length(void);
int rkp_arch_prepared_optinsn(struct kprobe *ap);
#endif

#endif /* _KERNEL_KPROBES_HELPERS_H */

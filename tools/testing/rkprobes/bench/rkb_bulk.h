/* SPDX-License-Identifier: GPL-2.0 */
/* What rkb_main.c and rkb_bulk.c (the bulk registration rows) share. */
#ifndef RKB_BULK_H
#define RKB_BULK_H

#include <linux/timex.h>
#include <linux/types.h>

struct dentry;

/* rkb_mf.S (module rkprobes_bench_mf): never-called rkb_mf_0000 ... rkb_mf_9999. */
#define RKB_MF_FUNCS		10000

/* rkb_main.c */
unsigned int rkb_reps(void);
cycles_t rkb_start_at_tick(void);
void rkb_print_reg(const char *what, const u64 *reg, const u64 *unreg,
		   unsigned int n);

/* rkb_bulk.c */
int rkb_bulk_init(struct dentry *dir);
void rkb_bulk_exit(void);
int rkb_cmd_bulk_validate(char *args);
int rkb_cmd_bulk(char *args);
int rkb_cmd_bulk_unreg(char *args);

#endif /* RKB_BULK_H */

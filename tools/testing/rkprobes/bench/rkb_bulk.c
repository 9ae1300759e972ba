// SPDX-License-Identifier: GPL-2.0
/*
 * The bulk registration rows of rkprobes_bench: register_kprobes() and
 * unregister_kprobes() of 100, 1000 and 10000 kprobes given by symbol name,
 * one per function, and register_kretprobes()/unregister_kretprobes() of
 * 1000, as tools attaching to every function that matches a pattern do.
 *
 * Two kinds of functions:
 * - vmlinux: /init writes candidate names to debugfs "syms", one per line,
 *   evenly spread over the kernel's text (/proc/kallsyms); the untimed
 *   "bulk-validate" registers each alone, disabled, and keeps those that
 *   register (the same on both cores: the blacklist and the other checks
 *   decide). A batch of n takes n of them, evenly spread. Most are ftrace
 *   sites, so their probes are armed through ftrace.
 * - module: rkb_mf_0000 ... rkb_mf_9999 of rkb_mf.S, in the module
 *   rkprobes_bench_mf that /init loads for these rows, found only through
 *   that module's symbol table; int3 probes.
 *
 * "bulk <vmlinux|module|kretprobe> <n>" times register_kprobes() (or
 * register_kretprobes() on module functions) and then the unregistration,
 * each from a tick, `reps` times (once for 1000 probes or more). Every
 * probe must come back with the address it had the first time. With a
 * third word, "split", it registers once and leaves the batch registered;
 * "bulk-unreg <kind> <n>" then times its unregistration as "bulk" does
 * (for `rkprobes profile`, which traces the unregistration alone). Results:
 *   RKB bulkvalid <kept> <candidates> <failed> <first errno>
 *   RKB reg bulk<v|m|r><n> <n> <register totals> <unregister totals>
 *   RKB bulkhits bulk<v|m|r><n> <handler runs while the batches were armed>
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "rkb_bulk.h"

#define RKB_BULK_MAX		10000
#define RKB_BULK_MAX_NAMES	32768
#define RKB_BULK_KRETPROBES	1000
#define RKB_BULK_MAXACTIVE	2
/* A batch this large or larger is timed once (C takes seconds of guest time for it). */
#define RKB_BULK_ONCE		1000

static char **rkb_names;		/* candidates, then the valid ones first */
static unsigned int rkb_nr_names, rkb_nr_valid;
static bool rkb_validated;
static char rkb_partial[KSYM_NAME_LEN];	/* a name cut between two writes */
static unsigned int rkb_partial_len;
static char (*rkb_mf_names)[16];
static struct kprobe *rkb_bulk_kps;
static struct kprobe **rkb_bulk_kp_ptrs;
static struct kretprobe *rkb_bulk_krps;
static struct kretprobe **rkb_bulk_krp_ptrs;
static void **rkb_bulk_addrs;
static unsigned long rkb_bulk_hits;
static u64 rkb_bulk_reg[16], rkb_bulk_unreg[16];
/* A batch "bulk ... split" left registered for "bulk-unreg": kind and size, 0 if none. */
static char rkb_split_kind;
static unsigned int rkb_split_n;

static int rkb_bulk_pre(struct kprobe *p, struct pt_regs *regs)
{
	rkb_bulk_hits++;
	return 0;
}

static int rkb_bulk_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	rkb_bulk_hits++;
	return 0;
}

static int rkb_add_name(const char *name, unsigned int len)
{
	if (!len)
		return 0;
	if (rkb_nr_names == RKB_BULK_MAX_NAMES || len >= KSYM_NAME_LEN)
		return -E2BIG;
	rkb_names[rkb_nr_names] = kmemdup_nul(name, len, GFP_KERNEL);
	if (!rkb_names[rkb_nr_names])
		return -ENOMEM;
	rkb_nr_names++;
	return 0;
}

/* Writes to "syms": names, one per line; a line may span two writes. */
static ssize_t rkb_syms_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *ppos)
{
	size_t done = 0;
	char *buf;
	int ret = 0;

	if (rkb_validated)
		return -EBUSY;
	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	while (done < len && !ret) {
		size_t chunk = min_t(size_t, len - done, PAGE_SIZE);
		size_t i;

		if (copy_from_user(buf, ubuf + done, chunk)) {
			ret = -EFAULT;
			break;
		}
		for (i = 0; i < chunk && !ret; i++) {
			if (buf[i] != '\n') {
				if (rkb_partial_len == KSYM_NAME_LEN - 1)
					ret = -E2BIG;
				else
					rkb_partial[rkb_partial_len++] = buf[i];
				continue;
			}
			ret = rkb_add_name(rkb_partial, rkb_partial_len);
			rkb_partial_len = 0;
		}
		done += chunk;
	}
	kfree(buf);
	return ret ? ret : len;
}

static const struct file_operations rkb_syms_fops = {
	.owner = THIS_MODULE,
	.write = rkb_syms_write,
	.llseek = noop_llseek,
};

/* A kprobe on the entry of `name`, as a caller sets one up. */
static void rkb_bulk_init_kprobe(struct kprobe *p, const char *name, bool disabled)
{
	memset(p, 0, sizeof(*p));
	p->symbol_name = name;
	p->pre_handler = rkb_bulk_pre;
	if (disabled)
		p->flags = KPROBE_FLAG_DISABLED;
}

/*
 * "bulk-validate": register every candidate alone, disabled, keep those
 * that register, then unregister them in one batch (untimed).
 */
int rkb_cmd_bulk_validate(char *args)
{
	unsigned int i, kept = 0, failed = 0;
	int first_err = 0, ret;
	char *name;

	if (rkb_validated || !rkb_nr_names)
		return -EINVAL;
	if (rkb_partial_len) {
		ret = rkb_add_name(rkb_partial, rkb_partial_len);
		rkb_partial_len = 0;
		if (ret)
			return ret;
	}
	for (i = 0; i < rkb_nr_names && kept < RKB_BULK_MAX_NAMES; i++) {
		struct kprobe *p = &rkb_bulk_kps[kept % RKB_BULK_MAX];

		rkb_bulk_init_kprobe(p, rkb_names[i], true);
		ret = register_kprobe(p);
		if (ret) {
			if (!failed++)
				first_err = ret;
			continue;
		}
		/* The valid names move to the front, in their order. */
		name = rkb_names[kept];
		rkb_names[kept] = rkb_names[i];
		rkb_names[i] = name;
		rkb_bulk_kp_ptrs[kept % RKB_BULK_MAX] = p;
		kept++;
		if (kept % RKB_BULK_MAX == 0)
			unregister_kprobes(rkb_bulk_kp_ptrs, RKB_BULK_MAX);
	}
	if (kept % RKB_BULK_MAX)
		unregister_kprobes(rkb_bulk_kp_ptrs, kept % RKB_BULK_MAX);
	rkb_nr_valid = kept;
	rkb_validated = true;
	pr_info("RKB bulkvalid %u %u %u %d\n", kept, rkb_nr_names, failed, first_err);
	return 0;
}

/* The name of the i-th of n functions of `kind`, evenly spread. */
static const char *rkb_bulk_name(char kind, unsigned int i, unsigned int n)
{
	if (kind == 'v')
		return rkb_names[(u64)i * rkb_nr_valid / n];
	return rkb_mf_names[(u64)i * RKB_MF_FUNCS / n];
}

static int rkb_bulk_register(char kind, unsigned int n)
{
	unsigned int i;

	if (kind == 'r') {
		for (i = 0; i < n; i++) {
			struct kretprobe *rp = &rkb_bulk_krps[i];

			memset(rp, 0, sizeof(*rp));
			rp->kp.symbol_name = rkb_bulk_name(kind, i, n);
			rp->handler = rkb_bulk_ret;
			rp->maxactive = RKB_BULK_MAXACTIVE;
			rkb_bulk_krp_ptrs[i] = rp;
		}
		return register_kretprobes(rkb_bulk_krp_ptrs, n);
	}
	for (i = 0; i < n; i++) {
		rkb_bulk_init_kprobe(&rkb_bulk_kps[i], rkb_bulk_name(kind, i, n), false);
		rkb_bulk_kp_ptrs[i] = &rkb_bulk_kps[i];
	}
	return register_kprobes(rkb_bulk_kp_ptrs, n);
}

static void rkb_bulk_unregister(char kind, unsigned int n)
{
	if (kind == 'r')
		unregister_kretprobes(rkb_bulk_krp_ptrs, n);
	else
		unregister_kprobes(rkb_bulk_kp_ptrs, n);
}

/* How many probes of the batch do not have the address they had at first. */
static unsigned int rkb_bulk_check_addrs(char kind, unsigned int n, bool first)
{
	unsigned int i, bad = 0;

	for (i = 0; i < n; i++) {
		void *addr = kind == 'r' ? rkb_bulk_krps[i].kp.addr : rkb_bulk_kps[i].addr;

		if (first)
			rkb_bulk_addrs[i] = addr;
		if (!addr || addr != rkb_bulk_addrs[i])
			bad++;
	}
	return bad;
}

/*
 * "<vmlinux|module|module-opt|kretprobe> <n>" of a bulk command: kind 'v',
 * 'm', 'o' or 'r', or 0. "module-opt" is "module" run with the optimizer on
 * (the shell sets it), reported under its own key.
 */
static char rkb_bulk_args(char **args, unsigned int *n)
{
	char *what = strsep(args, " ");
	char *num = strsep(args, " ");
	char kind;

	if (!what || !num || kstrtouint(num, 0, n) || !*n)
		return 0;
	if (!strcmp(what, "vmlinux"))
		kind = 'v';
	else if (!strcmp(what, "module"))
		kind = 'm';
	else if (!strcmp(what, "module-opt"))
		kind = 'o';
	else if (!strcmp(what, "kretprobe"))
		kind = 'r';
	else
		return 0;
	if (*n > (kind == 'r' ? RKB_BULK_KRETPROBES : RKB_BULK_MAX) ||
	    (kind == 'v' && *n > rkb_nr_valid)) {
		pr_err("bulk %s %u: at most %u\n", what, *n,
		       kind == 'r' ? RKB_BULK_KRETPROBES :
		       kind == 'v' ? min(rkb_nr_valid, RKB_BULK_MAX) : RKB_BULK_MAX);
		return 0;
	}
	return kind;
}

/* "bulk <vmlinux|module|kretprobe> <n> [split]": see the top of this file. */
int rkb_cmd_bulk(char *args)
{
	unsigned int n, r, nreps, bad;
	unsigned long hits = rkb_bulk_hits;
	char kind, label[32];
	bool split;
	cycles_t start;
	int ret;

	kind = rkb_bulk_args(&args, &n);
	if (!kind || rkb_split_n)
		return -EINVAL;
	split = args && !strcmp(args, "split");
	if (args && !split)
		return -EINVAL;
	nreps = n >= RKB_BULK_ONCE || split ? 1 : rkb_reps();
	for (r = 0; r < nreps; r++) {
		start = rkb_start_at_tick();
		ret = rkb_bulk_register(kind, n);
		rkb_bulk_reg[r] = get_cycles() - start;
		if (ret) {
			pr_err("bulk %c %u: registration failed: %d\n", kind, n, ret);
			return ret;
		}
		bad = rkb_bulk_check_addrs(kind, n, !r);
		if (split && !bad) {
			rkb_split_kind = kind;
			rkb_split_n = n;
			pr_info("RKB bulksplit bulk%c%u %llu\n", kind, n, rkb_bulk_reg[0]);
			return 0;
		}
		start = rkb_start_at_tick();
		rkb_bulk_unregister(kind, n);
		rkb_bulk_unreg[r] = get_cycles() - start;
		if (bad) {
			pr_err("bulk %c %u: %u probes without their address\n", kind, n, bad);
			return -EIO;
		}
	}
	snprintf(label, sizeof(label), "reg bulk%c%u %u", kind, n, n);
	rkb_print_reg(label, rkb_bulk_reg, rkb_bulk_unreg, nreps);
	pr_info("RKB bulkhits bulk%c%u %lu\n", kind, n, rkb_bulk_hits - hits);
	return 0;
}

/* "bulk-unreg <kind> <n>": unregister the batch "bulk <kind> <n> split" left, timed. */
int rkb_cmd_bulk_unreg(char *args)
{
	unsigned long hits = rkb_bulk_hits;
	unsigned int n;
	char kind, label[32];
	cycles_t start;

	kind = rkb_bulk_args(&args, &n);
	if (!kind || args || kind != rkb_split_kind || n != rkb_split_n)
		return -EINVAL;
	start = rkb_start_at_tick();
	rkb_bulk_unregister(kind, n);
	rkb_bulk_unreg[0] = get_cycles() - start;
	rkb_split_n = 0;
	snprintf(label, sizeof(label), "reg bulk%c%u %u", kind, n, n);
	rkb_print_reg(label, rkb_bulk_reg, rkb_bulk_unreg, 1);
	pr_info("RKB bulkhits bulk%c%u %lu\n", kind, n, rkb_bulk_hits - hits);
	return 0;
}

int rkb_bulk_init(struct dentry *dir)
{
	unsigned int i;

	rkb_names = kvcalloc(RKB_BULK_MAX_NAMES, sizeof(*rkb_names), GFP_KERNEL);
	rkb_mf_names = kvcalloc(RKB_MF_FUNCS, sizeof(*rkb_mf_names), GFP_KERNEL);
	rkb_bulk_kps = kvcalloc(RKB_BULK_MAX, sizeof(*rkb_bulk_kps), GFP_KERNEL);
	rkb_bulk_kp_ptrs = kvcalloc(RKB_BULK_MAX, sizeof(*rkb_bulk_kp_ptrs), GFP_KERNEL);
	rkb_bulk_krps = kvcalloc(RKB_BULK_KRETPROBES, sizeof(*rkb_bulk_krps), GFP_KERNEL);
	rkb_bulk_krp_ptrs = kvcalloc(RKB_BULK_KRETPROBES, sizeof(*rkb_bulk_krp_ptrs),
				     GFP_KERNEL);
	rkb_bulk_addrs = kvcalloc(RKB_BULK_MAX, sizeof(*rkb_bulk_addrs), GFP_KERNEL);
	if (!rkb_names || !rkb_mf_names || !rkb_bulk_kps || !rkb_bulk_kp_ptrs ||
	    !rkb_bulk_krps || !rkb_bulk_krp_ptrs || !rkb_bulk_addrs) {
		rkb_bulk_exit();
		return -ENOMEM;
	}
	for (i = 0; i < RKB_MF_FUNCS; i++)
		snprintf(rkb_mf_names[i], sizeof(rkb_mf_names[i]), "rkb_mf_%04u", i);
	debugfs_create_file("syms", 0200, dir, NULL, &rkb_syms_fops);
	return 0;
}

/* Frees what rkb_bulk_init() allocated, after unregistering a batch "split" left. */
void rkb_bulk_exit(void)
{
	unsigned int i;

	if (rkb_split_n)
		rkb_bulk_unregister(rkb_split_kind, rkb_split_n);
	for (i = 0; rkb_names && i < rkb_nr_names; i++)
		kfree(rkb_names[i]);
	kvfree(rkb_names);
	kvfree(rkb_mf_names);
	kvfree(rkb_bulk_kps);
	kvfree(rkb_bulk_kp_ptrs);
	kvfree(rkb_bulk_krps);
	kvfree(rkb_bulk_krp_ptrs);
	kvfree(rkb_bulk_addrs);
}

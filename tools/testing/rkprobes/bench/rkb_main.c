// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_bench: the kprobes benchmark of `scripts/rkprobes bench`.
 *
 * Constraints first: this module uses only the public kprobes API of
 * <linux/kprobes.h>, so the very same object measures upstream's C core
 * and the Rust core. It is meant to run under QEMU TCG with
 * "-icount shift=0,sleep=off", where the guest TSC advances by one per
 * guest instruction: every figure is a count of guest instructions (for
 * registration, guest nanoseconds, which include any idle time warped
 * over while sleeping). Per-hit loops run with interrupts off, so they are
 * exact and repeatable.
 *
 * Design: the initramfs /init drives it through one debugfs file,
 * /sys/kernel/debug/rkprobes_bench/ctl, one command per write (arm a case,
 * measure, disarm), because some steps need what only user space sees:
 * the [OPTIMIZED] and [FTRACE] flags of kprobes/list, the
 * debug.kprobes-optimization sysctl and /proc/meminfo. Results go to the
 * kernel log as "RKB ..." lines, which the host parses:
 *
 *   RKB bare <target> <total>,...           calls of a target, no probe
 *   RKB hit <case> <target> <total>,...     the same calls, probe armed
 *   RKB hits <case> <pre handler> <kretprobe> <expected> <post handler>
 *   RKB boostable <case> <0|1>
 *   RKB reg <case> <probes> <register total>,... <unregister total>,...
 *
 * where a total is the guest time of `calls` calls (or of one
 * registration round), one per repetition.
 *
 * Probe sites: rkb_target() (notrace) and rkb_traced() (an ftrace site)
 * are the probed functions, probed at their entry; rkb_jcc(), rkb_call()
 * and rkb_riprel() (rkb_fill.S) are probed at a conditional jump, a near
 * call and a RIP-relative load. 256 never-called filler functions of 16
 * eight-byte NOPs each give 4096 distinct, optimizable, never-hit sites
 * for the "other probes", the registration rounds and the memory cases.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/init.h>
#include <linux/irqflags.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timex.h>
#include <linux/uaccess.h>
#include <asm/ibt.h>

#include "rkb_bulk.h"
#include "rkb_fill.h"

static unsigned int calls = 1000;
module_param(calls, uint, 0444);
MODULE_PARM_DESC(calls, "calls of the probed function per repetition (default 1000)");

static unsigned int reps = 5;
module_param(reps, uint, 0444);
MODULE_PARM_DESC(reps, "repetitions of every measurement (default 5)");

#define RKB_MAX_REPS		16
#define RKB_FILL_SLOTS		16
#define RKB_NR_SLOTS		(RKB_FILL_FUNCS * RKB_FILL_SLOTS)
#define RKB_KRETPROBE_MAXACTIVE	16

/* nopl 0x0(%rax,%rax,1) with a 32-bit displacement: one 8-byte instruction. */
#define RKB_NOP8_ASM	".byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00\n\t"

static const u8 rkb_nop8[] = { 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 };

/*
 * The probed functions. The probe goes on the entry, which is a NOP so
 * that it can be copied, boosted and optimized whatever the compiler
 * puts around it.
 */
static noinline notrace void rkb_target(void)
{
	asm volatile(RKB_NOP8_ASM);
}

static noinline void rkb_traced(void)
{
	asm volatile(RKB_NOP8_ASM RKB_NOP8_ASM);
}

enum rkb_site {
	RKB_TARGET, RKB_TRACED, RKB_JCC, RKB_CALL, RKB_RIPREL, RKB_NR_SITES
};

static const char *const rkb_site_names[RKB_NR_SITES] = {
	[RKB_TARGET] = "target",
	[RKB_TRACED] = "traced",
	[RKB_JCC] = "jcc",
	[RKB_CALL] = "call",
	[RKB_RIPREL] = "riprel",
};

/*
 * Where the probed instruction of each rkb_fill.S site is: `skip` bytes
 * past the function's ENDBR (when the kernel has IBT), and the opcode
 * bytes it must start with. The probe goes there, not on the entry.
 */
static const struct {
	void (*func)(void);
	u8 skip;
	u8 len;
	u8 opcode[3];
} rkb_insn_sites[RKB_NR_SITES] = {
	/* xorl %eax,%eax; jz rel8 */
	[RKB_JCC] = { rkb_jcc, 2, 1, { 0x74 } },
	/* call rel32 */
	[RKB_CALL] = { rkb_call, 0, 1, { 0xe8 } },
	/* movq rel32(%rip),%rax */
	[RKB_RIPREL] = { rkb_riprel, 0, 3, { 0x48, 0x8b, 0x05 } },
};

/* The probe address of every site, set by rkb_find_sites(). */
static void *rkb_site_addrs[RKB_NR_SITES];

static DEFINE_MUTEX(rkb_mutex);		/* serialises commands */
static kprobe_opcode_t *rkb_slots[RKB_NR_SLOTS];
static struct kprobe rkb_kp;
static struct kretprobe rkb_krp;
static bool rkb_kp_armed, rkb_krp_armed;
static struct kprobe rkb_fill_kps[RKB_NR_SLOTS];
static struct kprobe *rkb_fill_kp_ptrs[RKB_NR_SLOTS];
static unsigned int rkb_nr_fill_kps;
static struct kretprobe rkb_fill_krps[RKB_FILL_FUNCS];
static struct kretprobe *rkb_fill_krp_ptrs[RKB_FILL_FUNCS];
static unsigned int rkb_nr_fill_krps;
static unsigned long rkb_kp_hits, rkb_post_hits, rkb_krp_hits, rkb_fill_hits;
static u64 rkb_times[RKB_MAX_REPS], rkb_times2[RKB_MAX_REPS];
static struct dentry *rkb_dir;

static int rkb_pre(struct kprobe *p, struct pt_regs *regs)
{
	rkb_kp_hits++;
	return 0;
}

static void rkb_post(struct kprobe *p, struct pt_regs *regs,
		     unsigned long flags)
{
	rkb_post_hits++;
}

static int rkb_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	rkb_krp_hits++;
	return 0;
}

static int rkb_fill_pre(struct kprobe *p, struct pt_regs *regs)
{
	rkb_fill_hits++;
	return 0;
}

static int rkb_fill_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	rkb_fill_hits++;
	return 0;
}

/* Guest time of `calls` calls of one site, interrupts off. */
static u64 rkb_time_calls(enum rkb_site site)
{
	unsigned long flags;
	unsigned int i;
	cycles_t start, end;

	local_irq_save(flags);
	start = get_cycles();
	switch (site) {
	case RKB_TRACED:
		for (i = 0; i < calls; i++)
			rkb_traced();
		break;
	case RKB_JCC:
		for (i = 0; i < calls; i++)
			rkb_jcc();
		break;
	case RKB_CALL:
		for (i = 0; i < calls; i++)
			rkb_call();
		break;
	case RKB_RIPREL:
		for (i = 0; i < calls; i++)
			rkb_riprel();
		break;
	default:
		for (i = 0; i < calls; i++)
			rkb_target();
		break;
	}
	end = get_cycles();
	local_irq_restore(flags);
	return end - start;
}

/* Print "RKB <what> t1,t2,..." in one line, as the host expects. */
static void rkb_print_times(const char *what, const u64 *t)
{
	char line[256];
	int len, i;

	len = scnprintf(line, sizeof(line), "RKB %s ", what);
	for (i = 0; i < reps; i++)
		len += scnprintf(line + len, sizeof(line) - len, "%s%llu",
				 i ? "," : "", t[i]);
	pr_info("%s\n", line);
}

unsigned int rkb_reps(void)
{
	return reps;
}

/* Print "RKB <what> r1,r2,... u1,u2,...": `n` registration and unregistration times. */
void rkb_print_reg(const char *what, const u64 *t1, const u64 *t2, unsigned int n)
{
	char line[512];
	int len, i;

	len = scnprintf(line, sizeof(line), "RKB %s ", what);
	for (i = 0; i < n; i++)
		len += scnprintf(line + len, sizeof(line) - len, "%s%llu",
				 i ? "," : "", t1[i]);
	for (i = 0; i < n; i++)
		len += scnprintf(line + len, sizeof(line) - len, "%c%llu",
				 i ? ',' : ' ', t2[i]);
	pr_info("%s\n", line);
}

/*
 * Find the 16 NOPs of every filler function. They follow whatever
 * prologue the compiler emitted (ENDBR, frame setup), so look for them.
 */
static int rkb_find_slots(void)
{
	int f, s, off;

	for (f = 0; f < RKB_FILL_FUNCS; f++) {
		const u8 *text = (const u8 *)rkb_fill_funcs[f];

		for (off = 0; off < 32; off++)
			if (!memcmp(text + off, rkb_nop8, sizeof(rkb_nop8)))
				break;
		if (off == 32) {
			pr_err("no NOP run found in filler function %d (%ps)\n",
			       f, rkb_fill_funcs[f]);
			return -ENODEV;
		}
		for (s = 0; s < RKB_FILL_SLOTS; s++) {
			const u8 *slot = text + off + s * sizeof(rkb_nop8);

			if (memcmp(slot, rkb_nop8, sizeof(rkb_nop8))) {
				pr_err("%ps+%#x is not the expected NOP\n",
				       rkb_fill_funcs[f], (int)(slot - text));
				return -ENODEV;
			}
			rkb_slots[f * RKB_FILL_SLOTS + s] =
				(kprobe_opcode_t *)slot;
		}
	}
	return 0;
}

/* The probe address of every site; those of rkb_fill.S are checked. */
static int rkb_find_sites(void)
{
	enum rkb_site site;

	rkb_site_addrs[RKB_TARGET] = (void *)rkb_target;
	rkb_site_addrs[RKB_TRACED] = (void *)rkb_traced;
	for (site = 0; site < RKB_NR_SITES; site++) {
		unsigned int off = ENDBR_INSN_SIZE + rkb_insn_sites[site].skip;
		const u8 *insn;

		if (!rkb_insn_sites[site].func)
			continue;
		insn = (const u8 *)rkb_insn_sites[site].func + off;
		if (memcmp(insn, rkb_insn_sites[site].opcode,
			   rkb_insn_sites[site].len)) {
			pr_err("%ps+%#x is not the expected %s instruction: %*ph\n",
			       rkb_insn_sites[site].func, off,
			       rkb_site_names[site], rkb_insn_sites[site].len,
			       insn);
			return -ENODEV;
		}
		rkb_site_addrs[site] = (void *)insn;
	}
	return 0;
}

static void rkb_disarm(void)
{
	if (rkb_nr_fill_kps)
		unregister_kprobes(rkb_fill_kp_ptrs, rkb_nr_fill_kps);
	rkb_nr_fill_kps = 0;
	if (rkb_nr_fill_krps)
		unregister_kretprobes(rkb_fill_krp_ptrs, rkb_nr_fill_krps);
	rkb_nr_fill_krps = 0;
	if (rkb_kp_armed)
		unregister_kprobe(&rkb_kp);
	rkb_kp_armed = false;
	if (rkb_krp_armed)
		unregister_kretprobe(&rkb_krp);
	rkb_krp_armed = false;
}

static int rkb_parse_site(const char *name, enum rkb_site *site)
{
	enum rkb_site s;

	if (!name)
		return -EINVAL;
	for (s = 0; s < RKB_NR_SITES; s++) {
		if (!strcmp(name, rkb_site_names[s])) {
			*site = s;
			return 0;
		}
	}
	return -EINVAL;
}

static void *rkb_site_addr(enum rkb_site site)
{
	return rkb_site_addrs[site];
}

/*
 * "kprobe <site> <pre|post>": the measured kprobe, on the entry of
 * target or traced, on the probed instruction of the other sites.
 */
static int rkb_cmd_kprobe(char *args)
{
	char *site_name = strsep(&args, " ");
	char *handlers = strsep(&args, " ");
	enum rkb_site site;
	int ret;

	if (rkb_kp_armed || rkb_parse_site(site_name, &site) || !handlers)
		return -EINVAL;
	memset(&rkb_kp, 0, sizeof(rkb_kp));
	rkb_kp.addr = rkb_site_addr(site);
	rkb_kp.pre_handler = rkb_pre;
	if (!strcmp(handlers, "post"))
		rkb_kp.post_handler = rkb_post;
	else if (strcmp(handlers, "pre"))
		return -EINVAL;
	ret = register_kprobe(&rkb_kp);
	if (ret) {
		pr_err("register_kprobe(%s, %s): %d\n", site_name, handlers, ret);
		return ret;
	}
	rkb_kp_armed = true;
	return 0;
}

static void rkb_init_kretprobe(struct kretprobe *rp, void *addr,
			       kretprobe_handler_t handler)
{
	memset(rp, 0, sizeof(*rp));
	rp->kp.addr = addr;
	rp->handler = handler;
	rp->maxactive = RKB_KRETPROBE_MAXACTIVE;
}

/*
 * "kretprobe <target|traced> [grow_max]": the measured kretprobe; with grow_max,
 * a pool that may grow to that many instances (Rust core only; C ignores it).
 * One call is in flight at a time, so the pool never grows: the figure is what
 * a growing pool's accounting costs a hit.
 */
static int rkb_cmd_kretprobe(char *args)
{
	char *site_name = strsep(&args, " ");
	char *grow = strsep(&args, " ");
	enum rkb_site site;
	int grow_max = 0;
	int ret;

	if (rkb_krp_armed || rkb_parse_site(site_name, &site))
		return -EINVAL;
	if (grow && kstrtoint(grow, 10, &grow_max))
		return -EINVAL;
	rkb_init_kretprobe(&rkb_krp, rkb_site_addr(site), rkb_ret);
	rkb_krp.grow_max = grow_max;
	ret = register_kretprobe(&rkb_krp);
	if (ret) {
		pr_err("register_kretprobe(%s): %d\n", site_name, ret);
		return ret;
	}
	rkb_krp_armed = true;
	return 0;
}

static void rkb_init_fill_kprobes(unsigned int n, bool post)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct kprobe *p = &rkb_fill_kps[i];

		memset(p, 0, sizeof(*p));
		p->addr = rkb_slots[i];
		p->pre_handler = rkb_fill_pre;
		if (post)
			p->post_handler = rkb_post;
		rkb_fill_kp_ptrs[i] = p;
	}
}

/* "fill <n> <pre|post>": n other kprobes on filler sites. */
static int rkb_cmd_fill(char *args)
{
	char *num = strsep(&args, " ");
	char *handlers = strsep(&args, " ");
	unsigned int n;
	int ret;

	if (rkb_nr_fill_kps || !num || kstrtouint(num, 0, &n) ||
	    !n || n > RKB_NR_SLOTS || !handlers)
		return -EINVAL;
	if (strcmp(handlers, "pre") && strcmp(handlers, "post"))
		return -EINVAL;
	rkb_init_fill_kprobes(n, !strcmp(handlers, "post"));
	ret = register_kprobes(rkb_fill_kp_ptrs, n);
	if (ret) {
		pr_err("register_kprobes(%u filler kprobes): %d\n", n, ret);
		return ret;
	}
	rkb_nr_fill_kps = n;
	return 0;
}

/* "fillret <n>": n kretprobes on the entries of filler functions. */
static int rkb_cmd_fillret(char *args)
{
	char *num = strsep(&args, " ");
	unsigned int n, i;
	int ret;

	if (rkb_nr_fill_krps || !num || kstrtouint(num, 0, &n) ||
	    !n || n > RKB_FILL_FUNCS)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		rkb_init_kretprobe(&rkb_fill_krps[i],
				   (void *)rkb_fill_funcs[i], rkb_fill_ret);
		rkb_fill_krp_ptrs[i] = &rkb_fill_krps[i];
	}
	ret = register_kretprobes(rkb_fill_krp_ptrs, n);
	if (ret) {
		pr_err("register_kretprobes(%u filler kretprobes): %d\n", n, ret);
		return ret;
	}
	rkb_nr_fill_krps = n;
	return 0;
}

/* "measure <case> <site>": time the calls with what is armed. */
static int rkb_cmd_measure(char *args)
{
	char *name = strsep(&args, " ");
	char *site_name = strsep(&args, " ");
	unsigned long kp_hits = rkb_kp_hits, krp_hits = rkb_krp_hits;
	unsigned long post_hits = rkb_post_hits;
	enum rkb_site site;
	char what[96];
	int i;

	if (!name || rkb_parse_site(site_name, &site))
		return -EINVAL;
	for (i = 0; i < reps; i++)
		rkb_times[i] = rkb_time_calls(site);
	snprintf(what, sizeof(what), "hit %s %s", name, site_name);
	rkb_print_times(what, rkb_times);
	pr_info("RKB hits %s %lu %lu %lu %lu\n", name, rkb_kp_hits - kp_hits,
		rkb_krp_hits - krp_hits, (unsigned long)calls * reps,
		rkb_post_hits - post_hits);
#ifdef CONFIG_X86
	if (rkb_kp_armed)
		pr_info("RKB boostable %s %d\n", name,
			!IS_ENABLED(CONFIG_PREEMPTION) && rkb_kp.ainsn.boostable);
#endif
	if (rkb_fill_hits) {
		pr_err("%lu hits on filler probes, which are never called\n",
		       rkb_fill_hits);
		return -EIO;
	}
	return 0;
}

/*
 * Registration waits for RCU grace periods; bench-init.sh expedites them for
 * the registration rows (see there), so a call's time is its work. Each
 * timed call starts with the optimizer done with the previous call's probes
 * (it runs OPTIMIZE_DELAY, 5 jiffies, after a kick), RCU idle (no callback
 * left from earlier work), and just after a tick, so that no tick lands in a
 * call shorter than a tick, and ticks land at the same points of longer ones.
 */
cycles_t rkb_start_at_tick(void)
{
	unsigned long j;

	schedule_timeout_uninterruptible(10);
	rcu_barrier();
	j = READ_ONCE(jiffies);
	while (READ_ONCE(jiffies) == j)
		cpu_relax();
	return get_cycles();
}

/* "reg1": register_kprobe + unregister_kprobe of one kprobe. */
static int rkb_cmd_reg1(char *args)
{
	cycles_t start;
	int i, ret;

	if (rkb_nr_fill_kps)
		return -EBUSY;
	for (i = 0; i < reps; i++) {
		rkb_init_fill_kprobes(1, true);
		start = rkb_start_at_tick();
		ret = register_kprobe(&rkb_fill_kps[0]);
		if (!ret)
			unregister_kprobe(&rkb_fill_kps[0]);
		rkb_times[i] = get_cycles() - start;
		if (ret) {
			pr_err("register_kprobe: %d\n", ret);
			return ret;
		}
	}
	rkb_print_times("reg reg1 1", rkb_times);
	return 0;
}

/* "regn <n>": register_kprobes and unregister_kprobes of n kprobes. */
static int rkb_cmd_regn(char *args)
{
	char *num = strsep(&args, " ");
	char what[32];
	cycles_t start;
	unsigned int n;
	int i, ret;

	if (rkb_nr_fill_kps || !num || kstrtouint(num, 0, &n) ||
	    !n || n > RKB_NR_SLOTS)
		return -EINVAL;
	for (i = 0; i < reps; i++) {
		rkb_init_fill_kprobes(n, true);
		start = rkb_start_at_tick();
		ret = register_kprobes(rkb_fill_kp_ptrs, n);
		rkb_times[i] = get_cycles() - start;
		if (ret) {
			pr_err("register_kprobes(%u): %d\n", n, ret);
			return ret;
		}
		start = rkb_start_at_tick();
		unregister_kprobes(rkb_fill_kp_ptrs, n);
		rkb_times2[i] = get_cycles() - start;
	}
	snprintf(what, sizeof(what), "reg regn%u %u", n, n);
	rkb_print_reg(what, rkb_times, rkb_times2, reps);
	return 0;
}

/* "calib": 1000 one-byte NOPs, to show what one unit of guest time is. */
static int rkb_cmd_calib(char *args)
{
	unsigned long flags;
	cycles_t start;
	int i;

	for (i = 0; i < reps; i++) {
		local_irq_save(flags);
		start = get_cycles();
		asm volatile(".rept 1000\n\tnop\n\t.endr\n\t");
		rkb_times[i] = get_cycles() - start;
		local_irq_restore(flags);
	}
	rkb_print_times("calib nop1000", rkb_times);
	return 0;
}

static int rkb_cmd_disarm(char *args)
{
	rkb_disarm();
	return 0;
}

/*
 * "shrink": every kmalloc cache gives back its empty slabs, so that a memory
 * snapshot counts the slabs that hold objects, not a reserve of empty ones
 * that earlier cases left behind (which differs with the order they freed in).
 * Done here rather than through /sys/kernel/slab/<cache>/shrink: opening those
 * files allocates kernfs nodes that are freed after an RCU grace period, in
 * the very caches measured.
 */
static int rkb_cmd_shrink(char *args)
{
	int i;

	for (i = 0; i <= KMALLOC_SHIFT_HIGH; i++)
		if (kmalloc_caches[KMALLOC_NORMAL][i])
			kmem_cache_shrink(kmalloc_caches[KMALLOC_NORMAL][i]);
	return 0;
}

static const struct {
	const char *name;
	int (*run)(char *args);
} rkb_cmds[] = {
	{ "kprobe", rkb_cmd_kprobe },
	{ "kretprobe", rkb_cmd_kretprobe },
	{ "fill", rkb_cmd_fill },
	{ "fillret", rkb_cmd_fillret },
	{ "measure", rkb_cmd_measure },
	{ "reg1", rkb_cmd_reg1 },
	{ "regn", rkb_cmd_regn },
	{ "bulk-validate", rkb_cmd_bulk_validate },
	{ "bulk", rkb_cmd_bulk },
	{ "bulk-unreg", rkb_cmd_bulk_unreg },
	{ "calib", rkb_cmd_calib },
	{ "disarm", rkb_cmd_disarm },
	{ "shrink", rkb_cmd_shrink },
};

static ssize_t rkb_ctl_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	char buf[96], *args, *cmd;
	int i, ret = -EINVAL;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	args = strim(buf);
	cmd = strsep(&args, " ");
	mutex_lock(&rkb_mutex);
	for (i = 0; i < ARRAY_SIZE(rkb_cmds); i++) {
		if (!strcmp(cmd, rkb_cmds[i].name)) {
			ret = rkb_cmds[i].run(args);
			break;
		}
	}
	mutex_unlock(&rkb_mutex);
	if (ret)
		pr_err("command '%s' failed: %d\n", cmd, ret);
	return ret ? ret : len;
}

static const struct file_operations rkb_ctl_fops = {
	.owner = THIS_MODULE,
	.write = rkb_ctl_write,
	.llseek = noop_llseek,
};

static int __init rkb_init(void)
{
	enum rkb_site site;
	int i, ret;

	if (!calls || !reps || reps > RKB_MAX_REPS) {
		pr_err("calls must be > 0 and reps 1..%d\n", RKB_MAX_REPS);
		return -EINVAL;
	}
	ret = rkb_find_slots();
	if (!ret)
		ret = rkb_find_sites();
	if (ret)
		return ret;
	for (site = 0; site < RKB_NR_SITES; site++) {
		char what[32];

		for (i = 0; i < reps; i++)
			rkb_times[i] = rkb_time_calls(site);
		snprintf(what, sizeof(what), "bare %s", rkb_site_names[site]);
		rkb_print_times(what, rkb_times);
	}
	pr_info("RKB config calls=%u reps=%u boost=%d\n", calls, reps,
		!IS_ENABLED(CONFIG_PREEMPTION));
	rkb_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	ret = rkb_bulk_init(rkb_dir);
	if (ret) {
		debugfs_remove_recursive(rkb_dir);
		return ret;
	}
	debugfs_create_file("ctl", 0200, rkb_dir, NULL, &rkb_ctl_fops);
	return 0;
}

static void __exit rkb_exit(void)
{
	debugfs_remove_recursive(rkb_dir);
	mutex_lock(&rkb_mutex);
	rkb_disarm();
	mutex_unlock(&rkb_mutex);
	rkb_bulk_exit();
}

module_init(rkb_init);
module_exit(rkb_exit);
MODULE_DESCRIPTION("kprobes benchmark of scripts/rkprobes bench");
MODULE_LICENSE("GPL");

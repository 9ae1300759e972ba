// SPDX-License-Identifier: GPL-2.0
/*
 * The probe-every-symbol check of scripts/rkprobes test: writing a symbol
 * name to /sys/kernel/debug/rkprobes_nokprobe/probe registers a kprobe on it
 * (symbol_name, no handlers), records what register_kprobe() returned and
 * unregisters it again; reading the file gives that return value. The list
 * of symbols (every function of the kprobes core's objects, from llvm-nm)
 * comes with the initramfs; see nokprobe-init.sh and
 * scripts/rkprobes_lib/nokprobe.py.
 */

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/string.h>
#include <linux/uaccess.h>

static DEFINE_MUTEX(rkn_lock);
static struct kprobe rkn_kp;
static char rkn_name[KSYM_NAME_LEN];
static int rkn_ret;
static struct dentry *rkn_dir;

static ssize_t rkn_write(struct file *file, const char __user *ubuf,
			 size_t count, loff_t *ppos)
{
	size_t len = min(count, sizeof(rkn_name) - 1);

	mutex_lock(&rkn_lock);
	if (copy_from_user(rkn_name, ubuf, len)) {
		mutex_unlock(&rkn_lock);
		return -EFAULT;
	}
	rkn_name[len] = '\0';
	memset(&rkn_kp, 0, sizeof(rkn_kp));
	rkn_kp.symbol_name = strim(rkn_name);
	rkn_ret = register_kprobe(&rkn_kp);
	if (!rkn_ret)
		unregister_kprobe(&rkn_kp);
	mutex_unlock(&rkn_lock);
	return count;
}

static ssize_t rkn_read(struct file *file, char __user *ubuf, size_t count,
			loff_t *ppos)
{
	char buf[16];
	int n;

	mutex_lock(&rkn_lock);
	n = scnprintf(buf, sizeof(buf), "%d\n", rkn_ret);
	mutex_unlock(&rkn_lock);
	return simple_read_from_buffer(ubuf, count, ppos, buf, n);
}

static const struct file_operations rkn_fops = {
	.owner = THIS_MODULE,
	.read = rkn_read,
	.write = rkn_write,
	.llseek = default_llseek,
};

static int __init rkn_init(void)
{
	rkn_dir = debugfs_create_dir("rkprobes_nokprobe", NULL);
	debugfs_create_file("probe", 0600, rkn_dir, NULL, &rkn_fops);
	return 0;
}

static void __exit rkn_exit(void)
{
	debugfs_remove_recursive(rkn_dir);
}

module_init(rkn_init);
module_exit(rkn_exit);
MODULE_DESCRIPTION("rkprobes: register a kprobe on a named symbol and report the errno");
MODULE_LICENSE("GPL");

// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers of rkprobes_conformance: reaching the user-visible files and
 * registering probes that are always unregistered when a case ends.
 *
 * The debugfs and tracefs files of kprobes and tracing have ->read/->write
 * methods, not ->read_iter/->write_iter, so kernel_read()/kernel_write()
 * refuse them. The suite goes through user space instead, the way a user
 * does: busybox sh from the initramfs, started with call_usermodehelper(),
 * writes its output to a file in the initramfs (ramfs), which kernel_read()
 * can read back.
 */
#include <linux/ctype.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/umh.h>

#include "rkc.h"

#define RKC_OUT		"/tmp/rkc.out"
#define RKC_OUT_MAX	(32 * 1024)
#define RKC_FMT_MAX	1024

static int rkc_vsh(const char *fmt, va_list ap)
{
	char *argv[4], *envp[3];
	char *cmd;
	int ret;

	cmd = kvasprintf(GFP_KERNEL, fmt, ap);
	if (!cmd)
		return -ENOMEM;
	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = cmd;
	argv[3] = NULL;
	envp[0] = "HOME=/";
	envp[1] = "PATH=/bin:/sbin";
	envp[2] = NULL;
	ret = call_usermodehelper(argv[0], argv, envp, UMH_WAIT_PROC);
	kfree(cmd);
	return ret;
}

/* Run a shell command; returns 0 or the wait status (exit code << 8) or -errno. */
int rkc_sh(struct kunit *test, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = rkc_vsh(fmt, ap);
	va_end(ap);
	if (ret && test)
		kunit_info(test, "shell command failed with status %d", ret);
	return ret;
}

static ssize_t rkc_read_file(const char *path, char *buf, size_t size)
{
	struct file *f;
	loff_t pos = 0;
	ssize_t n = 0, total = 0;

	f = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	while (total < size - 1) {
		n = kernel_read(f, buf + total, size - 1 - total, &pos);
		if (n <= 0)
			break;
		total += n;
	}
	filp_close(f, NULL);
	buf[total] = '\0';
	return n < 0 ? n : total;
}

/* Run a shell command and return its output (stdout and stderr), or "" on failure. */
char *rkc_sh_out(struct kunit *test, const char *fmt, ...)
{
	char *cmd, *buf;
	va_list ap;
	ssize_t n;
	int ret;

	buf = kunit_kzalloc(test, RKC_OUT_MAX, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	va_start(ap, fmt);
	cmd = kvasprintf(GFP_KERNEL, fmt, ap);
	va_end(ap);
	KUNIT_ASSERT_NOT_NULL(test, cmd);
	ret = rkc_sh(test, "( %s ) > " RKC_OUT " 2>&1", cmd);
	kfree(cmd);
	n = rkc_read_file(RKC_OUT, buf, RKC_OUT_MAX);
	if (n < 0) {
		kunit_info(test, "reading " RKC_OUT " failed: %zd (shell status %d)", n, ret);
		buf[0] = '\0';
	}
	return buf;
}

static bool rkc_is_hex16(const char *s)
{
	int i;

	for (i = 0; i < 16; i++)
		if (!isxdigit(s[i]))
			return false;
	return !isxdigit(s[16]);
}

/* The number of hex digits at @s, at most @max. */
static size_t rkc_hex_run(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && isxdigit(s[n]))
		n++;
	return n;
}

/*
 * Append @line to @out with every 16-digit hex number, and every "0x" and
 * more than 8 hex digits (an unpadded address: s390's start at 0x3ff...),
 * replaced by "ADDR".
 */
static void rkc_append_masked(char *out, size_t size, const char *line, size_t len)
{
	size_t o = strlen(out), i = 0, n;

	if (o && o < size - 1)
		out[o++] = '|';
	while (i < len && o < size - 1) {
		if ((i == 0 || !isxdigit(line[i - 1])) && i + 16 <= len &&
		    rkc_is_hex16(line + i)) {
			o += strscpy(out + o, "ADDR", size - o);
			i += 16;
			continue;
		}
		n = i >= 2 && line[i - 2] == '0' && line[i - 1] == 'x' ?
		    rkc_hex_run(line + i, len - i) : 0;
		if (n > 8) {
			o += strscpy(out + o, "ADDR", size - o);
			i += n;
			continue;
		}
		out[o++] = line[i++];
	}
	out[o] = '\0';
}

/*
 * The lines of @path selected by @match (called with the line and its
 * length), addresses masked, joined with '|'; "" when there is none.
 */
static char *rkc_select(struct kunit *test, const char *path,
			bool (*match)(const char *line, size_t len, const void *arg),
			const void *arg)
{
	char *list = rkc_sh_out(test, "cat %s", path);
	char *out = kunit_kzalloc(test, RKC_OUT_MAX, GFP_KERNEL);
	char *line = list;

	KUNIT_ASSERT_NOT_NULL(test, out);
	while (*line) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? nl - line : strlen(line);

		if (match(line, len, arg))
			rkc_append_masked(out, RKC_OUT_MAX, line, len);
		line += len + (nl ? 1 : 0);
	}
	return out;
}

static bool rkc_match_addr(const char *line, size_t len, const void *arg)
{
	char hex[24];

	snprintf(hex, sizeof(hex), "%016lx ", (unsigned long)arg);
	return len > 17 && !strncmp(line, hex, 17);
}

/* The kprobes/list lines of the probes at @addr. */
char *rkc_list_at(struct kunit *test, const void *addr)
{
	return rkc_select(test, RKC_KP_DIR "/list", rkc_match_addr, addr);
}

static bool rkc_match_sym(const char *line, size_t len, const void *arg)
{
	const char *sym = arg;
	size_t n = strlen(sym);
	size_t i;

	for (i = 0; i + n <= len; i++)
		if (!strncmp(line + i, sym, n))
			return true;
	return false;
}

/* The lines of @path that contain @sym (e.g. "rkc_f_event+"). */
char *rkc_file_sym(struct kunit *test, const char *path, const char *sym)
{
	return rkc_select(test, path, rkc_match_sym, sym);
}

/* The kprobes/list lines that contain @sym. */
char *rkc_list_sym(struct kunit *test, const char *sym)
{
	return rkc_file_sym(test, RKC_KP_DIR "/list", sym);
}

/*
 * A kprobes/list line as upstream's report_probe() prints it for a probe in
 * a module (@mod) or in vmlinux (@mod NULL), with the address masked.
 */
char *rkc_list_line(struct kunit *test, const char *type, const char *sym,
		    unsigned long off, const char *mod, const char *tags)
{
	return rkc_fmt(test, "ADDR  %s  %s+0x%lx  %s %s",
		       type, sym, off, mod ? mod : " ", tags);
}

/* A formatted string that lives until the case ends. */
char *rkc_fmt(struct kunit *test, const char *fmt, ...)
{
	char *buf = kunit_kzalloc(test, RKC_FMT_MAX, GFP_KERNEL);
	va_list ap;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	va_start(ap, fmt);
	vsnprintf(buf, RKC_FMT_MAX, fmt, ap);
	va_end(ap);
	return buf;
}

/* Write @val to @path through the shell, as `echo val > path` does. */
int rkc_write(struct kunit *test, const char *path, const char *val)
{
	return rkc_sh(test, "echo '%s' > %s", val, path);
}

/* The content of @path without its trailing newlines. */
char *rkc_read_trim(struct kunit *test, const char *path)
{
	char *s = rkc_sh_out(test, "cat %s", path);

	return strim(s);
}

/* Wait up to @secs seconds until the lines at @addr contain @tag (or, !@present, do not). */
bool rkc_wait_list(struct kunit *test, const void *addr, const char *tag,
		   bool present, unsigned int secs)
{
	unsigned int i;

	for (i = 0; i <= secs * 4; i++) {
		if (!!strstr(rkc_list_at(test, addr), tag) == present)
			return true;
		msleep(250);
	}
	return false;
}

static void rkc_unreg_kp_action(void *kp)
{
	unregister_kprobe(kp);
}

static void rkc_unreg_krp_action(void *rp)
{
	unregister_kretprobe(rp);
}

/* register_kprobe(), and unregister it when the case ends unless done before. */
int rkc_reg_kp(struct kunit *test, struct kprobe *kp)
{
	int ret = register_kprobe(kp);

	if (!ret)
		ret = kunit_add_action_or_reset(test, rkc_unreg_kp_action, kp);
	return ret;
}

void rkc_unreg_kp(struct kunit *test, struct kprobe *kp)
{
	kunit_release_action(test, rkc_unreg_kp_action, kp);
}

/* Forget the deferred unregistration of @kp (the case unregistered it itself). */
void rkc_forget_kp(struct kunit *test, struct kprobe *kp)
{
	kunit_remove_action(test, rkc_unreg_kp_action, kp);
}

int rkc_reg_krp(struct kunit *test, struct kretprobe *rp)
{
	int ret = register_kretprobe(rp);

	if (!ret)
		ret = kunit_add_action_or_reset(test, rkc_unreg_krp_action, rp);
	return ret;
}

void rkc_unreg_krp(struct kunit *test, struct kretprobe *rp)
{
	kunit_release_action(test, rkc_unreg_krp_action, rp);
}

int rkc_reg_kps(struct kunit *test, struct kprobe **kps, int num)
{
	int i, ret = register_kprobes(kps, num);

	for (i = 0; !ret && i < num; i++)
		kunit_add_action_or_reset(test, rkc_unreg_kp_action, kps[i]);
	return ret;
}

int rkc_reg_krps(struct kunit *test, struct kretprobe **rps, int num)
{
	int i, ret = register_kretprobes(rps, num);

	for (i = 0; !ret && i < num; i++)
		kunit_add_action_or_reset(test, rkc_unreg_krp_action, rps[i]);
	return ret;
}

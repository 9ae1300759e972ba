#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the ftrace kselftest initramfs of `scripts/rkprobes test`
# (scripts/rkprobes_lib/kselftest.py): runs upstream's ftracetest on its
# kprobe cases, copied at test time from the pristine source into
# /ftrace (ftracetest, test.d/functions, test.d/kprobe/*.tc), under busybox
# sh or, where kselftest.py adds it, /bin/dash. The modules in
# /lib/modules (the trace-printk sample, which kprobe_module.tc loads with
# modprobe) are moved where modprobe looks for them. ftracetest writes its
# logs to /tmp on the initramfs (a ramfs); its own output goes to the
# console between RKK-BEGIN and "RKK-EXIT <exit code>", then the log of
# each case it kept (those that did not end as expected) and its own log,
# each between "RKK-LOG <file>" and RKK-LOG-END, then RKK-DONE.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
# ftracetest and its cases write to /dev/null: a real one, not a file they would create.
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
mkdir -p /tmp
release=$(uname -r)
mkdir -p "/lib/modules/$release"
for ko in /lib/modules/*.ko; do
	[ -f "$ko" ] && mv "$ko" "/lib/modules/$release/"
done
depmod
logs=/tmp/ftracetest-logs
# busybox sh, or the shell kselftest.py put at /bin/dash where busybox sh cannot run ftracetest
# (setup.GUEST_SHELL says why).
shell=sh
[ -x /bin/dash ] && shell=/bin/dash
echo "RKK-SHELL $shell"
echo RKK-BEGIN
cases=
while read -r c; do cases="$cases /ftrace/test.d/kprobe/$c"; done < /ftrace/cases
$shell /ftrace/ftracetest --logdir "$logs" $cases
echo "RKK-EXIT $?"
for f in "$logs"/*-log.* "$logs"/ftracetest.log; do
	[ -f "$f" ] || continue
	echo "RKK-LOG ${f##*/}"
	cat "$f"
	echo RKK-LOG-END
done
echo RKK-DONE
reboot -f

#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of `scripts/rkprobes stress --scenario kretprobe-batch`: loads
# rkprobes_kretbatch.ko (see rkb_main.c), whose threads cycle batches of
# kretprobes for rkb_duration seconds, unloads it (its exit reports), shows
# what kprobes/list still holds and ends with RKB-DONE.
#
# Kernel command line: rkb_duration (seconds, default 60), rkb_nprobes
# (default 64), rkb_hog_ms (default 20).

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
KP=/sys/kernel/debug/kprobes
DURATION=${rkb_duration:-60}

say() {
	echo "$*" > /dev/kmsg
}

say "RKB preempt $(cat /sys/kernel/debug/sched/preempt 2>/dev/null || echo 'not-dynamic')"
if insmod /lib/modules/rkprobes_kretbatch.ko duration="$DURATION" \
	nprobes="${rkb_nprobes:-64}" hog_ms="${rkb_hog_ms:-20}"; then
	sleep "$DURATION"
	# The registrar ends its last cycle; then the exit reports.
	sleep 2
	rmmod rkprobes_kretbatch
	say "RKB rmmod $?"
else
	say "RKB insmod-failed $?"
fi
n=$(grep -c rkb_fn "$KP/list")
say "RKB listed $n"
say "RKB-DONE"
reboot -f

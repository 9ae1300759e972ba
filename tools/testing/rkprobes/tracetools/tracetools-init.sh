#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the tracing tools initramfs of `scripts/rkprobes test --tools`
# (scripts/rkprobes_lib/tracetools.py): runs the host's perf and bpftrace,
# copied with their shared libraries, on the kprobes of the kernel under
# test. /tracetools/params, written by tracetools.py, sets FUNC (the probed
# function), OFFSET (an instruction boundary inside it, past its ftrace
# site, so that that probe is an int3 one) and WORKLOAD (a command whose
# calls of FUNC are known). Each step's output goes to the console between
# "RKT-BEGIN <step>" and "RKT-END <step> <exit code>"; tracetools.py judges
# them. RKT-DONE ends the run.

/bin/busybox --install -s /bin
export PATH=/usr/bin:/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
mkdir -p /tmp
. /tracetools/params

step() {
	name=$1
	shift
	echo "RKT-BEGIN $name"
	"$@" 2>&1
	echo "RKT-END $name $?"
}

events() {
	cat /sys/kernel/tracing/kprobe_events
}

echo "RKT-PARAMS func=$FUNC offset=$OFFSET workload=$WORKLOAD"
# perf: probes at the function's entry, at an offset and at its return; the
# list; a count of each over the workload; their deletion.
step perf-add-entry perf probe -a "$FUNC"
step perf-add-offset perf probe -a "rkt_offset=$FUNC+$OFFSET"
step perf-add-return perf probe -a "$FUNC%return"
step perf-list perf probe -l
step kprobe-events events
step kprobes-list cat /sys/kernel/debug/kprobes/list
step perf-stat perf stat -x , -e "probe:$FUNC,probe:rkt_offset,probe:${FUNC}__return" -- $WORKLOAD
step perf-delete perf probe -d 'probe:*'
step kprobe-events-after events
# bpftrace: kprobe:, kretprobe:, an offset kprobe, argument and return value
# access, over the same workload (cpid: the workload's pid).
step bpftrace bpftrace -e "
kprobe:$FUNC /pid == cpid/ { @entry = count(); @arg2_sum = sum(arg2); }
kretprobe:$FUNC /pid == cpid/ { @return = count(); @retval_sum = sum(retval); }
kprobe:$FUNC+$OFFSET /pid == cpid/ { @offset = count(); }" -c "$WORKLOAD"
step kprobe-events-after-bpftrace events
echo RKT-DONE
reboot -f

#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the `scripts/rkprobes stress` initramfs, on a guest with several
# CPUs. It loads rkprobes_stress.ko, whose threads hit and (un)register
# probes for rks_duration seconds, and meanwhile, in background loops:
# toggles /sys/kernel/debug/kprobes/enabled and the
# debug.kprobes-optimization sysctl, churns kprobe_events (p: and r: probes
# on vfs_read, a p: probe on the module's ftrace-site target, each defined,
# enabled, disabled and removed), loads and unloads rks_target.ko (the
# module's churn thread probes it; a kprobe event waits on it) and samples
# kprobes/list. Then it stops the
# loops, puts both switches back on and drives the module's quiet phase and
# final checks through its debugfs ctl file, unloads it and shows what
# kprobes/list still holds. The module prints "RKS ..." lines, this script
# its own; the host parses both. The end is RKS-DONE.
#
# Kernel command line parameters (unknown ones reach /init as environment
# variables): rks_duration, seconds (default 10); rks_toggles, which
# switches are toggled: "both" (default; kprobes/enabled and the sysctl,
# each from its own loop), "optimization" (the sysctl only) or "none".

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
KP=/sys/kernel/debug/kprobes
OPT=/proc/sys/debug/kprobes-optimization
TR=/sys/kernel/tracing
CTL=/sys/kernel/debug/rkprobes_stress/ctl
DURATION=${rks_duration:-10}
TOGGLES=${rks_toggles:-both}

say() {	# say LINE: a line of ours, through the kernel log so that it is never
	# cut by a kernel message on the console (nor one of the module's)
	echo "$*" > /dev/kmsg
}

ctl() {	# ctl COMMAND: one command of the stress module
	echo "$1" > $CTL || say "RKS error ctl $1"
}

toggle_enabled() {	# kprobes/enabled off and on
	n=0
	while [ ! -e /stop ]; do
		echo 0 > $KP/enabled
		usleep 20000
		echo 1 > $KP/enabled
		usleep 980000
		n=$((n + 1))
	done
	say "RKS shell enabled-toggles $n"
}

toggle_optimization() {	# debug.kprobes-optimization off and on
	n=0
	while [ ! -e /stop ]; do
		echo 0 > $OPT
		usleep 50000
		echo 1 > $OPT
		usleep 1450000
		n=$((n + 1))
	done
	say "RKS shell optimization-toggles $n"
}

event_cycle() {	# event_cycle DEFINITION: define, enable, hit, disable, remove
	name=${1%% *}
	name=${name#*:}
	echo "$1" >> $TR/kprobe_events || err=$((err + 1))
	echo 1 > $TR/events/$name/enable || err=$((err + 1))
	cat /proc/version > /dev/null
	echo 0 > $TR/events/$name/enable || err=$((err + 1))
	echo "-:$name" >> $TR/kprobe_events || err=$((err + 1))
	n=$((n + 1))
}

churn_events() {	# kprobe_events churn
	n=0
	err=0
	while [ ! -e /stop ]; do
		event_cycle "p:rks/vr vfs_read"
		event_cycle "r:rks/vrr vfs_read"
		event_cycle "p:rks/mod rkprobes_stress:rks_ftrace_target"
	done
	say "RKS shell events $n"
	say "RKS shell events-errors $err"
}

churn_module() {	# rks_target.ko loaded and unloaded, a kprobe event kept on it
	n=0
	u=0
	err=0
	# An event on a module that may not be loaded: trace_kprobe registers it
	# whenever the module comes.
	echo "p:rks/tgt rks_target:rks_tgt_work" >> $TR/kprobe_events || err=$((err + 1))
	echo 1 > $TR/events/rks/tgt/enable || err=$((err + 1))
	while [ ! -e /stop ]; do
		insmod /lib/modules/rks_target.ko && n=$((n + 1))
		usleep 100000
		rmmod rks_target && u=$((u + 1))
		usleep 20000
	done
	echo 0 > $TR/events/rks/tgt/enable || err=$((err + 1))
	echo "-:rks/tgt" >> $TR/kprobe_events || err=$((err + 1))
	if grep -q '^rks_target ' /proc/modules; then
		rmmod rks_target && u=$((u + 1))
	fi
	say "RKS shell module-loads $n"
	say "RKS shell module-unloads $u"
	say "RKS shell module-errors $err"
}

sample_list() {	# how often rks_opt_target's probe is seen optimized
	n=0
	o=0
	while [ ! -e /stop ]; do
		grep -q 'rks_opt_target.*OPTIMIZED' $KP/list && o=$((o + 1))
		n=$((n + 1))
		usleep 200000
	done
	say "RKS shell list-samples $n"
	say "RKS shell list-optimized $o"
}

say "RKS list-before-insmod $(wc -l < $KP/list)"
# Without optprobes (arm64, riscv, loongarch, s390) there is no optimization
# sysctl to toggle and no [OPTIMIZED] probe to wait for.
if [ ! -e $OPT ]; then
	say "RKS no-optprobes 1"
	[ "$TOGGLES" = both ] && TOGGLES=enabled
	[ "$TOGGLES" = optimization ] && TOGGLES=none
fi
echo 64 > $TR/buffer_size_kb
insmod /lib/modules/rkprobes_stress.ko duration="$DURATION"
say "RKS insmod $?"
say "RKS toggles $TOGGLES"
case $TOGGLES in
both)
	toggle_enabled &
	toggle_optimization &
	;;
enabled)
	toggle_enabled &
	;;
optimization)
	toggle_optimization &
	;;
esac
churn_events &
churn_module &
sample_list &
sleep "$DURATION"
# Joins the module's threads, once its registrar has done every kind of
# operation (which may take longer than DURATION).
ctl stop
touch /stop
wait
echo 1 > $KP/enabled
[ -e $OPT ] && echo 1 > $OPT
say "RKS events-left $(grep -c . $TR/kprobe_events)"

# Quiet: every probe registered and enabled, nothing else changing.
ctl quiet-arm
i=0
[ -e $OPT ] || i=100
while ! grep -q 'rks_opt_target.*OPTIMIZED' $KP/list && [ $i -lt 100 ]; do
	usleep 200000
	i=$((i + 1))
done
grep -E 'rks_(agg|opt|ret|ftrace)_target' $KP/list | while read -r ln; do say "RKS quiet-list $ln"; done
say "RKS quiet-optimized $(grep -c 'rks_opt_target.*OPTIMIZED' $KP/list)"
ctl quiet-run
ctl finish
# With fault injection built in (rkprobes stress --debug faults): the module
# registers each kind of probe with its n-th allocation failed. failslab and
# fail_page_alloc leave GFP_KERNEL, highmem (vmalloc) and order-0 requests
# alone by default: count them all, and print nothing per injection.
FI=/sys/kernel/debug
if [ -d $FI/failslab ]; then
	for d in $FI/failslab $FI/fail_page_alloc; do
		echo N > $d/ignore-gfp-wait
		echo 0 > $d/verbose
	done
	echo N > $FI/fail_page_alloc/ignore-gfp-highmem
	echo 0 > $FI/fail_page_alloc/min-order
	ctl faults
fi
say "RKS list-before-rmmod $(grep -c rkprobes_stress $KP/list)"
rmmod rkprobes_stress
say "RKS rmmod $?"
say "RKS list-after-rmmod $(grep -c . $KP/list)"
while read -r ln; do say "RKS listed $ln"; done < $KP/list
# With kmemleak built in (rkprobes stress --debug kmemleak): what the module and
# the kprobes it registered left behind, after two scans (an object must be
# seen unreferenced twice to be reported).
ML=/sys/kernel/debug/kmemleak
if [ -e $ML ]; then
	echo scan > $ML
	sleep 1
	echo scan > $ML
	say "RKS kmemleak-objects $(grep -c 'unreferenced object' $ML)"
	grep -A12 'unreferenced object' $ML | head -60 | while read -r ln; do say "RKS kmemleak: $ln"; done
fi
say RKS-DONE
reboot -f

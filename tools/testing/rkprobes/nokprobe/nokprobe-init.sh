#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the probe-every-symbol initramfs of `scripts/rkprobes test`: for
# each line "<symbol> <hit|->" of /symbols (every function symbol of the
# kprobes core's objects, from llvm-nm), registers a kprobe on the symbol
# through rkprobes_nokprobe.ko and prints "RKN <symbol> <return value>", then
# how many times each of those names is in /proc/kallsyms when it is not
# exactly once ("RKN-DUP <symbol> <count>": such a name may resolve to a
# function of another file), and reboots.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
echo RKN-BEGIN
insmod /lib/modules/rkprobes_nokprobe.ko
echo "RKN-INSMOD $?"
knob=/sys/kernel/debug/rkprobes_nokprobe/probe
if [ -w "$knob" ]; then
	while read -r sym hit; do
		echo "$sym" > "$knob"
		echo "RKN $sym $(cat "$knob")"
	done < /symbols
	awk 'NR == FNR { want[$1] = 1; next }
	     ($3 in want) { n[$3]++ }
	     END { for (s in want) if (n[s] != 1) print "RKN-DUP", s, n[s] + 0 }' /symbols /proc/kallsyms
fi
echo RKN-DONE
reboot -f

#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the x86 behaviour suite's initramfs of `scripts/rkprobes test`:
# mounts /proc (the cases switch /proc/sys/debug/kprobes-optimization),
# loads the sites (rkprobes_x86sites) and the KUnit module
# rkprobes_x86suite (its cases run while insmod runs
# and print KTAP on the console), and reboots.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
echo XS-BEGIN
insmod /lib/modules/rkprobes_x86sites.ko
insmod /lib/modules/rkprobes_x86suite.ko
echo "XS-INSMOD $?"
echo XS-DONE
reboot -f

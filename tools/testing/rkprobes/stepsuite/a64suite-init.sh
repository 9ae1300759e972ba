#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the arm64 behaviour suite's initramfs of `scripts/rkprobes test`:
# mounts /proc, /sys and debugfs, loads the sites (rkprobes_a64sites) and
# the KUnit module rkprobes_a64suite (its cases run while insmod runs and
# print KTAP on the console), and reboots.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
echo AS-BEGIN
insmod /lib/modules/rkprobes_a64sites.ko
insmod /lib/modules/rkprobes_a64suite.ko
echo "AS-INSMOD $?"
echo AS-DONE
reboot -f

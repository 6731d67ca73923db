#!/bin/sh
# Run a command as root on a cgroup v2 machine: a QEMU VM whose files are this machine's
# (read-only, writes kept in memory), booted with Debian's kernel. For the grader's
# cgroup v2 tests where the machine itself is cgroup v1 (a container, say):
#
#   tools/cgroup_v2_vm/run.sh 'cd /work/main && .venv/bin/pytest tests/test_grading_cgroup_v2.py'
#
# Needs root and: apt install qemu-system-x86 linux-image-amd64 busybox-static.
# Without /dev/kvm (or where nested KVM does not boot) it emulates the CPU (TCG), about
# ten times slower: importing PyTorch takes a minute. VM_MEMORY (8G), VM_TIMEOUT (s).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kernel=$(ls /boot/vmlinuz-* | sort -V | tail -1)
version=${kernel#/boot/vmlinuz-}
work=/tmp/aiayn-vm
rm -rf "$work"; mkdir -p "$work/initrd/bin" "$work/initrd/mods"
cd "$work/initrd"; mkdir -p proc sys dev lower rw newroot
cp /bin/busybox bin/; cp "$here/init" init; chmod +x init
echo "$here/stage2.sh" > stage2
modules="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p overlay"
for m in $modules; do
  f=$(find "/lib/modules/$version" -name "$m.ko" | head -1)
  [ -n "$f" ] && cp "$f" mods/ && echo "$m" >> modules
done
find . | cpio -o -H newc 2>/dev/null | gzip > "$work/initrd.gz"
printf '%s\n' "$1" > "$work/command"
accel="-accel tcg,thread=multi -cpu max"
[ "${VM_KVM:-0}" = 1 ] && accel="-enable-kvm -cpu host"
# shellcheck disable=SC2086
timeout "${VM_TIMEOUT:-3600}" qemu-system-x86_64 $accel -m "${VM_MEMORY:-8G}" -smp 2 \
  -nographic -no-reboot -kernel "$kernel" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 quiet panic=-1" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap \
  | tr -d '\r' | grep --line-buffered -v '^\x1b' | tee "$work/console.log"
grep -q '^VM-COMMAND-EXIT 0$' "$work/console.log"

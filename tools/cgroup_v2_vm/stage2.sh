#!/bin/sh
# The VM's second stage, on the host's files: a cgroup v2 hierarchy laid out as systemd
# lays it out (memory, pids and cpu handed down; PID 1 in init.scope; a root login in
# user.slice/user-0.slice/session-1.scope, shared with its shell), but no systemd.
# Runs /tmp/aiayn-vm/command (written by run.sh) in that session, then powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
mount -t tmpfs tmpfs /run; mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts; mount -t tmpfs -o mode=1777 tmpfs /dev/shm
hostname cgroup-v2-vm
C=/sys/fs/cgroup
mkdir -p $C/init.scope $C/user.slice/user-0.slice/session-1.scope
echo $$ > $C/init.scope/cgroup.procs
for g in "" /user.slice /user.slice/user-0.slice; do echo "+memory +pids +cpu" > $C$g/cgroup.subtree_control; done
echo "VM: $(uname -r), cgroup v2 controllers: $(cat $C/cgroup.controllers), $(nproc) CPUs, $(awk "/MemTotal/{print int(\$2 / 1024)}" /proc/meminfo) MiB"
sh -c "echo \$\$ > $C/user.slice/user-0.slice/session-1.scope/cgroup.procs; cd /tmp/aiayn-vm; exec sh ./command" < /dev/null
echo "VM-COMMAND-EXIT $?"
sync
echo o > /proc/sysrq-trigger
while :; do :; done  # until the power goes (sysrq acts at once, not before this returns)

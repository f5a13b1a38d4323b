#!/usr/bin/env bash
# The driver on a real PCI BAR (issue 51): the model runs on this host as a
# device in real time (`dimmnet-sim serve --realtime`), and a virtual
# machine sees its node file as the memory BAR of an ivshmem-plain PCI
# device. In the guest, the unmodified driver maps the BAR through sysfs
# (resource2 uncached for UR, LLCM and PW; resource2_wc write-combining for
# WW), runs the device tests (`dimmnet-sim devcheck`) on both slots of the
# node, then an MPI ping-pong between two processes of the guest, one per
# slot, over the card. The guest prints the kernel's page-attribute
# entries for the BAR (the mapping types).
#
#   scripts/vm-test.sh            # KVM when /dev/kvm is usable, else TCG (slower)
#
# Everything comes from Debian packages (qemu-system-x86, linux-image-amd64,
# busybox-static: installed here when missing) and this tree; nothing is
# downloaded from elsewhere. Work files go to target/vm-test.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=${VM_WORK:-$root/target/vm-test}
iters=${VM_PINGPONG_ITERS:-2000}

say() { echo "vm-test: $*"; }

# -- what the VM needs ------------------------------------------------------
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
# The guest's shell must not need the host's libraries.
if ! { [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; }; then need+=(busybox-static); fi
ls /boot/vmlinuz-* >/dev/null 2>&1 || need+=(linux-image-amd64)
command -v cpio >/dev/null || need+=(cpio)
if [ ${#need[@]} -gt 0 ]; then
    say "installing ${need[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
kernel=$(ls -v /boot/vmlinuz-* | tail -1)
[ -r "$kernel" ] || { say "cannot read $kernel (run as root, or make it readable)"; exit 1; }

# -- the host side ----------------------------------------------------------
cargo build --release --locked -q -p hw-tools --bin dimmnet-sim
cargo build --release --locked -q -p capi
rm -rf "$work"
mkdir -p "$work/lib"
cp target/release/libmpi_abi.so "$work/lib/libmpi_abi.so.1"
gcc -O2 -I capi/include -o "$work/pingpong" sim-tests/c/pingpong.c -L "$work/lib" -l:libmpi_abi.so.1

# The initramfs: busybox, our two binaries and the shared libraries they load.
rootfs=$work/rootfs
mkdir -p "$rootfs"/{bin,lib,proc,sys,dev,tmp,etc}
cp /bin/busybox "$rootfs/bin/busybox"
cp target/release/dimmnet-sim "$work/pingpong" "$rootfs/bin/"
cp "$work/lib/libmpi_abi.so.1" "$rootfs/lib/"
for bin in target/release/dimmnet-sim "$work/pingpong"; do
    LD_LIBRARY_PATH="$work/lib" ldd "$bin" | grep -o '/[^ ]*' | while read -r lib; do
        [ -e "$rootfs$lib" ] && continue
        mkdir -p "$rootfs$(dirname "$lib")"
        cp -L "$lib" "$rootfs$lib"
    done
done
cat >"$rootfs/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin LD_LIBRARY_PATH=/lib
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
result=FAIL
dev=
for d in /sys/bus/pci/devices/*; do
    [ "\$(cat \$d/vendor)" = 0x1af4 ] && [ "\$(cat \$d/device)" = 0x1110 ] && dev=\$d
done
if [ -z "\$dev" ]; then
    echo "vm-test: no ivshmem device in the guest"
else
    echo
    echo
    echo 1 >\$dev/enable 2>/dev/null
    echo "vm-test: guest kernel \$(uname -r), BAR at \$dev: \$(ls \$dev | grep resource2 | tr '\n' ' ')"
    if dimmnet-sim devcheck --device \$dev/resource2; then
        DN_BACKEND=dimmnet DN_DEVICE=\$dev/resource2 DN_SIZE=2 DN_RANK=1 pingpong $iters 1024 >/tmp/rank1 2>&1 &
        one=\$!
        DN_BACKEND=dimmnet DN_DEVICE=\$dev/resource2 DN_SIZE=2 DN_RANK=0 pingpong $iters 1024 >/tmp/rank0 2>&1
        zero=\$?
        wait \$one
        one=\$?
        sed 's/^/vm-test: rank 0: /' /tmp/rank0
        sed 's/^/vm-test: rank 1: /' /tmp/rank1
        [ \$zero = 0 ] && [ \$one = 0 ] && grep -q "^OK pingpong" /tmp/rank0 && result=PASS
    fi
fi
echo "vm-test: \$result"
poweroff -f
EOF
chmod +x "$rootfs/init"
(cd "$rootfs" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$work/initramfs.gz"

# The device: one node of two slots, its file the VM's BAR.
"$root/target/release/dimmnet-sim" serve --realtime --nodes 1 --slots 2 --dir "$work/dev" >"$work/model.log" 2>&1 &
model=$!
trap 'kill -INT $model 2>/dev/null || true; wait $model 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q ready "$work/model.log" && break; sleep 0.1; done
grep -q ready "$work/model.log" || { cat "$work/model.log"; say "the model did not start"; exit 1; }
node=$work/dev/node0.mmio
size=$(stat -c %s "$node")
(( size & (size - 1) )) && { say "the node file has $size bytes, not a power of two: it cannot be a BAR"; exit 1; }

# One boot of the guest with accelerator $1; the guest's lines go to
# guest.log. With KVM, a guest that has printed nothing of its own after
# $kvm_wait s is given up on (returns 2), so TCG can be tried.
kvm_wait=${VM_KVM_WAIT:-30}
boot() {
    local accel=(-accel tcg -cpu max)
    [ "$1" = kvm ] && accel=(-accel kvm -cpu host,-arch-capabilities)
    : >"$work/guest.log"
    qemu-system-x86_64 -M q35 "${accel[@]}" -m 512 -smp 2 -nographic -no-reboot \
        -kernel "$kernel" -initrd "$work/initramfs.gz" \
        -append "console=ttyS0 quiet panic=-1 rdinit=/init" \
        -object "memory-backend-file,id=dn,share=on,mem-path=$node,size=$size" \
        -device ivshmem-plain,memdev=dn,addr=0x5 </dev/null >"$work/guest.raw" 2>&1 &
    local vm=$! waited=0
    while kill -0 $vm 2>/dev/null; do
        tr -d '\r' <"$work/guest.raw" >"$work/guest.log"
        if [ "$1" = kvm ] && [ $waited -ge "$kvm_wait" ] && ! grep -q "^vm-test:" "$work/guest.log"; then
            kill $vm 2>/dev/null; wait $vm 2>/dev/null || true
            return 2
        fi
        if [ $waited -ge 900 ]; then
            kill $vm 2>/dev/null; wait $vm 2>/dev/null || true
            say "the guest ran for 900 s: stopped"
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    wait $vm 2>/dev/null || true
    tr -d '\r' <"$work/guest.raw" >"$work/guest.log"
}
say "guest kernel $kernel; BAR = $node ($size bytes)"
accel=${VM_ACCEL:-auto}
if [ "$accel" = auto ]; then
    accel=tcg
    [ -r /dev/kvm ] && [ -w /dev/kvm ] && accel=kvm
fi
say "accelerator: $accel"
rc=0
boot "$accel" || rc=$?
if [ $rc = 2 ]; then
    say "KVM: the guest printed nothing in ${kvm_wait} s (nested KVM that cannot run this kernel); TCG instead"
    accel=tcg
    rc=0
    boot tcg || rc=$?
fi
grep -E "^(vm-test|devcheck)" "$work/guest.log" || true
kill -INT $model 2>/dev/null || true
wait $model 2>/dev/null || true
trap - EXIT
grep "dimmnet-sim: ran" "$work/model.log" | sed 's/^/vm-test: host model: /'
if grep -q "^vm-test: PASS" "$work/guest.log"; then
    say "passed (guest output in $work/guest.log)"
else
    say "FAILED (guest output in $work/guest.log)"
    tail -30 "$work/guest.log"
    exit 1
fi

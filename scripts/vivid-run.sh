#!/bin/bash
# vivid-run.sh - run one command as root inside a throw-away QEMU VM that boots the
# stock Debian kernel, shares this machine's whole filesystem, and has the kernel's
# `vivid` virtual V4L2 driver loaded (a real /dev/video* device).
#
#   usage:  vivid-run.sh 'command string'          (run with bash -c inside the VM)
#   result: the command's stdout/stderr are streamed to this script's stdout/stderr;
#           the script exits with the command's exit code, or: 126 = bad setup on the
#           host (missing package, no kernel, KVM demanded but unusable), 125 = the VM
#           failed (no exit code came back), 124 = timeout, 120 = `modprobe vivid`
#           failed inside the VM.
#
# Prerequisites (this script installs nothing; Debian 12 package names):
#   apt-get install --no-install-recommends \
#       linux-image-amd64 qemu-system-x86 busybox-static cpio kmod v4l-utils
#   (linux-image-amd64 only provides /boot/vmlinuz-* and /lib/modules/*; the host keeps
#    running its own kernel.  Also used: coreutils, GNU grep -P, xz-utils (optional: to
#    unpack vmlinux for the faster PVH boot).  No pip packages are needed.)
#
# What the guest sees:
#   /            host /, read-only 9p, with an in-RAM overlay on top: everything under
#                /usr, /opt, /tmp, /root ... is visible and writable, but writes vanish.
#   $VIVID_RWDIR host directory shared READ-WRITE (default: the current directory):
#                write results there to get them back on the host.
#   cwd          the host's current directory; PATH is the host's PATH.
#   /dev/video0  vivid capture node, /dev/video1 vivid output node ($VIVID_CAP, $VIVID_OUT)
#
# Environment knobs:
#   VIVID_ACCEL    auto (default) | kvm | tcg.  auto = KVM when /dev/kvm is read/writable,
#                  the CPU shows vmx/svm and /dev/kvm is not PVM (kvm_pvm); otherwise it
#                  says why on stderr and falls back to TCG software emulation (measured
#                  here: ~3.5-4.5 s from start to the command, 1 vCPU).  kvm = fail (exit
#                  126) if KVM is missing/unusable.  (The KVM path was not testable on the
#                  machine this was written on.)
#   VIVID_MODE     loop (default): capture input = HDMI, output = HDMI, both 640x480p60
#                  DV timings and YUYV 640x480, controls loop_video=1, osd_text_mode=2:
#                  frames written to $VIVID_OUT appear on $VIVID_CAP (the shell function
#                  `vivid_inject FILE [FOURCC [W [H]]]` starts such a writer in background;
#                  `vivid_reload` reloads the module and redoes this setup).
#                  The capture format set by the reader must use the SAME pixel format as
#                  the writer, otherwise vivid shows its test pattern instead; sizes may
#                  differ (vivid scales).
#                  webcam: capture input 0 ("Webcam 0", discrete sizes/frame rates, test
#                  pattern only).  none: do not load vivid.
#   VIVID_MODOPTS  modprobe options (default: "n_devs=1 node_types=0x101")
#   VIVID_RWDIR    host dir shared read-write (default: $PWD)
#   VIVID_KERNEL   kernel image (default: newest /boot/vmlinuz-* that has vivid.ko)
#   VIVID_MEM      guest RAM (default 1024M)
#   VIVID_CPUS     guest CPUs (default 1 under TCG, 2 under KVM)
#   VIVID_TIMEOUT  seconds for the whole VM run (default 900)
#   VIVID_DMESG=1  print the guest kernel log to stderr after the command
#   VIVID_DEBUG=1  verbose guest kernel console, printed to stderr after the VM exits
#   VIVID_MACHINE  q35 (default) | pc | microvm  (microvm is experimental: it hung in 2
#                  of 5 TCG boots during testing; q35 never hung at boot)
#   VIVID_PVH=0    boot the compressed /boot/vmlinuz instead of the cached uncompressed
#                  vmlinux (PVH boot of vmlinux saves ~4 s of XZ decompression under TCG)
#   VIVID_CACHE    where the generated initramfs is cached (default ~/.cache/vivid-run)
set -euo pipefail

prog=vivid-run
die() { echo "$prog: ERROR: $*" >&2; exit 126; }
note() { echo "$prog: $*" >&2; }

[ $# -ge 1 ] || die "usage: $0 'command string'"
[ "$1" = "--" ] && shift
CMD="$*"

QEMU=$(command -v qemu-system-x86_64 || true)
[ -n "$QEMU" ] || die "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
BUSYBOX=""
for b in /bin/busybox /usr/bin/busybox; do
  if [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then BUSYBOX=$b; break; fi
done
[ -n "$BUSYBOX" ] || die "a statically linked busybox is needed (apt-get install busybox-static)"
command -v cpio >/dev/null || die "cpio not found (apt-get install cpio)"
command -v modprobe >/dev/null || [ -x /sbin/modprobe ] || die "modprobe not found (apt-get install kmod)"
MODPROBE=$(command -v modprobe || echo /sbin/modprobe)
command -v v4l2-ctl >/dev/null || note "warning: v4l2-ctl not found; VIVID_MODE=loop setup needs it (apt-get install v4l-utils)"

# ---- kernel ---------------------------------------------------------------------
KERNEL=${VIVID_KERNEL:-}
if [ -z "$KERNEL" ]; then
  for k in $(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V -r); do
    v=${k#/boot/vmlinuz-}
    if ls /lib/modules/"$v"/kernel/drivers/media/test-drivers/vivid/vivid.ko* >/dev/null 2>&1; then
      KERNEL=$k; break
    fi
  done
fi
[ -n "$KERNEL" ] && [ -r "$KERNEL" ] || die "no readable /boot/vmlinuz-* with a matching vivid.ko (apt-get install linux-image-amd64)"
KVER=${KERNEL##*/vmlinuz-}
[ -d /lib/modules/"$KVER" ] || die "/lib/modules/$KVER missing for $KERNEL"

# ---- accelerator ----------------------------------------------------------------
ACCEL=${VIVID_ACCEL:-auto}
kvm_problem() {
  if [ ! -e /dev/kvm ]; then echo "/dev/kvm does not exist"; return; fi
  if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then echo "/dev/kvm is not read/writable by $(id -un)"; return; fi
  if [ -d /sys/module/kvm_pvm ]; then
    echo "/dev/kvm is provided by kvm_pvm (PVM); it only runs PVM-enabled guest kernels, a stock kernel hangs"; return; fi
  if ! grep -qwE 'vmx|svm' /proc/cpuinfo; then echo "CPU shows no vmx/svm flag"; return; fi
  echo ""
}
KVMWHY=$(kvm_problem)
case "$ACCEL" in
  kvm)  [ -z "$KVMWHY" ] || die "VIVID_ACCEL=kvm but KVM is unusable: $KVMWHY";;
  tcg)  ;;
  auto) if [ -z "$KVMWHY" ]; then ACCEL=kvm; else
          note "KVM unusable ($KVMWHY); falling back to TCG software emulation (slower)"; ACCEL=tcg; fi;;
  *)    die "VIVID_ACCEL must be auto, kvm or tcg";;
esac
if [ "$ACCEL" = kvm ]; then CPUOPT="-cpu host"; else CPUOPT="-cpu max"; fi

MODE=${VIVID_MODE:-loop}
case "$MODE" in loop|webcam|none) ;; *) die "VIVID_MODE must be loop, webcam or none";; esac
RWDIR=$(cd "${VIVID_RWDIR:-$PWD}" && pwd -P) || die "VIVID_RWDIR does not exist"
case "$RWDIR" in *[[:space:]]*|*,*) die "VIVID_RWDIR must not contain spaces or commas: $RWDIR";; esac

# ---- initramfs (busybox + the modules needed to mount 9p/overlay), cached --------
CACHE=${VIVID_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vivid-run}
INITRD=$CACHE/initramfs-$KVER.cpio.gz
SELF=$(readlink -f "$0")
if [ ! -s "$INITRD" ] || [ "$SELF" -nt "$INITRD" ]; then
  mkdir -p "$CACHE"
  IR=$(mktemp -d "$CACHE/build.XXXXXX")
  mkdir -p "$IR"/{bin,proc,sys,dev,ctl,lower,rw,newroot,mods}
  cp "$BUSYBOX" "$IR/bin/busybox"
  ln -s busybox "$IR/bin/sh"
  : > "$IR/mods/order"
  for ko in $("$MODPROBE" -S "$KVER" -a --show-depends virtio_pci virtio_mmio virtio_console 9pnet_virtio 9p overlay \
              | awk '$1=="insmod"{print $2}' | awk '!seen[$0]++'); do
    base=$(basename "$ko")
    case "$ko" in
      *.ko) cp "$ko" "$IR/mods/$base";;
      *.ko.xz) xz -dc "$ko" > "$IR/mods/${base%.xz}"; base=${base%.xz};;
      *.ko.zst) zstd -qdc "$ko" > "$IR/mods/${base%.zst}"; base=${base%.zst};;
      *.ko.gz) gzip -dc "$ko" > "$IR/mods/${base%.gz}"; base=${base%.gz};;
    esac
    echo "$base" >> "$IR/mods/order"
  done
  cat > "$IR/init" <<'INIT'
#!/bin/sh
# PID 1 inside the VM: mount the host filesystem, run stage2 in a chroot, power off.
export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
err() { echo "vivid-run(guest): $*" > /dev/ttyS0; }
for m in $(cat /mods/order); do insmod /mods/$m 2>/dev/null || err "insmod $m failed"; done
m9() { # tag dir opts ; retry while virtio devices appear
  i=0; while ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,$3 $1 $2 2>/dev/null; do
    i=$((i+1)); [ $i -gt 50 ] && { err "cannot mount 9p tag $1"; return 1; }; sleep 0.1; done; }
m9 vividctl /ctl rw || { poweroff -f; reboot -f; }
. /ctl/config
m9 hostroot /lower ro,cache=loose || { poweroff -f; reboot -f; }
mount -t tmpfs -o mode=755 tmpfs /rw && mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot || err "overlay mount failed"
N=/newroot
mount -t proc proc $N/proc; mount -t sysfs sysfs $N/sys; mount -t devtmpfs devtmpfs $N/dev
mkdir -p $N/dev/pts $N/dev/shm; mount -t devpts devpts $N/dev/pts; mount -t tmpfs tmpfs $N/dev/shm
mount -t tmpfs -o mode=755 tmpfs $N/run
mkdir -p $N/run/vivid-ctl && mount -o bind /ctl $N/run/vivid-ctl
mkdir -p "$N$VIVID_RWDIR" && m9 hostrw "$N$VIVID_RWDIR" rw
# guest stdout/stderr: virtio-serial ports named vivid.stdout / vivid.stderr (no tty layer)
OUT=/dev/ttyS0; ERR=/dev/ttyS0
for p in /sys/class/virtio-ports/*; do
  case "$(cat $p/name 2>/dev/null)" in
    vivid.stdout) OUT=/dev/${p##*/};; vivid.stderr) ERR=/dev/${p##*/};;
  esac
done
chroot $N /bin/sh /run/vivid-ctl/stage2.sh < /dev/null > $OUT 2> $ERR
echo $? > /ctl/rc
sync
poweroff -f; reboot -f
INIT
  chmod 755 "$IR/init"
  (cd "$IR" && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD.tmp"
  mv "$INITRD.tmp" "$INITRD"
  rm -rf "$IR"
fi

# ---- uncompressed kernel for PVH boot (skips the in-guest XZ decompression: ~4s under TCG)
BOOTK=$KERNEL
if grep -qs '^CONFIG_PVH=y' /boot/config-"$KVER"; then
  VMLINUX=$CACHE/vmlinux-$KVER
  if [ ! -s "$VMLINUX" ] || [ "$KERNEL" -nt "$VMLINUX" ]; then
    mkdir -p "$CACHE"
    off=$(LC_ALL=C grep -abo -P '\xfd7zXZ\x00' "$KERNEL" 2>/dev/null | head -1 | cut -d: -f1 || true)
    if [ -n "$off" ] && command -v xz >/dev/null; then
      tail -c +$((off + 1)) "$KERNEL" | xz -dc --single-stream > "$VMLINUX.tmp" 2>/dev/null || true
    fi
    if [ "$(head -c 4 "$VMLINUX.tmp" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; then
      mv "$VMLINUX.tmp" "$VMLINUX"
    else
      rm -f "$VMLINUX.tmp"
    fi
  fi
  [ -s "$VMLINUX" ] && BOOTK=$VMLINUX
fi
[ "${VIVID_PVH:-1}" = 0 ] && BOOTK=$KERNEL

# ---- per-run control directory ---------------------------------------------------
CTL=$(mktemp -d /tmp/vivid-run.XXXXXX)        # shared with the guest (9p, rw)
PIPES=$(mktemp -d /tmp/vivid-run-io.XXXXXX)   # host only: FIFOs carrying guest stdout/stderr
trap 'rm -rf "$CTL" "$PIPES"' EXIT
printf '%s' "$CMD" > "$CTL/cmd"
{
  printf 'VIVID_RWDIR=%q\n' "$RWDIR"
  printf 'VIVID_MODE=%q\n' "$MODE"
  printf 'VIVID_MODOPTS=%q\n' "${VIVID_MODOPTS:-n_devs=1 node_types=0x101}"
  printf 'VIVID_HOST_PATH=%q\n' "$PATH"
  printf 'VIVID_CWD=%q\n' "$PWD"
  printf 'VIVID_DMESG=%q\n' "${VIVID_DMESG:-0}"
} > "$CTL/config"
cat > "$CTL/stage2.sh" <<'STAGE2'
# runs inside the VM (as root, /bin/sh), chrooted into the overlay of the host filesystem
. /run/vivid-ctl/config
export PATH="$VIVID_HOST_PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export HOME=/root USER=root LOGNAME=root TERM=dumb
export VIVID_CAP=/dev/video0 VIVID_OUT=/dev/video1 VIVID_MODE VIVID_MODOPTS
hostname vivid-vm 2>/dev/null
# Loopback up: tests talk to cvhost's --http server inside the VM.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
cat > /run/vivid-funcs.sh <<'F'
# Helpers available to the command (bash sources this file through BASH_ENV).
# vivid_load: modprobe vivid and, in loop mode, route HDMI output -> HDMI input
vivid_load() {
  modprobe vivid $VIVID_MODOPTS || return 1
  _i=0; while [ ! -e /dev/video0 ] && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i+1)); done
  [ "$VIVID_MODE" = loop ] || return 0
  # v4l2-ctl applies these in the order: controls, input/output, DV timings, format
  { v4l2-ctl -d /dev/video0 -i 3 --set-dv-bt-timings index=0 \
      -v width=640,height=480,pixelformat=YUYV -c loop_video=1,osd_text_mode=2 &&
    v4l2-ctl -d /dev/video1 -o 1 --set-dv-bt-timings index=0 \
      -x width=640,height=480,pixelformat=YUYV; } > /dev/null ||
    { echo "vivid-run(guest): loop setup failed (needs node_types with 0x101)" >&2; return 1; }
}
# vivid_reload: fresh vivid instance (a vivid 6.1 oops was seen after changing formats
# several times within one module lifetime; reload between format combinations)
vivid_reload() {
  [ -n "${VIVID_INJECT_PID:-}" ] && { kill "$VIVID_INJECT_PID" 2>/dev/null; wait "$VIVID_INJECT_PID" 2>/dev/null; }
  VIVID_INJECT_PID=
  rmmod vivid && vivid_load
}
# vivid_inject FILE [FOURCC=YUYV] [W=640] [H=480]: loop FILE (raw frames of that format)
# into $VIVID_OUT in the background; the reader of $VIVID_CAP must use the same FOURCC.
vivid_inject() {
  v4l2-ctl -d "$VIVID_OUT" -x width=${3:-640},height=${4:-480},pixelformat=${2:-YUYV} || return 1
  v4l2-ctl -d "$VIVID_OUT" --stream-out-mmap --stream-from="$1" --stream-loop > /dev/null 2>&1 &
  VIVID_INJECT_PID=$!
  sleep 1
}
F
. /run/vivid-funcs.sh
if [ "$VIVID_MODE" != none ]; then
  vivid_load || { echo "vivid-run(guest): modprobe vivid $VIVID_MODOPTS failed" >&2; exit 120; }
fi
cd "$VIVID_CWD" 2>/dev/null || cd /
export BASH_ENV=/run/vivid-funcs.sh
bash -c "$(cat /run/vivid-ctl/cmd)"
rc=$?
[ "$VIVID_DMESG" = 1 ] && dmesg >&2
exit $rc
STAGE2

# ---- boot --------------------------------------------------------------------------
# 1 vCPU under TCG: measured 2-3x faster boot than 2 vCPUs on a 2-core host
if [ "$ACCEL" = tcg ]; then DEFCPUS=1; else DEFCPUS=2; fi
MEM=${VIVID_MEM:-1024M}; CPUS=${VIVID_CPUS:-$DEFCPUS}; TMO=${VIVID_TIMEOUT:-900}
MACHINE=${VIVID_MACHINE:-q35}
if [ "${VIVID_DEBUG:-0}" = 1 ]; then KLOG="loglevel=7"; else KLOG="quiet loglevel=0"; fi
case "$MACHINE" in microvm) VBUS=device;; q35|pc) VBUS=pci;; *) die "VIVID_MACHINE must be q35, pc or microvm";; esac
# qemu's pipe chardev writes to PATH.out and reads PATH.in (a single FIFO would be read back by qemu)
mkfifo "$PIPES/out.in" "$PIPES/out.out" "$PIPES/err.in" "$PIPES/err.out"
cat "$PIPES/out.out" & CATOUT=$!
cat "$PIPES/err.out" >&2 & CATERR=$!
reap_cat() { # wait for a FIFO reader; unblock it if qemu never opened the FIFO
  local i=0
  while kill -0 "$1" 2>/dev/null && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done
  kill -0 "$1" 2>/dev/null && timeout 2 sh -c ": > '$2'" 2>/dev/null
  wait "$1" 2>/dev/null || true
}
t0=$(date +%s.%N)
set +e
timeout --foreground -k 5 "$TMO" "$QEMU" \
  -machine "$MACHINE",accel="$ACCEL" $CPUOPT -smp "$CPUS" -m "$MEM" \
  -nodefaults -no-user-config -display none -vga none -no-reboot \
  -kernel "$BOOTK" -initrd "$INITRD" \
  -append "console=ttyS0 $KLOG panic=-1 rdinit=/init" \
  -serial file:"$PIPES/console.log" \
  -device virtio-serial-$VBUS,id=vser \
  -chardev pipe,id=gout,path="$PIPES/out" -device virtserialport,bus=vser.0,chardev=gout,name=vivid.stdout \
  -chardev pipe,id=gerr,path="$PIPES/err" -device virtserialport,bus=vser.0,chardev=gerr,name=vivid.stderr \
  -fsdev local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap \
  -device virtio-9p-$VBUS,fsdev=fsroot,mount_tag=hostroot \
  -fsdev local,id=fsrw,path="$RWDIR",security_model=none,multidevs=remap \
  -device virtio-9p-$VBUS,fsdev=fsrw,mount_tag=hostrw \
  -fsdev local,id=fsctl,path="$CTL",security_model=none \
  -device virtio-9p-$VBUS,fsdev=fsctl,mount_tag=vividctl
qrc=$?
set -e
reap_cat "$CATOUT" "$PIPES/out.out"; reap_cat "$CATERR" "$PIPES/err.out"
[ "${VIVID_DEBUG:-0}" = 1 ] && { note "guest console:"; cat "$PIPES/console.log" >&2; }
t1=$(date +%s.%N)
el=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
if [ -s "$CTL/rc" ]; then
  rc=$(cat "$CTL/rc")
  note "exit code $rc (accel=$ACCEL, kernel $KVER, ${el}s wall for boot+run+shutdown)"
  exit "$rc"
fi
if [ $qrc -eq 124 ]; then note "timed out after ${TMO}s (accel=$ACCEL); guest console:"
  tail -n 30 "$PIPES/console.log" >&2 2>/dev/null || true; exit 124; fi
note "VM failed: qemu exit status $qrc, no exit code came back (accel=$ACCEL, ${el}s); guest console:"
tail -n 30 "$PIPES/console.log" >&2 2>/dev/null || true
exit 125

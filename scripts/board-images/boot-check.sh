#!/bin/bash
# Boots a board image the way the lab will (issue 35) and checks it reaches a shell:
# qemu-system-riscv64 -machine virt, OpenSBI (M-mode firmware) -> U-Boot as OpenSBI's
# S-mode payload -> U-Boot's distro boot reads /boot/extlinux/extlinux.conf on the disk
# -> the image's own kernel and initrd. Nothing is passed to the kernel from the host.
#
#   scripts/board-images/boot-check.sh IMAGE[.zst|.xz|.gz]
#
# It waits for `login:` on the serial console (ttyS0), logs in as root (the image's
# lab-only empty root password on the serial console), runs `uname -m; uname -r;
# cat /proc/cpuinfo | head`, then measures QEMU's resident memory and CPU while the board
# idles, and kills QEMU. Every wait is bounded:
#   LOGIN_TIMEOUT (s, default 420)   power-on to `login:`
#   CMD_TIMEOUT   (s, default 90)    login and the command
#   IDLE_SECONDS  (s, default 30)    idle measurement after the command; 0 skips it
#   NICE          (default 19)       QEMU's nice level: this host is shared
# The full console log is kept in $KEEP_LOG if set.
set -euo pipefail

image="${1:?usage: boot-check.sh IMAGE[.zst|.xz|.gz]}"
login_timeout="${LOGIN_TIMEOUT:-420}"
cmd_timeout="${CMD_TIMEOUT:-90}"
idle_seconds="${IDLE_SECONDS:-30}"

# Firmware from Debian's packages: opensbi's generic platform firmware (fw_dynamic takes
# the next stage's address from QEMU) and u-boot-qemu's S-mode build for riscv64 virt.
opensbi=/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin
uboot=/usr/lib/u-boot/qemu-riscv64_smode/u-boot.bin
for f in "$opensbi" "$uboot"; do
	[ -r "$f" ] || { echo "boot-check: $f is missing (apt-get install opensbi u-boot-qemu)" >&2; exit 1; }
done
command -v qemu-system-riscv64 >/dev/null || { echo "boot-check: apt-get install qemu-system-misc" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/boot-check.XXXXXX")
qemu_pid=""
cleanup() {
	if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
		kill "$qemu_pid" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$qemu_pid" 2>/dev/null || break; sleep 0.5; done
		kill -9 "$qemu_pid" 2>/dev/null || true
	fi
	[ -n "${KEEP_LOG:-}" ] && [ -f "$tmp/console.log" ] && cp "$tmp/console.log" "$KEEP_LOG"
	rm -rf "$tmp"
}
trap cleanup EXIT

# A private copy of the disk: the board writes to it. Decompression keeps the holes.
disk="$tmp/disk.img"
t=$(date +%s.%N)
case "$image" in
*.zst) timeout 300 zstd -q -d --sparse "$image" -o "$disk" ;;
*.xz) timeout 300 xz -dc "$image" | cp --sparse=always /dev/stdin "$disk" ;;
*.gz) timeout 300 gzip -dc "$image" | cp --sparse=always /dev/stdin "$disk" ;;
*) cp --sparse=always "$image" "$disk" ;;
esac
printf 'disk: %s (%s MiB raw, %s MiB allocated), prepared in %.1f s\n' "$image" \
	$(($(stat -c %s "$disk") / 1048576)) $(($(du -k "$disk" | cut -f1) / 1024)) \
	"$(echo "$(date +%s.%N) - $t" | bc)"

# The serial console is QEMU's stdio (-nographic): a FIFO feeds it, a file records it.
mkfifo "$tmp/in"
: > "$tmp/console.log"
# restrict=on: the guest's user-mode network reaches nothing of the host, its loopback
# services included (slirp's default lets 10.0.2.2 reach the host's 127.0.0.1).
t0=$(date +%s.%N)
nice -n "${NICE:-19}" qemu-system-riscv64 \
	-machine virt -m 1024 -smp 2 -accel tcg,tb-size=64 -nographic \
	-bios "$opensbi" -kernel "$uboot" \
	-drive "file=$disk,format=raw,if=none,id=hd0,cache=unsafe" \
	-device virtio-blk-device,drive=hd0 \
	-netdev user,id=n0,restrict=on -device virtio-net-device,netdev=n0 \
	< "$tmp/in" > "$tmp/console.log" 2>&1 &
qemu_pid=$!
exec 3> "$tmp/in"

since() { echo "$(date +%s.%N) - $t0" | bc; }
seen() { grep -aq -- "$1" "$tmp/console.log"; }
# Waits up to $2 seconds for text $1 on the console; also notes when boot stages appear.
declare -A stage_at=()
stages=("OpenSBI v" "U-Boot 20" "Retrieving file: /boot/extlinux/extlinux.conf" "Linux version" "Welcome to")
wait_for() {
	local want="$1" limit="$2" start s
	start=$(date +%s)
	while :; do
		for s in "${stages[@]}"; do
			[ -z "${stage_at[$s]:-}" ] && seen "$s" && stage_at[$s]=$(since)
		done
		seen "$want" && return 0
		kill -0 "$qemu_pid" 2>/dev/null || { echo "boot-check: QEMU exited" >&2; return 1; }
		[ $(($(date +%s) - start)) -ge "$limit" ] && return 1
		sleep 0.2
	done
}

if ! wait_for "login: " "$login_timeout"; then
	echo "boot-check: no login prompt within $login_timeout s; the console's last lines:" >&2
	tail -n 40 "$tmp/console.log" | tr -d '\r' >&2
	exit 1
fi
login_s=$(since)
# CPU time QEMU spent to get there: unlike the wall time, it hardly depends on how busy
# the host is (both vCPU threads and the I/O thread together).
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$qemu_pid/stat"; }
login_cpu_s=$(echo "scale=1; $(ticks) / $hz" | bc)
for s in "${stages[@]}"; do
	printf '  %-48s %6.1f s\n' "'$s' seen at" "${stage_at[$s]:-0}"
done
printf 'power-on to login prompt: %.1f s wall, %.1f s of QEMU CPU time\n' "$login_s" "$login_cpu_s"
grep -a -m1 "Linux version" "$tmp/console.log" | tr -d '\r' | sed 's/^\[[ 0-9.]*\] //; s/^/  /'

# Log in. An empty password logs in at once; answer a Password: prompt if one comes.
printf 'root\n' >&3
prompt='root@[^ ]*:~# '
wait_for "$prompt" "$cmd_timeout" || {
	seen "Password:" && printf '\n' >&3 && wait_for "$prompt" "$cmd_timeout"
} || { echo "boot-check: no root shell after login" >&2; tail -n 20 "$tmp/console.log" >&2; exit 1; }
printf 'root shell after: %.1f s\n' "$(since)"

# The markers are split in the typed line so that its echo does not match them.
printf 'echo ==BEG""IN==; uname -m; uname -r; cat /proc/cpuinfo | head; echo ==E""ND==\n' >&3
wait_for "^==END==" "$cmd_timeout" || { echo "boot-check: the command did not finish" >&2; tail -n 20 "$tmp/console.log" >&2; exit 1; }
# The console carries terminal escapes (bash's bracketed-paste switches): strip them.
plain() { tr -d '\r' < "$tmp/console.log" | sed 's/\x1b\[[?0-9;]*[A-Za-z]//g'; }
echo "--- uname -m; uname -r; cat /proc/cpuinfo | head"
plain | sed -n '/==BEGIN==$/,/^==END==$/p' | sed '1d;$d'
echo "---"
arch=$(plain | sed -n '/==BEGIN==$/{n;p}')
[ "$arch" = riscv64 ] || { echo "boot-check: uname -m said '$arch', not riscv64" >&2; exit 1; }

# The board idling at its prompt: QEMU's resident memory and its share of one core.
if [ "$idle_seconds" -gt 0 ]; then
	sleep 5
	a=$(ticks)
	sleep "$idle_seconds"
	b=$(ticks)
	rss_kib=$(awk '/^VmRSS:/ {print $2}' "/proc/$qemu_pid/status")
	printf 'idle QEMU: RSS %d MiB, CPU %.1f %% of a core over %d s\n' $((rss_kib / 1024)) \
		"$(echo "($b - $a) * 100 / $hz / $idle_seconds" | bc -l)" "$idle_seconds"
fi
echo "boot-check: OK (host load average: $(cut -d' ' -f1-3 /proc/loadavg), QEMU at nice ${NICE:-19})"

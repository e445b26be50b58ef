#!/bin/bash
# Builds the lab's RISC-V board images: Debian riscv64 (trixie) partitioned raw disk
# images that boot the way a real board does, OpenSBI -> U-Boot -> the image's own
# /boot/extlinux/extlinux.conf -> the image's own kernel and initrd (issue 35).
#
#   scripts/board-images/build.sh [--variant minimal|developer|all] [DIR]
#
# DIR (default ./data/images/board) receives, per variant:
#   debian-trixie-riscv64-<variant>.img.zst   the disk image, zstd-compressed (sparse raw inside)
#   debian-trixie-riscv64-<variant>.json      facts read from the built image, and the recipe hash
#   logs/<variant>.log                        the full build log
# and keeps cache/debs (downloaded packages) so that a rebuild fetches nothing again.
# An image whose .json names the current recipe (this script, customize.sh and rootfs/)
# is up to date: a second run does nothing.
#
# Host needs (Debian 12 or later, as root): mmdebstrap arch-test qemu-user-static
# binfmt-support e2fsprogs fdisk zstd, and binfmt_misc mounted so that riscv64 programs
# run in the chroot. Packages come from the Debian mirror the host's apt already uses
# (read from its sources, never changed) or from DEBIAN_MIRROR / DEBIAN_SECURITY_MIRROR.
#
# Nothing is ever mounted from the image on the host: the root file system is built in
# a directory and written into the disk image by `mkfs.ext4 -d`.
set -euo pipefail

# Other work shares this machine (2 cores): all of the build runs at the lowest CPU
# priority and best-effort low I/O priority, qemu-user emulation included.
if [ -z "${BIANBU_BUILD_NICED:-}" ]; then
	export BIANBU_BUILD_NICED=1
	exec nice -n 19 ionice -c2 -n7 bash "$0" "$@"
fi

here=$(cd "$(dirname "$0")" && pwd)
suite=trixie
variants=(minimal developer)
outdir=./data/images/board

while [ $# -gt 0 ]; do
	case "$1" in
	--variant)
		case "${2:-}" in
		minimal | developer) variants=("$2") ;;
		all) variants=(minimal developer) ;;
		*) echo "build.sh: --variant takes minimal, developer or all" >&2; exit 2 ;;
		esac
		shift 2 ;;
	-h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "build.sh: unknown option $1" >&2; exit 2 ;;
	*) outdir="$1"; shift ;;
	esac
done

# Packages. minbase gives Debian's "required" set; on top of it a board needs an init
# (systemd), a kernel with an initrd, a shell way in (openssh-server) and the few tools
# the service reads facts with (procps, iproute2).
pkgs_minimal=(systemd systemd-sysv udev dbus libpam-systemd kmod initramfs-tools
	linux-image-riscv64 openssh-server procps iproute2 systemd-resolved)
pkgs_developer=("${pkgs_minimal[@]}" build-essential git python3 make)
hostname_minimal=riscv-board
hostname_developer=riscv-board
# Raw disk size; the image is sparse, so unused space costs nothing once compressed.
size_minimal_mib=2048
size_developer_mib=4096

started=$(date +%s)
elapsed() { echo $(($(date +%s) - started)); }
phase_start=$started
phase_name=""
phases_json=""
# Prints a progress line and records how long the previous phase took.
phase() {
	local now
	now=$(date +%s)
	if [ -n "$phase_name" ]; then
		echo "    ... $phase_name took $((now - phase_start)) s"
		phases_json+="${phases_json:+, }\"$phase_name\": $((now - phase_start))"
	fi
	phase_name="${1:-}"
	phase_start=$now
	[ -n "$phase_name" ] && echo "[$(elapsed) s] $variant: $phase_name: ${2:-}"
	return 0
}
die() { echo "build.sh: $*" >&2; exit 1; }

for tool in mmdebstrap arch-test mkfs.ext4 e2fsck sfdisk zstd sha256sum; do
	command -v "$tool" >/dev/null || die "$tool is missing (apt-get install mmdebstrap arch-test qemu-user-static binfmt-support e2fsprogs fdisk zstd)"
done
[ "$(id -u)" = 0 ] || die "run as root: mmdebstrap's root mode and chroot need it"
arch-test riscv64 >/dev/null 2>&1 ||
	die "riscv64 programs cannot run here: install qemu-user-static binfmt-support, mount binfmt_misc (mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc) and run update-binfmts --enable qemu-riscv64"

# The mirror: the one the host's apt already uses (deb822 .sources or sources.list),
# unless DEBIAN_MIRROR says otherwise. The host's apt configuration is only read.
host_uri() { # $1: regex a URI must match
	{
		cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs:[[:space:]]*//p' | tr ' ' '\n' || true
		cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\([^[:space:]]\+\).*/\2/p' || true
	} | grep -E "$1" | head -n1 || true
}
mirror="${DEBIAN_MIRROR:-$(host_uri '/debian/?$')}"
security="${DEBIAN_SECURITY_MIRROR:-$(host_uri '/debian-security/?$')}"
[ -n "$mirror" ] || die "no Debian mirror found in the host's apt sources: set DEBIAN_MIRROR"
# trixie-updates and trixie-security only with WITH_UPDATES=1: on this workplace's mirror
# their package indices did not match their Release files ("Mirror sync in progress?"),
# which fails the build, while the point release itself is consistent.
sources=("deb $mirror $suite main")
if [ "${WITH_UPDATES:-0}" = 1 ]; then
	sources+=("deb $mirror $suite-updates main")
	[ -n "$security" ] && sources+=("deb $security $suite-security main")
fi

mkdir -p "$outdir/cache/debs" "$outdir/logs" "$outdir/work"
outdir=$(cd "$outdir" && pwd)
exec 9> "$outdir/.build.lock"
flock -n 9 || die "another build is running in $outdir"

# The recipe: whatever changes the image. A build whose .json names it is up to date.
recipe=$(cd "$here" && {
	cat build.sh customize.sh
	find rootfs -type f | LC_ALL=C sort | xargs sha256sum
	find rootfs -type f -perm -u+x | LC_ALL=C sort
} | sha256sum | cut -c1-16)

# Removes a work directory a killed build left. A killed mmdebstrap can leave the host's /proc,
# /sys or /dev mounted inside its root: those are unmounted first, never recursed into.
clear_work() {
	local dir="$1" m
	[ -e "$dir" ] || return 0
	dir=$(cd "$dir" && pwd -P)
	while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done < <(awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r)
	if awk -v d="$dir/" 'index($2, d) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
		die "$dir still has file systems mounted under it: not removing it"
	fi
	rm -rf --one-file-system "$dir"
}

build_variant() {
	local variant="$1" name pkgs hostname size_mib work root staging img uuid partuuid
	name="debian-$suite-riscv64-$variant"
	local zst="$outdir/$name.img.zst" facts="$outdir/$name.json" log="$outdir/logs/$variant.log"
	if [ -s "$zst" ] && [ -s "$facts" ] && grep -q "\"recipe\": \"$recipe\"" "$facts"; then
		echo "[$(elapsed) s] $variant: $name.img.zst is up to date (recipe $recipe), nothing to do"
		return 0
	fi
	local -n pkg_list="pkgs_$variant"
	pkgs=$(IFS=,; echo "${pkg_list[*]}")
	hostname_var="hostname_$variant"; hostname="${!hostname_var}"
	size_var="size_${variant}_mib"; size_mib="${!size_var}"
	phases_json="" phase_name=""
	work="$outdir/work/$variant"
	clear_work "$work"
	mkdir -p "$work"
	root="$work/root" staging="$work/overlay" img="$work/$name.img"
	uuid=$(cat /proc/sys/kernel/random/uuid)
	partuuid=$(cat /proc/sys/kernel/random/uuid)
	: > "$log"
	echo "[$(elapsed) s] $variant: building $name (recipe $recipe, log $log)"

	# Files the image gets before its packages are configured: the initramfs settings
	# must be there when the kernel's postinst makes the initrd, and the extlinux
	# generator when the kernel's hooks run.
	cp -a "$here/rootfs" "$staging"
	mkdir -p "$staging/etc/default"
	cat > "$staging/etc/default/bianbu-extlinux" <<-EOF
		# Read by /usr/local/sbin/bianbu-extlinux, which writes /boot/extlinux/extlinux.conf.
		ROOT="root=UUID=$uuid"
		APPEND="rw console=ttyS0,115200"
	EOF
	# No line for /: the initrd mounts it read-write from root=UUID=... (extlinux.conf). With a
	# line, systemd waits for udev to announce the disk before local-fs.target, and with it the
	# service's channel into the board (bianbu-agent): 20 s of a 38 s boot here.
	printf '# / is mounted read-write by the initrd from root= on the kernel command line.\n' > "$staging/etc/fstab"

	phase rootfs "mmdebstrap: packages downloaded, unpacked and configured under qemu-user"
	# Documentation, manual pages and translations are left out of the image: smaller and
	# faster to build; copyright files stay, as Debian's licences require.
	if ! mmdebstrap --mode=root --format=directory --arch=riscv64 --variant=minbase \
		--include="$pkgs" \
		--aptopt='Acquire::Retries "3"' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--skip=essential/unlink \
		--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
		--setup-hook="sync-in '$outdir/cache/debs' /var/cache/apt/archives/" \
		--essential-hook="sync-in '$staging' /" \
		--customize-hook="'$here/customize.sh' \"\$1\" '$hostname'" \
		--customize-hook="sync-out /var/cache/apt/archives '$outdir/cache/debs'" \
		--customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb' \
		"$suite" "$root" "${sources[@]}" >> "$log" 2>&1; then
		tail -n 30 "$log" >&2
		die "mmdebstrap failed for $variant (full log: $log)"
	fi
	rm -f "$outdir/cache/debs/lock"
	rm -rf "$outdir/cache/debs/partial"

	phase disk "GPT, one ext4 root partition by mkfs.ext4 -d"
	# Layout: GPT, partition 1 from 1 MiB to 1 MiB before the end (room for the backup
	# GPT), flagged LegacyBIOSBootable so U-Boot's distro boot picks it for extlinux.
	local start_b=$((1024 * 1024)) part_kib
	part_kib=$(((size_mib - 2) * 1024))
	truncate -s "${size_mib}M" "$img"
	sfdisk --quiet "$img" >> "$log" 2>&1 <<-EOF
		label: gpt
		start=2048, size=$((part_kib * 2)), type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, uuid=$partuuid, name=root, attrs=LegacyBIOSBootable
	EOF
	# Newer mke2fs defaults add metadata_csum_seed and orphan_file, which U-Boot 2023.01's
	# ext4 reader is not known to handle (not tried here): keep them off, as a precaution.
	# nodiscard: on a file, a discard would punch holes over the partition table too.
	mkfs.ext4 -q -F -L root -U "$uuid" -O ^metadata_csum_seed,^orphan_file \
		-E "offset=$start_b,nodiscard" -d "$root" "$img" "${part_kib}k" >> "$log" 2>&1 ||
		die "mkfs.ext4 failed (log: $log)"
	e2fsck -fn "$img?offset=$start_b" >> "$log" 2>&1 || die "the new file system does not check clean (log: $log)"
	sfdisk --dump "$img" | grep -q "uuid=${partuuid^^}" || die "the partition table did not survive mkfs"

	phase facts "kernel, OS, sizes and hashes read from the image"
	local kver os used_kib raw_sha
	kver=$(sed -n 's|^\tlinux /boot/vmlinu[xz]-||p' "$root/boot/extlinux/extlinux.conf" | head -n1)
	os=$(. "$root/etc/os-release" && echo "$PRETTY_NAME")
	used_kib=$(du -sk "$img" | cut -f1)
	raw_sha=$(sha256sum "$img" | cut -d' ' -f1)
	local npkgs initrd_b
	npkgs=$(grep -c '^Package: ' "$root/var/lib/dpkg/status")
	initrd_b=$(stat -c %s "$root/boot/initrd.img-$kver")

	phase compress "zstd"
	rm -f "$zst.tmp"
	zstd -q -T2 -12 "$img" -o "$zst.tmp"
	local zst_sha zst_b
	zst_sha=$(sha256sum "$zst.tmp" | cut -d' ' -f1)
	zst_b=$(stat -c %s "$zst.tmp")
	phase ""

	cat > "$facts.tmp" <<-EOF
		{
		  "name": "$name",
		  "variant": "$variant",
		  "arch": "riscv64",
		  "os": "$os",
		  "kernel": "$kver",
		  "hostname": "$hostname",
		  "packages": $npkgs,
		  "rootUuid": "$uuid",
		  "rawBytes": $((size_mib * 1024 * 1024)),
		  "rawAllocatedBytes": $((used_kib * 1024)),
		  "rawSha256": "$raw_sha",
		  "initrdBytes": $initrd_b,
		  "file": "$name.img.zst",
		  "fileBytes": $zst_b,
		  "fileSha256": "$zst_sha",
		  "builtAt": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
		  "buildSeconds": { $phases_json },
		  "recipe": "$recipe"
		}
	EOF
	mv "$zst.tmp" "$zst"
	mv "$facts.tmp" "$facts"
	# KEEP_WORK=1 keeps the root directory and raw image, for trying changes by hand.
	[ "${KEEP_WORK:-0}" = 1 ] || rm -rf "$work"
	echo "[$(elapsed) s] $variant: done: $zst ($((zst_b / 1024 / 1024)) MiB, kernel $kver)"
}

for variant in "${variants[@]}"; do
	build_variant "$variant"
done
rmdir "$outdir/work" 2>/dev/null || true
echo "[$(elapsed) s] all done"

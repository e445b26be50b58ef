#!/bin/bash
# What this host needs to build and run the riscv64 boards (issue 35), and the one thing that is not
# a package: riscv64 programs of the image build run through qemu-user's binfmt handler, which needs
# binfmt_misc mounted and the qemu-riscv64 format enabled.
#
#   scripts/board-images/host-setup.sh            check; enable binfmt (as root); say what to install
#   scripts/board-images/host-setup.sh --install  the same, installing missing packages with apt-get
#
# Exit status 0 when everything is there, 1 when something is missing (the line to run is printed).
set -euo pipefail

# Run the boards: QEMU, its firmware (OpenSBI) and boot loader (U-Boot), the sandbox, the decompressors
# of flashed images, qemu-img for the disks' qcow2 overlays and snapshots, passt (each board's network
# stack) and nftables (the rules that keep a board's network off the host). Build the images:
# mmdebstrap and qemu-user for a foreign root, e2fsprogs and fdisk for the disk, zstd for the archive.
packages=(qemu-system-misc opensbi u-boot-qemu bubblewrap zstd xz-utils qemu-utils passt nftables
	mmdebstrap arch-test qemu-user-static binfmt-support e2fsprogs fdisk)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	if [ "${1:-}" = --install ] && [ "$(id -u)" = 0 ]; then
		echo "host-setup: installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	else
		echo "host-setup: riscv64 boards need: apt-get install ${missing[*]}" >&2
		exit 1
	fi
fi

if [ "$(id -u)" = 0 ]; then
	mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
	update-binfmts --enable qemu-riscv64 >/dev/null 2>&1 || true
fi
if ! arch-test riscv64 >/dev/null 2>&1; then
	echo "host-setup: riscv64 programs cannot run here (binfmt_misc: mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc; update-binfmts --enable qemu-riscv64, as root)" >&2
	exit 1
fi
echo "host-setup: riscv64 boards can be built and run here"

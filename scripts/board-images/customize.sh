#!/bin/bash
# mmdebstrap customize hook for the board images (called by build.sh as
# `customize.sh ROOT HOSTNAME`). It runs on the host with ROOT the new root file
# system; programs of the image run inside it with chroot, through qemu-user's binfmt
# handler. Everything here is configuration: packages come from build.sh's list.
set -euo pipefail
root="$1" hostname="$2"

echo "$hostname" > "$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
	"$hostname" > "$root/etc/hosts"

# The boot menu for U-Boot, now that the kernel's initrd exists (see bianbu-extlinux).
chroot "$root" /usr/local/sbin/bianbu-extlinux
kver=$(sed -n 's|^\tlinux /boot/vmlinu[xz]-||p' "$root/boot/extlinux/extlinux.conf" | head -n1)
[ -n "$kver" ] || { echo "customize: no kernel in /boot" >&2; exit 1; }
[ -s "$root/boot/initrd.img-$kver" ] || { echo "customize: no initrd for $kver" >&2; exit 1; }

# LAB ONLY: root has an empty password so that the serial console (ttyS0, reached only
# through the host's QEMU process) logs in as root at once, as the lab and its boot
# check need. sshd refuses empty passwords (PermitEmptyPasswords no, Debian's default),
# so this opens nothing on the network.
chroot "$root" passwd -d root >/dev/null

# A getty on the serial console whatever the kernel's console= says, and one on tty1:
# the board's screen (virtio-gpu, the console's desktop pane) shows a console login.
# The network by systemd-networkd, names by systemd-resolved (the DHCP server's DNS).
# Waiting for the network would only delay the boot: nothing on the board needs
# network-online.target.
chroot "$root" systemctl enable serial-getty@ttyS0.service getty@tty1.service systemd-networkd.service \
	systemd-resolved.service bianbu-agent.service >/dev/null 2>&1
# The service reaches the board through bianbu-agent (virtio-serial), not the network:
# the network sshd stays installed for users who enable it, off by default.
chroot "$root" systemctl disable ssh.service ssh.socket >/dev/null 2>&1 || true
chroot "$root" systemctl disable systemd-networkd-wait-online.service >/dev/null 2>&1 || true
# Timers that would wake an idle board under emulation for no one's benefit.
for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer dpkg-db-backup.timer e2scrub_reap.service; do
	chroot "$root" systemctl mask "$unit" >/dev/null 2>&1 || true
done

# No SSH host keys in the image: every board makes its own (ssh.service.d/host-keys.conf).
rm -f "$root"/etc/ssh/ssh_host_*
# The first boot would rebuild the linker cache and the journal catalogue because /usr
# looks newer than /etc and /var (systemd's ConditionNeedsUpdate): both are current, say so.
# (mkfs.ext4 -d keeps whole seconds of /usr's time, never more than the nanoseconds here.)
usr_ns=$(stat -c %.9Y "$root/usr" | tr -d .)
for d in etc var; do
	printf '# This file was created by systemd-update-done (at image build time).\nTIMESTAMP_NSEC=%s\n' \
		"$usr_ns" > "$root/$d/.updated"
done

# Each board gets its own machine id on its first boot.
: > "$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"

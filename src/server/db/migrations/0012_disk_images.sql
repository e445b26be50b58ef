-- Raw disk images for the QEMU riscv64 boards (issue 35): besides root file system archives (tar,
-- tar.gz) the catalogue holds whole disks, plain or compressed. `facts` holds what the build of a
-- built-in disk image read from it (arch, os, kernel, rawBytes, rawSha256); null for other images.
alter table flash_images drop constraint if exists flash_images_format_check;
alter table flash_images add constraint flash_images_format_check
  check (format in ('tar', 'tar.gz', 'img', 'img.gz', 'img.xz', 'img.zst'));
alter table flash_images add column facts jsonb;

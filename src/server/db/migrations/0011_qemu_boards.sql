-- Boards of a third kind: riscv64 machines run on this host under QEMU (issue 35).
alter table boards drop constraint if exists boards_driver_check;
alter table boards add constraint boards_driver_check check (driver in ('local', 'ssh', 'qemu'));

// The example lab file the README points operators to is a valid lab file: every board and image in it
// parses with the schema the service applies at start, with the ssh board's ports as written there.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readLabFile } from '#server/boards/labfile.ts';

describe('lab.example.yaml', () => {
  it('parses with the lab file schema: ssh ports and commands, a riscv64 QEMU board', () => {
    const lab = readLabFile(path.join(import.meta.dirname, '..', '..', 'lab.example.yaml'));
    const ssh = lab.boards.find((b) => b.driver === 'ssh');
    expect(ssh?.options).toMatchObject({ vncPort: 5900, codeServerPort: 8080 });
    expect(ssh?.driver === 'ssh' && ssh.options.commands.codeServer?.[0]).toBe('sh');
    expect(lab.images?.length).toBeGreaterThan(0);
    const rv = lab.boards.find((b) => b.driver === 'qemu');
    expect(rv?.options).toMatchObject({ image: 'debian-trixie-riscv64-developer', cores: 2, memoryMb: 1024 });
    // A sandbox board says what it is: never a RISC-V board's architecture.
    for (const b of lab.boards.filter((x) => x.driver === 'local')) expect(b.attributes.arch).not.toBe('riscv64');
  });
});

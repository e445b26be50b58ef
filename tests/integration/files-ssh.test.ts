// Files on an SSH board: a real OpenSSH server on loopback, the board's root a host directory served
// over SFTP. The same scenarios as the local board.
import fs from 'node:fs';
import path from 'node:path';
import { startLab } from './files.fixtures.ts';
import { fileScenarios } from './files.scenarios.ts';
import { startSshd } from './helpers/sshd.ts';

fileScenarios('ssh', async () => {
  const sshd = await startSshd();
  const rootDir = path.join(sshd.dir, 'board');
  fs.mkdirSync(path.join(rootDir, 'home/user'), { recursive: true });
  fs.mkdirSync(path.join(rootDir, 'etc'), { recursive: true });
  const lab = await startLab(
    {
      id: 'files-ssh',
      name: 'files-ssh',
      driver: 'ssh',
      options: {
        host: '127.0.0.1',
        port: sshd.port,
        user: 'root',
        privateKey: sshd.clientKey,
        hostKeyFingerprint: sshd.hostKeyFingerprint,
        rootDir,
        timeoutMs: 15_000,
      },
    },
    () => rootDir,
  );
  return {
    ...lab,
    close: async () => {
      await lab.close();
      await sshd.stop();
    },
  };
});

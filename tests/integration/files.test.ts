// Files on a local board: a bubblewrap sandbox whose root is its own file system, served by an SFTP
// server running inside the board.
import type { LocalDriver } from '#server/boards/local/local-driver.ts';
import { startLab } from './files.fixtures.ts';
import { fileScenarios } from './files.scenarios.ts';

fileScenarios('local', () =>
  startLab(
    {
      id: 'files-local',
      name: 'files-local',
      driver: 'local',
      options: { memoryMb: 512, diskQuotaMb: 1024 },
    },
    (_dataDir, app) => (app.boards.driver('files-local') as LocalDriver).rootPath,
  ),
);

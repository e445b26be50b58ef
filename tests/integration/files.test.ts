// Files on a local board: a bubblewrap sandbox whose root is a directory under the service's data dir.
import path from 'node:path';
import { fileScenarios } from './files.scenarios.ts';
import { startLab } from './files.fixtures.ts';

fileScenarios('local', () =>
  startLab(
    {
      id: 'files-local',
      name: 'files-local',
      driver: 'local',
      options: { memoryMb: 512, diskQuotaMb: 1024 },
    },
    (dataDir) => path.join(dataDir, 'boards', 'files-local', 'root'),
  ),
);

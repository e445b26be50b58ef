// The features of the service, in start order. Each feature adds exactly one line here.

import { boardsFeature } from './boards/boards.routes.ts';
import type { Feature } from './feature.ts';
import { filesFeature } from './files/files.routes.ts';
import { flashFeature } from './flash/flash.routes.ts';
import { hostsFeature } from './hosts/hosts.routes.ts';
import { identityFeature } from './identity/identity.routes.ts';
import { leasesFeature } from './leases/leases.routes.ts';
import { queueFeature } from './leases/queue.routes.ts';
import { realtimeFeature } from './realtime/realtime.feature.ts';
import { sequencesFeature } from './sequences/sequences.routes.ts';
import { shareFeature } from './share/share.routes.ts';
import { desktopFeature } from './desktop/desktop.feature.ts';
import { snapshotsFeature } from './snapshots/snapshots.routes.ts';
import { systemFeature } from './system/system.routes.ts';

export const features: Feature[] = [
  systemFeature,
  boardsFeature,
  leasesFeature,
  queueFeature,
  filesFeature,
  flashFeature,
  shareFeature,
  snapshotsFeature,
  sequencesFeature,
  realtimeFeature,
  hostsFeature,
  desktopFeature,
  identityFeature,
];

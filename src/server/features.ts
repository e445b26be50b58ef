// The features of the service, in start order. Each feature adds exactly one line here.
import type { Feature } from './feature.ts';
import { realtimeFeature } from './realtime/realtime.feature.ts';
import { systemFeature } from './system/system.routes.ts';
import { boardsFeature } from './boards/boards.routes.ts';
import { leasesFeature } from './leases/leases.routes.ts';
import { filesFeature } from './files/files.routes.ts';
import { identityFeature } from './identity/identity.routes.ts';

export const features: Feature[] = [systemFeature, boardsFeature, leasesFeature, filesFeature, realtimeFeature, identityFeature];

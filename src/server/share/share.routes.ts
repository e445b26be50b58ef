// The sharing feature: share groups, shared boards, revocation and joined shells (src/shared/share.ts).
// It plugs into the others through their hooks: the lifecycle's `sharedLease` (a member's apply, a
// granted renewal), flashing's `flashGrant`, the realtime front's `shellGuest`, and the board state
// stream (an owner's lease ending takes the board out of its groups).
import type { FastifyInstance } from 'fastify';
import type { Feature } from '#server/feature.ts';
import { implement } from '#server/http/handlers.ts';
import type { BoardChange } from '#server/leases/collaborators.ts';
import { labOf } from '#server/leases/collaborators.ts';
import { shareCalls } from '#shared/share.ts';
import { ShareService } from './share.service.ts';

const stopListening = new WeakMap<object, () => void>();

export const shareFeature: Feature = {
  name: 'share',
  setup(app: FastifyInstance) {
    const service = new ShareService(app);
    app.decorate('share', service);
    app.decorate('shellGuest', (userId: string, shellId: string) => service.mayJoin(userId, shellId));
    const leases = (app as { leases?: FastifyInstance['leases'] }).leases;
    if (leases) {
      leases.sharedLease = (userId, deviceId, now, grant) =>
        service.repo.sharedLease(userId, deviceId, now, grant);
    }
    const flash = (app as { flash?: { flashGrant?: (u: string, d: string) => Promise<boolean> } }).flash;
    if (flash) {
      flash.flashGrant = async (userId, deviceId) =>
        (await service.repo.sharedLease(userId, deviceId, app.clock.now(), 'flash')) !== null;
    }
  },
  calls: (app: FastifyInstance) => {
    const s = app.share!;
    return implement(shareCalls, {
      fetchShareInfo: async (_in, { user }) => s.fetchShareInfo(user!),
      fetchGroupInfo: async (_in, { user }) => s.fetchGroupInfo(user!),
      fetchShareDevice: async (_in, { user }) => s.fetchShareDevice(user!),
      addShareGroup: async ({ groupName }, { user }) => s.addGroup(user!, groupName),
      rmShareGroup: async ({ groupName }, { user }) => s.rmGroup(user!, groupName),
      addShareUser: async (input, { user }) => s.addUser(user!, input),
      rmShareUser: async (input, { user }) => s.rmUser(user!, input),
      shareUserInfo: async ({ groupName }, { user }) => s.userInfo(user!, groupName),
      setGroupDevices: async (input, { user }) => s.setDevices(user!, input),
      setGroupGrants: async (input, { user }) => s.setGrants(user!, input),
      fetchJoinableShells: async (_in, { user }) => s.joinable(user!),
      shellInvite: async (input, { user, apply }) => s.invite(user!, apply!, input),
      shellUninvite: async ({ clientId }, { user, apply }) => s.uninvite(user!, apply!, clientId),
      shellGrantInput: async (input, { user, apply }) => s.grantInput(user!, apply!, input),
      shellRevokeGuest: async (input, { user, apply }) => s.revokeGuest(user!, apply!, input),
    });
  },
  start(app: FastifyInstance) {
    const events = labOf(app)?.events;
    if (!events) return;
    const onState = (c: BoardChange) => {
      app
        .share!.onBoardChange(c)
        .catch((err) => app.log.warn({ err, boardId: c.boardId }, 'share: board change failed'));
    };
    events.on('state', onState);
    stopListening.set(app, () => events.off('state', onState));
  },
  stop(app: FastifyInstance) {
    stopListening.get(app)?.();
  },
};

// The boards feature: the board lab on the app (`app.boards`), the catalogue calls of spec section 7
// and the board administration calls.
import type { FastifyInstance } from 'fastify';
import { boardCalls } from '#shared/boards.ts';
import type { Feature } from '#server/feature.ts';
import { implement } from '#server/http/handlers.ts';
import { countByState, searchBoards } from './catalogue.ts';
import { BoardLab } from './lab.ts';

export const boardsFeature: Feature = {
  name: 'boards',
  setup(app: FastifyInstance) {
    app.decorate('boards', new BoardLab(app));
  },
  calls: (app: FastifyInstance) =>
    implement(boardCalls, {
      storeAllNum: async () => countByState(app.storage),
      storeStateNum: async ({ state }) => ({ state, total: (await countByState(app.storage)).states[state] }),
      fuzzyQuery: async ({ keyword, limit }) => searchBoards(app.storage, { keyword, pageSize: limit }),
      filterDevice: async (q) => searchBoards(app.storage, q),
      adminBoardsList: async ({ state, includeRetired }) => ({
        items: (await app.boards.rows({ state, includeRetired })).map((r) => app.boards.adminDto(r)),
      }),
      adminBoardsAdd: async (decl) => app.boards.adminDto(await app.boards.add(decl)),
      adminBoardsChange: async ({ deviceId, ...patch }) => app.boards.adminDto(await app.boards.change(deviceId, patch)),
      adminBoardsRetire: async ({ deviceId }) => app.boards.adminDto(await app.boards.retire(deviceId)),
      adminBoardsMaintenance: async ({ deviceId, on, reason }) =>
        app.boards.adminDto(await app.boards.setMaintenance(deviceId, on, reason)),
      adminBoardNetworkGet: async ({ deviceId }) => app.boards.networkOf(deviceId),
      adminBoardNetworkSet: async ({ deviceId, policy }) => app.boards.setNetwork(deviceId, policy),
    }),
  start: (app) => app.boards.start(),
  stop: (app) => app.boards.stop(),
};

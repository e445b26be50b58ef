// A feature of the service: its bound calls and its lifecycle. `setup` runs before routes are
// registered (decorate the app, open resources), `start` after the server listens (schedulers,
// probes), `stop` on shutdown in reverse order.
import type { FastifyInstance } from 'fastify';
import type { BoundCall } from './http/handlers.ts';

export interface Feature {
  name: string;
  setup?(app: FastifyInstance): Promise<void> | void;
  calls?(app: FastifyInstance): BoundCall[];
  start?(app: FastifyInstance): Promise<void> | void;
  stop?(app: FastifyInstance): Promise<void> | void;
}

// Delivery of one-time phone codes. A real SMS gateway implements PhoneCodeSender; the default
// writes the message to the service log and to an outbox table that an administrator can read
// (GET /api/admin/phone-outbox), which is how codes reach users on a fresh installation.
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '#server/db/client.ts';
import { phoneOutbox } from '#server/db/schema/identity.ts';

export interface PhoneMessage {
  phone: string;
  code: string;
  body: string;
}

export interface PhoneCodeSender {
  readonly channel: string;
  send(message: PhoneMessage): Promise<void>;
}

export class LogOutboxSender implements PhoneCodeSender {
  readonly channel = 'outbox';
  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    private readonly now: () => Date,
  ) {}

  async send(message: PhoneMessage): Promise<void> {
    await this.db.insert(phoneOutbox).values({
      at: this.now(),
      channel: this.channel,
      recipient: message.phone,
      body: message.body,
    });
    this.log.info({ phone: message.phone, code: message.code }, 'phone sign-in code (outbox sender)');
  }
}

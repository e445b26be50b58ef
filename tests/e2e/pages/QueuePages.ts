// Page object of the waiting line: the opt-in on /riscvhouse and an entry (position, estimate, leave).
import type { Locator, Page } from 'playwright-core';

export class WaitingLine {
  constructor(readonly page: Page) {}

  joinButton(): Locator {
    return this.page.getByTestId('join-queue');
  }

  /** The entry /riscvhouse shows after joining. */
  entry(): Locator {
    return this.page.getByTestId('queued').getByTestId('queue-entry');
  }

  position(): Locator {
    return this.entry().getByTestId('queue-position');
  }

  estimate(): Locator {
    return this.entry().getByTestId('queue-estimate');
  }

  cancelButton(): Locator {
    return this.entry().getByTestId('queue-cancel');
  }
}

// Page objects of the device pages: /riscvhouse (apply), /mainboard (the user's boards). With
// `{ touch: true }` they are driven as on a phone: taps instead of clicks, text put in as a soft
// keyboard does (insertText into the tapped field).
import type { Locator, Page } from 'playwright-core';
import { enterText, type InputMode, press } from './input.ts';

export class ApplyPage {
  constructor(
    readonly page: Page,
    readonly mode: InputMode = {},
  ) {}

  async agree(): Promise<void> {
    if (this.mode.touch) {
      const box = this.page.getByTestId('agree');
      if (!(await box.isChecked())) await box.tap();
      return;
    }
    await this.page.getByTestId('agree').check();
  }

  async chooseDuration(key: '48h' | '7d' | '1m'): Promise<void> {
    // The radio is visually hidden; its label is what a user clicks.
    await press(this.page.locator(`label:has([data-testid="duration-${key}"])`), this.mode);
  }

  async chooseAttribute(key: string, value: string): Promise<void> {
    await this.page.getByTestId(`attr-${key}`).selectOption(value);
  }

  async attributeValues(key: string): Promise<string[]> {
    await this.page.getByTestId(`attr-${key}`).waitFor();
    return this.page
      .getByTestId(`attr-${key}`)
      .locator('option')
      .evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value).filter(Boolean));
  }

  async name(value: string): Promise<void> {
    await enterText(this.page.getByTestId('board-name-input'), value, this.mode);
  }

  async getStarted(): Promise<void> {
    await press(this.page.getByTestId('get-started'), this.mode);
  }

  noneFree(): Locator {
    return this.page.getByTestId('none-free');
  }
}

export class MainboardPage {
  constructor(
    readonly page: Page,
    readonly mode: InputMode = {},
  ) {}

  rows(): Locator {
    return this.page.getByTestId('lease-row');
  }

  row(name: string): Locator {
    return this.page.locator(`[data-testid="lease-row"][data-name="${name}"]`);
  }

  async waitForRow(name: string): Promise<Locator> {
    const row = this.row(name);
    await row.waitFor({ state: 'visible' });
    return row;
  }

  async select(name: string): Promise<void> {
    await press(this.row(name).locator('[data-testid="board-name"]'), this.mode);
    await this.page.waitForFunction(
      (n) => document.querySelector(`[data-name="${n}"]`)?.getAttribute('aria-selected') === 'true',
      name,
    );
  }

  /** Inline rename by keyboard: F2, type, Enter. */
  async rename(from: string, to: string): Promise<void> {
    await this.select(from);
    await this.page.keyboard.press('F2');
    const input = this.page.getByTestId('rename-input');
    await input.waitFor();
    await input.fill(to);
    await input.press('Enter');
    await this.waitForRow(to);
  }

  async endsAtText(name: string): Promise<string> {
    return (await this.row(name).getByTestId('ends-at').textContent()) ?? '';
  }

  /** Opens the renew dialog of a board, extends by the given preset and confirms. */
  async renewBy(name: string, presetLabel: RegExp): Promise<void> {
    await this.row(name).getByTestId('renew').click();
    const dialog = this.page.getByTestId('renew-dialog');
    await dialog.waitFor();
    await dialog.getByRole('button', { name: presetLabel }).click();
    await dialog.getByRole('button', { name: /^Renew$/ }).click();
    await dialog.waitFor({ state: 'detached' });
  }

  async start(name: string): Promise<void> {
    await this.select(name);
    await press(this.page.getByTestId('start'), this.mode);
    await this.page.waitForURL((u) => u.pathname === '/workbench');
  }

  async unlock(name: string): Promise<void> {
    await this.row(name).getByTestId('unlock').click();
    const dialog = this.page.getByTestId('unlock-dialog');
    await dialog.waitFor();
    await dialog.getByRole('button', { name: /Unlock board/ }).click();
    await this.row(name).waitFor({ state: 'detached' });
  }
}

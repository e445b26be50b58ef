// Page object for what every page of the console has: the title, the language, the palette.
import type { Page } from 'playwright-core';

export class ConsolePage {
  constructor(
    readonly page: Page,
    readonly baseUrl: string,
  ) {}

  async goto(path: string): Promise<void> {
    await this.page.goto(`${this.baseUrl}${path}`);
  }

  pathname(): string {
    return new URL(this.page.url()).pathname;
  }

  async waitForPath(path: string, timeout = 15_000): Promise<void> {
    await this.page.waitForURL((u) => u.pathname === path, { timeout });
  }

  async waitForTitle(title: string, timeout = 10_000): Promise<void> {
    await this.page.waitForFunction((t) => document.title === t, title, { timeout });
  }

  htmlLang(): Promise<string | null> {
    return this.page.locator('html').getAttribute('lang');
  }

  /** Picks a language from the language menu of the top bar. */
  async chooseLanguage(lng: 'zh' | 'en' | 'ja'): Promise<void> {
    await this.page.getByTestId('language-menu').first().click();
    await this.page.locator(`[data-lang="${lng}"]`).click();
    await this.page.waitForFunction((l) => document.documentElement.lang === l, lng);
  }

  /** The console has rendered a route (it sets the title then), so its keyboard shortcuts listen. */
  async waitForApp(timeout = 15_000): Promise<void> {
    await this.page.waitForFunction(() => document.title.endsWith(' - Bianbu Cloud'), undefined, { timeout });
  }

  /** Keyboard only: Ctrl+K, type, wait until the command `id` is the selected one, Enter. */
  /** Picks a command that asks for arguments: the palette stays open, asking (see PaletteArg). */
  async runFromPaletteAsking(search: string, id: string): Promise<void> {
    await this.waitForApp();
    await this.page.keyboard.press('Control+k');
    await this.page.locator('[cmdk-input]').waitFor({ state: 'visible' });
    await this.page.keyboard.type(search);
    await this.page
      .locator(`[cmdk-item][data-selected="true"][data-command="${id}"]`)
      .waitFor({ timeout: 5_000 });
    await this.page.keyboard.press('Enter');
    await this.page.getByTestId('palette-asking').waitFor();
  }

  async runFromPalette(search: string, id: string): Promise<void> {
    await this.waitForApp();
    await this.page.keyboard.press('Control+k');
    const input = this.page.locator('[cmdk-input]');
    await input.waitFor({ state: 'visible' });
    await this.page.keyboard.type(search);
    await this.page
      .locator(`[cmdk-item][data-selected="true"][data-command="${id}"]`)
      .waitFor({ timeout: 5_000 });
    await this.page.keyboard.press('Enter');
    await input.waitFor({ state: 'detached' });
  }

  /** On a phone: tap the palette button of the top bar and type the search as a soft keyboard does. */
  async openPaletteByTouch(search: string): Promise<void> {
    await this.waitForApp();
    await this.page.getByTestId('palette-button-touch').tap();
    await this.page.locator('[cmdk-input]').waitFor({ state: 'visible' });
    await this.page.keyboard.insertText(search);
  }

  /** On a phone: tap the palette's command `id` and wait for the palette to close. */
  async tapPaletteCommand(id: string): Promise<void> {
    const item = this.page.locator(`[cmdk-item][data-command="${id}"]`);
    await item.waitFor({ timeout: 5_000 });
    await item.tap();
    await this.page.locator('[cmdk-input]').waitFor({ state: 'detached' });
  }

  paletteItems() {
    return this.page.locator('[cmdk-item]');
  }
}

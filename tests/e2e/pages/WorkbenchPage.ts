// Page object of /workbench: the header, the panes and the shells in them. A shell is driven the way a
// user drives it: focus its terminal, type, and wait for a marker in what it printed.
import type { Locator, Page } from 'playwright-core';

export class WorkbenchPage {
  constructor(readonly page: Page) {}

  async ready(): Promise<void> {
    await this.page.getByTestId('workbench').waitFor();
  }

  boardName(): Locator {
    return this.page.getByTestId('workbench-header').getByTestId('board-name');
  }

  terminals(): Locator {
    return this.page.locator('[data-testid="shell-area"] [data-tab-id]:not(.invisible) [data-testid="terminal-pane"]');
  }

  /** Waits until `count` terminals of the visible tab are live. */
  async waitForLiveTerminals(count: number, timeout = 30_000): Promise<void> {
    await this.page.waitForFunction(
      (n) =>
        [...document.querySelectorAll('[data-testid="shell-area"] [data-tab-id]:not(.invisible) [data-testid="terminal-pane"]')].filter(
          (el) => el.getAttribute('data-status') === 'live',
        ).length >= n,
      count,
      { timeout },
    );
  }

  /** The text a terminal shows (the DOM renderer's rows). */
  async terminalText(index: number): Promise<string> {
    return (await this.terminals().nth(index).locator('.xterm-rows').innerText()).replace(/\u00a0/g, ' ');
  }

  async focusTerminal(index: number): Promise<void> {
    await this.terminals().nth(index).locator('.xterm-screen').click();
  }

  /** Types a command into terminal `index` and waits for `marker` to be printed. */
  async run(index: number, command: string, marker: string, timeout = 20_000): Promise<void> {
    await this.focusTerminal(index);
    await this.page.keyboard.type(command);
    await this.page.keyboard.press('Enter');
    await this.waitForText(index, marker, timeout);
  }

  async waitForText(index: number, marker: string, timeout = 20_000): Promise<void> {
    const pane = this.terminals().nth(index);
    const handle = await pane.elementHandle();
    await this.page.waitForFunction(
      ({ el, m }) => (el as HTMLElement).querySelector('.xterm-rows')?.textContent?.replace(/\u00a0/g, ' ').includes(m) ?? false,
      { el: handle, m: marker },
      { timeout },
    );
  }

  /** The pane that holds the keyboard focus (its data-pane-id). */
  focusedPane(): Promise<string | null> {
    return this.page.evaluate(() => document.activeElement?.closest('[data-pane-id]')?.getAttribute('data-pane-id') ?? null);
  }
}

/** xterm's WebGL renderer draws into a canvas; tests read the DOM renderer's rows instead. */
export function forceDomRenderer(): void {
  const original = HTMLCanvasElement.prototype.getContext;
  HTMLCanvasElement.prototype.getContext = function (this: HTMLCanvasElement, type: string, ...rest: unknown[]) {
    if (type === 'webgl' || type === 'webgl2') return null;
    return (original as (...a: unknown[]) => unknown).call(this, type, ...rest);
  } as typeof original;
}

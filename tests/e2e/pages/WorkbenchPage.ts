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
    return this.page.locator(
      '[data-testid="shell-area"] [data-tab-id]:not(.invisible) [data-testid="terminal-pane"]',
    );
  }

  /** Waits until `count` terminals of the visible tab are live. */
  async waitForLiveTerminals(count: number, timeout = 30_000): Promise<void> {
    await this.page.waitForFunction(
      (n) =>
        [
          ...document.querySelectorAll(
            '[data-testid="shell-area"] [data-tab-id]:not(.invisible) [data-testid="terminal-pane"]',
          ),
        ].filter((el) => el.getAttribute('data-status') === 'live').length >= n,
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
      ({ el, m }) =>
        (el as HTMLElement)
          .querySelector('.xterm-rows')
          ?.textContent?.replace(/\u00a0/g, ' ')
          .includes(m) ?? false,
      { el: handle, m: marker },
      { timeout },
    );
  }

  /** `phone` (one pane at a time under tabs) or `columns` (the desktop's resizable panes). */
  layout(): Promise<string | null> {
    return this.page.getByTestId('workbench').getAttribute('data-layout');
  }

  phoneTab(pane: string): Locator {
    return this.page.locator(`[data-testid="phone-tab"][data-pane="${pane}"]`);
  }

  /** The phone panes the user can see (one, on a phone). */
  visiblePhonePanes(): Promise<string[]> {
    return this.page
      .locator('[data-testid="phone-pane"]')
      .evaluateAll((els) =>
        els
          .filter((e) => (e as HTMLElement).offsetParent !== null)
          .map((e) => e.getAttribute('data-phone-pane') ?? ''),
      );
  }

  /** Shows a pane on a phone by tapping its tab. */
  async showPhonePane(pane: string): Promise<void> {
    await this.phoneTab(pane).tap();
    await this.page
      .locator(`[data-testid="phone-pane"][data-phone-pane="${pane}"]`)
      .waitFor({ state: 'visible' });
  }

  /** A key of the on-screen key row (data-key: esc, tab, ctrl, alt, up, …, or the symbol itself). */
  rowKey(key: string): Locator {
    return this.page.locator(`[data-testid="key-row"] [data-key="${key}"]`);
  }

  /** Taps terminal `index` (a phone brings up its soft keyboard there) and waits for it to take the keys. */
  async tapTerminal(index: number): Promise<void> {
    await this.terminals().nth(index).locator('.xterm-screen').tap();
    await this.page.waitForFunction(() =>
      document.activeElement?.classList.contains('xterm-helper-textarea'),
    );
  }

  /** As on a phone: text from the soft keyboard, then its Enter key; waits for `marker` in the output. */
  async runByTouch(index: number, command: string, marker: string, timeout = 20_000): Promise<void> {
    await this.tapTerminal(index);
    await this.page.keyboard.insertText(command);
    await this.page.keyboard.press('Enter');
    await this.waitForText(index, marker, timeout);
  }

  /** The pane that holds the keyboard focus (its data-pane-id). */
  focusedPane(): Promise<string | null> {
    return this.page.evaluate(
      () => document.activeElement?.closest('[data-pane-id]')?.getAttribute('data-pane-id') ?? null,
    );
  }
}

/** xterm's WebGL renderer draws into a canvas; tests read the DOM renderer's rows instead. */
export function forceDomRenderer(): void {
  const original = HTMLCanvasElement.prototype.getContext;
  HTMLCanvasElement.prototype.getContext = function (
    this: HTMLCanvasElement,
    type: string,
    ...rest: unknown[]
  ) {
    if (type === 'webgl' || type === 'webgl2') return null;
    return (original as (...a: unknown[]) => unknown).call(this, type, ...rest);
  } as typeof original;
}

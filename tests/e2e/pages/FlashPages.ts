// Page objects of flashing: the wizard (boards, image, confirm) driven by keyboard, the job view (pane
// or dialog) and the multi-board table, read through their data-* attributes.
import type { Locator, Page } from 'playwright-core';

export class FlashWizard {
  constructor(readonly page: Page) {}

  dialog(): Locator {
    return this.page.getByTestId('flash-wizard');
  }

  async waitForStep(step: 'boards' | 'image' | 'confirm', timeout = 15_000): Promise<void> {
    await this.page.locator(`[data-testid="flash-step"][data-step="${step}"]`).waitFor({ timeout });
  }

  /** The element that has the focus, as `data-testid`/`data-tag`/`data-name` of it or its label. */
  focused(): Promise<{ testId: string | null; tag: string | null; name: string | null; text: string }> {
    return this.page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      return {
        testId: el?.getAttribute('data-testid') ?? null,
        tag: el?.getAttribute('data-tag') ?? null,
        name: el?.closest('[data-name]')?.getAttribute('data-name') ?? null,
        text: el?.textContent?.trim() ?? '',
      };
    });
  }

  /** Keyboard: Tab through the board checkboxes, Space on the wanted ones, then Enter. */
  async chooseBoards(names: string[]): Promise<void> {
    await this.waitForStep('boards');
    await this.page.waitForFunction(() => document.activeElement?.getAttribute('type') === 'checkbox');
    const wanted = new Set(names);
    for (let i = 0; i < 40 && wanted.size > 0; i++) {
      const f = await this.focused();
      if (f.name && wanted.has(f.name)) {
        await this.page.keyboard.press('Space');
        wanted.delete(f.name);
      }
      if (wanted.size === 0) break;
      await this.page.keyboard.press('Tab');
    }
    if (wanted.size) throw new Error(`boards not reached by keyboard: ${[...wanted].join(', ')}`);
    await this.page.keyboard.press('Enter');
  }

  /** Keyboard: the image list has the focus; Space/arrows until `tag` is checked, then Enter. */
  async chooseImage(tag: string): Promise<void> {
    await this.waitForStep('image');
    await this.page.waitForFunction(() => document.activeElement?.getAttribute('role') === 'radio', null, {
      timeout: 15_000,
    });
    const checked = () =>
      this.page.evaluate(
        () =>
          document
            .querySelector('[data-testid="flash-image-option"][aria-checked="true"]')
            ?.getAttribute('data-tag') ?? null,
      );
    await this.page.keyboard.press('Space');
    for (let i = 0; i < 20 && (await checked()) !== tag; i++) await this.page.keyboard.press('ArrowDown');
    if ((await checked()) !== tag) throw new Error(`image ${tag} could not be chosen`);
    await this.page.keyboard.press('Enter');
  }

  /** The confirmation opens with Cancel focused; Tab to Flash, Enter. */
  async confirmByKeyboard(): Promise<string> {
    await this.waitForStep('confirm');
    await this.page.waitForFunction(
      () => document.activeElement?.getAttribute('data-testid') === 'flash-confirm-cancel',
    );
    const text = (await this.dialog().textContent()) ?? '';
    await this.page.keyboard.press('Tab');
    await this.page.waitForFunction(
      () => document.activeElement?.getAttribute('data-testid') === 'flash-confirm',
    );
    await this.page.keyboard.press('Enter');
    await this.dialog().waitFor({ state: 'detached', timeout: 15_000 });
    return text;
  }
}

export class FlashJob {
  constructor(readonly page: Page) {}

  view(): Locator {
    return this.page.getByTestId('flash-view');
  }

  async state(): Promise<string | null> {
    return this.view().getAttribute('data-state');
  }

  /** Records every percent and state the view shows from now on (window.__flash). */
  async record(): Promise<void> {
    await this.page.evaluate(() => {
      const w = window as unknown as { __flash: { percents: number[]; states: string[] } };
      w.__flash = { percents: [], states: [] };
      const note = () => {
        const v = document.querySelector('[data-testid="flash-view"]');
        if (!v) return;
        const p = Number(v.getAttribute('data-percent'));
        const s = v.getAttribute('data-state') ?? '';
        if (Number.isFinite(p) && w.__flash.percents[w.__flash.percents.length - 1] !== p)
          w.__flash.percents.push(p);
        if (s && w.__flash.states[w.__flash.states.length - 1] !== s) w.__flash.states.push(s);
      };
      note();
      new MutationObserver(note).observe(document.body, {
        subtree: true,
        childList: true,
        attributes: true,
        attributeFilter: ['data-percent', 'data-state'],
      });
    });
  }

  recorded(): Promise<{ percents: number[]; states: string[] }> {
    return this.page.evaluate(
      () => (window as unknown as { __flash: { percents: number[]; states: string[] } }).__flash,
    );
  }

  async waitForEnd(timeout = 180_000): Promise<string> {
    await this.page.waitForFunction(
      () =>
        ['SUCCESS', 'FAILURE', 'CANCELLED'].includes(
          document.querySelector('[data-testid="flash-view"]')?.getAttribute('data-state') ?? '',
        ),
      null,
      { timeout, polling: 200 },
    );
    return (await this.state()) ?? '';
  }

  result(): Locator {
    return this.page.getByTestId('flash-result');
  }
}

export class MultiFlashTable {
  constructor(readonly page: Page) {}

  rows(): Locator {
    return this.page.getByTestId('multi-row');
  }

  row(name: string): Locator {
    return this.page.locator(`[data-testid="multi-row"][data-name="${name}"]`);
  }

  async waitForAllFinal(count: number, timeout = 180_000): Promise<void> {
    await this.page.waitForFunction(
      (n) => {
        const rows = [...document.querySelectorAll('[data-testid="multi-row"]')];
        return (
          rows.length === n &&
          rows.every((r) =>
            ['SUCCESS', 'FAILURE', 'CANCELLED', 'REFUSED'].includes(r.getAttribute('data-state') ?? ''),
          )
        );
      },
      count,
      { timeout, polling: 250 },
    );
  }
}

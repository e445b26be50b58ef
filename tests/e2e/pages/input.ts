// How a page object presses and types: with a mouse and a keyboard, or as on a phone (taps, and text put
// in the way a soft keyboard does). Page objects take an InputMode and use these two.
import type { Locator } from 'playwright-core';

export interface InputMode {
  /** Tap instead of click (the page's context needs `hasTouch`). */
  touch?: boolean;
}

/** A click, or on a phone a tap. */
export function press(locator: Locator, mode: InputMode): Promise<void> {
  return mode.touch ? locator.tap() : locator.click();
}

/** Types into a field: fill, or on a phone tap it, select what is in it and let the soft keyboard replace it. */
export async function enterText(locator: Locator, text: string, mode: InputMode): Promise<void> {
  if (!mode.touch) return locator.fill(text);
  await locator.tap();
  await locator.evaluate((el) => (el as HTMLInputElement).select());
  await locator.page().keyboard.insertText(text);
}

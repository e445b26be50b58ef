// Page object for the console's own sign-in page (/login, /login-en).
import type { Page } from 'playwright-core';
import { enterText, type InputMode, press } from './input.ts';

export class LoginPage {
  constructor(
    readonly page: Page,
    readonly baseUrl: string,
    readonly mode: InputMode = {},
  ) {}

  async open(path: '/login' | '/login-en' = '/login'): Promise<void> {
    await this.page.goto(`${this.baseUrl}${path}`);
    await this.page.getByTestId('password-form').waitFor();
  }

  async signInWithPassword(username: string, password: string): Promise<void> {
    const form = this.page.getByTestId('password-form');
    await enterText(form.locator('#login-username'), username, this.mode);
    await enterText(form.locator('#login-password'), password, this.mode);
    await press(form.locator('button[type="submit"]'), this.mode);
  }

  error() {
    return this.page.getByTestId('password-form').getByRole('alert');
  }
}

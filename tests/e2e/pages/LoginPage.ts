// Page object for the console's own sign-in page (/login, /login-en).
import type { Page } from 'playwright-core';

export class LoginPage {
  constructor(
    readonly page: Page,
    readonly baseUrl: string,
  ) {}

  async open(path: '/login' | '/login-en' = '/login'): Promise<void> {
    await this.page.goto(`${this.baseUrl}${path}`);
    await this.page.getByTestId('password-form').waitFor();
  }

  async signInWithPassword(username: string, password: string): Promise<void> {
    const form = this.page.getByTestId('password-form');
    await form.locator('#login-username').fill(username);
    await form.locator('#login-password').fill(password);
    await form.locator('button[type="submit"]').click();
  }

  error() {
    return this.page.getByTestId('password-form').getByRole('alert');
  }
}

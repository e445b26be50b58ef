// Page object for the embedded OpenID Connect provider's sign-in page (/idp/...).
import type { Page } from 'playwright-core';

export class ProviderSignInPage {
  constructor(readonly page: Page) {}

  async waitUntilShown(timeout = 30_000): Promise<void> {
    await this.page.waitForURL((u) => u.pathname.startsWith('/idp/'), { timeout });
    await this.page.getByTestId('idp-signin').waitFor({ timeout });
  }

  async signIn(username: string, password: string): Promise<void> {
    await this.page.locator('#username').fill(username);
    await this.page.locator('#password').fill(password);
    await this.page.getByTestId('idp-signin').locator('button[type="submit"]').click();
  }
}

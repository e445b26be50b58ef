// Page object for the profile dialog and its avatar crop.
import type { Page } from 'playwright-core';

export class ProfileDialog {
  constructor(readonly page: Page) {}

  async openFromNavbar(): Promise<void> {
    await this.page.getByTestId('avatar-button').first().click();
    await this.page.getByTestId('profile').waitFor();
  }

  async cropAndUpload(file: { name: string; mimeType: string; buffer: Buffer }): Promise<void> {
    await this.page.getByTestId('change-avatar').click();
    await this.page.getByTestId('avatar-file').setInputFiles(file);
    await this.page.locator('.reactEasyCrop_Container').waitFor();
    // Zoom in a little with the keyboard-accessible slider so the crop is not the whole image.
    await this.page.locator('input[type="range"]').fill('30');
    await this.page.getByTestId('avatar-upload').click();
  }

  /** The crop's loading state: 0 idle, 1 uploading, 2 success, 3 failed. */
  loading(): Promise<string | null> {
    return this.page.getByTestId('avatar-crop').getAttribute('data-loading');
  }

  async waitForLoading(state: 0 | 1 | 2 | 3, timeout = 15_000): Promise<void> {
    await this.page.locator(`[data-testid="avatar-crop"][data-loading="${state}"]`).waitFor({ timeout });
  }
}

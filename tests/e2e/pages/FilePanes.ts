// Page object of the workbench's file tree and editor: go to a folder, open a file, type and save,
// upload through the picker and download the selection, the way a user does with the keyboard and
// the pane's buttons.
import type { Download, Locator, Page } from 'playwright-core';

export class FilePanes {
  constructor(readonly page: Page) {}

  tree(): Locator {
    return this.page.getByTestId('file-tree');
  }

  row(path: string): Locator {
    return this.tree().locator(`[role="treeitem"][data-path="${path}"]`);
  }

  async goto(folder: string): Promise<void> {
    await this.page.getByTestId('file-tree-root').click();
    const input = this.page.getByTestId('file-name-input');
    await input.fill(folder);
    await input.press('Enter');
    await this.page.getByTestId('file-name-dialog').waitFor({ state: 'detached' });
    await this.page.waitForFunction(
      (f) => document.querySelector('[data-testid="file-tree-root"]')?.textContent === f,
      folder,
    );
  }

  async refresh(): Promise<void> {
    await this.page.getByRole('button', { name: 'Refresh' }).click();
  }

  /** Selects a row and opens it with Enter, as the keyboard path does. */
  async open(path: string): Promise<void> {
    await this.row(path).click();
    await this.tree().press('Enter');
    await this.editorHost(path).waitFor();
  }

  editorHost(path: string): Locator {
    return this.page.locator(`[data-testid="editor-host"][data-path="${path}"]`);
  }

  tab(path: string): Locator {
    return this.page.locator(`[data-testid="editor-tab"][data-path="${path}"]`);
  }

  async editorText(path: string): Promise<string> {
    return this.editorHost(path).locator('.cm-content').innerText();
  }

  /** Replaces the whole text of the open file and saves it with Ctrl+S. */
  async replaceAndSave(path: string, text: string): Promise<void> {
    const content = this.editorHost(path).locator('.cm-content');
    await content.click();
    await this.page.keyboard.press('Control+a');
    await this.page.keyboard.type(text);
    await this.page.waitForFunction(
      (p) =>
        document.querySelector(`[data-testid="editor-tab"][data-path="${p}"]`)?.getAttribute('data-dirty') ===
        'true',
      path,
    );
    await this.page.keyboard.press('Control+s');
    await this.page.waitForFunction(
      (p) =>
        document.querySelector(`[data-testid="editor-tab"][data-path="${p}"]`)?.getAttribute('data-dirty') ===
        'false',
      path,
    );
  }

  async upload(files: { name: string; mimeType: string; buffer: Buffer }[]): Promise<void> {
    await this.page.getByTestId('file-upload-input').setInputFiles(files);
  }

  transfers(): Locator {
    return this.page.getByTestId('transfer-item');
  }

  async download(path: string): Promise<Download> {
    await this.row(path).click();
    const [download] = await Promise.all([
      this.page.waitForEvent('download'),
      this.page.getByTestId('file-download-button').click(),
    ]);
    return download;
  }
}

import { proxy } from 'valtio';

/** The profile dialog (avatar crop inside) opens from the navbar avatar, the palette and settings. */
export const profileDialog = proxy({ open: false, cropping: false });

export function openProfile(cropping = false): void {
  profileDialog.cropping = cropping;
  profileDialog.open = true;
}

export function closeProfile(): void {
  profileDialog.open = false;
  profileDialog.cropping = false;
}

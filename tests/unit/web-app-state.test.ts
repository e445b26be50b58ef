import { describe, expect, it } from 'vitest';
import { appState, deviceFor, syncDevice } from '#web/state/app.ts';

describe('device class and sidebar (spec sections 2 and 9)', () => {
  it('counts a window narrower than 992 px as mobile', () => {
    expect(deviceFor(991)).toBe('mobile');
    expect(deviceFor(992)).toBe('desktop');
    expect(deviceFor(1440)).toBe('desktop');
  });

  it('closes the sidebar without animation on entering mobile and reopens it on a wide window', () => {
    syncDevice(1440);
    appState.sidebar.opened = true;
    syncDevice(800);
    expect(appState.device).toBe('mobile');
    expect(appState.sidebar).toEqual({ opened: false, withoutAnimation: true });
    syncDevice(1200);
    expect(appState.device).toBe('desktop');
    expect(appState.sidebar.opened).toBe(true);
  });
});

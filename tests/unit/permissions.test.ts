import { describe, expect, it } from 'vitest';
import { actionForPath, hasPermission } from '#shared/permissions.ts';

describe('permission matching', () => {
  const held = ['assets.view_asset', 'devices.change_device'];
  it.each([
    [undefined, true],
    [[], true],
    ['assets.view_asset', true],
    ['assets.add_asset', false],
    [['assets.view_asset', 'devices.change_device'], true],
    [['assets.view_asset', 'devices.del_device'], false],
    ['assets.add_asset|devices.change_device', true],
    ['assets.add_asset | assets.del_asset', false],
  ] as const)('requirement %j → %s', (required, expected) => {
    expect(hasPermission(required as string | string[] | undefined, held)).toBe(expected);
  });

  it.each([
    ['/users/create', 'add'],
    ['/users/:id/update', 'change'],
    ['/users/:id', 'view'],
    ['/users/:id/delete', 'del'],
    ['/users', 'view'],
  ])('derives the action of %s as %s', (p, action) => {
    expect(actionForPath(p)).toBe(action);
  });
});

// Focus that follows the work (issue 38): when a dialog closes or the page changes and the focus is
// left nowhere (on the body), it goes to the first thing the user acts on in the page — the selected
// row of its list, its first field, its first button — never to the account controls: Enter on a
// focus that landed on Sign out signed the user out. A focus the user moved there by Tab or the
// pointer stays. Loaded after the first paint (keys.ts).

/** Controls the focus never lands on by itself (only by Tab or the pointer). */
const NOT_HOME = '[data-testid="logout-button"], [data-no-autofocus]';

/** What the page offers first, in order of preference, inside its main area. */
const HOME = [
  '[data-focus-home]',
  '[role="listbox"] [aria-selected="true"]',
  '[role="listbox"][tabindex="0"]',
  '[role="tree"]',
  'input:not([type="hidden"]):not([disabled]), textarea:not([disabled]), select:not([disabled])',
  'button:not([disabled]), a[href], [tabindex="0"]',
];

function visible(el: Element): boolean {
  return (el as HTMLElement).getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
}

/** The element the page's user acts on first (null: the page has nothing). */
export function homeTarget(root: ParentNode = document): HTMLElement | null {
  const main = root.querySelector('[data-testid="workbench"]') ?? root.querySelector('main') ?? root;
  for (const sel of HOME)
    for (const el of main.querySelectorAll<HTMLElement>(sel))
      if (visible(el) && !el.matches(NOT_HOME) && !el.closest('[aria-hidden="true"], [inert]')) return el;
  return null;
}

function dialogOpen(): boolean {
  return !!document.querySelector('[role="dialog"], [role="alertdialog"], [cmdk-root]');
}

/** How long a page has to place its own focus before it is placed for it (ms). */
const GRACE_MS = 800;

let installed = false;

export function installFocusHome(): void {
  if (installed || typeof document === 'undefined') return;
  installed = true;
  // When the user last moved the focus on purpose: by the pointer, and by Tab.
  let pointerAt = 0;
  let tabAt = 0;
  window.addEventListener(
    'pointerdown',
    () => {
      pointerAt = Date.now();
    },
    true,
  );
  window.addEventListener(
    'keydown',
    (e) => {
      if (e.key === 'Tab') tabAt = Date.now();
    },
    true,
  );
  /** Moves the focus home; false when there is nothing to do it on yet (a dialog, the workbench). */
  const goHome = (): boolean => {
    if (dialogOpen()) return false;
    // The workbench places its own focus (its terminal); only a page without it is helped here.
    if (document.querySelector('[data-testid="workbench"]')) return false;
    const home = homeTarget();
    home?.focus({ preventScroll: true });
    return !!home;
  };
  // A focus that lands on the account controls by itself (a dialog giving it back, a page's first
  // Tab stop after a navigation) goes home instead.
  document.addEventListener('focusin', (e) => {
    const el = e.target as HTMLElement | null;
    const now = Date.now();
    if (!el?.matches?.(NOT_HOME) || now - tabAt < 600 || now - pointerAt < 600) return;
    window.setTimeout(() => {
      if (document.activeElement === el) goHome();
    }, 0);
  });
  // A focus lost to the body (its element closed, the page changed) goes home once the page is
  // there, checked a few times a second for a while (a removed element fires no event in every
  // browser). A click on the page's background leaves it there.
  let lostAt = 0;
  let done = true;
  window.setInterval(() => {
    const onBody = !document.activeElement || document.activeElement === document.body;
    const now = Date.now();
    if (!onBody) {
      done = false;
      return;
    }
    if (done) return;
    if (lostAt === 0) lostAt = now;
    // Lost by a click (on the page's background): the user's; for a while only.
    if (now - pointerAt < 1000 || now - lostAt > 4000) done = true;
    // The page first gets its own chance to place the focus (its list, once loaded).
    else if (now - lostAt >= GRACE_MS && goHome()) done = true;
  }, 250);
  document.addEventListener('focusin', () => {
    lostAt = 0;
  });
}

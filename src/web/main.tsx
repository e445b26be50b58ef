// Console entry: theme before the first paint, catalogues, public settings (they choose the route
// set), then the router.
import './styles.css';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { systemCalls } from '#shared/system.ts';
import { call } from '#web/api/http.ts';
import { createRouter } from '#web/app-router.tsx';
import { routeSet } from '#web/auth/flow.ts';
import { initI18n, loadNamespace } from '#web/i18n/i18n.ts';
import { loadZodWhenIdle } from '#web/lazy-zod.ts';
import { RouterProvider } from '#web/router/router.tsx';
import { routeTable } from '#web/router/table.ts';
import { applyTheme, appState } from '#web/state/app.ts';
import { setPublicSettings } from '#web/state/settings.ts';

async function start(): Promise<void> {
  applyTheme(appState.theme);
  await initI18n();
  const publicSettings = systemCalls.find((c) => c.name === 'publicSettings');
  try {
    setPublicSettings(publicSettings ? await call(publicSettings, {}, { silent: true }) : null);
  } catch {
    // Without the service the console still renders its public pages; sign-in will say what fails.
    setPublicSettings(null);
  }
  const router = createRouter(routeTable, routeSet());
  const el = document.getElementById('root');
  if (!el) throw new Error('#root is missing from index.html');
  createRoot(el).render(
    <StrictMode>
      <RouterProvider router={router} />
    </StrictMode>,
  );
  // The shared schemas' runtime: not needed to show the first page, wanted before the user types.
  loadZodWhenIdle();
  // The words of failures likewise (the HTTP client loads them itself on a failure before then).
  const errorWords = () => void loadNamespace('errors').catch(() => {});
  if (window.requestIdleCallback) window.requestIdleCallback(errorWords, { timeout: 2000 });
  else window.setTimeout(errorWords, 300);
}

void start();

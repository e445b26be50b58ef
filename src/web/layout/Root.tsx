// The root of every route: runs the sign-in guard (spec section 4), enforces route permissions,
// sets the page title, tracks the device class, and hosts the palette, notices and dialogs.
import { lazy, Suspense, useEffect, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { SESSION_END_CODES } from '#shared/codes.ts';
import { PRODUCT_TITLE } from '#shared/constants.ts';
import { hasPermission } from '#shared/permissions.ts';
import { IdentityPerm } from '#shared/user.ts';
import { ApiError, call } from '#web/api/http.ts';
import {
  completeSignIn,
  exchangeCode,
  loadUserOnce,
  onUserLoadFailed,
  rememberRedirect,
  startSignIn,
  userCall,
} from '#web/auth/flow.ts';
import { decideGuard } from '#web/auth/guard.ts';
import { profileDialog } from '#web/auth/profile-state.ts';
import { usePaletteShortcut } from '#web/commands/keys.ts';
import { keyHelp, paletteState } from '#web/commands/registry.ts';
import { prefetchModal } from '#web/components/Modal.tsx';
import { SessionEndedDialog } from '#web/components/SessionEndedDialog.tsx';
import { Toaster } from '#web/components/Toaster.tsx';
import { flash } from '#web/flash/state.ts';
import { loadNamespace } from '#web/i18n/i18n.ts';
import { withZod } from '#web/lazy-zod.ts';
import { useCoreCommands } from '#web/palette/core-commands.ts';
import { routeAllowed } from '#web/router/access.ts';
import { type RouteHandle, useRouteMeta } from '#web/router/handle.ts';
import { Navigate, Outlet, useLocation, useNavigate } from '#web/router/router.tsx';
import { seqUi } from '#web/sequences/state.ts';
import { syncDevice } from '#web/state/app.ts';
import { licenceState, licenceValid } from '#web/state/licence.ts';
import { session } from '#web/state/session.ts';
import { publicSettingsState } from '#web/state/settings.ts';
import { FullPageStatus } from './PageLoading.tsx';

// These validate what the user types with the shared schemas: each waits for zod (src/web/lazy-zod.ts).
const ProfileDialog = lazy(withZod(() => import('#web/auth/ProfileDialog.tsx')));
const FlashHost = lazy(withZod(() => import('#web/flash/FlashHost.tsx')));
const SequenceHost = lazy(
  withZod(() => loadNamespace('sequences').then(() => import('#web/sequences/SequenceHost.tsx'))),
);
const loadPalette = withZod(() => import('#web/palette/Palette.tsx'));
const Palette = lazy(loadPalette);
const KeyHelp = lazy(() => import('#web/palette/KeyHelp.tsx'));

/**
 * Fetch the palette's chunk (and the dialogs' code) once the page is idle and mount it (closed), so the first Ctrl+K opens it
 * at once and the keys typed right after it land in its field.
 */
function usePrefetchPalette(loaded: () => void) {
  // biome-ignore lint/correctness/useExhaustiveDependencies: one prefetch per page load.
  useEffect(() => {
    let live = true;
    const idle = window.requestIdleCallback ?? ((cb: () => void) => window.setTimeout(cb, 1500));
    idle(() => {
      prefetchModal();
      void loadPalette().then(
        () => live && loaded(),
        () => {},
      );
    });
    return () => {
      live = false;
    };
  }, []);
}

export function pageTitle(routeTitle: string | undefined): string {
  return routeTitle ? `${routeTitle} - ${PRODUCT_TITLE}` : PRODUCT_TITLE;
}

function useDocumentTitle(handle: RouteHandle | undefined) {
  const { t, i18n } = useTranslation('layout');
  const key = handle?.meta.titleKey;
  // biome-ignore lint/correctness/useExhaustiveDependencies: the title follows the language too.
  useEffect(() => {
    document.title = pageTitle(key ? t(key) : undefined);
  }, [key, t, i18n.language]);
}

function useDeviceClass() {
  useEffect(() => {
    const onResize = () => syncDevice(window.innerWidth);
    onResize();
    window.addEventListener('resize', onResize);
    return () => window.removeEventListener('resize', onResize);
  }, []);
}

function useLicence() {
  const { name, perms } = useSnapshot(session);
  const { value } = useSnapshot(publicSettingsState);
  const xpack = !!value?.XPACK_ENABLED;
  const allowed = hasPermission([IdentityPerm.changeLicense], perms);
  useEffect(() => {
    if (!name || !xpack || !allowed) {
      licenceState.detail = null;
      return;
    }
    let live = true;
    call(userCall('licenseDetail'), {}, { silent: true })
      .then((d) => {
        if (live) licenceState.detail = d;
      })
      .catch(() => {
        // The banner is advisory; a failed read leaves it hidden.
      });
    return () => {
      live = false;
    };
  }, [name, xpack, allowed]);
}

function Guarded() {
  const location = useLocation();
  const navigate = useNavigate();
  const handle = useRouteMeta();
  const { t } = useTranslation('auth');
  const { token, name, perms } = useSnapshot(session);
  const licence = useSnapshot(licenceState);
  const search = new URLSearchParams(location.search);
  const isPublic = !!handle?.meta.public;
  const action = decideGuard({
    token,
    userLoaded: !!name,
    code: search.get('code'),
    isPublic,
    fullPath: location.pathname + location.search,
  });
  const exchanging = useRef<string | null>(null);
  // A session-end code while loading the account: the re-login dialog asks; if the user cancels it,
  // this page says so and offers sign-in again instead of loading forever.
  const [signedOut, setSignedOut] = useState(false);

  // biome-ignore lint/correctness/useExhaustiveDependencies: one run per guard decision and location.
  useEffect(() => {
    if (action.kind === 'exchange') {
      const code = search.get('code') ?? '';
      if (exchanging.current === code) return;
      exchanging.current = code;
      exchangeCode(search)
        .then((tok) => navigate(completeSignIn(tok), { replace: true }))
        .catch(() => void startSignIn());
    } else if (action.kind === 'authorize') {
      if (action.remember) rememberRedirect(action.remember);
      void startSignIn();
    } else if (action.kind === 'loadUser') {
      // Once signed in, every page listens on the realtime channel, so lease warnings and board
      // state changes reach the user wherever they are, not only on device pages.
      // The features' commands and watchers (src/web/layout/feature-commands.ts, which starts the
      // realtime channel and with it zod, 88 KB gzip) are fetched once the page is idle, off the first
      // load (at most a second late), and installed once the account has loaded; a chunk that fails
      // to load leaves them out, as it leaves out the palette.
      const features = new Promise<typeof import('./feature-commands.ts')>((resolve, reject) => {
        const fetchFeatures = () => void import('./feature-commands.ts').then(resolve, reject);
        if (window.requestIdleCallback) window.requestIdleCallback(fetchFeatures, { timeout: 1000 });
        else window.setTimeout(fetchFeatures, 300);
      });
      features.catch(() => {});
      loadUserOnce().then(
        () =>
          void features.then(
            (m) => m.installFeatureCommands(),
            () => {},
          ),
        (err: unknown) => {
          if (err instanceof ApiError && SESSION_END_CODES.includes(err.code)) setSignedOut(true);
          else onUserLoadFailed(err);
        },
      );
    }
  }, [action.kind, location.key, token]);

  if (action.kind === 'exchange') return <FullPageStatus text={t('status.exchanging')} />;
  if (action.kind === 'authorize') return <FullPageStatus text={t('status.redirecting')} />;
  if (action.kind === 'loadUser' && action.blocking && signedOut) {
    return (
      <FullPageStatus
        text={t('status.signedOut')}
        action={{ label: t('status.signInAgain'), run: () => void startSignIn() }}
      />
    );
  }
  if (action.kind === 'loadUser' && action.blocking) return <FullPageStatus text={t('status.loadingUser')} />;
  if (
    handle &&
    !isPublic &&
    name &&
    !routeAllowed(handle.meta, { perms, licenceValid: licenceValid(licence.detail, Date.now()) })
  ) {
    return <Navigate to="/403" replace />;
  }
  return <Outlet />;
}

export function Root() {
  const handle = useRouteMeta();
  const { token } = useSnapshot(session);
  const { open: profileOpen } = useSnapshot(profileDialog);
  const { open: paletteOpen } = useSnapshot(paletteState);
  const { dialog: flashDialog } = useSnapshot(flash);
  const { dialog: sequenceDialog, recording } = useSnapshot(seqUi);
  // Mounted from the first opening on, so closing animates and reopening is instant.
  const [paletteUsed, setPaletteUsed] = useState(false);
  if (paletteOpen && !paletteUsed) setPaletteUsed(true);
  const { open: helpOpen } = useSnapshot(keyHelp);
  const [helpUsed, setHelpUsed] = useState(false);
  if (helpOpen && !helpUsed) setHelpUsed(true);
  usePaletteShortcut();
  usePrefetchPalette(() => setPaletteUsed(true));
  useDocumentTitle(handle);
  useDeviceClass();
  useCoreCommands();
  useLicence();
  return (
    <>
      <Guarded />
      {paletteUsed ? (
        <Suspense fallback={null}>
          <Palette />
        </Suspense>
      ) : null}
      {helpUsed ? (
        <Suspense fallback={null}>
          <KeyHelp />
        </Suspense>
      ) : null}
      <Toaster />
      <SessionEndedDialog />
      {token && flashDialog ? (
        <Suspense fallback={null}>
          <FlashHost />
        </Suspense>
      ) : null}
      {token && (sequenceDialog || recording) ? (
        <Suspense fallback={null}>
          <SequenceHost />
        </Suspense>
      ) : null}
      {token && profileOpen ? (
        <Suspense fallback={null}>
          <ProfileDialog />
        </Suspense>
      ) : null}
    </>
  );
}

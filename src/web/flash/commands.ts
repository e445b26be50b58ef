// Palette commands of flashing: the image catalogue, "Flash several boards…", and per held board
// "Flash <board>…" and its flash history. Like the device commands they follow the lease list: every
// change of it registers the per-board commands again. Installed once per tab after sign-in, together
// with the realtime watch of flash progress.
import { subscribe } from 'valtio';
import { type FlashImageDto, FlashPerm } from '#shared/flash.ts';
import { call } from '#web/api/http.ts';
import { heldBoardChoices } from '#web/boards/choices.ts';
import { dataOf, leases, messageOf } from '#web/boards/store.ts';
import { type PaletteCommand, registerCommands } from '#web/commands/registry.ts';
import { formatSize } from '#web/files/format.ts';
import { currentLanguage, t } from '#web/i18n/i18n.ts';
import { notify } from '#web/state/notices.ts';
import { session } from '#web/state/session.ts';
import { watchFlash } from './live.ts';
import {
  boardName,
  FlashCalls,
  flash,
  flashingNow,
  jobErrorText,
  openHistory,
  openJob,
  openWizard,
  startFlash,
} from './state.ts';

const SECTION = 'flash:palette.section';
export const CATALOGUE_PATH = '/flash-images';

function perLease(): PaletteCommand[] {
  const items = dataOf(leases.mine)?.items ?? [];
  const out: PaletteCommand[] = [];
  for (const l of items) {
    const p = { name: l.serverName };
    const kw = [l.serverName, l.boardName, l.model, l.deviceId, 'flash', 'image', 'os'];
    out.push(
      {
        id: `flash.one.${l.deviceId}`,
        titleKey: 'flash:palette.flashOne',
        titleParams: p,
        section: SECTION,
        keywords: kw,
        icon: 'upload',
        perms: [FlashPerm.add],
        run: () => openWizard('one', [l.deviceId]),
      },
      {
        id: `flash.history.${l.deviceId}`,
        titleKey: 'flash:palette.history',
        titleParams: p,
        section: SECTION,
        keywords: [...kw, 'history', 'log'],
        icon: 'book',
        perms: [FlashPerm.view],
        run: () => openHistory(l.deviceId),
      },
    );
    if (flash.byDevice[l.deviceId]) {
      out.push({
        id: `flash.job.${l.deviceId}`,
        titleKey: 'flash:palette.showJob',
        titleParams: p,
        section: SECTION,
        keywords: [...kw, 'progress', 'job'],
        icon: 'layers',
        perms: [FlashPerm.view],
        run: () => openJob(l.deviceId),
      });
    }
  }
  return out;
}

/**
 * "Flash a board…" asked in the palette: which held board (the one in front first), which image (those
 * that fit it, newest catalogue order), then a confirmation naming both, since flashing replaces every
 * file on the board. The job then shows where its progress is followed (pane or dialog).
 */
function flashAsking(): PaletteCommand {
  // The images offered for the board chosen, by tag, for the confirmation's words.
  const offered = new Map<string, FlashImageDto>();
  return {
    id: 'flash.ask',
    titleKey: 'flash:palette.flashAsk',
    section: SECTION,
    keywords: ['flash', 'image', 'os', 'install', 'write'],
    aliases: ['flash a board', 'install an image'],
    icon: 'upload',
    perms: [FlashPerm.add],
    // `flash <image>`: the board in front (else asked), the image searched by the text; then confirmed.
    quick: {
      verbs: ['flash', '烧录', '刷机', '書き込み'],
      parse: (text) => {
        const front = session.applyInfo?.deviceId;
        const held = dataOf(leases.mine)?.items ?? [];
        const board =
          front && held.some((l) => l.deviceId === front)
            ? front
            : held.length === 1
              ? held[0].deviceId
              : null;
        return board ? { values: { deviceId: board }, search: text } : null;
      },
    },
    when: () => (dataOf(leases.mine)?.items.length ?? 0) > 0,
    args: [
      {
        key: 'deviceId',
        promptKey: 'flash:palette.whichBoard',
        options: () =>
          heldBoardChoices().map((o) =>
            flashingNow(o.value) ? { ...o, detail: t('flash:wizard.alreadyFlashing') } : o,
          ),
        validate: (v) => (flashingNow(v) ? t('flash:palette.busy') : null),
      },
      {
        key: 'tag',
        promptKey: 'flash:palette.whichImage',
        options: async ({ deviceId }) => {
          const r = await call(FlashCalls.flashImages, { deviceId }, { silent: true });
          offered.clear();
          const lng = currentLanguage();
          return r.items
            .filter((img) => !img.retiredAt && img.fits !== false)
            .map((img) => {
              offered.set(img.tag, img);
              return {
                value: img.tag,
                label: img.name,
                detail: [img.tag, img.osVersion, formatSize(img.size, lng)].join(' · '),
              };
            });
        },
      },
      {
        key: 'confirm',
        promptKey: 'flash:palette.confirmAsk',
        options: ({ deviceId, tag }) => {
          const name = boardName(deviceId);
          const image = offered.get(tag)?.name ?? tag;
          return [
            {
              value: 'yes',
              label: t('flash:confirm.titleOne', { image, name }),
              detail: t('flash:palette.confirmDetail'),
            },
          ];
        },
      },
    ],
    run: async (_ctx, { deviceId, tag }) => {
      try {
        await startFlash(deviceId, tag);
      } catch (err) {
        const key = (err as { key?: string }).key;
        notify(
          'error',
          t('flash:palette.failed', {
            name: boardName(deviceId),
            error: key ? jobErrorText({ errorKey: key, errorMessage: messageOf(err) }) : messageOf(err),
          }),
        );
      }
    },
  };
}

const fixed: PaletteCommand[] = [
  flashAsking(),
  {
    id: 'flash.catalogue',
    titleKey: 'flash:palette.catalogue',
    section: SECTION,
    keywords: ['images', 'catalogue', 'catalog', 'flash', 'os', 'upload'],
    icon: 'image',
    perms: [FlashPerm.view],
    run: (ctx) => ctx.navigate(CATALOGUE_PATH),
  },
  {
    id: 'flash.upload',
    titleKey: 'flash:palette.upload',
    section: SECTION,
    keywords: ['upload', 'image', 'os', 'add image', 'catalogue'],
    aliases: ['upload image', 'add an image', 'new image'],
    icon: 'upload',
    perms: [FlashPerm.add],
    run: (ctx) => ctx.navigate(`${CATALOGUE_PATH}?upload`),
  },
  {
    id: 'flash.many',
    titleKey: 'flash:palette.flashMany',
    section: SECTION,
    keywords: ['flash', 'several', 'multiple', 'many', 'boards', 'image'],
    icon: 'layers',
    perms: [FlashPerm.add],
    when: () => (dataOf(leases.mine)?.items.length ?? 0) > 0,
    run: () => openWizard('many', []),
  },
];

/** While the workbench of a board is mounted: its flash pane and "Flash this board…". */
export function installWorkbenchFlashCommands(deviceId: string): () => void {
  return registerCommands('workbench.flash', [
    {
      id: 'workbench.flashPane',
      titleKey: 'flash:palette.showPane',
      section: 'palette:sections.workbench',
      context: 'board',
      keywords: ['flash', 'progress', 'pane', 'workbench'],
      icon: 'layers',
      perms: [FlashPerm.view],
      run: () => {
        flash.paneOpen = true;
      },
    },
    {
      id: 'workbench.flash',
      titleKey: 'flash:palette.flashThis',
      section: 'palette:sections.workbench',
      context: 'board',
      keywords: ['flash', 'image', 'os', 'workbench'],
      icon: 'upload',
      perms: [FlashPerm.add],
      run: () => openWizard('one', [deviceId]),
    },
  ]);
}

let installed = false;

export function installFlashCommands(): void {
  if (installed) return;
  installed = true;
  let queued = false;
  const sync = () => {
    queued = false;
    registerCommands('flash', [...fixed, ...perLease()]);
  };
  // Progress events change the store many times a second; the commands only need the board set.
  const later = () => {
    if (queued) return;
    queued = true;
    queueMicrotask(sync);
  };
  sync();
  subscribe(leases, later);
  subscribe(flash.byDevice, later);
  watchFlash();
}

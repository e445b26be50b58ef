// Palette commands of sequences: run one on boards (asks which sequence, which boards, confirms),
// open the Sequences dialog and the runs, and the recording: start, add a command or a wait step, stop
// and save under a name, discard. Installed once per tab after sign-in; the recording commands follow
// whether a recording is on.
import { subscribe } from 'valtio';
import { type SequenceDto, sequenceCalls, sequenceName } from '#shared/sequences.ts';
import { call } from '#web/api/http.ts';
import { heldBoardChoices } from '#web/boards/choices.ts';
import { dataOf, leases, messageOf } from '#web/boards/store.ts';
import { type PaletteCommand, registerCommands } from '#web/commands/registry.ts';
import { loadNamespace, t } from '#web/i18n/i18n.ts';
import { notify } from '#web/state/notices.ts';
import {
  openRun,
  openSequences,
  type RecordedStep,
  recordStep,
  seqUi,
  startRecording,
  stopRecording,
} from './state.ts';

export const SequenceCalls = Object.fromEntries(sequenceCalls.map((c) => [c.name, c])) as {
  [K in (typeof sequenceCalls)[number]['name']]: Extract<(typeof sequenceCalls)[number], { name: K }>;
};

const SECTION = 'sequences:palette.section';
const ALL = '*';

/** Saves the recorded steps as a sequence named `name` (YAML, written by the lazily loaded writer). */
export async function saveRecording(name: string, steps: readonly RecordedStep[]): Promise<SequenceDto> {
  const { sequenceYaml } = await import('#shared/sequence-file.ts');
  const source = sequenceYaml({ description: t('sequences:recording.badge'), steps: [...steps] as never });
  return call(SequenceCalls.saveSequence, { name, source, groupName: null }, { silent: true });
}

/** `name=value` pairs separated by spaces; null when one is not a pair. */
export function parseParams(text: string): Record<string, string> | null {
  const out: Record<string, string> = {};
  for (const pair of text.trim().split(/\s+/).filter(Boolean)) {
    const i = pair.indexOf('=');
    if (i <= 0) return null;
    out[pair.slice(0, i)] = pair.slice(i + 1);
  }
  return out;
}

function defaultsOf(s: SequenceDto | undefined): string {
  return (s?.params ?? [])
    .filter((p) => p.default !== null)
    .map((p) => `${p.name}=${p.default}`)
    .join(' ');
}

/** What is wrong with typed parameters for the sequence (worded), or null. */
export function paramsProblem(s: SequenceDto | undefined, text: string): string | null {
  const given = parseParams(text);
  if (!given) return t('sequences:palette.badParams');
  const declared = new Map((s?.params ?? []).map((p) => [p.name, p]));
  const unknown = Object.keys(given).find((k) => !declared.has(k));
  if (unknown) return t('sequences:palette.unknownParam', { name: unknown });
  const missing = [...declared.values()].find((p) => p.default === null && !given[p.name]);
  return missing ? t('sequences:palette.missingParam', { name: missing.name }) : null;
}

function runCommand(): PaletteCommand {
  // The sequences offered at the first question, for the confirmation's words.
  const offered = new Map<string, SequenceDto>();
  return {
    id: 'sequences.run',
    titleKey: 'sequences:palette.run',
    section: SECTION,
    keywords: ['sequence', 'script', 'run', 'replay', 'automation', 'batch'],
    aliases: ['replay a sequence', 'run a script'],
    icon: 'layers',
    when: () => (dataOf(leases.mine)?.items.length ?? 0) > 0,
    args: [
      {
        key: 'sequenceId',
        promptKey: 'sequences:palette.whichSequence',
        options: async () => {
          const r = await call(SequenceCalls.fetchSequences, {}, { silent: true });
          offered.clear();
          return r.items.map((s) => {
            offered.set(s.sequenceId, s);
            return {
              value: s.sequenceId,
              label: s.name,
              detail: [
                s.steps.map((x) => x.kind).join(' → '),
                s.mine ? null : t('sequences:list.by', { name: s.ownerName }),
              ]
                .filter(Boolean)
                .join(' · '),
            };
          });
        },
        validate: (v) => (offered.has(v) ? null : t('sequences:palette.noSequences')),
      },
      {
        // Only for a sequence with parameters: their defaults offered, or typed as name=value pairs.
        key: 'params',
        promptKey: 'sequences:palette.params',
        skip: ({ sequenceId }) => !offered.get(sequenceId)?.params.length,
        freeText: true,
        options: ({ sequenceId }) => {
          const text = defaultsOf(offered.get(sequenceId));
          return text ? [{ value: text, label: t('sequences:palette.useDefaults'), detail: text }] : [];
        },
        validate: (v, { sequenceId }) => paramsProblem(offered.get(sequenceId), v),
      },
      {
        key: 'target',
        promptKey: 'sequences:palette.whichBoards',
        freeText: true,
        options: () => [
          { value: ALL, label: t('sequences:palette.allBoards'), detail: '*' },
          ...heldBoardChoices(),
        ],
      },
      {
        key: 'confirm',
        promptKey: 'sequences:palette.confirmRun',
        options: ({ sequenceId, target }) => {
          const s = offered.get(sequenceId);
          const boards =
            target === ALL
              ? t('sequences:palette.allBoards')
              : (dataOf(leases.mine)?.items.find((l) => l.deviceId === target)?.serverName ?? target);
          return [
            {
              value: 'yes',
              label: s?.name ?? sequenceId,
              detail: t('sequences:palette.confirmDetail', { steps: String(s?.steps.length ?? 0), boards }),
            },
          ];
        },
      },
    ],
    run: async (_ctx, { sequenceId, target, params }) => {
      try {
        const run = await call(
          SequenceCalls.runSequence,
          { sequenceId, targets: [target], params: parseParams(params ?? '') ?? {} },
          { silent: true },
        );
        openRun(run.runId);
      } catch (err) {
        notify('error', t('sequences:palette.failed', { error: messageOf(err) }));
      }
    },
  };
}

function recordingCommands(): PaletteCommand[] {
  if (!seqUi.recording) {
    return [
      {
        id: 'sequences.record',
        titleKey: 'sequences:palette.record',
        section: SECTION,
        keywords: ['record', 'macro', 'sequence', 'script'],
        icon: 'sparkle',
        run: () => {
          startRecording();
          notify('info', t('sequences:recording.started'));
        },
      },
    ];
  }
  return [
    {
      id: 'sequences.addExec',
      titleKey: 'sequences:palette.addExec',
      section: SECTION,
      keywords: ['record', 'exec', 'command', 'shell', 'step'],
      icon: 'terminal',
      args: [{ key: 'command', promptKey: 'sequences:palette.whichCommand' }],
      run: (_ctx, { command }) => recordStep({ exec: command.trim() }),
    },
    {
      id: 'sequences.addWait',
      titleKey: 'sequences:palette.addWait',
      section: SECTION,
      keywords: ['record', 'wait', 'sleep', 'pause', 'step'],
      icon: 'rotate',
      args: [
        {
          key: 'seconds',
          promptKey: 'sequences:palette.howLong',
          validate: (v) =>
            /^\d+$/.test(v.trim()) && Number(v) >= 1 && Number(v) <= 3600
              ? null
              : t('sequences:palette.badSeconds'),
        },
      ],
      run: (_ctx, { seconds }) => recordStep({ wait: Number(seconds) }),
    },
    {
      id: 'sequences.save',
      titleKey: 'sequences:palette.save',
      section: SECTION,
      keywords: ['record', 'stop', 'save', 'sequence'],
      icon: 'check',
      args: [
        {
          key: 'name',
          promptKey: 'sequences:palette.name',
          validate: (v) => (sequenceName.safeParse(v).success ? null : t('sequences:palette.badName')),
        },
      ],
      run: async (_ctx, { name }) => {
        const steps = seqUi.recording ?? [];
        if (!steps.length) {
          notify('error', t('sequences:recording.empty'));
          return;
        }
        try {
          const saved = await saveRecording(name.trim(), steps);
          stopRecording();
          notify('success', t('sequences:recording.saved', { name: saved.name }));
        } catch (err) {
          notify('error', messageOf(err));
        }
      },
    },
    {
      id: 'sequences.discard',
      titleKey: 'sequences:palette.discard',
      section: SECTION,
      keywords: ['record', 'stop', 'discard', 'cancel'],
      icon: 'x',
      run: () => {
        stopRecording();
        notify('info', t('sequences:recording.discarded'));
      },
    },
  ];
}

const fixed = (): PaletteCommand[] => [
  runCommand(),
  {
    id: 'sequences.open',
    titleKey: 'sequences:palette.open',
    section: SECTION,
    keywords: ['sequences', 'scripts', 'yaml', 'import', 'export', 'runs'],
    icon: 'book',
    run: () => openSequences(),
  },
];

let installed = false;

export async function installSequenceCommands(): Promise<void> {
  if (installed) return;
  installed = true;
  // The titles are this feature's own namespace, loaded with it.
  await loadNamespace('sequences');
  const base = fixed();
  let recording = seqUi.recording !== null;
  const sync = () => registerCommands('sequences', [...base, ...recordingCommands()]);
  sync();
  subscribe(seqUi, () => {
    if ((seqUi.recording !== null) === recording) return;
    recording = seqUi.recording !== null;
    sync();
  });
}

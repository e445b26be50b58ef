// The command palette (cmdk), opened with Ctrl/Cmd+K on every page (keys.ts listens; this loads on first use).
import { Command } from 'cmdk';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { isMac } from '#web/commands/keys.ts';
import { matchOptions, quickMatches } from '#web/commands/options.ts';
import {
  type CommandContext,
  emptyQueryOrder,
  pushRecent,
  type RankInput,
  rankCommands,
  readRecent,
  scoreCommand,
  TITLE_WORDS,
} from '#web/commands/rank.ts';
import {
  closePalette,
  commandAvailable,
  commandTitle,
  type PaletteCommand,
  type PaletteOption,
  paletteOrigin,
  paletteState,
  type QuickAnswers,
  rankInputOf,
  restoreOriginFocus,
  useCommands,
} from '#web/commands/registry.ts';
import { commandShortcut } from '#web/commands/shortcut.ts';
import { Icon } from '#web/components/icons.tsx';
import { ShortcutKeys } from '#web/components/ShortcutKeys.tsx';
import { Kbd } from '#web/components/ui.tsx';
import { useNavigate } from '#web/router/router.tsx';
import { keymapState } from '#web/state/keymap.ts';
import { session } from '#web/state/session.ts';

type Row = RankInput & { cmd: PaletteCommand };

interface Asking {
  cmd: PaletteCommand;
  title: string;
  step: number;
  values: Record<string, string>;
  error: string;
}

const ITEM =
  'group/item flex h-9 cursor-default items-center gap-2.5 rounded-md px-2.5 text-[13px] text-zinc-700 select-none data-[selected=true]:bg-zinc-100 data-[selected=true]:text-zinc-900 dark:text-zinc-300 dark:data-[selected=true]:bg-zinc-800 dark:data-[selected=true]:text-zinc-50';

/** The rows while a command asks for an argument: its choices filtered by the typed text, or the text. */
function AskList({
  ask,
  search,
  onAnswer,
  onSelect,
}: {
  ask: Asking;
  search: string;
  onAnswer: (v: string) => void;
  /** Moves the palette's selection to a row (by its cmdk value). */
  onSelect: (value: string) => void;
}) {
  const { t } = useTranslation('palette');
  const arg = ask.cmd.args![ask.step];
  const [options, setOptions] = useState<PaletteOption[] | null>(arg.options || arg.complete ? null : []);
  // Completion follows the typed text, a moment after the last key (a call per pause, not per key).
  const typedNow = search.trim();
  // The text the completions were made for: until new ones come, only those the text still leads to.
  const [completedFor, setCompletedFor] = useState<string | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the step's arg and answers are fixed (keyed list).
  useEffect(() => {
    if (!arg.complete) return;
    let live = true;
    const timer = window.setTimeout(() => {
      arg.complete!(typedNow, ask.values).then(
        (o) => {
          if (!live) return;
          setOptions(o);
          setCompletedFor(typedNow);
          // New completions: the best one is chosen (Tab and Enter take it), else the typed text.
          onSelect(o.length ? `option ${o[0].value}` : `typed ${typedNow}`);
        },
        () => live && setOptions([]),
      );
    }, 120);
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
  }, [typedNow]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: one load per step (the list is keyed by step).
  useEffect(() => {
    if (!arg.options) return;
    let live = true;
    Promise.resolve(arg.options(ask.values)).then(
      (o) => {
        if (!live) return;
        setOptions(o);
        // The first answer is chosen, as the first command is: cmdk would keep the previous step's
        // row as its value (gone now), and Enter would find no row to take.
        const first = matchOptions(search, o)[0];
        if (first) onSelect(`option ${first.value}`);
      },
      () => live && setOptions([]),
    );
    return () => {
      live = false;
    };
  }, []);
  const shown = arg.complete
    ? (options ?? []).filter((o) => completedFor === typedNow || o.value.startsWith(typedNow))
    : matchOptions(search, options ?? []);
  // Typing among choices chooses the best match at once ("7" → 7 days), as the command list does.
  const best = arg.complete ? undefined : shown[0]?.value;
  // biome-ignore lint/correctness/useExhaustiveDependencies: follows the typed text and the loaded choices only.
  useEffect(() => {
    if (best !== undefined) onSelect(`option ${best}`);
  }, [best, typedNow]);
  const typed = search.trim();
  const offerTyped =
    typed &&
    (arg.complete
      ? !shown.some((o) => o.value === typed)
      : !arg.options || (arg.freeText && !shown.some((o) => o.value === typed)));
  // Typed text as an answer: first, or after the completions and the choices it matches (which Tab
  // and Enter take first).
  const typedLast = !!arg.complete || (!!arg.freeText && shown.length > 0);
  const typedRow = offerTyped ? (
    <Command.Item value={`typed ${typed}`} onSelect={() => onAnswer(typed)} data-option="" className={ITEM}>
      <Icon name="arrowRight" size={15} className="shrink-0 text-zinc-400" />
      <span className="min-w-0 flex-1 truncate">{t('ask.use', { value: typed })}</span>
      <span className="hidden group-data-[selected=true]/item:inline-flex" data-enter-hint>
        <Kbd>↵</Kbd>
      </span>
    </Command.Item>
  ) : null;
  return (
    <>
      {ask.error ? (
        <div
          role="alert"
          className="px-2.5 py-1.5 text-[12px] text-red-600 dark:text-red-400"
          data-testid="palette-ask-error"
        >
          {ask.error}
        </div>
      ) : null}
      {typedLast ? null : typedRow}
      {shown.map((o) => (
        <Command.Item
          key={o.value}
          value={`option ${o.value}`}
          onSelect={() => onAnswer(o.value)}
          data-option={o.value}
          className={ITEM}
        >
          <Icon name="arrowRight" size={15} className="shrink-0 text-zinc-400" />
          <span className="min-w-0 flex-1 truncate">{o.label}</span>
          {o.detail ? (
            <span className="max-w-[45%] min-w-0 shrink truncate text-[11px] text-zinc-400">{o.detail}</span>
          ) : null}
          <span className="hidden group-data-[selected=true]/item:inline-flex" data-enter-hint>
            <Kbd>↵</Kbd>
          </span>
        </Command.Item>
      ))}
      {typedLast ? typedRow : null}
      {options === null ? (
        <div className="px-3 py-6 text-center text-[13px] text-zinc-500">{t('ask.loading')}</div>
      ) : !offerTyped && shown.length === 0 ? (
        <div className="px-3 py-6 text-center text-[13px] text-zinc-500" data-testid="palette-ask-empty">
          {arg.options ? t('ask.noChoice') : t('ask.typeAnswer')}
        </div>
      ) : null}
    </>
  );
}

export default function Palette() {
  const { open, pending } = useSnapshot(paletteState);
  const { perms } = useSnapshot(session);
  const keymap = useSnapshot(keymapState);
  const { t, i18n } = useTranslation('palette');
  const navigate = useNavigate();
  const commands = useCommands();
  const [search, setSearch] = useState('');
  // The selected row's cmdk value (cmdk chooses it; an asking list moves it when completions arrive).
  const [selectedRow, setSelectedRow] = useState('');
  // A command asking for its arguments (see PaletteArg): which one, and the answers so far.
  const [ask, setAsk] = useState<Asking | null>(null);
  // Each opening starts with an empty search and the command list, however the last one closed.
  // Keys typed while it was opening (keys.ts) join the search. Layout effects: the search is set
  // before the browser hands the focused field its next key, which then lands after them.
  useLayoutEffect(() => {
    if (open) {
      setSearch('');
      setAsk(null);
    } else paletteState.pending = '';
  }, [open]);
  // Opened to ask one command's arguments at once (Ctrl+P: "Open file…").
  const { start } = useSnapshot(paletteState);
  // biome-ignore lint/correctness/useExhaustiveDependencies: acts once per request; run reads the latest state.
  useLayoutEffect(() => {
    if (!open || !start) return;
    paletteState.start = null;
    const c = commands.find((x) => x.id === start.id);
    if (c) run(c, start.text);
  }, [open, start]);
  // An Enter that waited among the typed-ahead keys: pressed once the keys before it are in the field.
  const [enterDue, setEnterDue] = useState(false);
  // Frames an Enter has waited for the answers of an asking command to load.
  const enterWaits = useRef(0);
  useLayoutEffect(() => {
    if (!open || !pending || enterDue) return;
    // The live value, not the render's: keys that came after it wait no longer.
    const keys = paletteState.pending;
    const enter = keys.indexOf('\n');
    setSearch((s) => s + (enter < 0 ? keys : keys.slice(0, enter)));
    // Keys after the Enter wait for it (they may answer what it asks).
    paletteState.pending = enter < 0 ? '' : keys.slice(enter + 1);
    if (enter >= 0) setEnterDue(true);
  }, [open, pending, enterDue]);
  useLayoutEffect(() => {
    if (!enterDue) return;
    // This render has the search with the keys typed before the Enter.
    if (!ask) {
      if (search.trim()) runTop();
      setEnterDue(false);
      return;
    }
    // Answering: cmdk picks the answer row once it has seen the search (its own effects), so the
    // Enter is pressed on the field after them, in the next frame.
    const frame = requestAnimationFrame(() => {
      // Cleared first: an Enter that still finds no answer row sets it again (see onKeyDown).
      setEnterDue(false);
      document
        .querySelector('[cmdk-input]')
        ?.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true }));
    });
    return () => cancelAnimationFrame(frame);
  });

  // Where the focus was when the palette opened; read on each opening (see openPalette).
  const [origin, setOrigin] = useState<{ pane: CommandContext | null; recent: string[] }>({
    pane: null,
    recent: [],
  });
  useEffect(() => {
    if (open) setOrigin({ pane: paletteOrigin.pane, recent: readRecent() });
    else {
      // After the command's own focus moves (they run on a 0 ms timer queued before this one): give
      // the focus back to where it was unless something took it on purpose.
      const timer = window.setTimeout(restoreOriginFocus, 0);
      return () => window.clearTimeout(timer);
    }
  }, [open]);

  const en = useMemo(() => i18n.getFixedT('en'), [i18n]);
  const rows = useMemo(() => {
    if (!open) return [];
    return commands
      .filter((c) => commandAvailable(c, perms))
      .map((c): Row => rankInputOf(c, (k, p) => t(k, p), i18n.language === 'en' ? null : (k, p) => en(k, p)));
  }, [commands, perms, open, t, en, i18n.language]);

  // With a query: one list, best first, each row naming its section (the first row is what Enter
  // runs). Without: recently run commands, then the sections of the current context, then the rest.
  const groups = useMemo((): [string, Row[]][] => {
    const env = { focusedPane: origin.pane, recent: origin.recent };
    const q = search.trim();
    if (q) {
      const ranked = rankCommands(q, rows, env);
      return ranked.length ? [['', ranked]] : [];
    }
    const { recent, rest } = emptyQueryOrder(rows, env);
    const bySection = new Map<string, Row[]>();
    for (const r of rest) {
      const list = bySection.get(r.cmd.section) ?? [];
      list.push(r);
      bySection.set(r.cmd.section, list);
    }
    const out: [string, Row[]][] = [];
    if (recent.length) out.push(['palette:sections.recent', recent]);
    out.push(...bySection.entries());
    return out;
  }, [rows, search, origin]);

  // "verb text" (`renew 7d`): the commands taking that verb, with the text as their arguments, first.
  // A query that names the command itself ("renew a board") is its title, not arguments.
  const quick = useMemo(
    () =>
      ask
        ? []
        : quickMatches(search, rows).filter(
            (m) => scoreCommand(search, { ...m.row, context: undefined }) < TITLE_WORDS,
          ),
    [ask, search, rows],
  );
  // Another command named by the query ("Flash flash-one…" for "flash flash-one") stays first: the
  // quick rows come after the ranked ones then.
  const quickFirst = useMemo(() => {
    const top = search.trim() ? groups[0]?.[1][0] : undefined;
    return !top || scoreCommand(search, { ...top, context: undefined }) < TITLE_WORDS;
  }, [groups, search]);
  // Commands that arrive while the palette is open (a page's own, registered when the browser is idle)
  // re-rank the list under what was typed. cmdk keeps its selection on the row it had, so an Enter
  // ran what had been first before they came: the selection follows the first row, unless the user
  // moved it away from there.
  const top = groups[0]?.[1][0];
  const firstRow = ask
    ? ''
    : (quick[0] && (quickFirst || !top)
        ? `quick ${quick[0].row.cmd.id} ${quick[0].text}`
        : top
          ? `${top.cmd.id} ${top.title}`
          : ''
      ).trim();
  const shownFirst = useRef('');
  useLayoutEffect(() => {
    const before = shownFirst.current;
    shownFirst.current = firstRow;
    if (firstRow && before && firstRow !== before && selectedRow === before) setSelectedRow(firstRow);
  }, [firstRow, selectedRow]);
  /** Runs the first row (what Enter runs): a quick command with its text, or the best ranked one. */
  const runTop = () => {
    const top = groups[0]?.[1][0];
    if (quick[0] && (quickFirst || !top)) run(quick[0].row.cmd, quick[0].text);
    else if (top) run(top.cmd);
  };

  const finish = (c: PaletteCommand, values: Record<string, string>) => {
    pushRecent(c.id);
    closePalette();
    setSearch('');
    setAsk(null);
    void c.run({ navigate, close: closePalette }, values);
  };
  /** Runs a command, asking its arguments first; `text`: typed with its verb (see PaletteCommand.quick). */
  const run = (c: PaletteCommand, text?: string) => {
    if (!c.args?.length) {
      finish(c, {});
      return;
    }
    if (text === undefined) {
      setSearch('');
      setAsk({ cmd: c, title: commandTitle(c, (k, p) => t(k, p)), step: 0, values: {}, error: '' });
      return;
    }
    const begin = (parsed: QuickAnswers | null) => {
      const args = c.args ?? [];
      const values: Record<string, string> = { ...(parsed?.values ?? {}) };
      // The first question not answered by the text (those that do not apply are passed over).
      let step = 0;
      while (step < args.length && (args[step].key in values || args[step].skip?.(values))) {
        values[args[step].key] ??= '';
        step++;
      }
      if (step >= args.length) {
        finish(c, values);
        return;
      }
      setSearch(parsed ? (parsed.search ?? '') : text);
      setAsk({ cmd: c, title: commandTitle(c, (k, p) => t(k, p)), step, values, error: '' });
    };
    const parsed = c.quick?.parse ? c.quick.parse(text) : { search: text };
    if (parsed instanceof Promise) parsed.then(begin, () => begin(null));
    else begin(parsed);
  };
  const answer = (value: string) => {
    if (!ask) return;
    const arg = ask.cmd.args![ask.step];
    const error = arg.validate ? arg.validate(value, ask.values) : value.trim() ? null : t('ask.required');
    if (error) {
      setAsk({ ...ask, error });
      return;
    }
    const values = { ...ask.values, [arg.key]: value };
    const args = ask.cmd.args!;
    // Questions that do not apply to the answers so far are passed over (answered empty).
    let next = ask.step + 1;
    while (next < args.length && args[next].skip?.(values)) values[args[next++].key] = '';
    if (next < args.length) {
      setSearch('');
      setAsk({ ...ask, step: next, values, error: '' });
    } else finish(ask.cmd, values);
  };
  const back = () => {
    if (!ask) return;
    const args = ask.cmd.args!;
    let prev = ask.step - 1;
    while (prev >= 0 && args[prev].skip?.(ask.values)) prev--;
    if (prev < 0) setAsk(null);
    else setAsk({ ...ask, step: prev, error: '' });
  };

  const quickRows = quick.length ? (
    <Command.Group>
      {quick.map(({ row, text }) => (
        <Command.Item
          key={`quick ${row.cmd.id}`}
          value={`quick ${row.cmd.id} ${text}`}
          onSelect={() => run(row.cmd, text)}
          data-command={row.cmd.id}
          data-quick={text}
          className={ITEM}
        >
          <Icon name={row.cmd.icon ?? 'arrowRight'} size={15} className="shrink-0 text-zinc-400" />
          <span className="min-w-0 flex-1 truncate">
            {row.title}{' '}
            <span className="rounded bg-zinc-100 px-1 font-mono text-[12px] dark:bg-zinc-800">{text}</span>
          </span>
          <span className="hidden sm:group-data-[selected=true]/item:inline-flex" data-enter-hint>
            <Kbd>↵</Kbd>
          </span>
        </Command.Item>
      ))}
    </Command.Group>
  ) : null;
  return (
    <Command.Dialog
      open={open}
      value={selectedRow}
      onValueChange={setSelectedRow}
      onOpenChange={(o) => {
        paletteState.open = o;
        if (!o) setSearch('');
      }}
      label={t('label')}
      loop
      shouldFilter={false}
      overlayClassName="fixed inset-0 z-50 bg-zinc-950/40 backdrop-blur-[2px] dark:bg-black/60"
      contentClassName="fixed left-1/2 top-[14vh] z-50 w-[640px] max-w-[calc(100vw-2rem)] -translate-x-1/2 overflow-hidden rounded-xl border border-zinc-200 bg-white shadow-2xl dark:border-zinc-800 dark:bg-zinc-900"
      data-testid="palette"
    >
      <div className="flex items-center gap-2 border-b border-zinc-100 px-3.5 dark:border-zinc-800">
        <Icon name="search" size={16} className="text-zinc-400" />
        {ask ? (
          <span
            className="shrink-0 rounded bg-zinc-100 px-1.5 py-0.5 text-[11px] text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300"
            data-testid="palette-asking"
          >
            {ask.title}
          </span>
        ) : null}
        <Command.Input
          autoFocus
          value={search}
          onValueChange={(v) => {
            setSearch(v);
            if (ask?.error) setAsk({ ...ask, error: '' });
          }}
          onKeyDown={(e) => {
            if (ask && e.key === 'Backspace' && search === '') {
              e.preventDefault();
              back();
            } else if (ask && e.key === 'Tab' && !e.shiftKey && ask.cmd.args![ask.step].complete) {
              // Shell-style completion: the chosen row's value into the field, to type on from it.
              e.preventDefault();
              const chosen = document.querySelector<HTMLElement>(
                '[cmdk-item][data-selected="true"][data-option]',
              )?.dataset.option;
              if (chosen) setSearch(chosen);
            } else if (ask && e.key === 'Enter' && !e.nativeEvent.isComposing) {
              // The answers may still be loading (or cmdk not yet have chosen the first): the Enter
              // waits for a chosen row, a frame at a time, for at most a second.
              const selected = document.querySelector('[cmdk-root] [cmdk-item][aria-selected="true"]');
              if (selected) enterWaits.current = 0;
              else if (enterWaits.current < 60) {
                e.preventDefault();
                enterWaits.current += 1;
                setEnterDue(true);
              }
            } else if (!ask && e.key === 'Enter' && !e.nativeEvent.isComposing && search.trim()) {
              // cmdk moves its selection to the new first row an effect after the list re-ranks; an
              // Enter typed in between found no selected row and was lost, and the next keys joined
              // the query. The first row is what Enter runs, so it runs it.
              const selected = document.querySelector('[cmdk-root] [cmdk-item][aria-selected="true"]');
              if (!selected && (quick[0] || groups[0]?.[1][0])) {
                e.preventDefault();
                runTop();
              }
            }
          }}
          placeholder={
            ask
              ? t(ask.cmd.args![ask.step].promptKey, ask.cmd.args![ask.step].promptParams)
              : t('placeholder')
          }
          className="h-12 flex-1 bg-transparent text-sm text-zinc-900 outline-none placeholder:text-zinc-400 dark:text-zinc-100"
        />
        <Kbd className="pointer-coarse:hidden!">Esc</Kbd>
      </div>
      <Command.List className="max-h-[min(420px,60vh)] overflow-y-auto overscroll-contain p-1.5">
        {ask ? (
          <AskList
            key={`${ask.cmd.id}:${ask.step}`}
            ask={ask}
            search={search}
            onAnswer={answer}
            onSelect={setSelectedRow}
          />
        ) : null}
        {ask ? null : (
          <Command.Empty className="px-3 py-8 text-center text-[13px] text-zinc-500">
            {t('empty')}
          </Command.Empty>
        )}
        {quickFirst ? quickRows : null}
        {(ask ? [] : groups).map(([section, list]) => (
          <Command.Group
            key={section || 'ranked'}
            heading={section ? t(section) : undefined}
            className="[&_[cmdk-group-heading]]:px-2.5 [&_[cmdk-group-heading]]:pt-2 [&_[cmdk-group-heading]]:pb-1 [&_[cmdk-group-heading]]:text-[11px] [&_[cmdk-group-heading]]:font-medium [&_[cmdk-group-heading]]:tracking-wide [&_[cmdk-group-heading]]:text-zinc-400 [&_[cmdk-group-heading]]:uppercase"
          >
            {list.map(({ cmd: c, title }) => (
              <Command.Item
                key={c.id}
                value={`${c.id} ${title}`}
                onSelect={() => run(c)}
                data-command={c.id}
                className="group/item flex h-9 cursor-default items-center gap-2.5 rounded-md px-2.5 text-[13px] text-zinc-700 select-none data-[selected=true]:bg-zinc-100 data-[selected=true]:text-zinc-900 dark:text-zinc-300 dark:data-[selected=true]:bg-zinc-800 dark:data-[selected=true]:text-zinc-50"
              >
                <Icon name={c.icon ?? 'arrowRight'} size={15} className="shrink-0 text-zinc-400" />
                <span className="min-w-0 flex-1 truncate">{title}</span>
                {section ? null : (
                  <span className="hidden shrink-0 text-[11px] text-zinc-400 sm:inline" data-section>
                    {t(c.section)}
                  </span>
                )}
                {commandShortcut(c, keymap.bindings)?.length ? (
                  // Below 640 px (a phone, no keyboard) the title gets the room instead.
                  <ShortcutKeys
                    keys={commandShortcut(c, keymap.bindings) ?? []}
                    className="hidden items-center gap-1 sm:flex"
                  />
                ) : null}
                {/* The row Enter runs says so. */}
                <span className="hidden sm:group-data-[selected=true]/item:inline-flex" data-enter-hint>
                  <Kbd>↵</Kbd>
                </span>
              </Command.Item>
            ))}
          </Command.Group>
        ))}
        {quickFirst ? null : quickRows}
      </Command.List>
      {/* Key hints mean nothing on a touch screen: hidden there. */}
      <div
        className="flex items-center justify-between border-t border-zinc-100 px-3 py-2 text-[11px] text-zinc-400 pointer-coarse:hidden! dark:border-zinc-800"
        data-key-hints
      >
        <span className="flex items-center gap-1.5">
          <Kbd>↑</Kbd>
          <Kbd>↓</Kbd>
          {t('hint.move')}
          <Kbd className="ml-2">↵</Kbd>
          {t('hint.run')}
        </span>
        <span className="flex items-center gap-1">
          <Kbd>{isMac() ? '⌘' : 'Ctrl'}</Kbd>
          <Kbd>K</Kbd>
        </span>
      </div>
    </Command.Dialog>
  );
}

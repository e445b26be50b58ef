// A chord as key caps: one cap per key, a quiet mark between the strokes of a sequence (Ctrl B › C).
import { Kbd } from '#web/components/ui.tsx';
import { SEQUENCE_MARK } from '#web/state/keymap.ts';

export function ShortcutKeys({ keys, className }: { keys: readonly string[]; className?: string }) {
  return (
    <span className={className ?? 'inline-flex items-center gap-1'} data-keys={keys.join(' ')}>
      {keys.map((k, i) =>
        k === SEQUENCE_MARK ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: a chord's keys may repeat (Ctrl B › Ctrl ←)
          <span key={i} aria-hidden="true" className="px-0.5 text-[11px] text-zinc-400">
            {k}
          </span>
        ) : (
          // biome-ignore lint/suspicious/noArrayIndexKey: a chord's keys may repeat (Ctrl B › Ctrl ←)
          <Kbd key={i}>{k}</Kbd>
        ),
      )}
    </span>
  );
}

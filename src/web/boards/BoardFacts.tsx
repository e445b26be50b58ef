// A board's facts as one line: its architecture as a compact badge (the ISA string in its tooltip),
// the OS and image it runs, and its kernel. Values are plain text so a user can select and copy them;
// each long value is cut with an ellipsis only where the line must stay one line (the workbench
// header), with the whole value in its tooltip.
import type { JSX } from 'react';
import { useTranslation } from 'react-i18next';
import { cx } from '#web/components/ui.tsx';
import { archBadgeText, archBadgeTitle, type BoardFacts, hasFacts } from './facts.ts';

// RISC-V boards stand out; a sandbox is grey; other architectures (an SSH board, say) are neutral.
const RISCV =
  'bg-indigo-50 text-indigo-700 ring-indigo-600/20 dark:bg-indigo-500/10 dark:text-indigo-300 dark:ring-indigo-400/25';
const SANDBOX =
  'bg-zinc-100 text-zinc-600 ring-zinc-500/25 dark:bg-zinc-500/10 dark:text-zinc-300 dark:ring-zinc-400/25';
const OTHER =
  'bg-slate-50 text-slate-700 ring-slate-500/25 dark:bg-slate-500/10 dark:text-slate-300 dark:ring-slate-400/25';

export function ArchBadge({ facts, className }: { facts: BoardFacts; className?: string }) {
  const { t } = useTranslation('devices');
  const label = archBadgeText(t, facts);
  if (!label) return null;
  return (
    <span
      data-testid="board-arch"
      data-arch={facts.arch ?? ''}
      data-sandbox={facts.sandbox ? 'true' : 'false'}
      title={archBadgeTitle(t, facts)}
      className={cx(
        'inline-flex shrink-0 items-center rounded px-1.5 py-px text-[11px] leading-4 font-medium whitespace-nowrap ring-1 ring-inset',
        facts.sandbox ? SANDBOX : facts.family === 'riscv' ? RISCV : OTHER,
        className,
      )}
    >
      {label}
    </span>
  );
}

/**
 * `oneLine`: the workbench header's single line. It shows the image (or the OS when there is none) and
 * the kernel; the image is cut first, with the image and OS whole in its tooltip. Otherwise the line
 * wraps, shows OS, image and kernel, and cuts nothing.
 */
export function BoardFactsLine({
  facts,
  oneLine,
  badge = true,
  className,
}: {
  facts: BoardFacts;
  oneLine?: boolean;
  /** false: the architecture badge is shown elsewhere (beside the board's name). */
  badge?: boolean;
  className?: string;
}) {
  const { t } = useTranslation('devices');
  const os = oneLine && facts.image ? null : facts.os;
  if (!(os || facts.image || facts.kernel || (badge && hasFacts(facts)))) return null;
  const value = cx('min-w-0', oneLine ? 'truncate' : '[overflow-wrap:anywhere]');
  const label = 'shrink-0 text-zinc-400 dark:text-zinc-500';
  const parts: { key: string; node: JSX.Element }[] = [];
  if (os)
    parts.push({
      key: 'os',
      node: (
        <span data-testid="board-os" title={t('attr.os')} className={value}>
          {os}
        </span>
      ),
    });
  if (facts.image)
    parts.push({
      key: 'image',
      node: (
        <>
          {oneLine ? null : <span className={label}>{t('attr.image')}</span>}
          <span
            data-testid="board-image"
            title={oneLine ? [facts.image, facts.os].filter(Boolean).join('\n') : facts.image}
            className={cx(value, 'font-mono')}
          >
            {facts.image}
          </span>
        </>
      ),
    });
  if (facts.kernel)
    parts.push({
      key: 'kernel',
      node: (
        <>
          <span className={label}>{t('attr.kernel')}</span>
          <span data-testid="board-kernel" title={facts.kernel} className={cx(value, 'font-mono')}>
            {facts.kernel}
          </span>
        </>
      ),
    });
  return (
    // biome-ignore lint/a11y/useSemanticElements: a group of facts, not a form's fieldset.
    <div
      role="group"
      aria-label={t('facts.label')}
      data-testid="board-facts"
      // A double click selects a word to copy; it must not also open the board (the row's double click).
      onDoubleClick={(e) => e.stopPropagation()}
      className={cx(
        'flex min-w-0 items-center text-xs text-zinc-600 dark:text-zinc-300',
        oneLine ? 'flex-nowrap gap-x-1.5 overflow-hidden' : 'flex-wrap gap-x-3 gap-y-1',
        className,
      )}
    >
      {badge ? <ArchBadge facts={facts} /> : null}
      {parts.map((p, i) => (
        <span
          key={p.key}
          className={cx(
            'flex items-baseline gap-1',
            // On one line the kernel keeps its room longest: the image or OS gives way first.
            oneLine && (p.key === 'kernel' ? 'min-w-0' : 'min-w-0 shrink-[6]'),
          )}
        >
          {/* A wrapped line would start with a dot: only the one-line form separates with dots. */}
          {oneLine && i > 0 ? (
            <span aria-hidden="true" className="mr-0.5 text-zinc-300 dark:text-zinc-600">
              ·
            </span>
          ) : null}
          {p.node}
        </span>
      ))}
    </div>
  );
}

// The avatar crop (spec sections 3, 4, 5): choose an image (image only, at most 10240 KB, at least
// the target size), crop it square with react-easy-crop (zoom between the image's smallest and
// largest useful size, position kept over the mask, zoom buttons repeating every 60 ms, preview
// redrawn 300 ms after the last change, white fill), upload it as png or jpg under field `avatar`.
import { useCallback, useEffect, useRef, useState } from 'react';
import Cropper, { type Area, type MediaSize } from 'react-easy-crop';
import { useTranslation } from 'react-i18next';
import { AVATAR_FRAME_PX, AVATAR_MAX_KB } from '#shared/constants.ts';
import { ApiError, call } from '#web/api/http.ts';
import { Icon } from '#web/components/icons.tsx';
import { Alert, Button, cx, IconButton, Spinner } from '#web/components/ui.tsx';
import { setAvatar } from '#web/state/session.ts';
import {
  type AvatarFormat,
  AvatarLoading,
  checkAvatarFile,
  checkAvatarSize,
  maxZoomFor,
  mimeOf,
  PREVIEW_DELAY_MS,
  rangeFromZoom,
  ZOOM_REPEAT_MS,
  zoomFromRange,
} from './avatar.ts';
import { userCall } from './flow.ts';

function loadImage(src: string): Promise<HTMLImageElement> {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => resolve(img);
    img.onerror = () => reject(new Error('image failed to load'));
    img.src = src;
  });
}

/** Draws the crop onto a target-sized canvas with a white background (transparent PNGs as JPG). */
export function renderCrop(
  img: HTMLImageElement,
  area: Area,
  rotation: number,
  target = AVATAR_FRAME_PX,
): HTMLCanvasElement {
  const rad = (rotation * Math.PI) / 180;
  const w = img.naturalWidth;
  const h = img.naturalHeight;
  const bw = Math.abs(Math.cos(rad)) * w + Math.abs(Math.sin(rad)) * h;
  const bh = Math.abs(Math.sin(rad)) * w + Math.abs(Math.cos(rad)) * h;
  const rotated = document.createElement('canvas');
  rotated.width = Math.round(bw);
  rotated.height = Math.round(bh);
  const rc = rotated.getContext('2d');
  if (!rc) throw new Error('no 2d canvas');
  rc.translate(bw / 2, bh / 2);
  rc.rotate(rad);
  rc.drawImage(img, -w / 2, -h / 2);
  const out = document.createElement('canvas');
  out.width = target;
  out.height = target;
  const oc = out.getContext('2d');
  if (!oc) throw new Error('no 2d canvas');
  oc.fillStyle = '#ffffff';
  oc.fillRect(0, 0, target, target);
  oc.imageSmoothingQuality = 'high';
  oc.drawImage(rotated, area.x, area.y, area.width, area.height, 0, 0, target, target);
  return out;
}

function toBlob(canvas: HTMLCanvasElement, format: AvatarFormat): Promise<Blob> {
  return new Promise((resolve, reject) =>
    canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('encoding failed'))), mimeOf(format), 0.92),
  );
}

export function AvatarCrop({ onClose }: { onClose: () => void }) {
  const { t } = useTranslation('auth');
  const [source, setSource] = useState<{ url: string; format: AvatarFormat } | null>(null);
  const [problem, setProblem] = useState('');
  const [crop, setCrop] = useState({ x: 0, y: 0 });
  const [zoom, setZoom] = useState(1);
  const [maxZoom, setMaxZoom] = useState(3);
  const [rotation, setRotation] = useState(0);
  const [area, setArea] = useState<Area | null>(null);
  const [format, setFormat] = useState<AvatarFormat>('png');
  const [loading, setLoading] = useState<AvatarLoading>(AvatarLoading.idle);
  const [failure, setFailure] = useState('');
  const [progress, setProgress] = useState(0);
  const [cropperKey, setCropperKey] = useState(0);
  const preview = useRef<HTMLCanvasElement>(null);
  const image = useRef<HTMLImageElement | null>(null);
  const repeat = useRef<number | null>(null);
  const input = useRef<HTMLInputElement>(null);

  useEffect(
    () => () => {
      if (source) URL.revokeObjectURL(source.url);
    },
    [source],
  );
  // biome-ignore lint/correctness/useExhaustiveDependencies: stop a held zoom button on unmount only.
  useEffect(() => () => stopRepeat(), []);

  const choose = async (file: File | undefined) => {
    if (!file) return;
    setProblem('');
    const bad = checkAvatarFile(file);
    if (bad) {
      setProblem(t(`avatar.problems.${bad}`, { kb: AVATAR_MAX_KB, px: AVATAR_FRAME_PX }));
      return;
    }
    const url = URL.createObjectURL(file);
    try {
      const img = await loadImage(url);
      const small = checkAvatarSize(img.naturalWidth, img.naturalHeight);
      if (small) {
        URL.revokeObjectURL(url);
        setProblem(t(`avatar.problems.${small}`, { kb: AVATAR_MAX_KB, px: AVATAR_FRAME_PX }));
        return;
      }
      image.current = img;
      setZoom(1);
      setRotation(0);
      setCrop({ x: 0, y: 0 });
      setLoading(AvatarLoading.idle);
      const fmt: AvatarFormat = file.type === 'image/jpeg' ? 'jpg' : 'png';
      setFormat(fmt);
      setSource({ url, format: fmt });
    } catch {
      URL.revokeObjectURL(url);
      setProblem(t('avatar.problems.notImage'));
    }
  };

  const onMediaLoaded = useCallback(
    (m: MediaSize) => setMaxZoom(maxZoomFor(m.naturalWidth, m.naturalHeight)),
    [],
  );

  // The preview follows 300 ms after the last change, not on every wheel tick.
  useEffect(() => {
    if (!area || !image.current) return;
    const id = window.setTimeout(() => {
      const canvas = preview.current;
      const img = image.current;
      if (!canvas || !img) return;
      const rendered = renderCrop(img, area, rotation);
      const ctx = canvas.getContext('2d');
      ctx?.clearRect(0, 0, canvas.width, canvas.height);
      ctx?.drawImage(rendered, 0, 0, canvas.width, canvas.height);
    }, PREVIEW_DELAY_MS);
    return () => window.clearTimeout(id);
  }, [area, rotation]);

  const step = (dir: 1 | -1) =>
    setZoom((z) => Math.min(maxZoom, Math.max(1, z + dir * ((maxZoom - 1) / 50 || 0.02))));
  const startRepeat = (dir: 1 | -1) => {
    stopRepeat();
    step(dir);
    repeat.current = window.setInterval(() => step(dir), ZOOM_REPEAT_MS);
  };
  function stopRepeat() {
    if (repeat.current !== null) window.clearInterval(repeat.current);
    repeat.current = null;
  }

  const upload = async () => {
    const img = image.current;
    if (!img || !area) return;
    setLoading(AvatarLoading.uploading);
    setFailure('');
    setProgress(0);
    try {
      const blob = await toBlob(renderCrop(img, area, rotation), format);
      const form = new FormData();
      form.append('avatar', blob, `avatar.${format}`);
      const data = await call(userCall('userAvatarUpload'), form, {
        silent: true,
        onUploadProgress: (e) => setProgress(e.total ? Math.round((e.loaded / e.total) * 100) : 0),
      });
      setAvatar(data.files.avatar);
      setLoading(AvatarLoading.success);
      window.dispatchEvent(new CustomEvent('crop-upload-success', { detail: data }));
      window.setTimeout(() => {
        setCropperKey((k) => k + 1);
        onClose();
      }, 700);
    } catch (err) {
      setLoading(AvatarLoading.failed);
      setFailure(err instanceof ApiError ? err.message : '');
      window.dispatchEvent(new CustomEvent('crop-upload-fail', { detail: err }));
    }
  };

  if (!source) {
    return (
      <div className="space-y-3" data-testid="avatar-crop" data-loading={loading}>
        <label
          htmlFor="avatar-file"
          onDragOver={(e) => e.preventDefault()}
          onDrop={(e) => {
            e.preventDefault();
            void choose(e.dataTransfer.files[0]);
          }}
          className="flex cursor-pointer flex-col items-center justify-center gap-2 rounded-lg border border-dashed border-zinc-300 px-6 py-10 text-center transition-colors hover:border-zinc-400 hover:bg-zinc-50 dark:border-zinc-700 dark:hover:border-zinc-500 dark:hover:bg-zinc-800/40"
        >
          <span className="flex h-10 w-10 items-center justify-center rounded-full bg-zinc-100 text-zinc-500 dark:bg-zinc-800 dark:text-zinc-400">
            <Icon name="upload" size={18} />
          </span>
          <span className="text-[13px] font-medium text-zinc-800 dark:text-zinc-200">
            {t('avatar.choose')}
          </span>
          <span className="text-xs text-zinc-500">
            {t('avatar.rules', { kb: AVATAR_MAX_KB, px: AVATAR_FRAME_PX })}
          </span>
        </label>
        <input
          ref={input}
          id="avatar-file"
          data-testid="avatar-file"
          type="file"
          accept="image/*"
          className="sr-only"
          onChange={(e) => {
            void choose(e.target.files?.[0]);
            e.target.value = '';
          }}
        />
        {problem ? <Alert tone="danger">{problem}</Alert> : null}
      </div>
    );
  }

  const busy = loading === AvatarLoading.uploading;
  return (
    <div className="space-y-4" data-testid="avatar-crop" data-loading={loading}>
      <div className="flex flex-col gap-4 sm:flex-row">
        <div className="relative h-64 w-full shrink-0 overflow-hidden rounded-lg bg-zinc-900 sm:w-auto sm:flex-1">
          <Cropper
            key={cropperKey}
            image={source.url}
            crop={crop}
            zoom={zoom}
            rotation={rotation}
            aspect={1}
            minZoom={1}
            maxZoom={maxZoom}
            cropShape="rect"
            showGrid
            restrictPosition
            onCropChange={setCrop}
            onZoomChange={setZoom}
            onCropComplete={(_, px) => setArea(px)}
            onMediaLoaded={onMediaLoaded}
          />
        </div>
        <div className="flex shrink-0 flex-row items-center gap-4 sm:w-36 sm:flex-col sm:items-start">
          <div className="text-xs font-medium text-zinc-500">{t('avatar.preview')}</div>
          <div className="flex items-end gap-3">
            <canvas
              ref={preview}
              width={AVATAR_FRAME_PX}
              height={AVATAR_FRAME_PX}
              data-testid="avatar-preview"
              className="h-20 w-20 rounded-full bg-white ring-1 ring-zinc-200 dark:ring-zinc-700"
            />
          </div>
          <fieldset className="space-y-1">
            <legend className="text-xs font-medium text-zinc-500">{t('avatar.format')}</legend>
            <div className="flex gap-1">
              {(['png', 'jpg'] as const).map((f) => (
                <button
                  key={f}
                  type="button"
                  aria-pressed={format === f}
                  onClick={() => setFormat(f)}
                  className={cx(
                    'h-7 rounded-md px-2.5 font-mono text-xs uppercase focus-ring',
                    format === f
                      ? 'bg-zinc-900 text-white dark:bg-zinc-100 dark:text-zinc-900'
                      : 'border border-zinc-200 text-zinc-600 dark:border-zinc-700 dark:text-zinc-300',
                  )}
                >
                  {f}
                </button>
              ))}
            </div>
          </fieldset>
        </div>
      </div>
      <div className="flex items-center gap-2">
        <IconButton
          icon="zoomOut"
          label={t('avatar.zoomOut')}
          onPointerDown={() => startRepeat(-1)}
          onPointerUp={stopRepeat}
          onPointerLeave={stopRepeat}
          onKeyDown={(e) => (e.key === 'Enter' || e.key === ' ') && step(-1)}
        />
        <input
          type="range"
          min={0}
          max={100}
          value={rangeFromZoom(zoom, maxZoom)}
          onChange={(e) => setZoom(zoomFromRange(Number(e.target.value), maxZoom))}
          aria-label={t('avatar.zoom')}
          className="h-1 flex-1 cursor-pointer accent-zinc-900 dark:accent-zinc-100"
        />
        <IconButton
          icon="zoomIn"
          label={t('avatar.zoomIn')}
          onPointerDown={() => startRepeat(1)}
          onPointerUp={stopRepeat}
          onPointerLeave={stopRepeat}
          onKeyDown={(e) => (e.key === 'Enter' || e.key === ' ') && step(1)}
        />
        <IconButton
          icon="rotate"
          label={t('avatar.rotate')}
          onClick={() => setRotation((r) => (r + 90) % 360)}
        />
      </div>
      {loading === AvatarLoading.failed ? (
        <Alert tone="danger">
          {t('avatar.failed')}
          {failure ? <span className="block text-xs opacity-80">{failure}</span> : null}
        </Alert>
      ) : null}
      {loading === AvatarLoading.success ? <Alert tone="success">{t('avatar.success')}</Alert> : null}
      <div className="flex flex-wrap items-center justify-between gap-2">
        <Button variant="ghost" icon="image" onClick={() => setSource(null)} disabled={busy}>
          {t('avatar.another')}
        </Button>
        <div className="ml-auto flex gap-2">
          <Button onClick={onClose} disabled={busy}>
            {t('actions.cancel')}
          </Button>
          <Button
            variant="primary"
            onClick={upload}
            disabled={!area || busy || loading === AvatarLoading.success}
            data-testid="avatar-upload"
          >
            {busy ? <Spinner size={13} /> : <Icon name="upload" size={14} />}
            {busy ? t('avatar.uploading', { progress }) : t('avatar.upload')}
          </Button>
        </div>
      </div>
    </div>
  );
}

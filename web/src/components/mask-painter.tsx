/**
 * Painting an inpainting mask on the picture itself: strokes drawn over the image become a mask
 * of the image's own size, white where painted on black, sent as the `mask` file of /inpaint. The
 * mask file input stays beside it for people who have one already, or who work by keyboard.
 */
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { useI18n } from '../i18n';

/** The brush, as a share of the picture's longer side: wide enough to cover an object in a few strokes. */
const BRUSH_SHARE = 0.06;

export function MaskPainter(props: { image: File; onMask: (mask: File | null) => void }): JSX.Element {
  const { t } = useI18n();
  const view = useRef<HTMLCanvasElement>(null);
  const mask = useRef<HTMLCanvasElement | null>(null);
  const picture = useRef<HTMLImageElement | null>(null);
  const drawing = useRef(false);
  const [painted, setPainted] = useState(false);

  useEffect(() => {
    const url = URL.createObjectURL(props.image);
    const img = new Image();
    img.onload = () => {
      picture.current = img;
      const canvas = view.current;
      if (!canvas) return;
      canvas.width = img.naturalWidth;
      canvas.height = img.naturalHeight;
      const maskCanvas = document.createElement('canvas');
      maskCanvas.width = img.naturalWidth;
      maskCanvas.height = img.naturalHeight;
      const m = maskCanvas.getContext('2d');
      if (m) {
        m.fillStyle = '#000';
        m.fillRect(0, 0, maskCanvas.width, maskCanvas.height);
      }
      mask.current = maskCanvas;
      canvas.getContext('2d')?.drawImage(img, 0, 0);
      setPainted(false);
    };
    img.src = url;
    return () => URL.revokeObjectURL(url);
  }, [props.image]);

  /** The pointer's place in the picture's own pixels (the canvas is shown scaled). */
  const at = (event: PointerEvent): { x: number; y: number } => {
    const canvas = view.current as HTMLCanvasElement;
    const box = canvas.getBoundingClientRect();
    return { x: ((event.clientX - box.left) / box.width) * canvas.width, y: ((event.clientY - box.top) / box.height) * canvas.height };
  };

  const dab = (event: PointerEvent): void => {
    const canvas = view.current;
    const maskCanvas = mask.current;
    if (!canvas || !maskCanvas) return;
    const { x, y } = at(event);
    const radius = Math.max(2, Math.max(canvas.width, canvas.height) * BRUSH_SHARE);
    const shown = canvas.getContext('2d');
    const m = maskCanvas.getContext('2d');
    if (!shown || !m) return;
    shown.fillStyle = 'rgba(255, 64, 64, 0.55)';
    shown.beginPath();
    shown.arc(x, y, radius, 0, Math.PI * 2);
    shown.fill();
    m.fillStyle = '#fff';
    m.beginPath();
    m.arc(x, y, radius, 0, Math.PI * 2);
    m.fill();
  };

  const finish = (): void => {
    if (!drawing.current) return;
    drawing.current = false;
    setPainted(true);
    mask.current?.toBlob((blob) => props.onMask(blob ? new File([blob], 'mask.png', { type: 'image/png' }) : null), 'image/png');
  };

  const clear = (): void => {
    const img = picture.current;
    const canvas = view.current;
    const maskCanvas = mask.current;
    if (!img || !canvas || !maskCanvas) return;
    canvas.getContext('2d')?.drawImage(img, 0, 0);
    const m = maskCanvas.getContext('2d');
    if (m) {
      m.fillStyle = '#000';
      m.fillRect(0, 0, maskCanvas.width, maskCanvas.height);
    }
    setPainted(false);
    props.onMask(null);
  };

  return (
    <figure class="mask-painter">
      <canvas
        ref={view}
        data-testid="mask-canvas"
        aria-label={t('upload.paintMask')}
        onPointerDown={(e) => {
          drawing.current = true;
          e.currentTarget.setPointerCapture(e.pointerId);
          dab(e);
        }}
        onPointerMove={(e) => {
          if (drawing.current) dab(e);
        }}
        onPointerUp={finish}
        onPointerCancel={finish}
      />
      <figcaption>
        {t('upload.paintMask')}{' '}
        <button type="button" disabled={!painted} onClick={clear}>
          {t('upload.clearMask')}
        </button>
      </figcaption>
    </figure>
  );
}

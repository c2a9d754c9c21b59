/** A generation's result shown inline: image, video, audio or text. */
import type { JSX } from 'preact';
import type { Category } from '../types';

export function ResultView(props: {
  category: Category;
  url: string | null;
  thumbnailUrl?: string | null;
  text: string | null;
  alt: string;
  compact?: boolean;
}): JSX.Element | null {
  const { category, url, text, alt } = props;
  if (url) {
    if (category === 'video') {
      return <video class="media" src={url} poster={props.thumbnailUrl ?? undefined} controls preload="metadata" aria-label={alt} />;
    }
    if (category === 'tts' || category === 'music') return <audio class="media" src={url} controls preload="metadata" aria-label={alt} />;
    return <img class="media" src={props.compact && props.thumbnailUrl ? props.thumbnailUrl : url} alt={alt} loading="lazy" />;
  }
  if (text) return <p class={props.compact ? 'snippet' : 'result-text'}>{text}</p>;
  return null;
}

/**
 * File inputs of the models that take uploads (README "API": the multipart /stt, /tools and
 * /inpaint), and the multipart request they make. A file chosen here replaces the model's URL
 * parameter of the same input.
 */
import type { JSX } from 'preact';
import type { MessageKey } from '../i18n';
import { useI18n } from '../i18n';
import type { Model } from '../types';

export interface UploadField {
  /** The multipart field name the route reads. */
  name: string;
  label: MessageKey;
  accept: string;
  /** The JSON parameter the upload stands for (hidden while a file is chosen). */
  replaces: string;
}

export interface UploadPlan {
  path: '/stt' | '/tools' | '/inpaint';
  fields: UploadField[];
  /** Form fields besides the files: the params the route reads. */
  params: string[];
}

export function uploadPlan(model: Model): UploadPlan | null {
  if (model.category === 'stt') {
    return { path: '/stt', fields: [{ name: 'audio', label: 'upload.audio', accept: 'audio/*', replaces: 'audio_url' }], params: ['language', 'diarize'] };
  }
  if (model.category !== 'tool') return null;
  if ('mask_url' in model.params) {
    return {
      path: '/inpaint',
      fields: [
        { name: 'image', label: 'upload.image', accept: 'image/*', replaces: 'image_url' },
        { name: 'mask', label: 'upload.mask', accept: 'image/*', replaces: 'mask_url' },
      ],
      params: [],
    };
  }
  const fields: UploadField[] = [{ name: 'source_image', label: 'upload.image', accept: 'image/*', replaces: 'image_url' }];
  if ('target_image_url' in model.params) fields.push({ name: 'target_image', label: 'upload.target', accept: 'image/*', replaces: 'target_image_url' });
  return { path: '/tools', fields, params: ['scale', 'style'] };
}

/** The multipart body: the model, the prompt, the files and the params the route takes. */
export function uploadForm(model: Model, plan: UploadPlan, files: Record<string, File>, prompt: string, params: Record<string, unknown>): FormData {
  const form = new FormData();
  if (plan.path !== '/inpaint') form.set('model', model.slug);
  if (prompt.trim()) form.set('prompt', prompt);
  for (const name of plan.params) if (params[name] !== undefined) form.set(name, String(params[name]));
  for (const field of plan.fields) {
    const file = files[field.name];
    if (file) form.set(field.name, file);
  }
  return form;
}

export function UploadInputs(props: { plan: UploadPlan; files: Record<string, File>; onChange: (files: Record<string, File>) => void }): JSX.Element {
  const { t } = useI18n();
  return (
    <div class="params">
      {props.plan.fields.map((field) => (
        <label key={field.name}>
          {t(field.label)}
          <input
            type="file"
            name={field.name}
            accept={field.accept}
            onChange={(e) => {
              const file = e.currentTarget.files?.[0];
              const next = { ...props.files };
              if (file) next[field.name] = file;
              else delete next[field.name];
              props.onChange(next);
            }}
          />
        </label>
      ))}
    </div>
  );
}

/**
 * The inputs of a model's own parameter schema (GET /models: `params`): a select for enums and
 * fixed values, a number field with the range for numbers, a checkbox for booleans, a text or URL
 * field for the rest. Values are kept as the form holds them; `paramValues` turns them into the
 * request's JSON.
 */
import type { JSX } from 'preact';
import { humanize } from '../format';
import { useI18n } from '../i18n';
import type { ParamSpec } from '../types';

export type RawParams = Record<string, string | boolean>;

/** The request's params: empty fields left out (the model's defaults apply), numbers as numbers. */
export function paramValues(specs: Record<string, ParamSpec>, raw: RawParams): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const value = raw[name];
    if (value === undefined || value === '') continue;
    if (spec.type === 'boolean') values[name] = value === true;
    else if (spec.type === 'integer' || spec.type === 'number') values[name] = Number(value);
    else values[name] = String(value);
  }
  return values;
}

/** The form's starting values: each spec's default. */
export function defaultParams(specs: Record<string, ParamSpec>): RawParams {
  const raw: RawParams = {};
  for (const [name, spec] of Object.entries(specs)) {
    if (spec.type === 'boolean') raw[name] = spec.default ?? false;
    else if (spec.type !== 'url' && spec.default !== undefined) raw[name] = String(spec.default);
    else raw[name] = '';
  }
  return raw;
}

export function ParamForm(props: { specs: Record<string, ParamSpec>; values: RawParams; onChange: (values: RawParams) => void; hidden?: string[] }): JSX.Element {
  const { t } = useI18n();
  const set = (name: string, value: string | boolean): void => props.onChange({ ...props.values, [name]: value });
  const fields = Object.entries(props.specs).filter(([name]) => !props.hidden?.includes(name));
  return (
    <div class="params">
      {fields.map(([name, spec]) => {
        const id = `param-${name}`;
        const hint = spec.description ? <span class="hint">{spec.description}</span> : null;
        if (spec.type === 'boolean') {
          return (
            <label key={name} class="check">
              <input id={id} type="checkbox" checked={props.values[name] === true} onChange={(e) => set(name, e.currentTarget.checked)} />
              {humanize(name)}
              {hint}
            </label>
          );
        }
        const choices = spec.type === 'enum' ? spec.values : spec.type === 'integer' && spec.values ? spec.values.map(String) : null;
        const value = String(props.values[name] ?? '');
        let input: JSX.Element;
        if (choices) {
          const hasDefault = 'default' in spec && spec.default !== undefined;
          input = (
            <select id={id} value={value} onChange={(e) => set(name, e.currentTarget.value)}>
              {hasDefault ? null : <option value="">{t('play.default')}</option>}
              {choices.map((choice) => (
                <option key={choice} value={choice}>
                  {choice}
                </option>
              ))}
            </select>
          );
        } else if (spec.type === 'integer' || spec.type === 'number') {
          input = (
            <input
              id={id}
              type="number"
              inputMode={spec.type === 'integer' ? 'numeric' : 'decimal'}
              min={spec.min}
              max={spec.max}
              step={spec.type === 'integer' ? 1 : 'any'}
              value={value}
              placeholder={t('play.default')}
              onInput={(e) => set(name, e.currentTarget.value)}
            />
          );
        } else if (spec.type === 'string' && (spec.max_length ?? 0) > 300) {
          input = <textarea id={id} rows={2} maxLength={spec.max_length} value={value} onInput={(e) => set(name, e.currentTarget.value)} />;
        } else {
          input = (
            <input
              id={id}
              type={spec.type === 'url' ? 'url' : 'text'}
              maxLength={spec.type === 'string' ? spec.max_length : undefined}
              value={value}
              onInput={(e) => set(name, e.currentTarget.value)}
            />
          );
        }
        return (
          <label key={name} for={id}>
            {humanize(name)}
            {input}
            {hint}
          </label>
        );
      })}
    </div>
  );
}

/**
 * A triggered flow's experiment on its form: variants with weights, a holdout that sends nothing, and a
 * variant's own message (template text, sent as its `message`).
 */
import type { ReactNode } from 'react';
import type { FlowDefinition, Variant } from '../generated/flow';
import { type MessageDraft, messageOf } from './message-fields';
import { templateTextOf } from './message-template';

/** A variant as the form edits it: its own message as template text (sent as its `message`). */
export type VariantDraft = Omit<Variant, 'message'> & { template?: string };

export function variantDraftsOf(initial: FlowDefinition | undefined): VariantDraft[] {
  return (initial?.experiment?.variants ?? []).map(({ message, ...variant }) => (message ? { ...variant, template: templateTextOf(message) } : variant));
}

/** The variants to save: a variant's own template becomes a message like the flow's, with that template. */
export function variantsOf(variants: VariantDraft[], draft: MessageDraft): Variant[] {
  return variants.map(({ template: own, ...variant }) => (own === undefined ? variant : { ...variant, message: messageOf(draft, own) }));
}

export function ExperimentFields({ variants, onChange, template }: { variants: VariantDraft[]; onChange: (variants: VariantDraft[]) => void; template: string }): ReactNode {
  const setVariant = (i: number, change: Partial<VariantDraft>) => onChange(variants.map((v, j) => (j === i ? { ...v, ...change } : v)));
  return (
    <fieldset>
      <legend>Experiment</legend>
      {variants.length === 0 ? <p className="muted">No experiment: every contact gets the message.</p> : null}
      {variants.map((variant, i) => (
        <div className="row" key={i}>
          <label className="inline">
            Variant label <input value={variant.label} onChange={(e) => setVariant(i, { label: e.target.value })} required />
          </label>
          <label className="inline">
            Weight <input type="number" min="0.01" step="any" value={variant.weight} onChange={(e) => setVariant(i, { weight: Number(e.target.value) })} />
          </label>
          <label className="inline">
            <input type="checkbox" checked={variant.holdout ?? false} onChange={(e) => setVariant(i, { holdout: e.target.checked })} /> Holdout (sends nothing)
          </label>
          <label className="inline">
            <input type="checkbox" checked={variant.template !== undefined} disabled={variant.holdout} onChange={(e) => setVariant(i, { template: e.target.checked ? template : undefined })} /> Own message
          </label>
          <button type="button" className="small" onClick={() => onChange(variants.filter((_, j) => j !== i))} aria-label={`Remove variant ${variant.label}`}>
            Remove
          </button>
          {variant.template !== undefined && !variant.holdout ? (
            <label className="wide">
              Message of variant {variant.label}
              <textarea value={variant.template} onChange={(e) => setVariant(i, { template: e.target.value })} rows={5} spellCheck={false} />
            </label>
          ) : null}
        </div>
      ))}
      <button type="button" className="small" onClick={() => onChange([...variants, { label: variants.length === 0 ? 'A' : String.fromCharCode(65 + variants.length), weight: 50 }])}>
        Add variant
      </button>
    </fieldset>
  );
}

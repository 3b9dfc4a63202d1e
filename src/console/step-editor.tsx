/**
 * The step editor: a flow's steps built with forms — a wait, a wait until an event (or a timeout), a message
 * with its branches, each moved, removed or added — and the event on which any entry exits. "Edit as JSON"
 * is the advanced view of the same steps; going back to the forms reads the JSON, or says why it cannot.
 */
import { type ReactNode, useState } from 'react';
import { api, seg } from './api';
import { BranchFields } from './flow-branches';
import { MessageFields } from './message-fields';
import { type Duration, newStep, parseStepsJson, type StepDraft, type StepsDraft, stepsOf, UNITS } from './step-drafts';
import { useRequest } from './ui';

const KIND_NAMES: Record<StepDraft['kind'], string> = { wait: 'Wait', waitUntil: 'Wait until an event', message: 'Message' };
const STEP_NOTE = 'The first branch whose condition holds sends its own message instead of this step’s. A condition can read wait.outcome: event or timeout, how the last wait until ended.';

/** The editor's state: the forms' drafts, or the JSON being edited instead. */
export type StepsEditing = { view: 'forms'; draft: StepsDraft } | { view: 'json'; json: string; error?: string };

export function StepsEditor({ org, value, onChange }: { org: string; value: StepsEditing; onChange: (value: StepsEditing) => void }): ReactNode {
  const types = useRequest(() => api<{ types: Array<{ eventType: string }> }>('GET', `/admin/v1/orgs/${seg(org)}/events/types?env=production`), [org]);
  const events = (
    <datalist id="step-events">
      {(types.data?.types ?? []).map((t) => (
        <option key={t.eventType} value={t.eventType} />
      ))}
    </datalist>
  );
  if (value.view === 'json') {
    const toForms = () => {
      const read = parseStepsJson(value.json);
      onChange(read.ok ? { view: 'forms', draft: read.draft } : { ...value, error: read.error });
    };
    return (
      <fieldset>
        <legend>Steps</legend>
        <label>
          Steps and exit (JSON: wait, waitUntil, message; see “Steps” in docs/data-engineers.md)
          <textarea className="code" rows={16} value={value.json} onChange={(e) => onChange({ view: 'json', json: e.target.value })} spellCheck={false} />
        </label>
        {value.error ? <p className="error">{value.error}</p> : null}
        <button type="button" className="small" onClick={toForms}>
          Edit with forms
        </button>
      </fieldset>
    );
  }
  const { draft } = value;
  const set = (steps: StepDraft[]) => onChange({ view: 'forms', draft: { ...draft, steps } });
  const setStep = (i: number, step: StepDraft) => set(draft.steps.map((s, j) => (j === i ? step : s)));
  const move = (i: number, by: -1 | 1) => {
    const steps = [...draft.steps];
    [steps[i], steps[i + by]] = [steps[i + by]!, steps[i]!];
    set(steps);
  };
  return (
    <fieldset>
      <legend>Steps</legend>
      {events}
      <ol className="steps" aria-label="Steps being edited">
        {draft.steps.map((step, i) => (
          <li key={i} className="card" aria-label={`Step ${i + 1}: ${KIND_NAMES[step.kind]}`}>
            <div className="row">
              <strong>
                {i + 1}. {KIND_NAMES[step.kind]}
              </strong>
              <button type="button" className="small" disabled={i === 0} onClick={() => move(i, -1)} aria-label={`Move step ${i + 1} up`}>
                ↑
              </button>
              <button type="button" className="small" disabled={i === draft.steps.length - 1} onClick={() => move(i, 1)} aria-label={`Move step ${i + 1} down`}>
                ↓
              </button>
              <button type="button" className="small" onClick={() => set(draft.steps.filter((_, j) => j !== i))} aria-label={`Remove step ${i + 1}`}>
                Remove
              </button>
            </div>
            <StepFields step={step} onChange={(s) => setStep(i, s)} />
          </li>
        ))}
      </ol>
      {draft.steps.length === 0 ? <p className="muted">No step yet: add one below.</p> : null}
      <div className="row">
        {(['wait', 'waitUntil', 'message'] as const).map((kind) => (
          <button key={kind} type="button" className="small" onClick={() => set([...draft.steps, newStep(kind)])}>
            Add: {KIND_NAMES[kind].toLowerCase()}
          </button>
        ))}
      </div>
      <label>
        Exit: any entry ends when this event of the contact arrives (empty: none)
        <input value={draft.exit} onChange={(e) => onChange({ view: 'forms', draft: { ...draft, exit: e.target.value } })} list="step-events" placeholder="custom_order_completed" />
      </label>
      <button type="button" className="small" onClick={() => onChange({ view: 'json', json: JSON.stringify(stepsOf(draft), null, 2) })}>
        Edit as JSON
      </button>
    </fieldset>
  );
}

function StepFields({ step, onChange }: { step: StepDraft; onChange: (step: StepDraft) => void }): ReactNode {
  if (step.kind === 'wait') return <DurationFields label="Wait for" value={step.duration} onChange={(duration) => onChange({ ...step, duration })} />;
  if (step.kind === 'waitUntil') {
    return (
      <div className="row">
        <label className="inline">
          Event{' '}
          <input value={step.event} onChange={(e) => onChange({ ...step, event: e.target.value })} list="step-events" required placeholder="custom_order_completed or a trigger" />
        </label>
        <DurationFields label="at most" value={step.duration} onChange={(duration) => onChange({ ...step, duration })} />
        <label className="inline">
          If it comes{' '}
          <select value={step.then} onChange={(e) => onChange({ ...step, then: e.target.value as 'continue' | 'exit' })}>
            <option value="exit">exit the flow</option>
            <option value="continue">go on at once</option>
          </select>
        </label>
        <span className="muted">At the timeout the entry goes on.</span>
      </div>
    );
  }
  return (
    <>
      <MessageFields draft={step.message} onChange={(change) => onChange({ ...step, message: { ...step.message, ...change } })} templateData="contact, event, flow, variant, wait" />
      <BranchFields branches={step.branches} onChange={(branches) => onChange({ ...step, branches })} template={step.message.template} note={STEP_NOTE} />
    </>
  );
}

function DurationFields({ label, value, onChange }: { label: string; value: Duration; onChange: (value: Duration) => void }): ReactNode {
  return (
    <span className="row">
      <label className="inline">
        {label} <input type="number" min="1" step="1" value={Number.isFinite(value.amount) ? value.amount : ''} onChange={(e) => onChange({ ...value, amount: Number(e.target.value) })} required />
      </label>
      <select value={value.unit} onChange={(e) => onChange({ ...value, unit: Number(e.target.value) })} aria-label={`${label}: unit`}>
        {UNITS.map((u) => (
          <option key={u.seconds} value={u.seconds}>
            {u.name}
          </option>
        ))}
      </select>
    </span>
  );
}

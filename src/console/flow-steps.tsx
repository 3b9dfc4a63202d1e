/**
 * A flow's steps: built in the step editor (a new flow with steps, or editing one), and on its page what
 * each step does and the entries still in them (GET …/flows/{id}/waits), of the whole flow or of one
 * contact — where each is, what it waits for and until when.
 */
import { type FormEvent, type ReactNode, useState } from 'react';
import type { FlowDefinition, Step } from '../generated/flow';
import { api, ApiError, seg } from './api';
import { saveFlow } from './flow-save';
import { draftInForms, NOT_IN_FORMS, readStepsJson, stepsOf } from './step-drafts';
import { StepsEditor, type StepsEditing } from './step-editor';
import { asApiError, ErrorBox, Status, Time, useRequest } from './ui';

interface Waits {
  entries: Array<{ email: string; eventId: string; variant: string | null; step: number; kind: string; until: string | null; dueAt: string; enteredAt: string; lastWait: string | null }>;
  total: number;
}

/** One step as a line: "wait 1 h", "wait until custom_order_completed (at most 1 h), then exit", "email: Your cart". */
export function stepText(step: Step): string {
  if ('wait' in step) return `wait ${duration(step.wait.seconds)}`;
  if ('waitUntil' in step) return `wait until ${step.waitUntil.event} (at most ${duration(step.waitUntil.timeoutSeconds)}); if it comes: ${step.then}`;
  const { message } = step;
  const what = message.channel === 'email' ? `email “${message.template.subject}”` : message.channel === 'webhook' ? `webhook to ${message.url}` : 'an outbox message';
  const branches = step.branches?.length ?? 0;
  return `send ${what}${branches === 0 ? '' : ` (${branches} branch${branches === 1 ? '' : 'es'})`}`;
}

function duration(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} d`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

export function FlowStepsSection({ org, id, definition, round }: { org: string; id: string; definition: FlowDefinition; round: number }): ReactNode {
  const [identity, setIdentity] = useState('');
  const [asked, setAsked] = useState<string>();
  const waits = useRequest(
    () => api<Waits>('GET', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}/waits?limit=100${asked ? `&identity=${encodeURIComponent(asked)}` : ''}`),
    [org, id, asked, round],
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const value = identity.trim();
    setAsked(value === '' ? undefined : value.includes(':') ? value : `email:${value}`);
  };
  const steps = definition.steps ?? [];
  return (
    <section aria-labelledby="steps-title">
      <h3 id="steps-title">Steps</h3>
      <ol aria-label="Steps of the flow">
        {steps.map((step, i) => (
          <li key={i}>{stepText(step)}</li>
        ))}
      </ol>
      {definition.exit ? (
        <p>
          Any entry exits when <code>{definition.exit.event}</code> arrives.
        </p>
      ) : null}
      <form className="row" onSubmit={submit}>
        <label>
          Entries of a contact (e-mail, or user_id:…; empty: all)
          <input value={identity} onChange={(e) => setIdentity(e.target.value)} placeholder="ada@example.com" />
        </label>
        <button type="submit">Show entries</button>
      </form>
      <Status request={waits} what="the entries in steps" />
      {waits.data ? (
        waits.data.total === 0 ? (
          <p className="muted">{asked ? `${asked} has no entry in the steps now.` : 'No entry is in the steps now.'}</p>
        ) : (
          <table aria-label="Entries in the steps">
            <caption>
              {waits.data.total} {waits.data.total === 1 ? 'entry' : 'entries'} in the steps{waits.data.total > waits.data.entries.length ? `, the ${waits.data.entries.length} oldest shown` : ''}
            </caption>
            <thead>
              <tr>
                <th>Contact</th>
                <th>Entered</th>
                <th>Step</th>
                <th>Until</th>
              </tr>
            </thead>
            <tbody>
              {waits.data.entries.map((e) => (
                <tr key={`${e.email}-${e.eventId}`}>
                  <td>{e.email}</td>
                  <td>
                    <Time iso={e.enteredAt} />
                  </td>
                  <td>
                    {e.step + 1}. {steps[e.step] ? stepText(steps[e.step]!) : e.kind}
                  </td>
                  <td>
                    <Time iso={e.dueAt} />
                    {e.until ? <> or {e.until}</> : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : null}
    </section>
  );
}

/** What a new flow's steps start as: wait an hour unless a stored event comes, then a message. */
function stepsTemplate(): Pick<FlowDefinition, 'steps' | 'exit'> {
  return {
    steps: [
      { waitUntil: { event: 'custom_order_completed', timeoutSeconds: 3600 }, then: 'exit' },
      { message: { channel: 'outbox', template: { text: 'Hello {{ contact.email_address }}' } } },
    ],
  };
}

/** The steps and exit being edited, as the definition takes them: the JSON as written, or the forms' drafts. */
function stepsMembers(editing: StepsEditing): { ok: true; value: unknown } | { ok: false; error: string } {
  return editing.view === 'forms' ? { ok: true, value: stepsOf(editing.draft) } : readStepsJson(editing.json);
}

/**
 * A flow with steps (`steps` and the optional `exit`; docs/data-engineers.md, "Steps"), built in the step
 * editor, with its name: created (POST) or, given `initial`, saved (PUT). The service checks it and says
 * what is wrong where.
 */
export function StepsForm({ org, trigger, initial }: { org: string; trigger: string; initial?: FlowDefinition }): ReactNode {
  const [name, setName] = useState(initial?.name ?? `${trigger.replaceAll('_', ' ')} journey`);
  const [id, setId] = useState(initial?.id ?? `${trigger.replaceAll('_', '-')}-journey`.slice(0, 64));
  const [editing, setEditing] = useState<StepsEditing>(() => {
    const members = initial?.steps ? { steps: initial.steps, ...(initial.exit ? { exit: initial.exit } : {}) } : stepsTemplate();
    const draft = draftInForms(members);
    return draft ? { view: 'forms', draft } : { view: 'json', json: JSON.stringify(members, null, 2), error: NOT_IN_FORMS };
  });
  const [realTime, setRealTime] = useState(initial?.realTime ?? true);
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    const read = stepsMembers(editing);
    if (!read.ok) {
      setError(new ApiError(0, 'invalid_json', read.error));
      return;
    }
    const { message: _message, branches: _branches, steps: _steps, exit: _exit, ...rest } = initial ?? ({} as Partial<FlowDefinition>);
    const definition = { ...rest, id, name, category: 'triggered', entry: 'when_contact_triggers_event', trigger, realTime, ...(read.value as object) };
    setBusy(true);
    try {
      await saveFlow(org, initial?.id, definition);
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={(e) => void save(e)} aria-labelledby="steps-form-title">
      <h3 id="steps-form-title">{initial ? 'Steps' : 'A flow with steps'}</h3>
      <div className="row">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
        </label>
        <label>
          Id
          <input value={id} onChange={(e) => setId(e.target.value)} required pattern="[A-Za-z0-9_\-]{1,64}" readOnly={initial !== undefined} />
        </label>
      </div>
      <StepsEditor org={org} value={editing} onChange={setEditing} />
      <RealTimeField value={realTime} onChange={setRealTime} />
      <ErrorBox error={error} />
      <button type="submit" disabled={busy}>
        {busy ? 'Saving…' : initial ? 'Save' : 'Create draft'}
      </button>
    </form>
  );
}

/** A flow's `realTime`: run when new events are stored, or only on its schedule. Both flow forms show it. */
export function RealTimeField({ value, onChange }: { value: boolean; onChange: (value: boolean) => void }): ReactNode {
  return (
    <label className="inline">
      <input type="checkbox" checked={value} onChange={(e) => onChange(e.target.checked)} /> Real time (run as soon as new events are stored)
    </label>
  );
}

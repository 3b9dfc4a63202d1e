/**
 * "Test with a contact" on a flow's page (POST …/flows/{id}/simulate): what the flow would do now for one
 * contact — each trigger row of the last day, the decision and its reason, the variant, and the message as
 * it would be sent; for a flow with steps, the journey an entry would take (the preview). Nothing is sent
 * or recorded.
 */
import { type FormEvent, type ReactNode, useState } from 'react';
import type { FlowDefinition } from '../generated/flow';
import { api, type ApiError, seg } from './api';
import { stepText } from './flow-steps';
import { asApiError, ErrorBox } from './ui';

interface JourneyStep {
  step: number;
  kind: 'wait' | 'waitUntil' | 'message';
  at: string;
  until: string | null;
  event: string | null;
  branch: number | null;
  branchIfEvent: number | null;
}

interface Simulation {
  window: { from: string; to: string };
  email: string;
  decisions: Array<{
    eventId: string | null;
    outcome: string;
    reason: string | null;
    variant: string | null;
    dueAt: string | null;
    message: { channel: string; content: Record<string, unknown> } | null;
    branch: number | null;
    waitsIn: { step: number; kind: string; until: string | null; dueAt: string; messagesBefore: number } | null;
    journey: JourneyStep[] | null;
  }>;
}

/** A rendered message as one line: the subject or the text, else the JSON. */
function messageText(message: NonNullable<Simulation['decisions'][number]['message']>): string {
  const { content } = message;
  const shown = content.subject ?? content.text ?? content.body;
  return `${message.channel}: ${typeof shown === 'string' ? shown : JSON.stringify(content)}`;
}

/** Where an entry of a flow with steps would wait first. */
function waitText(w: NonNullable<Simulation['decisions'][number]['waitsIn']>): string {
  const before = w.messagesBefore === 0 ? '' : `after ${w.messagesBefore} message${w.messagesBefore === 1 ? '' : 's'}, `;
  return `enters the steps: ${before}waits in step ${w.step + 1} until ${new Date(w.dueAt).toLocaleString()}${w.until ? ` or ${w.until}` : ''}`;
}

/** Which message a step would send: its own, or branch n (with its condition). */
function branchText(definition: FlowDefinition, j: JourneyStep, branch: number | null): string {
  const step = definition.steps?.[j.step];
  const when = branch === null || !step || !('message' in step) ? undefined : step.branches?.[branch]?.when;
  if (!when) return 'its own message';
  return `branch ${branch! + 1} (${when.field} ${when.op}${when.value === undefined ? '' : ` ${JSON.stringify(when.value)}`})`;
}

/** The journey preview: each step of an entry made now, the latest it is reached and what it would do. */
function Journey({ definition, decision }: { definition: FlowDefinition; decision: { eventId: string | null; journey: JourneyStep[] } }): ReactNode {
  const at = (iso: string) => new Date(iso).toLocaleString();
  return (
    <ol className="journey" aria-label={`Journey of event ${decision.eventId ?? ''}`}>
      {decision.journey.map((j) => {
        const step = definition.steps?.[j.step];
        return (
          <li key={j.step} data-journey={j.kind}>
            <span className="muted">{j.step === 0 ? 'now' : `by ${at(j.at)}`}</span> — {step ? stepText(step) : j.kind}
            {j.kind === 'message' ? (
              <>
                : {branchText(definition, j, j.branch)}
                {j.branchIfEvent !== null && j.branchIfEvent !== j.branch ? <>; {branchText(definition, j, j.branchIfEvent)} if the event came</> : null}
              </>
            ) : (
              <> until {at(j.until!)}</>
            )}
          </li>
        );
      })}
      {definition.exit ? <li className="muted">at any step: {definition.exit.event} ends the entry</li> : null}
    </ol>
  );
}

export function SimulateContact({ org, id, definition }: { org: string; id: string; definition: FlowDefinition }): ReactNode {
  const [identity, setIdentity] = useState('');
  const [result, setResult] = useState<Simulation>();
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    setBusy(true);
    try {
      const value = identity.includes(':') ? identity.trim() : `email:${identity.trim()}`;
      setResult(await api<Simulation>('POST', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}/simulate`, { identity: value }));
    } catch (e) {
      setResult(undefined);
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="simulate-title">
      <h3 id="simulate-title">Test with a contact</h3>
      <form className="row" onSubmit={(e) => void submit(e)}>
        <label>
          Contact (e-mail, or user_id:…)
          <input value={identity} onChange={(e) => setIdentity(e.target.value)} placeholder="ada@example.com" required />
        </label>
        <button type="submit" disabled={busy}>
          {busy ? 'Testing…' : 'Test'}
        </button>
      </form>
      <ErrorBox error={error} />
      {result ? (
        result.decisions.length === 0 ? (
          <p role="status" className="muted">
            No trigger row for {result.email} between {new Date(result.window.from).toLocaleString()} and {new Date(result.window.to).toLocaleString()}: the flow would do nothing.
          </p>
        ) : (
          <table role="status" aria-label={`What the flow would do for ${result.email}`}>
            <thead>
              <tr>
                <th>Event</th>
                <th>Decision</th>
                <th>Variant</th>
                <th>Why, or the message</th>
              </tr>
            </thead>
            <tbody>
              {result.decisions.map((d, i) => (
                <tr key={`${d.eventId ?? ''}-${i}`} data-simulated={d.outcome}>
                  <td>
                    <code>{d.eventId ?? '—'}</code>
                  </td>
                  <td>{d.outcome}</td>
                  <td>{d.variant ?? '—'}</td>
                  <td>
                    {d.branch !== null ? `branch ${d.branch + 1} · ` : ''}
                    {d.message ? messageText(d.message) : d.waitsIn ? waitText(d.waitsIn) : (d.reason ?? '—')}
                    {d.journey ? <Journey definition={definition} decision={{ eventId: d.eventId, journey: d.journey }} /> : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : null}
      <p className="muted">Nothing is sent or recorded.</p>
    </section>
  );
}

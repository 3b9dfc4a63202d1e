/**
 * The form of a triggered flow with one message (new, or editing a saved one): name and id, segment
 * filter, experiment, message with a preview, branches, and the settings of flow-settings.tsx.
 */
import { type FormEvent, type ReactNode, useState } from 'react';
import type { FlowDefinition } from '../generated/flow';
import { draftOf, MessageFields, messageOf } from './message-fields';
import { BranchFields, branchDraftsOf, branchesOf } from './flow-branches';
import { ExperimentFields, variantDraftsOf, variantsOf } from './flow-experiment';
import { type FlowSettings, GoalFields, ReentryFields, SafetyFields, settingsOf } from './flow-settings';
import { api, type ApiError, seg } from './api';
import { saveFlow } from './flow-save';
import { asApiError, ErrorBox, useInView } from './ui';

interface MessagePreview {
  row: Record<string, unknown> | null;
  rendered: Record<string, unknown> | null;
  error: string | null;
}

/** The message a new flow starts with: every value a template can read, to show what it can say. */
const DEFAULT_TEMPLATE = `{
  "email": "{{ contact.email_address }}",
  "event": "{{ event.event_type }}",
  "variant": "{{ variant.label }}"
}`;

export function FlowForm({ org, trigger, segments, initial }: { org: string; trigger: string; segments: string[]; initial?: FlowDefinition }): ReactNode {
  const [name, setName] = useState(initial?.name ?? `${trigger.replaceAll('_', ' ')} follow-up`);
  const [id, setId] = useState(initial?.id ?? `${trigger.replaceAll('_', '-')}-follow-up`.slice(0, 64));
  const [segment, setSegment] = useState(initial?.segmentFilter?.segment ?? '');
  const [mode, setMode] = useState<'exclude' | 'include'>(initial?.segmentFilter?.mode ?? 'exclude');
  const [variants, setVariants] = useState(() => variantDraftsOf(initial));
  const [branches, setBranches] = useState(() => branchDraftsOf(initial?.branches));
  const [draft, setDraft] = useState(() => draftOf(initial?.message, { subject: 'Your {{ event.event_type }}', template: DEFAULT_TEMPLATE }));
  const [settings, setSettings] = useState(() => settingsOf(initial));
  const changeSettings = (change: Partial<FlowSettings>) => setSettings((s) => ({ ...s, ...change }));
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);

  const definition = (): FlowDefinition => {
    const message = messageOf(draft);
    const { reentry, afterSeconds, schedule, realTime, topic, transactional, maxAge, capped, capSends, capSeconds, quietHours, goalEvent, goalSeconds } = settings;
    return {
      id,
      name,
      category: 'triggered',
      entry: 'when_contact_triggers_event',
      trigger,
      scheduleSeconds: schedule,
      realTime,
      ...(segment ? { segmentFilter: { segment, mode } } : {}),
      ...(variants.length > 0 ? { experiment: { variants: variantsOf(variants, draft) } } : {}),
      ...(branches.length > 0 ? { branches: branchesOf(branches, draft) } : {}),
      message,
      reentry: reentry === 'after' ? { afterSeconds } : reentry,
      ...(transactional ? { transactional: true } : topic === 'all' ? {} : { topic }),
      maxEventAgeSeconds: maxAge,
      ...(capped ? { frequencyCap: { maxSends: capSends, withinSeconds: capSeconds } } : {}),
      ...(quietHours ? { quietHours } : {}),
      ...(goalEvent ? { goal: { event: goalEvent, withinSeconds: goalSeconds } } : {}),
    };
  };
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await saveFlow(org, initial?.id, definition());
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  };
  const [preview, setPreview] = useState<MessagePreview>();
  const previewInView = useInView<HTMLDivElement>(preview);
  const previewMessage = async () => {
    setError(undefined);
    try {
      const variant = variants.find((v) => !v.holdout)?.label;
      const { message, branches: flowBranches, experiment } = definition();
      setPreview(
        await api<MessagePreview>('POST', `/admin/v1/orgs/${seg(org)}/flows/message-preview`, {
          trigger,
          message,
          ...(flowBranches ? { branches: flowBranches } : {}),
          ...(experiment ? { experiment } : {}),
          flowName: name,
          ...(variant ? { variant } : {}),
        }),
      );
    } catch (e) {
      setError(asApiError(e));
    }
  };

  return (
    <form onSubmit={save} className="card" aria-labelledby="flow-form-title">
      <h3 id="flow-form-title">
        Flow on <code>{trigger}</code>
      </h3>
      <label>
        Name <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
      </label>
      <label>
        Id <input value={id} onChange={(e) => setId(e.target.value)} required pattern="[A-Za-z0-9_\-]{1,64}" readOnly={initial !== undefined} />
      </label>
      <fieldset>
        <legend>Segment membership filter</legend>
        <label className="inline">
          Segment{' '}
          <select value={segment} onChange={(e) => setSegment(e.target.value)} aria-label="Segment">
            <option value="">none</option>
            {segments.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>{' '}
        <label className="inline">
          <input type="radio" name="mode" checked={mode === 'exclude'} onChange={() => setMode('exclude')} /> Exclude its members
        </label>{' '}
        <label className="inline">
          <input type="radio" name="mode" checked={mode === 'include'} onChange={() => setMode('include')} /> Only its members
        </label>
      </fieldset>
      <ExperimentFields variants={variants} onChange={setVariants} template={draft.template} />
      <MessageFields draft={draft} onChange={(change) => setDraft({ ...draft, ...change })} templateData="contact, event, flow, variant">
        <button type="button" className="small" onClick={() => void previewMessage()}>
          Preview the message
        </button>
        {preview ? (
          <div className="message-preview" role="region" aria-label="Message preview" ref={previewInView}>
            {preview.rendered ? (
              <>
                <p className="muted">
                  Rendered for <code>{String(preview.row?.identity ?? '')}</code>, from the first row <code>{trigger}</code> returns over the last 24 hours (event{' '}
                  <code>{String(preview.row?.event_id ?? '')}</code>):
                </p>
                <pre className="json">{JSON.stringify(preview.rendered, null, 2)}</pre>
              </>
            ) : (
              <p className="error">{preview.error}</p>
            )}
          </div>
        ) : null}
      </MessageFields>
      <BranchFields branches={branches} onChange={setBranches} template={draft.template} />
      <GoalFields value={settings} onChange={changeSettings} />
      <ReentryFields value={settings} onChange={changeSettings} />
      <SafetyFields org={org} value={settings} onChange={changeSettings} />
      <ErrorBox error={error} />
      <button type="submit" disabled={busy}>
        {busy ? 'Saving…' : initial ? 'Save changes' : 'Save as draft'}
      </button>
    </form>
  );
}


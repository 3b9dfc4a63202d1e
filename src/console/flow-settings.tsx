/**
 * A triggered flow's settings on its form: conversion goal, re-entry and schedule, and what keeps its
 * sending safe (subscription topic or transactional, event age, frequency cap, quiet hours).
 */
import type { ReactNode } from 'react';
import type { FlowDefinition } from '../generated/flow';
import { QuietHoursFields } from './quiet-hours-fields';
import { RealTimeField } from './flow-steps';
import { api, seg } from './api';
import { useRequest } from './ui';

/** The settings as the form edits them; `definitionOf` in flow-form.tsx turns them into the definition's fields. */
export interface FlowSettings {
  reentry: 'every_event' | 'once' | 'after';
  afterSeconds: number;
  schedule: number;
  realTime: boolean;
  topic: string;
  transactional: boolean;
  maxAge: number;
  capped: boolean;
  capSends: number;
  capSeconds: number;
  quietHours: FlowDefinition['quietHours'];
  goalEvent: string;
  goalSeconds: number;
}

export function settingsOf(initial: FlowDefinition | undefined): FlowSettings {
  const reentryOf = initial?.reentry ?? 'every_event';
  return {
    reentry: typeof reentryOf === 'object' ? 'after' : reentryOf,
    afterSeconds: typeof reentryOf === 'object' ? reentryOf.afterSeconds : 86400,
    schedule: initial?.scheduleSeconds ?? 60,
    realTime: initial?.realTime ?? true,
    topic: initial?.topic ?? 'all',
    transactional: initial?.transactional ?? false,
    maxAge: initial?.maxEventAgeSeconds ?? 86400,
    capped: initial?.frequencyCap !== undefined,
    capSends: initial?.frequencyCap?.maxSends ?? 1,
    capSeconds: initial?.frequencyCap?.withinSeconds ?? 86400,
    quietHours: initial?.quietHours,
    goalEvent: initial?.goal?.event ?? '',
    goalSeconds: initial?.goal?.withinSeconds ?? 7 * 86400,
  };
}

interface Props {
  value: FlowSettings;
  onChange: (change: Partial<FlowSettings>) => void;
}

export function GoalFields({ value, onChange }: Props): ReactNode {
  return (
    <fieldset className="row">
      <legend>Conversion goal</legend>
      <label className="inline">
        Goal event{' '}
        <input value={value.goalEvent} onChange={(e) => onChange({ goalEvent: e.target.value })} placeholder="complete_transaction or custom_…" aria-describedby="goal-help" />
      </label>
      <label className="inline">
        Conversion window (seconds) <input type="number" min="1" max="7776000" value={value.goalSeconds} onChange={(e) => onChange({ goalSeconds: Number(e.target.value) })} />
      </label>
      <p id="goal-help" className="muted">
        A contact converts when this event (as stored: the event types page) happens within that time after the flow entered them. Empty: no goal.
      </p>
    </fieldset>
  );
}

export function ReentryFields({ value, onChange }: Props): ReactNode {
  return (
    <fieldset className="row">
      <legend>Re-entry and schedule</legend>
      <label className="inline">
        Re-entry{' '}
        <select value={value.reentry} onChange={(e) => onChange({ reentry: e.target.value as typeof value.reentry })}>
          <option value="every_event">every event</option>
          <option value="once">once per contact</option>
          <option value="after">again after a while</option>
        </select>
      </label>
      {value.reentry === 'after' ? (
        <label className="inline">
          Seconds <input type="number" min="1" value={value.afterSeconds} onChange={(e) => onChange({ afterSeconds: Number(e.target.value) })} />
        </label>
      ) : null}
      <RealTimeField value={value.realTime} onChange={(realTime) => onChange({ realTime })} />
      <label className="inline">
        {value.realTime ? 'And at least every (seconds)' : 'Run every (seconds)'}{' '}
        <input type="number" min="1" max="86400" value={value.schedule} onChange={(e) => onChange({ schedule: Number(e.target.value) })} />
      </label>
    </fieldset>
  );
}

export function SafetyFields({ org, value, onChange }: Props & { org: string }): ReactNode {
  const topics = useRequest(() => api<{ topics: Array<{ topic: string; name: string }> }>('GET', `/admin/v1/orgs/${seg(org)}/topics`), [org]);
  return (
    <fieldset className="row">
      <legend>Sending safely</legend>
      <label className="inline">
        <input type="checkbox" checked={value.transactional} onChange={(e) => onChange({ transactional: e.target.checked })} /> Transactional (sent whatever the contact subscribed to; no unsubscribe link)
      </label>
      {value.transactional ? null : (
        <label className="inline">
          Subscription topic{' '}
          <select value={value.topic} onChange={(e) => onChange({ topic: e.target.value })}>
            {(topics.data?.topics ?? [{ topic: 'all', name: 'All marketing' }]).map((t) => (
              <option key={t.topic} value={t.topic}>
                {t.topic} ({t.name})
              </option>
            ))}
          </select>
        </label>
      )}
      <label className="inline">
        Skip events older than (seconds) <input type="number" min="1" max="31536000" value={value.maxAge} onChange={(e) => onChange({ maxAge: Number(e.target.value) })} />
      </label>
      <label className="inline">
        <input type="checkbox" checked={value.capped} onChange={(e) => onChange({ capped: e.target.checked })} /> Cap this flow per contact
      </label>
      {value.capped ? (
        <>
          <label className="inline">
            At most (messages) <input type="number" min="1" max="100000" value={value.capSends} onChange={(e) => onChange({ capSends: Number(e.target.value) })} />
          </label>
          <label className="inline">
            Within (seconds) <input type="number" min="60" max="31536000" value={value.capSeconds} onChange={(e) => onChange({ capSeconds: Number(e.target.value) })} />
          </label>
        </>
      ) : null}
      <QuietHoursFields value={value.quietHours} onChange={(quietHours) => onChange({ quietHours })} label="Quiet hours of this flow (instead of the org's)" />
    </fieldset>
  );
}

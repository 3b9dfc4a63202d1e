/**
 * A flow's page: its status and actions (start, pause, run now, delete), then what it did — steps, simulation or
 * occurrences, activity, results, sends, and why a contact was (not) messaged.
 */
import { type ReactNode, useEffect, useRef, useState } from 'react';
import type { Flow } from '../generated/flow';
import { Occurrences, scheduleText } from './flow-schedule';
import { FlowActivitySection } from './flow-activity';
import { FlowResultsSection } from './flow-results';
import { FlowStepsSection } from './flow-steps';
import { SimulateContact } from './flow-simulate';
import { Sends, WhyNot } from './flow-sends';
import { api, type ApiError, seg } from './api';
import { href } from './route';
import { ACTIVITY_REFRESH_MS, asApiError, ErrorBox, Status, Time, useEvery, useRequest } from './ui';

export function FlowDetail({ org, id }: { org: string; id: string }): ReactNode {
  const flow = useRequest(() => api<Flow>('GET', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}`), [org, id]);
  // A live flow runs in the background: its last run and cursor are read again every few seconds.
  const live = flow.data?.status === 'live';
  useEvery(ACTIVITY_REFRESH_MS, flow.reload, live);
  const [round, setRound] = useState(0);
  // A run in the background (a live flow) refreshes what the page shows of its sends, as a button would.
  const lastRun = flow.data?.lastRunAt;
  const seenRun = useRef(lastRun);
  useEffect(() => {
    const first = seenRun.current === undefined;
    if (lastRun === seenRun.current) return;
    seenRun.current = lastRun;
    if (!first) setRound((r) => r + 1);
  }, [lastRun]);
  const [error, setError] = useState<ApiError>();
  const [ran, setRan] = useState<string>();
  const act = async (action: 'start' | 'pause' | 'run') => {
    setError(undefined);
    try {
      const result = await api<{ rows?: number; outcomes?: Record<string, number>; skipped?: string | null }>('POST', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}/${action}`);
      if (action === 'run') setRan(`Run: ${result.skipped ?? `${result.rows} rows: ${Object.entries(result.outcomes ?? {}).map(([k, v]) => `${v} ${k}`).join(', ') || 'nothing new'}`}`);
      flow.reload();
      setRound((r) => r + 1);
    } catch (e) {
      setError(asApiError(e));
    }
  };
  const archive = async () => {
    if (!window.confirm(`Delete the flow ${id}? It stops for good: its queued sends are cancelled and contacts waiting in its steps leave it. What it sent stays, and its id stays taken.`)) return;
    setError(undefined);
    try {
      const result = await api<{ stopped: { sends: number; entries: number; occurrences: number } }>('DELETE', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}`);
      const { sends, entries, occurrences } = result.stopped;
      setRan(`Deleted (archived): ${sends} sends cancelled, ${entries} waiting entries left the flow${occurrences ? `, ${occurrences} occurrence stopped` : ''}`);
      flow.reload();
      setRound((r) => r + 1);
    } catch (e) {
      setError(asApiError(e));
    }
  };
  const definition = flow.data?.definition;
  const archived = flow.data?.status === 'archived';
  const triggered = definition?.category === 'triggered';
  return (
    <section aria-labelledby="flow-title">
      <h2 id="flow-title">{definition?.name ?? id}</h2>
      <Status request={{ error: flow.error, loading: flow.loading && !flow.data }} what="the flow" />
      {flow.data && definition ? (
        <>
          <p>
            <span className={`badge ${flow.data.status === 'live' ? 'live' : ''}`}>{flow.data.status}</span> ·{' '}
            {triggered ? (
              <>
                trigger <code>{definition.trigger}</code>
              </>
            ) : (
              <>
                to segment <code>{definition.audience?.segment}</code>, {scheduleText(definition)}
              </>
            )}
            {definition.segmentFilter ? (
              <>
                {' '}
                · {definition.segmentFilter.mode ?? 'exclude'} segment <code>{definition.segmentFilter.segment}</code>
              </>
            ) : null}
            {definition.experiment ? <> · variants {definition.experiment.variants.map((v) => `${v.label} (${v.weight}${v.holdout ? ', holdout' : ''})`).join(', ')}</> : null} ·{' '}
            {definition.steps ? `${definition.steps.length} steps` : definition.message?.channel} · last run <Time iso={flow.data.lastRunAt} />
          </p>
          {flow.data.lastError ? <p className="error">{flow.data.lastError}</p> : null}
          {archived ? (
            <p>This flow was deleted: it never runs again. What it did stays below.</p>
          ) : (
          <div className="row">
            <a className="button secondary" href={href('orgs', org, 'flows', id, 'edit')}>
              Edit
            </a>
            {flow.data.status !== 'live' ? (
              <button type="button" onClick={() => void act('start')}>
                Start
              </button>
            ) : (
              <>
                <button type="button" onClick={() => void act('pause')}>
                  Pause
                </button>
                {triggered ? (
                  <button type="button" onClick={() => void act('run')}>
                    Run now
                  </button>
                ) : null}
              </>
            )}
            <button type="button" className="secondary" onClick={() => void archive()}>
              Delete
            </button>
          </div>
          )}
          {ran ? <p role="status" data-said>{ran}</p> : null}
          <ErrorBox error={error} />
          {definition.steps ? <FlowStepsSection org={org} id={id} definition={definition} round={round} /> : null}
          {triggered ? <SimulateContact org={org} id={id} definition={definition} /> : <Occurrences org={org} id={id} round={round} />}
          <FlowActivitySection org={org} id={id} round={round} live={live} />
          <FlowResultsSection org={org} id={id} round={round} />
          <Sends org={org} id={id} round={round} />
          <WhyNot org={org} id={id} round={round} />
        </>
      ) : null}
    </section>
  );
}

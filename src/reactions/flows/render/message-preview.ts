/**
 * A message as a flow would send it, rendered against the first row its trigger returns over the last
 * MESSAGE_PREVIEW_HOURS, with that contact's profile: the template editor's live preview. The message and
 * its data come from the run's own evaluation (messageToRender in decide.ts) and render on the run's
 * renderer, within its limits. The variant is the one asked for (not the contact's), and a row that
 * names no contact still renders (its contact is empty); nothing is sent or stored.
 */
import type { UnsubscribeLinks } from '../../consent/unsubscribe-link.js';
import type { RenderedMessage } from '../../channels/types.js';
import { AppError } from '../../../core/errors.js';
import { readAgainAfterKills } from '../../../core/unavailable.js';
import type { Row } from '../../../db/sql.js';
import { microsToIso, newestVisibleAt } from '../../../events/compaction/visible-at.js';
import type { ProfileIndex } from '../../../events/profiles/profile-index.js';
import type { FlowDefinition } from '../../../generated/flow.js';
import type { OrgStorage } from '../../../db/org-storage.js';
import { jsonRow } from '../../triggers/json-row.js';
import { QueryFailed, runSandboxed, windowOf, withSandbox } from '../../triggers/sandbox.js';
import { failedProblem } from '../../triggers/query-problems.js';
import type { TriggerStore } from '../../triggers/trigger-store.js';
import { messageToRender, resolveEmail, textOf } from '../rules/decide.js';
import { type RunState } from '../rules/decision.js';
import type { TemplateRenderer } from './template-renderer.js';

/** A message preview renders against the first row the trigger returns over this window. */
export const MESSAGE_PREVIEW_HOURS = 24;

export type MessagePreview = {
  window: { from: string; to: string };
} & (
  | { row: null; rendered: null; error: string }
  | { row: Record<string, unknown>; rendered: RenderedMessage; error: null }
  | { row: Record<string, unknown>; rendered: null; error: string }
);

export interface PreviewDeps {
  storage: OrgStorage;
  triggers: TriggerStore;
  profiles: ProfileIndex;
  renderer: Pick<TemplateRenderer, 'render'>;
  /** TRIGGER_TIMEOUT_MS: the trigger query. */
  timeoutMs: number;
  /** The previewed contact's real unsubscribe link, as a send would carry it. */
  links: Pick<UnsubscribeLinks, 'forFlow'>;
}

/** `flow`: a checked definition (checkFlow); `variant`: the label of the variant to show, if any. */
export async function previewMessage(deps: PreviewDeps, org: string, flow: FlowDefinition, variant: string | undefined): Promise<MessagePreview> {
  const trigger = flow.trigger === undefined ? undefined : deps.triggers.live(org, 'trigger', flow.trigger);
  if (!trigger) throw new AppError('invalid_flow', `/trigger: trigger ${flow.trigger} does not exist or has no valid version`);
  const db = deps.storage.org(org);
  let start: bigint;
  let end: bigint;
  let rows: Row[];
  try {
    // Reads only: read again when another org's runaway query had the storage process killed under it.
    // The window's end is read on the query's own connection, not queued behind compaction on the org's.
    ({ start, end, rows } = await readAgainAfterKills(org, deps.timeoutMs, () =>
      withSandbox(db, deps.timeoutMs, async (c) => {
        const end = await newestVisibleAt(c);
        const start = end - BigInt(MESSAGE_PREVIEW_HOURS * 3600) * 1_000_000n;
        return { start, end, rows: (await runSandboxed(c, trigger.checked, windowOf(start, end), 1)).rows };
      }),
    ));
  } catch (error) {
    if (error instanceof QueryFailed) throw failedProblem(error);
    throw error;
  }
  const window = { from: microsToIso(start), to: microsToIso(end) };
  const row = rows[0];
  if (!row) return { window, row: null, rendered: null, error: `trigger ${flow.trigger} returns no row over this window: send a sample event first` };

  const profile: RunState['profile'] = (type, value) => deps.profiles.find(org, type, value);
  const email = resolveEmail(textOf(row.identity), textOf(row.identity_type), { profile });
  // The variant's own message when it has one, else what the run would pick for this row.
  const chosen = variant === undefined ? undefined : (flow.experiment?.variants.find((v) => v.label === variant) ?? { label: variant });
  const link = email === null ? null : deps.links.forFlow(org, flow, email);
  const [result] = await deps.renderer.render([messageToRender(row, flow, email, chosen, profile, link)]);
  if (!result) throw new Error('the renderer answered no result');
  return result.ok ? { window, row: jsonRow(row), rendered: result.message, error: null } : { window, row: jsonRow(row), rendered: null, error: result.reason };
}

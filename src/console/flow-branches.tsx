/**
 * A triggered flow's branches on its form: the first branch whose condition holds sends its own message.
 */
import type { ReactNode } from 'react';
import type { Branch, Condition } from '../generated/message';
import { type MessageDraft, messageOf } from './message-fields';
import { templateTextOf } from './message-template';

const OPS: readonly Condition['op'][] = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'exists'];

export interface BranchDraft {
  field: string;
  op: Condition['op'];
  value: string;
  template: string;
}

/** A branch's condition: the value as JSON when it reads as JSON (3, true, ["a","b"]), else as text. */
function condition(branch: BranchDraft): Condition {
  if (branch.op === 'exists') return { field: branch.field, op: branch.op };
  let value: Condition['value'] = branch.value;
  try {
    value = JSON.parse(branch.value);
  } catch {
    // text
  }
  return { field: branch.field, op: branch.op, value };
}

/** A condition's value as the field shows it: text as itself unless it would read back as JSON ("3", "true") or holds a line break, then quoted. */
function valueText(value: Condition['value']): string {
  if (value === undefined) return '';
  if (typeof value !== 'string' || /[\r\n]/.test(value)) return JSON.stringify(value);
  try {
    JSON.parse(value);
    return JSON.stringify(value);
  } catch {
    return value;
  }
}

export function branchDraftsOf(branches: Branch[] | undefined): BranchDraft[] {
  return (branches ?? []).map((b) => ({
    field: b.when.field,
    op: b.when.op,
    value: valueText(b.when.value),
    template: templateTextOf(b.message),
  }));
}

export function branchesOf(branches: BranchDraft[], draft: MessageDraft): Branch[] {
  return branches.map((b) => ({ when: condition(b), message: messageOf(draft, b.template) }));
}

const FLOW_NOTE = "The first branch whose condition holds sends its own message (a variant's own message comes first); otherwise the message above.";

export function BranchFields({ branches, onChange, template, note = FLOW_NOTE }: { branches: BranchDraft[]; onChange: (branches: BranchDraft[]) => void; template: string; note?: string }): ReactNode {
  const setBranch = (i: number, change: Partial<BranchDraft>) => onChange(branches.map((b, j) => (j === i ? { ...b, ...change } : b)));
  return (
    <fieldset>
      <legend>Branches</legend>
      <p className="muted">{note}</p>
      {branches.map((branch, i) => (
        <div className="row" key={i}>
          <label className="inline">
            Field <input value={branch.field} onChange={(e) => setBranch(i, { field: e.target.value })} required pattern="(event|contact|variant|wait)(\.[A-Za-z0-9_]+)+" placeholder="event.properties.nights" />
          </label>
          <label className="inline">
            Condition{' '}
            <select value={branch.op} onChange={(e) => setBranch(i, { op: e.target.value as BranchDraft['op'] })}>
              {OPS.map((op) => (
                <option key={op} value={op}>
                  {op}
                </option>
              ))}
            </select>
          </label>
          {branch.op !== 'exists' ? (
            <label className="inline">
              Value <input value={branch.value} onChange={(e) => setBranch(i, { value: e.target.value })} placeholder='3, "Lisbon" or ["a","b"]' />
            </label>
          ) : null}
          <button type="button" className="small" onClick={() => onChange(branches.filter((_, j) => j !== i))} aria-label={`Remove branch ${i + 1}`}>
            Remove
          </button>
          <label className="wide">
            Message of branch {i + 1}
            <textarea value={branch.template} onChange={(e) => setBranch(i, { template: e.target.value })} rows={5} spellCheck={false} />
          </label>
        </div>
      ))}
      <button type="button" className="small" onClick={() => onChange([...branches, { field: 'event.properties.', op: 'gte', value: '', template: template }])}>
        Add branch
      </button>
    </fieldset>
  );
}

/**
 * Tracking plans (issue 42): per org and custom event name, a JSON Schema for the event's own properties
 * and a mode, `observe` (stored, violations counted) or `enforce` (violating events quarantined). Each
 * plan is a control document (`plan.<org>.<name in base64url>`) holding its versions, so every process
 * of a deployment (the collectors above all) has it from the control plane's watch, and a PUT is
 * compare-and-set. Each version is compiled once, when this process takes it in; the collect path asks
 * `check`, which reads memory only. A version applies to events acknowledged after this process took it
 * in: never to events already stored.
 */
import { changeDocument } from '../../control/change-document.js';
import { type ControlDocuments, type ControlEntry } from '../../control/types.js';
import type { Context } from '../../core/context.js';
import { ENVIRONMENTS, type Environment } from '../../core/domain.js';
import { AppError } from '../../core/errors.js';
import { sha256Hex } from '../../core/secrets.js';
import { type PlanViolation, compilePlan } from './compile-plan.js';

export const PLAN_MODES = ['observe', 'enforce'] as const;
export type PlanMode = (typeof PLAN_MODES)[number];
/** Versions a plan's document keeps (older ones drop out; numbers go on). */
const KEPT_VERSIONS = 20;
/** Plans an org may have. */
export const MAX_PLANS_PER_ORG = 200;

export interface PlanInput {
  schema: object;
  mode: PlanMode;
  environments: Environment[];
}

export interface PlanVersion {
  version: number;
  status: 'live' | 'deleted';
  /** The plan as PUT (absent on a deletion). */
  plan?: PlanInput;
  hash?: string;
  createdAt: string;
}

interface PlanDocument {
  org: string;
  eventName: string;
  versions: PlanVersion[];
}

/** What the admin API shows of a plan: its newest version (live or deleted) and the ones kept. */
export interface PlanView extends PlanInput {
  eventName: string;
  version: number;
  hash: string;
  createdAt: string;
}

/** What an event's properties make of its plan. */
export type PlanCheck =
  | { kind: 'none' }
  | { kind: 'valid'; version: number }
  | { kind: 'violations'; mode: PlanMode; version: number; violations: PlanViolation[] };

interface LivePlan {
  version: number;
  mode: PlanMode;
  environments: ReadonlySet<Environment>;
  check: (properties: unknown) => PlanViolation[];
}

/** The quarantine code of an event an enforced plan rejected, and the log entry's code of one that broke an observed plan. */
export const PLAN_VIOLATION = 'plan_violation';

export const planKey = (org: string, eventName: string): string => `plan.${org}.${Buffer.from(eventName).toString('base64url')}`;
export const PLAN_KEY_PREFIX = 'plan.';

export class PlanStore {
  /** Per org, its live plans by event name: what `check` reads. */
  private readonly live = new Map<string, Map<string, LivePlan>>();
  /** Every plan document taken in, by key, with its revision. */
  private readonly documents = new Map<string, { revision: number; document: PlanDocument }>();

  constructor(
    private readonly control: ControlDocuments,
    private readonly ctx: Context,
    /** A stored version that does not compile here (written by another release): its plan is not applied. */
    private readonly onRefused: (org: string, eventName: string, detail: string) => void,
  ) {}

  /**
   * A plan document from the control plane's watch, or from a write of this process; older revisions are
   * ignored. `compiled`: the PUT's own compilation of the version with that hash, not compiled again.
   */
  apply(entry: ControlEntry, compiled?: { hash: string; check: LivePlan['check'] }): void {
    const known = this.documents.get(entry.key);
    if (known && known.revision >= entry.revision) return;
    const document = entry.value as PlanDocument;
    this.documents.set(entry.key, { revision: entry.revision, document });
    const newest = document.versions.at(-1);
    const plans = this.live.get(document.org) ?? new Map<string, LivePlan>();
    this.live.set(document.org, plans);
    if (!newest || newest.status === 'deleted' || !newest.plan) {
      plans.delete(document.eventName);
      return;
    }
    const check = compiled && compiled.hash === newest.hash ? compiled.check : this.compiled(document, newest.plan.schema);
    if (!check) {
      plans.delete(document.eventName);
      return;
    }
    plans.set(document.eventName, { version: newest.version, mode: newest.plan.mode, environments: new Set(newest.plan.environments), check });
  }

  /** A stored version compiled here; undefined (and said) when it does not compile in this release. */
  private compiled(document: PlanDocument, schema: object): LivePlan['check'] | undefined {
    const compiled = compilePlan(schema);
    if (compiled.ok) return compiled.check;
    this.onRefused(document.org, document.eventName, compiled.detail);
    return undefined;
  }

  /** The collect path: the event's own properties against the org's live plan for its name, if any. */
  check(org: string, environment: Environment, eventName: string, properties: unknown): PlanCheck {
    const plan = this.live.get(org)?.get(eventName);
    if (!plan || !plan.environments.has(environment)) return { kind: 'none' };
    const violations = plan.check(properties ?? {});
    return violations.length === 0 ? { kind: 'valid', version: plan.version } : { kind: 'violations', mode: plan.mode, version: plan.version, violations };
  }

  /** Whether the org has any live plan (the collect path skips the lookup otherwise). */
  hasPlans(org: string): boolean {
    return (this.live.get(org)?.size ?? 0) > 0;
  }

  async put(org: string, eventName: string, input: PlanInput): Promise<PlanView> {
    checkEventName(eventName);
    const compiled = compilePlan(input.schema);
    if (!compiled.ok) throw new AppError('invalid_plan', `${compiled.detail}. Fix the schema and PUT it again; the plan in force is unchanged.`);
    const environments = ENVIRONMENTS.filter((e) => input.environments.includes(e));
    const plan: PlanInput = { schema: input.schema, mode: input.mode, environments };
    const hash = sha256Hex(JSON.stringify(plan));
    const key = planKey(org, eventName);
    if (!this.documents.has(key) && this.list(org).length >= MAX_PLANS_PER_ORG) {
      throw new AppError('invalid_plan', `an org may have at most ${MAX_PLANS_PER_ORG} plans; delete one first`);
    }
    const entry = await changeDocument<PlanDocument>(this.control, key, (current) => {
      const versions = current?.versions ?? [];
      const newest = versions.at(-1);
      // The same plan again is no new version.
      if (newest?.status === 'live' && newest.hash === hash) return current!;
      const version: PlanVersion = { version: (newest?.version ?? 0) + 1, status: 'live', plan, hash, createdAt: this.now() };
      return { org, eventName, versions: [...versions, version].slice(-KEPT_VERSIONS) };
    });
    this.apply(entry, { hash, check: compiled.check });
    return this.get(org, eventName)!;
  }

  /** Deletes the plan (a version with status deleted): events of the name are no longer checked. Undefined when it has none. */
  async remove(org: string, eventName: string): Promise<PlanView | undefined> {
    const shown = this.get(org, eventName);
    if (!shown) return undefined;
    const entry = await changeDocument<PlanDocument>(this.control, planKey(org, eventName), (current) => {
      const versions = current?.versions ?? [];
      const newest = versions.at(-1);
      if (!newest || newest.status === 'deleted') return current!;
      return { org, eventName, versions: [...versions, { version: newest.version + 1, status: 'deleted' as const, createdAt: this.now() }].slice(-KEPT_VERSIONS) };
    });
    this.apply(entry);
    return shown;
  }

  /** The org's plan for the name as in force here (undefined: none, or deleted). */
  get(org: string, eventName: string): PlanView | undefined {
    const newest = this.documents.get(planKey(org, eventName))?.document.versions.at(-1);
    return newest?.status === 'live' && newest.plan ? viewOf(eventName, newest) : undefined;
  }

  list(org: string): PlanView[] {
    const views: PlanView[] = [];
    for (const { document } of this.documents.values()) {
      const newest = document.versions.at(-1);
      if (document.org === org && newest?.status === 'live' && newest.plan) views.push(viewOf(document.eventName, newest));
    }
    return views.sort((a, b) => (a.eventName < b.eventName ? -1 : a.eventName > b.eventName ? 1 : 0));
  }

  /** The versions kept of the plan, newest first (deletions included), or undefined when it never had one. */
  versions(org: string, eventName: string): PlanVersion[] | undefined {
    return this.documents.get(planKey(org, eventName))?.document.versions.slice().reverse();
  }

  /** A deleted org: its plans stop at once (their documents stay, as the org's own does). */
  forgetOrg(org: string): void {
    this.live.delete(org);
    for (const [key, { document }] of this.documents) if (document.org === org) this.documents.delete(key);
  }

  private now(): string {
    return new Date(this.ctx.clock.now()).toISOString();
  }
}

function viewOf(eventName: string, version: PlanVersion): PlanView {
  return { eventName, ...version.plan!, version: version.version, hash: version.hash!, createdAt: version.createdAt };
}

/** Plans are for custom events, named as stored (`custom_<eventName>`, 1 to 38 characters after the prefix). */
export function checkEventName(eventName: string): void {
  const name = eventName.startsWith('custom_') ? eventName.slice('custom_'.length) : '';
  // eslint-disable-next-line no-control-regex
  if (name.length === 0 || name.length > 38 || /[\u0000-\u001f\u007f-\u009f]/.test(name)) {
    throw new AppError(
      'invalid_plan',
      `plans are for custom events, named as GET …/events/types lists them: custom_ then the event's eventName (1 to 38 characters, no control character), not ${JSON.stringify(eventName.slice(0, 60))}`,
    );
  }
}

/**
 * A flow's results (issue 26): per variant and for the holdout, the contacts entered, sent and converted
 * on the flow's goal, the conversion rate with its interval, and the lift and p-value against the control
 * (the holdout when there is one, else the first variant), from the per-day counts SendStore.resultsByDay
 * reads. docs/data-engineers.md, "Goals and experiment results", says what each number counts.
 */
import type { FlowDefinition, Goal } from '../../../generated/flow.js';
import { type Interval, lift, liftInterval, pValue, rate, wilson } from './experiment-stats.js';
import type { ResultsDay } from './send-reports.js';

export const RESULTS_METHOD = {
  confidence: 0.95,
  rateInterval: 'wilson',
  liftInterval: 'log rate ratio, delta method (Katz)',
  test: 'two-proportion z-test, pooled variance, two-sided',
} as const;

export interface VariantResult {
  /** The variant's label; null for a flow without an experiment (everyone is in one group). */
  variant: string | null;
  holdout: boolean;
  control: boolean;
  entered: number;
  sent: number;
  /** Null when the flow has no goal. */
  converted: number | null;
  rate: number | null;
  rateInterval: Interval | null;
  /** Against the control; null for the control itself, without a goal, or when the control's rate is 0. */
  lift: number | null;
  liftInterval: Interval | null;
  pValue: number | null;
}

export interface FlowResults {
  flowId: string;
  goal: Goal | null;
  /** Entries counted were made in [from, to); `from` null: since the flow's first entry, and none yet. */
  range: { from: string | null; to: string };
  method: typeof RESULTS_METHOD;
  control: string | null;
  variants: VariantResult[];
  /** Per UTC day and variant: contacts whose first entry, and first conversion, fell on that day. */
  daily: Array<{ day: string; variant: string | null; entered: number; sent: number; converted: number | null }>;
}

export function flowResults(flow: FlowDefinition, days: readonly ResultsDay[], range: { fromMs: number | null; toMs: number }): FlowResults {
  const goal = flow.goal ?? null;
  const groups = new Map<string | null, { holdout: boolean; entered: number; sent: number; converted: number }>();
  const defined = flow.experiment?.variants ?? [];
  if (defined.length === 0) groups.set(null, { holdout: false, entered: 0, sent: 0, converted: 0 });
  for (const v of defined) groups.set(v.label, { holdout: v.holdout === true, entered: 0, sent: 0, converted: 0 });
  // Variants the definition no longer names (it was replaced) still had entries: shown after the others.
  const formerly = [...new Set(days.map((d) => d.variant))].filter((v) => !groups.has(v)).sort((a, b) => (a ?? '').localeCompare(b ?? ''));
  for (const v of formerly) groups.set(v, { holdout: days.some((d) => d.variant === v && d.holdout), entered: 0, sent: 0, converted: 0 });
  let firstEntry: number | null = null;
  for (const d of days) {
    const group = groups.get(d.variant)!;
    group.entered += d.entered;
    group.sent += d.sent;
    group.converted += d.converted;
    if (d.firstEntryMs !== null && (firstEntry === null || d.firstEntryMs < firstEntry)) firstEntry = d.firstEntryMs;
  }

  const controlLabel = defined.find((v) => v.holdout)?.label ?? (defined.length > 0 ? defined[0]!.label : null);
  const control = groups.get(controlLabel)!;
  const variants = [...groups].map(([variant, g]): VariantResult => {
    const isControl = variant === controlLabel;
    const counts = { entered: g.entered, converted: g.converted };
    const compare = goal !== null && !isControl;
    return {
      variant,
      holdout: g.holdout,
      control: isControl,
      entered: g.entered,
      sent: g.sent,
      converted: goal ? g.converted : null,
      rate: goal ? rate(g.converted, g.entered) : null,
      rateInterval: goal ? wilson(g.converted, g.entered) : null,
      lift: compare ? lift(counts, control) : null,
      liftInterval: compare ? liftInterval(counts, control) : null,
      pValue: compare ? pValue(counts, control) : null,
    };
  });
  const from = range.fromMs ?? firstEntry;
  return {
    flowId: flow.id,
    goal,
    range: { from: from === null ? null : new Date(from).toISOString(), to: new Date(range.toMs).toISOString() },
    method: RESULTS_METHOD,
    control: controlLabel,
    variants,
    daily: days.map((d) => ({ day: new Date(d.day).toISOString().slice(0, 10), variant: d.variant, entered: d.entered, sent: d.sent, converted: goal ? d.converted : null })),
  };
}

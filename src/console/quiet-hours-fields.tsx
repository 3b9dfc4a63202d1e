/** Quiet hours as the flow form and the org settings edit them: off, or a window and the zone it is read in. */
import type { ReactNode } from 'react';
import type { QuietHours } from '../generated/org';

const ZONES: string[] = (Intl as { supportedValuesOf?: (key: string) => string[] }).supportedValuesOf?.('timeZone') ?? ['UTC'];

export function QuietHoursFields({ value, onChange, label }: { value: QuietHours | undefined; onChange(value: QuietHours | undefined): void; label: string }): ReactNode {
  return (
    <>
      <label className="inline">
        <input type="checkbox" checked={value !== undefined} onChange={(e) => onChange(e.target.checked ? { start: '21:00', end: '08:00', timeZone: 'contact' } : undefined)} /> {label}
      </label>
      {value ? (
        <>
          <label className="inline">
            From <input type="time" value={value.start} onChange={(e) => onChange({ ...value, start: e.target.value })} required />
          </label>
          <label className="inline">
            To <input type="time" value={value.end} onChange={(e) => onChange({ ...value, end: e.target.value })} required />
          </label>
          <label className="inline">
            In the time zone <input list="quiet-hours-zones" value={value.timeZone} onChange={(e) => onChange({ ...value, timeZone: e.target.value })} required />
          </label>
        </>
      ) : null}
      <datalist id="quiet-hours-zones">
        <option value="contact">each contact's own (their timezone field, else the org's)</option>
        {ZONES.map((zone) => (
          <option key={zone} value={zone} />
        ))}
      </datalist>
    </>
  );
}

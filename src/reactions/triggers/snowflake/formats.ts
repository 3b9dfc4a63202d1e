/**
 * Snowflake date and time format strings (TO_CHAR, TO_DATE, TO_TIMESTAMP) as strftime/strptime formats.
 * Unknown elements are refused rather than guessed; text in double quotes is kept as it is.
 */
import { SqlRefused } from '../sql-tree.js';

/** Longest element first, so that YYYY is not read as YY twice. */
const ELEMENTS: Array<[string, string]> = [
  ['YYYY', '%Y'], ['YY', '%y'], ['MMMM', '%B'], ['MON', '%b'], ['MM', '%m'], ['DY', '%a'], ['DD', '%d'],
  ['HH24', '%H'], ['HH12', '%I'], ['HH', '%H'], ['AM', '%p'], ['PM', '%p'], ['MI', '%M'], ['SS', '%S'],
  ['FF9', '%n'], ['FF6', '%f'], ['FF3', '%g'], ['FF', '%f'], ['TZH:TZM', '%z'], ['TZHTZM', '%z'],
];

export function strftimeFormat(format: string): string {
  let out = '';
  let i = 0;
  while (i < format.length) {
    const ch = format[i]!;
    if (ch === '"') {
      const end = format.indexOf('"', i + 1);
      out += format.slice(i + 1, end === -1 ? undefined : end).replaceAll('%', '%%');
      i = end === -1 ? format.length : end + 1;
      continue;
    }
    const element = ELEMENTS.find(([name]) => format.slice(i, i + name.length).toUpperCase() === name);
    if (element) {
      out += element[1];
      i += element[0].length;
      continue;
    }
    if (/[A-Za-z]/.test(ch)) {
      throw new SqlRefused(`the format element at "${format.slice(i)}" in '${format}' is not translated: use YYYY, MM, MON, MMMM, DD, DY, HH24, HH12, AM, MI, SS, FF3, FF6, TZH:TZM and "text"`);
    }
    out += ch === '%' ? '%%' : ch;
    i++;
  }
  return out;
}

/**
 * FHIR dates as half-open time ranges `[low, high)`: a value covers every instant its
 * precision allows, so `2020` is the whole year and `2020-01-05T10:00` is one minute.
 * Values without a time zone are taken as UTC (the server has no better local time).
 */

/** A range as ISO timestamps; `null` = unbounded on that side. */
export interface DateRange {
  low: string | null;
  high: string | null;
}

const DATE_PATTERN =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/;

/**
 * Parses a FHIR date, dateTime or instant (also the partial forms search allows, such as
 * `2020-01-05T10:00`) into its range. Returns undefined for anything else, including
 * impossible calendar dates like `2021-02-30`.
 */
export function parseDateRange(text: string): DateRange | undefined {
  const m = DATE_PATTERN.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const year = Number(y);
  const month = mo === undefined ? 1 : Number(mo);
  const day = d === undefined ? 1 : Number(d);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (h === undefined) {
    const low = utc(year, month - 1, day);
    const high =
      mo === undefined ? utc(year + 1, 0, 1) : d === undefined ? utc(year, month, 1) : utc(year, month - 1, day + 1);
    return { low: iso(low), high: iso(high) };
  }
  const hour = Number(h);
  const minute = Number(mi);
  const second = s === undefined ? 0 : Number(s);
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const offset = zoneOffsetMinutes(zone);
  if (offset === undefined) return undefined;
  const millis = frac === undefined ? 0 : Number(frac.slice(0, 3).padEnd(3, '0'));
  const low = utc(year, month - 1, day, hour, minute, second, millis) - offset * 60_000;
  const step = s === undefined ? 60_000 : frac === undefined ? 1000 : 1;
  return { low: iso(low), high: iso(low + step) };
}

/** `Z` → 0, `+02:00` → 120, absent → 0 (UTC); undefined when out of range. */
function zoneOffsetMinutes(zone: string | undefined): number | undefined {
  if (!zone || zone === 'Z') return 0;
  const hours = Number(zone.slice(1, 3));
  const minutes = Number(zone.slice(4, 6));
  if (hours > 14 || minutes > 59) return undefined;
  return (zone[0] === '-' ? -1 : 1) * (hours * 60 + minutes);
}

function daysIn(year: number, month: number): number {
  return new Date(utc(year, month, 1) - 86_400_000).getUTCDate();
}

/** Date.UTC without its two-digit-year quirk (years 0–99 would become 1900–1999). */
function utc(year: number, month: number, day: number, hour = 0, minute = 0, second = 0, ms = 0): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime();
}

/** ISO text PostgreSQL accepts; beyond year 9999 the bound is open (`infinity`). */
function iso(time: number): string {
  const date = new Date(time);
  const year = date.getUTCFullYear();
  if (year > 9999) return 'infinity';
  if (year < 1) return '-infinity';
  return date.toISOString();
}

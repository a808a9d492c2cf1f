/** An ISO 8601 date or date-time: `2017-06-12`, `2017-06-12T00:00:00Z`, `2017-06-12 08:30+02:00`. */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * §4.6 timestamps: a point in time is an RFC 3339 / ISO 8601 string or an integer count of milliseconds since the
 * Unix epoch. This server accepts both wherever a `date` field's value is given (metadata on write, filter values,
 * §8), so what a write stores is exactly what a filter can compare with it.
 */
export function isTimestamp(value: unknown): boolean {
  if (typeof value === 'string') return ISO_8601.test(value) && !Number.isNaN(Date.parse(value));
  return Number.isSafeInteger(value);
}

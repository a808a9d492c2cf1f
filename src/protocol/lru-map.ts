/**
 * Least-recently-used order kept in a Map's own insertion order: an entry re-inserted on each use moves to the end,
 * so iteration (and `keys().next()`) starts at the least recently used. Sessions, dedup memory and rate-limit
 * buckets are bounded this way (§15.5): what goes first past a bound is what was used longest ago.
 */
export function setMostRecent<K, V>(map: Map<K, V>, key: K, value: V): Map<K, V> {
  map.delete(key);
  return map.set(key, value);
}

/** Rows read per page when streaming the store (a page of chunks with their vectors is ~2.5 MB). */
export const PAGE_ROWS = 1024;

/**
 * The rows of a query read a page at a time by its key (`page(last)`: the rows after the last one read, `first`
 * before any): no statement stays open between pages, so the connection serves other reads meanwhile.
 */
export function* paged<Key, Row extends Key>(page: (last: Key) => Row[], first: Key): Generator<Row> {
  for (let last = first; ;) {
    const rows = page(last);
    yield* rows;
    if (rows.length < PAGE_ROWS) return;
    last = rows[rows.length - 1]!;
  }
}

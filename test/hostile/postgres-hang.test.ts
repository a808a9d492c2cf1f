import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAS_POSTGRES, PostgresCluster } from '../helpers/postgres.js';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { request, type Frame } from '../helpers/wire.js';

/**
 * A replica (docs/replicas.md) whose PostgreSQL store of record hangs — every postgres process SIGSTOPped, the
 * replica's pool warm, its connections open — must still answer a write by its deadline (§13.1), and the answer must
 * tell the truth about whether the write was applied (§12): -32014 is "nothing applied" unless it says otherwise.
 */
let cluster: PostgresCluster;
let replica: ServerProcess;

/** The postmaster and its children (the backends serving the pool's open connections). */
function postgresPids(): number[] {
  const postmaster = Number(readFileSync(join(cluster.dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
    .split('\n')
    .map((line) => Number(line.trim()))
    .filter((pid) => pid > 0);
  return [postmaster, ...children];
}
const signal = (pids: readonly number[], name: NodeJS.Signals) =>
  pids.forEach((pid) => {
    try {
      process.kill(pid, name);
    } catch {
      // Gone already.
    }
  });

async function call(method: string, params: object): Promise<Frame> {
  const response = await fetch(`${replica.origin}/rcp/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(request(1, method, params)),
  });
  return (await response.json()) as Frame;
}
/** The client backends serving connections now (the replica's pool among them). */
const backends = (): Set<string> =>
  new Set(
    cluster
      .sql("SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
      .split('\n')
      .filter((pid) => pid !== ''),
  );
const applied = (id: string) => Number(cluster.sql(`SELECT count(*) FROM rcp_documents WHERE id = '${id}'::bytea`));

describe.skipIf(!HAS_POSTGRES)('a replica whose database hangs', () => {
  beforeAll(async () => {
    cluster = await PostgresCluster.create();
    replica = await startHttpProcess(
      ['serve', '--http', '127.0.0.1:0', '--data', mkdtempSync(join(tmpdir(), 'rcp-'))],
      {
        RCP_STORE_URL: cluster.url,
        RCP_STORE_POLL_MS: '200',
      },
    );
    // Warm: the pool holds open connections to live backends.
    const warm = await call('index/add', { documents: [{ id: 'warm', text: 'a warm pool' }] });
    expect(warm.error).toBeUndefined();
  }, 120_000);
  afterAll(async () => {
    await replica?.stop();
    cluster?.destroy();
  });

  it('answers index/add by its deadline, and a -32014 means nothing was applied unless it says it may have been', async () => {
    const before = backends();
    const stopped = postgresPids();
    let answer: Frame;
    let tookMs: number;
    try {
      signal(stopped, 'SIGSTOP');
      const started = performance.now();
      answer = await Promise.race([
        call('index/add', {
          documents: [{ id: 'hung', text: 'written while the database hangs' }],
          _meta: { deadlineMs: 2_000 },
        }),
        new Promise<Frame>((resolve) =>
          setTimeout(() => resolve({ error: { code: 0, message: 'no answer in 20 s' } }), 20_000),
        ),
      ]);
      tookMs = performance.now() - started;
    } finally {
      signal(stopped, 'SIGCONT');
    }
    // Before: no answer until the database woke (past 20 s), and then the write was applied.
    expect(tookMs, JSON.stringify(answer)).toBeLessThan(10_000);
    // The database is back. A write given up on had its connection dropped: once that backend has gone, what its
    // transaction did is settled (with no COMMIT, rolled back). One given up on before any connection came free (the
    // pool's were busy, a new one could not be made) had none, and sent nothing.
    const error = answer.error as { code: number; message: string } | undefined;
    const dropped = () => [...before].some((pid) => !backends().has(pid));
    if (error !== undefined && !/no connection to the store of record came free/.test(error.message)) {
      for (let i = 0; i < 400 && !dropped(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(dropped(), JSON.stringify(answer)).toBe(true);
    }
    if (error === undefined) expect(applied('hung')).toBe(1);
    else {
      expect(error.code, error.message).toBe(-32014);
      if (!/may have been applied/.test(error.message)) expect(applied('hung'), error.message).toBe(0);
    }
    // And the replica writes again, on a pool that dropped the hung connection.
    const after = await call('index/add', { documents: [{ id: 'after', text: 'written once it is back' }] });
    expect(after.error).toBeUndefined();
    expect(applied('after')).toBe(1);
  }, 120_000);
});

import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes.js';

/**
 * A real PostgreSQL cluster for a test (Debian's postgresql, which .ci/run installs): its own data dir under the
 * temporary dir, its own loopback port. PostgreSQL refuses to run as root, so as root each tool runs as `postgres`.
 */
const BIN = (() => {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  return versions.map((version) => join(root, version, 'bin')).find((dir) => existsSync(join(dir, 'initdb')));
})();

export const HAS_POSTGRES = BIN !== undefined;
const AS_ROOT = process.getuid?.() === 0;

function tool(name: string, args: readonly string[]): string {
  const command = join(BIN!, name);
  const [file, argv] = AS_ROOT ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
  return execFileSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function ownedDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (AS_ROOT) {
    const ids = (name: string) => Number(execFileSync('id', [name, 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, ids('-u'), ids('-g'));
  }
  return dir;
}

export class PostgresCluster {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  /** `postgres://` URL of the `postgres` database as the trusted `rcp` superuser. */
  get url(): string {
    return `postgres://rcp@127.0.0.1:${this.port}/postgres`;
  }

  /** initdb and start a fresh cluster; `settings`, lines of postgresql.conf beside the defaults here. */
  static async create(settings: readonly string[] = []): Promise<PostgresCluster> {
    const dir = join(ownedDir('rcp-pg-'), 'data');
    tool('initdb', ['-D', dir, '-U', 'rcp', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
    const cluster = new PostgresCluster(dir, await freePort());
    cluster.#configure(settings);
    cluster.#startOrDestroy();
    return cluster;
  }

  #configure(extra: readonly string[] = []): void {
    const settings = [
      ...extra,
      `port = ${this.port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${this.dir}'`,
      'fsync = off',
      'wal_level = replica',
      'max_wal_senders = 4',
      'hot_standby = on',
    ];
    writeFileSync(join(this.dir, 'postgresql.auto.conf'), `${settings.join('\n')}\n`, { flag: 'a' });
  }

  /** Starts the cluster and waits (pg_ctl -w) until it accepts connections, within 90 s. */
  start(): void {
    tool('pg_ctl', ['-D', this.dir, '-w', '-t', '90', '-l', join(this.dir, '..', 'log'), 'start']);
  }

  /** A cluster that does not come up is stopped and removed: pg_ctl giving up leaves the server it started running. */
  #startOrDestroy(): void {
    try {
      this.start();
    } catch (error) {
      this.destroy();
      throw error;
    }
  }

  /** A clean (fast) shutdown: connections are cut, the cluster is consistent. */
  stop(): void {
    tool('pg_ctl', ['-D', this.dir, '-w', '-m', 'fast', 'stop']);
  }

  /** A hot standby of this cluster on a port of its own, streaming from it (pg_basebackup -R). */
  async standby(): Promise<PostgresCluster> {
    const dir = join(ownedDir('rcp-pg-standby-'), 'data');
    tool('pg_basebackup', ['-h', '127.0.0.1', '-p', String(this.port), '-U', 'rcp', '-D', dir, '-R', '-X', 'stream']);
    const standby = new PostgresCluster(dir, await freePort());
    standby.#configure();
    standby.#startOrDestroy();
    return standby;
  }

  /** Whether this standby has replayed everything its primary has sent (so a promotion loses nothing). */
  caughtUpWith(primary: PostgresCluster): boolean {
    return primary.sql('SELECT pg_current_wal_lsn()') === this.sql('SELECT pg_last_wal_replay_lsn()');
  }

  promote(): void {
    tool('pg_ctl', ['-D', this.dir, '-w', 'promote']);
  }

  /** Stops the cluster (immediately) and removes its files. */
  destroy(): void {
    try {
      tool('pg_ctl', ['-D', this.dir, '-m', 'immediate', 'stop']);
    } catch {
      // Not running.
    }
    rmSync(join(this.dir, '..'), { recursive: true, force: true });
  }

  /** One SQL statement's rows, tab-separated (psql -At). */
  sql(query: string): string {
    return tool('psql', [
      '-h',
      '127.0.0.1',
      '-p',
      String(this.port),
      '-U',
      'rcp',
      '-d',
      'postgres',
      '-Atc',
      query,
    ]).trim();
  }
}

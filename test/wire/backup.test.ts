import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, track, until } from '../helpers/children.js';
import { HAS_POSTGRES, PostgresCluster } from '../helpers/postgres.js';
import { callHttp as call, startHttpProcess, type ServerProcess } from '../helpers/processes.js';

/**
 * `rcp-server backup` and `rcp-server restore` (docs/corpus.md, "Backup and restore"), as real processes over real data
 * dirs: a backup taken while a server writes restores to a corpus that answers at the backup's indexVersion (§7.7.1)
 * with the hits it answered then, starting from the saved indexes in the archive; a restore refuses, and leaves its
 * dir as it was, whatever the archive is not.
 */
const WORK = mkdtempSync(join(tmpdir(), 'rcp-backup-'));
afterAll(() => rmSync(WORK, { recursive: true, force: true }));

type Hit = { id: string; score: number };

const documents = (prefix: string, n: number, words: string) =>
  Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, text: `${words} ${prefix} number ${i} of ${n}` }));

const add = async (origin: string, docs: object[]) =>
  Number((await call(origin, 'index/add', { documents: docs })).indexVersion);

const QUERY = 'mitochondria protein folding';
const retrieveBoth = async (origin: string) =>
  Promise.all(
    (['sparse', 'hybrid'] as const).map(async (mode) => {
      const result = await call(origin, 'retrieve', { query: QUERY, k: 8, mode, includeText: false });
      const hits = (result.hits as Hit[]).map(({ id, score }) => ({ id, score }));
      return { indexVersion: result.indexVersion, hits };
    }),
  );

const manifestOf = (archive: string) =>
  JSON.parse(execFileSync('tar', ['xOf', archive, 'rcp-backup.json'], { encoding: 'utf8' })) as {
    seq: number;
    indexesSeq: number;
    files: { name: string }[];
  };

describe('backup and restore of a data dir', () => {
  const source = join(WORK, 'source');
  let server: ServerProcess;
  /** The seq of each write before the flood. */
  const written: number[] = [];

  beforeAll(async () => {
    server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', source]);
    written.push(await add(server.origin, documents('base', 60, 'protein folding in the cell')));
    // Stopped and started again: the first process saves its indexes at its stop, so the archive has some to carry.
    await server.stop();
    server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', source]);
    written.push(await add(server.origin, documents('mito', 5, 'mitochondria membranes')));
  });
  afterAll(() => server.stop());

  it('a backup taken while the server runs restores to the same hits at the same indexVersion (§7.7.1), from its saved indexes', async () => {
    const before = await retrieveBoth(server.origin);
    const archive = join(WORK, 'one.tar');
    const backup = await runCommand(['backup', '--data', source, '--to', archive]);
    expect(backup.code, backup.stderr).toBe(0);
    const manifest = manifestOf(archive);
    expect(manifest.seq).toBe(written[1]);
    // The saved indexes are those of the first process's stop; the write after them is replayed at start.
    expect(manifest.indexesSeq).toBe(written[0]);
    expect(backup.stdout).toContain(`indexVersion ${manifest.seq}, saved indexes at ${manifest.indexesSeq}`);
    // Written after the backup: the restored corpus must not have it.
    await add(server.origin, documents('late', 3, 'mitochondria protein folding mitochondria'));

    const restored = join(WORK, 'restored');
    const restore = await runCommand(['restore', archive, '--data', restored]);
    expect(restore.code, restore.stderr).toBe(0);
    const copy = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', restored]);
    try {
      expect(await retrieveBoth(copy.origin)).toEqual(before);
      expect(copy.stderr()).toContain(`"denseIndex":"loaded at seq ${manifest.indexesSeq}"`);
      expect(copy.stderr()).toContain(`"lexicalIndex":"loaded at seq ${manifest.indexesSeq}"`);
    } finally {
      await copy.stop();
    }
  });

  it('a backup taken during a flood of writes is of one write: the restored corpus holds exactly the documents written through its seq', async () => {
    let flooding = true;
    const floods: number[] = [];
    const flood = (async () => {
      for (let round = 0; flooding; round++)
        floods.push(await add(server.origin, documents(`flood${round}-`, 4, `flood text round${round}x`)));
    })();
    await until(() => floods.length > 2, 'the flood to write');
    const archive = join(WORK, 'flood.tar');
    const backup = await runCommand(['backup', '--data', source, '--to', archive]);
    flooding = false;
    await flood;
    expect(backup.code, backup.stderr).toBe(0);
    const { seq } = manifestOf(archive);
    expect(floods.at(-1)).toBeGreaterThan(seq); // the flood went on past the backup
    const restored = join(WORK, 'flooded');
    expect((await runCommand(['restore', archive, '--data', restored])).code).toBe(0);
    const copy = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', restored]);
    try {
      // The last write of the flood through the backup's seq is served there, the first after it is not.
      const through = floods.filter((write) => write <= seq).length - 1;
      const served = async (round: number) =>
        (await call(copy.origin, 'retrieve', { query: `round${round}x`, k: 8, mode: 'sparse' })) as {
          indexVersion: string;
          hits: Hit[];
        };
      const last = await served(through);
      expect(Number(last.indexVersion)).toBe(seq);
      expect(last.hits.map((hit) => hit.id).sort()).toEqual([0, 1, 2, 3].map((i) => `flood${through}-${i}#0`));
      expect((await served(through + 1)).hits).toEqual([]);
    } finally {
      await copy.stop();
    }
  });

  it('a backup killed with SIGKILL mid-way leaves the serving corpus as it was: same answers, writes taken', async () => {
    const before = await retrieveBoth(server.origin);
    const out = mkdtempSync(join(WORK, 'killed-'));
    const child = track(
      spawn(process.execPath, ['bin/rcp-server.js', 'backup', '--data', source, '--to', join(out, 'k.tar')], {
        cwd: fileURLToPath(new URL('../..', import.meta.url)),
      }),
    );
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_, signal) => resolve(signal)));
    // Killed the moment its copy of the store begins beside the archive (an event, polled on every turn).
    let done = false;
    void exited.then(() => (done = true));
    while (!done && !readdirSync(out).some((name) => name.startsWith(`.rcp-backup-${child.pid}-`))) {
      await new Promise(setImmediate);
    }
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    expect(readdirSync(source).filter((name) => name.includes('rcp-backup'))).toEqual([]);
    expect(await retrieveBoth(server.origin)).toEqual(before);
    const seq = await add(server.origin, documents('after-kill', 2, 'written after a killed backup'));
    expect((await call(server.origin, 'retrieve', { query: 'killed backup', k: 1, mode: 'sparse' })).indexVersion).toBe(
      String(seq),
    );
  });

  it('a saved index that does not verify is passed over, named; the restored corpus builds its indexes from the store', async () => {
    const dir = join(WORK, 'damaged-source');
    const seed = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir]);
    await add(seed.origin, documents('d', 10, 'protein folding'));
    const before = (await retrieveBoth(seed.origin))[0];
    await seed.stop();
    const index = readdirSync(dir).find((name) => name.endsWith('.hnsw'))!;
    const bytes = readFileSync(join(dir, index));
    bytes[bytes.length - 10]! ^= 0xff;
    writeFileSync(join(dir, index), bytes);

    const archive = join(WORK, 'damaged.tar');
    const backup = await runCommand(['backup', '--data', dir, '--to', archive]);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toMatch(new RegExp(`passed over ${index}: .*SHA-256 differs`));
    expect(manifestOf(archive).indexesSeq).toBe(0);
    expect(manifestOf(archive).files.map((file) => file.name)).toEqual(['corpus.sqlite']);
    const restored = join(WORK, 'rebuilt');
    expect((await runCommand(['restore', archive, '--data', restored])).code).toBe(0);
    const copy = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', restored]);
    try {
      expect((await retrieveBoth(copy.origin))[0]).toEqual(before);
      expect(copy.stderr()).toContain('"denseIndex":"rebuilt"');
    } finally {
      await copy.stop();
    }
  });

  it('backup of a dir that holds no corpus is exit 2, and writes nothing', async () => {
    const empty = join(WORK, 'no-corpus');
    mkdirSync(empty);
    const run = await runCommand(['backup', '--data', empty, '--to', join(WORK, 'none.tar')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/holds no corpus/);
    expect(existsSync(join(WORK, 'none.tar'))).toBe(false);
  });
});

describe("backup writes only where it may, only the dir's own files", () => {
  const dir = join(WORK, 'guarded');
  let store: Buffer;

  beforeAll(async () => {
    const seed = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir]);
    await add(seed.origin, documents('g', 5, 'guarded corpus'));
    await seed.stop();
    store = readFileSync(join(dir, 'corpus.sqlite'));
  });

  /** A backup to `to`: exit 2 with `reason`, and the data dir's store as it was. */
  async function refusedTo(to: string, reason: RegExp, data = dir): Promise<void> {
    const run = await runCommand(['backup', '--data', data, '--to', to]);
    expect(run.code, run.stdout).toBe(2);
    expect(run.stderr).toMatch(reason);
    expect(run.stderr).not.toMatch(/\n\s+at /); // one line, no stack
    expect(readFileSync(join(dir, 'corpus.sqlite')).equals(store)).toBe(true);
  }

  it('never over the store, its lock or anything in the data dir, nor over a file that is not a backup', async () => {
    await refusedTo(join(dir, 'corpus.sqlite'), /is inside the data dir/);
    await refusedTo(join(dir, 'owner.lock'), /is inside the data dir/);
    await refusedTo(join(dir, 'new.tar'), /is inside the data dir/);
    const other = join(WORK, 'not-a-backup.sqlite');
    writeFileSync(other, "SQLite format 3\0 someone else's data");
    await refusedTo(other, /exists and is not an rcp-server backup: nothing was written over it/);
    expect(readFileSync(other, 'utf8')).toMatch(/someone else's data/);
    mkdirSync(join(WORK, 'a-folder'));
    await refusedTo(join(WORK, 'a-folder'), /exists and is not an rcp-server backup/);
    await refusedTo(join(WORK, 'no', 'such', 'folder.tar'), /its folder .* does not exist/);
    await refusedTo(join(WORK, 'x.tar'), /stopped: .*not a directory|holds no corpus/, join(dir, 'corpus.sqlite'));
  });

  it('replaces its own earlier backup, and removes what a killed backup left beside it', async () => {
    const archive = join(WORK, 'nightly.tar');
    expect((await runCommand(['backup', '--data', dir, '--to', archive])).code).toBe(0);
    // What a backup killed with SIGKILL leaves: its store copy and its partial archive, named for its process.
    const gone = 2 ** 22 + 17; // above Linux's largest pid: no process has it
    mkdirSync(join(WORK, `.rcp-backup-${gone}-0badf00d`));
    writeFileSync(join(WORK, `.rcp-backup-${gone}-0badf00d.tmp`), 'partial');
    expect((await runCommand(['backup', '--data', dir, '--to', archive])).code).toBe(0);
    expect(readdirSync(WORK).filter((name) => name.startsWith('.rcp-backup-'))).toEqual([]);
    expect(manifestOf(archive).files.map((file) => file.name)).toContain('corpus.sqlite');
  });

  it('a saved file that is a link or a FIFO is not followed, nor waited on', async () => {
    const copy = join(WORK, 'linked');
    execFileSync('cp', ['-a', dir, copy]);
    const companion = readdirSync(copy).find((name) => name.endsWith('.bm25'))!;
    writeFileSync(join(WORK, 'secret.txt'), 'TOP SECRET');
    rmSync(join(copy, companion));
    symlinkSync(join(WORK, 'secret.txt'), join(copy, companion));
    const linked = join(WORK, 'linked.tar');
    expect((await runCommand(['backup', '--data', copy, '--to', linked])).code).toBe(0);
    expect(readFileSync(linked).includes('TOP SECRET')).toBe(false);
    rmSync(join(copy, companion));
    execFileSync('mkfifo', [join(copy, companion)]);
    const run = await runCommand(['backup', '--data', copy, '--to', join(WORK, 'fifo.tar')]);
    expect(run.code, run.stderr).toBe(0);
    expect(manifestOf(join(WORK, 'fifo.tar')).files.map((file) => file.name)).not.toContain(companion);
  });
});

describe('restore refuses what is not a whole backup, and leaves the dir as it was', () => {
  let archive: string;
  const unpacked = join(WORK, 'unpacked');

  beforeAll(async () => {
    const dir = join(WORK, 'small');
    const seed = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir]);
    await add(seed.origin, documents('s', 5, 'small corpus'));
    await seed.stop();
    archive = join(WORK, 'small.tar');
    expect((await runCommand(['backup', '--data', dir, '--to', archive])).code).toBe(0);
    mkdirSync(unpacked);
    execFileSync('tar', ['xf', archive, '-C', unpacked]);
  });

  /** Restores `file` into a new dir: exit 2 with `reason`, and no corpus there afterwards. */
  async function refused(file: string, reason: RegExp): Promise<void> {
    const into = mkdtempSync(join(WORK, 'into-'));
    const run = await runCommand(['restore', file, '--data', into]);
    expect(run.code, run.stdout).toBe(2);
    expect(run.stderr).toMatch(reason);
    expect(readdirSync(into).filter((name) => name !== 'owner.lock')).toEqual([]);
  }

  /** An archive made by tar(1) from `entries` (names relative to `from`), with extra tar options. */
  function tarOf(name: string, from: string, entries: string[], options: string[] = []): string {
    const file = join(WORK, name);
    execFileSync('tar', ['cf', file, ...options, '-C', from, ...entries]);
    return file;
  }

  it('an archive cut short', async () => {
    const bytes = readFileSync(archive);
    writeFileSync(join(WORK, 'cut.tar'), bytes.subarray(0, Math.floor(bytes.length / 2)));
    await refused(join(WORK, 'cut.tar'), /not a whole backup/);
  });

  it('a byte of the store changed in the archive', async () => {
    const bytes = readFileSync(archive);
    bytes[512 + 4096 + 100]! ^= 0x01; // inside corpus.sqlite, the first entry (after its 512-byte header)
    writeFileSync(join(WORK, 'flipped.tar'), bytes);
    await refused(join(WORK, 'flipped.tar'), /corpus\.sqlite is not what its manifest says/);
  });

  it('a file the manifest does not name, or one it names missing', async () => {
    const names = readdirSync(unpacked);
    writeFileSync(join(unpacked, 'dense-999-00.sum'), '{}');
    await refused(
      tarOf('extra.tar', unpacked, [...names, 'dense-999-00.sum']),
      /holds dense-999-00\.sum, which its manifest does not name/,
    );
    rmSync(join(unpacked, 'dense-999-00.sum'));
    const without = names.filter((name) => !name.endsWith('.bm25'));
    await refused(tarOf('missing.tar', unpacked, without), /lacks dense-.*\.bm25, which its manifest names/);
    await refused(tarOf('bare.tar', unpacked, ['corpus.sqlite']), /holds no rcp-backup\.json/);
  });

  it('a path out of the dir, a link, a folder: nothing is written outside', async () => {
    const outside = join(WORK, 'outside');
    mkdirSync(join(outside, 'deep'), { recursive: true });
    writeFileSync(join(outside, 'evil'), 'x');
    await refused(
      tarOf(
        'escape.tar',
        join(outside, 'deep'),
        ['../evil', ...readdirSync(unpacked).map((name) => `../../unpacked/${name}`)],
        ['-P'],
      ),
      /holds file '\.\.\/evil', which no backup holds/,
    );
    symlinkSync('/etc/passwd', join(outside, 'corpus.sqlite'));
    await refused(tarOf('link.tar', outside, ['corpus.sqlite']), /holds symlink 'corpus\.sqlite'/);
    await refused(tarOf('folder.tar', outside, ['deep']), /holds directory 'deep\/?'/);
  });

  it('a file that is no archive at all', async () => {
    writeFileSync(join(WORK, 'noise.tar'), Buffer.alloc(4096, 7));
    await refused(join(WORK, 'noise.tar'), /not a whole backup archive/);
  });

  it('a manifest that lies about the saved indexes or the store; a store that is no rcp-server store', async () => {
    const manifest = JSON.parse(readFileSync(join(unpacked, 'rcp-backup.json'), 'utf8')) as Record<string, unknown>;
    const names = readdirSync(unpacked);
    const lying = (name: string, change: Record<string, unknown>) => {
      writeFileSync(join(unpacked, 'rcp-backup.json'), JSON.stringify({ ...manifest, ...change }));
      return tarOf(name, unpacked, names);
    };
    await refused(lying('seq.tar', { indexesSeq: 7 }), /its saved indexes are at \d+, its manifest says 7/);
    await refused(
      lying('id.tar', { store: 'another-store' }),
      /its store's store is [0-9a-f-]+, its manifest says another-store/,
    );
    await refused(
      lying('encoder.tar', { encoder: 'another/model#1' }),
      /its store's encoder is .*, its manifest says another\/model#1/,
    );
    writeFileSync(join(unpacked, 'rcp-backup.json'), JSON.stringify(manifest));
  });

  it('a FIFO, a device, a folder as FILE: refused at once, and a refused restore leaves no dir behind', async () => {
    const run = await runCommand(['restore', '/dev/zero', '--data', join(WORK, 'zero')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/\/dev\/zero is not a file/);
    const nested = join(WORK, 'made', 'by', 'restore');
    expect((await runCommand(['restore', join(WORK, 'noise.tar'), '--data', nested])).code).toBe(2);
    expect(existsSync(join(WORK, 'made'))).toBe(false);
  });

  it('a dir that holds a corpus is never written over', async () => {
    const into = join(WORK, 'occupied');
    expect((await runCommand(['restore', archive, '--data', into])).code).toBe(0);
    const before = readFileSync(join(into, 'corpus.sqlite'));
    const again = await runCommand(['restore', archive, '--data', into]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/is not empty \(it holds corpus\.sqlite\)/);
    expect(readFileSync(join(into, 'corpus.sqlite')).equals(before)).toBe(true);
  });
});

describe.skipIf(!HAS_POSTGRES)('a new replica starts from a backup of another, not from the log', () => {
  let cluster: PostgresCluster;
  const replicas: ServerProcess[] = [];
  const env = () => ({ RCP_STORE_URL: cluster.url, RCP_STORE_POLL_MS: '200', RCP_INDEX_SAVE_INTERVAL_MS: '1000' });

  beforeAll(async () => {
    cluster = await PostgresCluster.create();
  });
  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.stop()));
    cluster?.destroy();
  });

  it('restored into an empty dir, it loads the saved indexes, replays what came after, and follows the store', async () => {
    const first = join(WORK, 'replica-a');
    replicas.push(await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', first], env()));
    const a = replicas[0]!;
    const saved = await add(a.origin, documents('r', 40, 'protein folding replicas'));
    await until(
      () => readdirSync(first).some((name) => name.startsWith(`dense-${saved}-`) && name.endsWith('.hnsw')),
      'replica A to save its indexes',
    );
    const after = await add(a.origin, documents('q', 3, 'mitochondria after the save'));

    const archive = join(WORK, 'replica.tar');
    const backup = await runCommand(['backup', '--data', first, '--to', archive]);
    expect(backup.code, backup.stderr).toBe(0);
    const manifest = manifestOf(archive);
    expect(manifest.seq).toBe(after);
    // A's indexes as saved at or after the write waited for (it saves every second).
    expect(manifest.indexesSeq).toBeGreaterThanOrEqual(saved);
    const later = await add(a.origin, documents('z', 2, 'mitochondria written after the backup'));

    const second = join(WORK, 'replica-b');
    expect((await runCommand(['restore', archive, '--data', second])).code).toBe(0);
    replicas.push(await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', second], env()));
    const b = replicas[1]!;
    expect(b.stderr()).toContain(`"denseIndex":"loaded at seq ${manifest.indexesSeq}"`);
    const onA = await retrieveBoth(a.origin);
    expect(onA[0]!.indexVersion).toBe(String(later));
    expect(await retrieveBoth(b.origin)).toEqual(onA);
    const next = await add(a.origin, documents('n', 1, 'mitochondria protein folding followed'));
    await until(async () => (await retrieveBoth(b.origin))[0]!.indexVersion === String(next), 'replica B to follow');
  });
});

import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RpcError } from '../protocol/errors.js';
import { detectFormat, type DocumentHint } from './detect.js';
import { DocumentRefusal, type DocumentFormat, type ParsedDocument } from './parsed.js';
import type { ParseReply, ParseRequest } from './parser-process.js';
import { readFileBytes } from './read-file.js';

/** The bounds of reading one file (`content.documents` in the configuration). */
export interface ParserLimits {
  /** The largest file read at all. */
  readonly maxFileBytes: number;
  /** The largest text a file may make (the corpus's `index.maxDocumentBytes`). */
  readonly maxTextBytes: number;
  /** The largest metadata, as JSON, a file may give (the corpus's `index.maxMetadataBytes`). */
  readonly maxMetadataBytes: number;
  /** What a compressed format (a .docx) may unpack to. */
  readonly maxUnpackedBytes: number;
  /** The time one file may take. */
  readonly timeoutMs: number;
  /** The memory (resident, in MiB) a parser process may reach while it reads one. */
  readonly maxMemoryMb: number;
  /** Parser processes at once; files past them wait their turn. */
  readonly processes: number;
}

/**
 * Files waiting for a parser at most, per process reading them; past them a parse is refused at once (-32011) rather
 * than queued: a request waiting here holds one of the server's places for work in flight.
 */
const WAITING_PER_PROCESS = 4;

/** How often a busy parser's resident memory is read (from /proc on Linux), and the size of a page there. */

const MEMORY_POLL_MS = 50;
const PAGE_BYTES = 4096;

/**
 * Reads files of the known formats into documents (docs/documents.md), each in a parser process of its own
 * (docs/architecture.md §10): pdf.js, mammoth and the zip and HTML readers run on untrusted bytes, and a file may be
 * made to cost what it likes. A process is killed, and the file refused saying why, when it takes longer than
 * `timeoutMs`, grows past `maxMemoryMb` (resident: buffers a decompressor makes count too) or its caller gives up;
 * the next file gets a fresh process. The server never shares its heap, its event loop or its fate with a parse.
 */
export class DocumentParser {
  readonly #idle: ParserProcess[] = [];
  readonly #waiting: (() => void)[] = [];
  /** The callers with a file being read or waiting (`lane`): one at a time each. */
  readonly #lanes = new Set<string>();
  #running = 0;
  #closed = false;

  constructor(readonly limits: ParserLimits) {}

  /** Files being read now, and files waiting for a parser (the operator's gauge, docs/operations.md). */
  get reading(): number {
    return this.#running;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /** A file's document; a `DocumentRefusal` saying why it is none. */
  async parseFile(path: string, hint: DocumentHint, signal?: AbortSignal): Promise<ParsedDocument> {
    return this.parse(await readFileBytes(path, this.limits.maxFileBytes), hint, signal);
  }

  /**
   * `lane` names the caller (index/add's): a caller's second file while one is read or waits is refused at once
   * (-32011), so that no caller holds more than one of the parser's turns and the server's places with it.
   */
  async parse(bytes: Uint8Array, hint: DocumentHint, signal?: AbortSignal, lane?: string): Promise<ParsedDocument> {
    const { maxFileBytes } = this.limits;
    if (bytes.length > maxFileBytes) {
      throw new DocumentRefusal(`${bytes.length} bytes exceed the ${maxFileBytes}-byte file limit (not read)`);
    }
    const format = detectFormat(bytes, hint);
    if (lane !== undefined) {
      if (this.#lanes.has(lane))
        throw RpcError.rateLimited(1000, 'a document of this caller is being read: one at a time');
      this.#lanes.add(lane);
    }
    try {
      return await this.#read(bytes, format, signal);
    } finally {
      if (lane !== undefined) this.#lanes.delete(lane);
    }
  }

  async #read(bytes: Uint8Array, format: DocumentFormat, signal: AbortSignal | undefined): Promise<ParsedDocument> {
    const { maxTextBytes, maxMetadataBytes, maxUnpackedBytes } = this.limits;
    const parser = await this.#take(signal);
    try {
      const bounds = { maxTextBytes, maxMetadataBytes, maxUnpackedBytes };
      const request = { length: bytes.length, format, bounds };
      return await parser.run(request, bytes, this.limits, signal);
    } finally {
      this.#give(parser);
    }
  }

  close(): void {
    this.#closed = true;
    for (const parser of this.#idle.splice(0)) parser.kill();
  }

  async #take(signal: AbortSignal | undefined): Promise<ParserProcess> {
    while (this.#running >= this.limits.processes) {
      const most = WAITING_PER_PROCESS * this.limits.processes;
      if (this.#waiting.length >= most) throw RpcError.rateLimited(1000, `${most} documents already wait for a parser`);
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          this.#waiting.splice(this.#waiting.indexOf(turn), 1);
          reject(signal?.reason as Error);
        };
        const turn = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        this.#waiting.push(turn);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
    signal?.throwIfAborted();
    this.#running += 1;
    return this.#idle.pop() ?? new ParserProcess(this.limits.maxMemoryMb);
  }

  #give(parser: ParserProcess): void {
    this.#running -= 1;
    if (parser.alive && !this.#closed) this.#idle.push(parser);
    else parser.kill();
    this.#waiting.shift()?.();
  }
}

const ENTRY = new URL(import.meta.url.endsWith('.ts') ? './parser-process.ts' : './parser-process.js', import.meta.url);

/** One parser process: one request at a time, killed past its bounds. */
class ParserProcess {
  readonly #child: ChildProcess;
  #exited = false;

  constructor(maxMemoryMb: number) {
    // Under the TypeScript sources (tests), the process loads tsx's loader first, as a worker does.
    const loader = ENTRY.pathname.endsWith('.ts') ? ['--import', import.meta.resolve('tsx')] : [];
    this.#child = fork(fileURLToPath(ENTRY), [], {
      // Half the bound for the heap: the rest for buffers, code and the collector's slack, so the heap is collected
      // hard before the resident bound is reached, and a heap that cannot fit ends the process by itself.
      execArgv: [...loader, `--max-old-space-size=${Math.floor(maxMemoryMb / 2)}`],
      serialization: 'advanced',
      stdio: ['pipe', 'ignore', 'ignore', 'ipc'],
    });
    this.#child.stdin?.on('error', () => undefined);
    this.#child.once('exit', () => (this.#exited = true));
    this.#child.on('error', () => undefined);
    this.#unref();
  }

  get alive(): boolean {
    return !this.#exited;
  }

  /** Kills the process; it is no longer alive from here on (its exit comes later), so it is never handed out again. */
  kill(): void {
    if (this.#exited) return;
    this.#exited = true;
    this.#child.kill('SIGKILL');
  }

  run(
    request: ParseRequest,
    bytes: Uint8Array,
    limits: ParserLimits,
    signal: AbortSignal | undefined,
  ): Promise<ParsedDocument> {
    return new Promise<ParsedDocument>((resolve, reject) => {
      const stop = (error: Error) => {
        this.kill();
        finish();
        reject(error);
      };
      const onReply = (reply: ParseReply) => {
        finish();
        if (reply.ok) resolve(reply.document);
        else reject(new DocumentRefusal(reply.refused ? reply.error : `its reader failed (${reply.error})`));
      };
      const tooLarge = () => new DocumentRefusal(`needed more than ${limits.maxMemoryMb} MiB to read (stopped)`);
      // V8 aborts a process whose heap cannot grow (exit 134, SIGABRT): that is the memory bound too.
      const onExit = (code: number | null, why: string | null) =>
        stop(
          code === 134 || why === 'SIGABRT'
            ? tooLarge()
            : new DocumentRefusal(`its reader stopped (${why ?? `exit ${code}`})`),
        );
      const onAbort = () => stop(signal?.reason as Error);
      const timer = setTimeout(
        () => stop(new DocumentRefusal(`took longer than ${limits.timeoutMs} ms to read (stopped)`)),
        limits.timeoutMs,
      );
      const memory = setInterval(() => {
        if (residentMb(this.#child.pid) > limits.maxMemoryMb) stop(tooLarge());
      }, MEMORY_POLL_MS);
      const finish = () => {
        clearTimeout(timer);
        clearInterval(memory);
        this.#child.off('message', onReply);
        this.#child.off('exit', onExit);
        signal?.removeEventListener('abort', onAbort);
        this.#unref();
      };
      if (this.#exited) return stop(new DocumentRefusal('its reader is not running'));
      // A caller that gave up before its turn came costs the parser nothing.
      if (signal?.aborted === true) return stop(signal.reason as Error);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#child.on('message', onReply);
      this.#child.once('exit', onExit);
      this.#child.ref();
      this.#child.send(request, (error) => (error === null ? undefined : stop(error)));
      // A write to a process killed meanwhile fails on its pipe: the kill has answered the caller already.
      this.#child.stdin?.write(bytes, () => undefined);
    });
  }

  /** An idle parser never keeps the process alive. */
  #unref(): void {
    this.#child.unref();
    (this.#child.channel as { unref?: () => void } | undefined)?.unref?.();
    (this.#child.stdin as { unref?: () => void } | null)?.unref?.();
  }
}

/** A process's resident memory in MiB (Linux); 0 where it cannot be read. */
function residentMb(pid: number | undefined): number {
  if (pid === undefined || process.platform !== 'linux') return 0;
  try {
    const statm = readFileSync(`/proc/${pid}/statm`, 'latin1');
    return (Number(statm.split(' ')[1]) * PAGE_BYTES) / (1024 * 1024);
  } catch {
    return 0;
  }
}

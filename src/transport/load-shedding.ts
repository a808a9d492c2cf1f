import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { RpcError } from '../protocol/errors.js';

/**
 * Load shedding (§15.5): while the event loop lags past a threshold, or memory nears its cap, new work is
 * refused at once with -32011 and a `retryAfterMs`, so the server degrades by answering "later" instead of by
 * queueing until it runs out of memory. Work already admitted finishes. (A full inference queue is the third signal;
 * the queue refuses on its own, with a retryAfterMs from its measured drain rate.)
 *
 * Lag counts only when it is sustained and comes from clients: the loop must lag past the threshold in
 * `SUSTAINED_SAMPLES` consecutive samples (one stall that has already ended is no reason to refuse the next caller),
 * and samples that overlap the server's own work (start-up, loading models and the corpus) are not counted at all —
 * a freshly started server must not refuse its first clients for the time it took to start.
 *
 * The measurements are @fastify/under-pressure's (a `monitorEventLoopDelay` histogram averaged per sample interval,
 * heap used, RSS), but the check is ours: under-pressure answers HTTP 503 from a Fastify hook, and this refusal
 * must be a JSON-RPC -32011 per request — on stdio too, where there is no Fastify.
 */
export interface SheddingSettings {
  /** Mean event-loop delay per sample interval beyond which new work is refused; 0 turns the check off. */
  maxEventLoopDelayMs: number;
  /** Heap used as a share of V8's heap limit beyond which new work is refused; 0 turns the check off. */
  maxHeapUsedRatio: number;
  /** Resident set size beyond which new work is refused; 0: 90% of the cgroup memory limit, else half the machine's. */
  maxRssBytes: number;
  sampleIntervalMs: number;
}

interface LoadState {
  eventLoopDelayMs: number;
  heapUsedRatio: number;
  rssBytes: number;
  maxRssBytes: number;
  /** Why new work is refused now; absent when it is not. */
  overloaded?: string;
}

/** Consecutive lagging samples that make overload. */
export const SUSTAINED_SAMPLES = 2;

export class LoadShedder {
  readonly #settings: SheddingSettings;
  readonly #histogram: IntervalHistogram;
  readonly #heapLimit = getHeapStatistics().heap_size_limit;
  readonly #maxRss: number;
  readonly #timer: NodeJS.Timeout;
  #state: LoadState;
  #sampledAt: number | undefined;
  /** Own work in progress: samples taken while it runs do not count, and a fresh window starts when it ends. */
  #ownWork = 0;
  #laggingSamples = 0;

  constructor(settings: SheddingSettings) {
    this.#settings = settings;
    this.#maxRss = settings.maxRssBytes > 0 ? settings.maxRssBytes : defaultMaxRss();
    this.#histogram = monitorEventLoopDelay({ resolution: 10 });
    this.#histogram.enable();
    this.#state = { eventLoopDelayMs: 0, heapUsedRatio: 0, rssBytes: 0, maxRssBytes: this.#maxRss };
    this.#timer = setInterval(() => this.#sample(), settings.sampleIntervalMs);
    this.#timer.unref();
    this.#sample();
  }

  /** Marks `work` as the server's own (start-up, loading): event-loop lag while it runs is not client overload. */
  ownWork<T>(work: Promise<T>): Promise<T> {
    this.#ownWork++;
    const ended = () => {
      this.#ownWork--;
      this.#sampledAt = performance.now();
      this.#histogram.reset();
    };
    work.then(ended, ended);
    return work;
  }

  /** -32011 while overloaded, else undefined. */
  check(): RpcError | undefined {
    const { overloaded, eventLoopDelayMs } = this.#state;
    if (overloaded === undefined) return undefined;
    // Lag clears within about one interval of the load going away; memory takes a collection or two.
    const retryAfterMs = overloaded.startsWith('event loop')
      ? Math.max(this.#settings.sampleIntervalMs, eventLoopDelayMs)
      : 1000;
    return RpcError.rateLimited(retryAfterMs, `server overloaded: ${overloaded}`);
  }

  close(): void {
    clearInterval(this.#timer);
    this.#histogram.disable();
  }

  #sample(): void {
    // The histogram's resolution is added to every sample; take it back off, as under-pressure does. The histogram's
    // own timer may not yet have recorded a block that just ended, so this sampler's lateness counts too.
    const now = performance.now();
    const late = this.#sampledAt === undefined ? 0 : now - this.#sampledAt - this.#settings.sampleIntervalMs;
    this.#sampledAt = now;
    const mean = this.#histogram.mean;
    const eventLoopDelayMs = this.#ownWork > 0 ? 0 : Math.max(late, Number.isFinite(mean) ? mean / 1e6 - 10 : 0, 0);
    this.#histogram.reset();
    const memory = process.memoryUsage();
    const heapUsedRatio = memory.heapUsed / this.#heapLimit;
    const { maxEventLoopDelayMs, maxHeapUsedRatio } = this.#settings;
    const lagging = maxEventLoopDelayMs > 0 && eventLoopDelayMs > maxEventLoopDelayMs;
    this.#laggingSamples = lagging ? this.#laggingSamples + 1 : 0;
    let overloaded: string | undefined;
    if (this.#laggingSamples >= SUSTAINED_SAMPLES) {
      overloaded = `event loop delay ${Math.round(eventLoopDelayMs)} ms > ${maxEventLoopDelayMs} ms`;
    } else if (maxHeapUsedRatio > 0 && heapUsedRatio > maxHeapUsedRatio) {
      overloaded = `heap ${(heapUsedRatio * 100).toFixed(0)}% of its limit`;
    } else if (this.#maxRss > 0 && memory.rss > this.#maxRss) {
      overloaded = `RSS ${memory.rss} bytes > ${this.#maxRss}`;
    }
    this.#state = {
      eventLoopDelayMs,
      heapUsedRatio,
      rssBytes: memory.rss,
      maxRssBytes: this.#maxRss,
      ...(overloaded === undefined ? {} : { overloaded }),
    };
  }
}

/** 90% of the container's memory cap; without one, half the machine's memory (a server shares its host). */
function defaultMaxRss(): number {
  const cgroup = cgroupMemoryLimit();
  return Math.floor(cgroup === undefined ? totalmem() / 2 : 0.9 * cgroup);
}

/** The container's memory cap (cgroup v2, then v1); undefined when unlimited or unknown. */
function cgroupMemoryLimit(): number | undefined {
  for (const file of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    try {
      const value = Number(readFileSync(file, 'utf8').trim());
      // v1 reports "unlimited" as a huge number near 2^63.
      if (Number.isFinite(value) && value > 0 && value < 2 ** 60) return value;
    } catch {
      // not this cgroup version, or not in a container
    }
  }
  return undefined;
}

import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * Lowers the OS scheduling priority of the calling thread alone to `nice` (0 normal, 19 lowest), so that work done on
 * it yields the cores to the event loop and to query work whenever both want them (docs/architecture.md §10). Threads
 * it starts afterwards inherit the value: called in a worker before an ONNX session is created, it covers the
 * session's intra-op threads too. Linux only (a thread's id is read from /proc/thread-self, and setpriority on a
 * thread id applies to that thread); elsewhere, or where it is refused, nothing changes. Only ever lowered: a thread
 * already at that priority or lower keeps its own, and raising one needs a privilege the server does not assume.
 * Returns whether the thread now runs at `nice` or lower.
 */
export function lowerThreadPriority(nice: number): boolean {
  if (process.platform !== 'linux' || nice <= 0) return false;
  try {
    const thread = Number(/task\/(\d+)$/.exec(readlinkSync('/proc/thread-self'))?.[1]);
    if (!Number.isInteger(thread) || thread <= 0) return false;
    // A process started at a lower priority still (`nice -n 15 rcp-server …`) keeps it: setting 10 would raise it.
    if (getPriority(thread) < Math.min(19, nice)) setPriority(thread, Math.min(19, nice));
    return true;
  } catch {
    return false;
  }
}

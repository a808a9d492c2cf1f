import { readFileSync, readdirSync } from 'node:fs';

/** The nice value of each thread of this process, by thread id (the 19th field of /proc/self/task/TID/stat). */
export function threadNices(): Map<number, number> {
  const nices = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      nices.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // The thread exited while we read.
    }
  }
  return nices;
}

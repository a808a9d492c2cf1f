/**
 * Why a command cannot run as configured (a bad flag, setting, registry, model dir, data dir, source file): the
 * process prints its message as one line and exits with `exitCode` — 2 unless a command documents otherwise. Never a
 * wire code, never a stack trace: what the operator must change is the whole message.
 */
export class StartupError extends Error {
  override name = 'StartupError';
  readonly exitCode: number = 2;
}

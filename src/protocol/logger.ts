/** The slice of a pino logger the transports and the backend use; tests pass a silent one. */
export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

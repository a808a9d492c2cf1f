import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../protocol/logger.js';
import { LineSplitter, refusalOf, type LineEvent } from '../protocol/ndjson.js';

/** The code the MCP SDK's HTTP transport answers an oversized body with (a server error, JSON-RPC 2.0 §5.1). */
const PAYLOAD_TOO_LARGE = -32000;

export interface McpStdioOptions {
  input: Readable;
  output: Writable;
  /** The longest line accepted, in bytes; a longer one is answered an error and discarded unread (§15.5). */
  maxLineBytes: number;
  /** JSON values per line at most; a line with more is answered an error and discarded unparsed (§15.5). */
  maxFrameValues?: number | undefined;
  log: Logger;
}

/**
 * The MCP stdio transport (newline-delimited JSON-RPC), framed by the same LineSplitter as the RCP stdio transport
 * (§5.1), so a line is bounded the same way: an oversized line, or one with too many JSON values, is discarded as it
 * arrives and answered an error with a null id — -32000 "Payload Too Large", as the MCP SDK's HTTP transport answers
 * an oversized body — and the lines after it are read as usual. A line that is not JSON is answered -32700, one that
 * is JSON but no JSON-RPC message -32600. Each refusal is logged on stderr too.
 */
export class McpStdioTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;
  readonly #options: McpStdioOptions;
  readonly #splitter: LineSplitter;
  #closed = false;

  constructor(options: McpStdioOptions) {
    this.#options = options;
    this.#splitter = new LineSplitter(options.maxLineBytes, options.maxFrameValues);
  }

  start(): Promise<void> {
    this.#options.input.on('data', this.#onData);
    this.#options.input.on('error', this.#onInputError);
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.#options.output.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.#options.output.once('drain', resolve);
    });
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    const { input } = this.#options;
    input.off('data', this.#onData);
    input.off('error', this.#onInputError);
    if (input.listenerCount('data') === 0) input.pause();
    this.onclose?.();
    return Promise.resolve();
  }

  /** At EOF: a last line without its '\n' is still a message. */
  end(): void {
    for (const event of this.#splitter.end()) this.#take(event);
  }

  readonly #onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    for (const event of this.#splitter.push(bytes)) this.#take(event);
  };

  readonly #onInputError = (error: Error): void => {
    this.onerror?.(error);
  };

  #take(event: LineEvent): void {
    if (event.kind !== 'line') {
      const detail = refusalOf(event, this.#options);
      return this.#refuse(PAYLOAD_TOO_LARGE, `Payload Too Large: ${detail}`, detail);
    }
    let value: unknown;
    try {
      value = JSON.parse(event.text);
    } catch (error) {
      return this.#refuse(ErrorCode.ParseError, 'Parse error', (error as Error).message);
    }
    const message = JSONRPCMessageSchema.safeParse(value);
    if (!message.success) return this.#refuse(ErrorCode.InvalidRequest, 'Invalid Request', 'not a JSON-RPC message');
    this.onmessage?.(message.data);
  }

  /** A line that carries no message: answered with a null id (JSON-RPC 2.0 §5; no MCP type allows it) and logged. */
  #refuse(code: number, message: string, detail: string): void {
    this.#options.log.warn({ code, detail }, 'mcp: line refused');
    this.#options.output.write(`${JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } })}\n`);
  }
}

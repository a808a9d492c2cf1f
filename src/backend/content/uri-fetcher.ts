import { lookup } from 'node:dns/promises';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { RpcError } from '../../protocol/errors.js';
import type { UriFetcher } from '../ports.js';
import { FileReader, type ProtectedPath } from './file-reader.js';
import { isPrivateAddress } from './private-address.js';

export { isPrivateAddress } from './private-address.js';
export type { ProtectedPath } from './file-reader.js';

/**
 * The one place the server dereferences a Content `uri` (§4.8), and the SSRF policy around it (§15.5):
 * - off unless the operator lists schemes (`content.fetch.schemes`); `file` works only when listed by name, and then
 *   only for files under `fileRoots` (real paths) and never under /proc, /sys, /dev, the data dir or the config file;
 * - `hosts` is an allow-list (`docs.example.com`, `*.example.com`); empty allows any host the schemes reach;
 * - a host that resolves to a private, loopback, link-local, unique-local, multicast or unspecified address — or an
 *   IPv6 address carrying such an IPv4 one — is refused unless `allowPrivate`; the connection goes to the address
 *   that was checked (no DNS rebinding), and the peer actually connected to is checked again;
 * - no redirects (a redirect would need its scheme, host and address judged again: simpler to answer none);
 *   text content types only; at most `maxBytes`; the whole transfer (connect, headers, body) within `timeoutMs`,
 *   and the request's own signal.
 * Every refusal is -32602 naming the block's `uri` field.
 */
export interface FetchPolicy {
  readonly schemes: readonly string[];
  readonly hosts: readonly string[];
  /** Directories `file` uris may read from; none: every file uri is refused. */
  readonly fileRoots: readonly string[];
  readonly allowPrivate: boolean;
  readonly maxBytes: number;
  readonly timeoutMs: number;
}

type Refuse = (why: string) => RpcError;
type Address = { address: string; family: number };

function hostAllowed(host: string, hosts: readonly string[]): boolean {
  if (hosts.length === 0) return true;
  const name = host.toLowerCase();
  return hosts.some((pattern) => {
    const allowed = pattern.toLowerCase();
    return allowed.startsWith('*.') ? name.endsWith(allowed.slice(1)) : name === allowed;
  });
}

const isText = (contentType: string | undefined): boolean =>
  contentType === undefined || /^text\/|^application\/(json|xml|x-ndjson)\b/i.test(contentType);

export class PolicyUriFetcher implements UriFetcher {
  readonly #files: FileReader;

  /** `protectedPaths`: what no file uri may reach whatever the roots say (the data dir, the config file). */
  constructor(
    private readonly policy: FetchPolicy,
    protectedPaths: readonly ProtectedPath[] = [],
  ) {
    this.#files = new FileReader(policy.fileRoots, protectedPaths, policy.maxBytes);
  }

  async fetchText(uri: string, field: string, signal: AbortSignal): Promise<string> {
    const refuse: Refuse = (why) => RpcError.invalidParams(field, `${why} (§15.5)`);
    if (this.policy.schemes.length === 0) throw refuse('this server does not dereference content uris');
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      throw refuse('not an absolute URI');
    }
    const scheme = url.protocol.replace(/:$/, '');
    if (!this.policy.schemes.includes(scheme)) throw refuse(`scheme '${scheme}' is not allowed`);
    if (scheme === 'file') return this.#files.read(url, refuse);
    if (scheme !== 'http' && scheme !== 'https') throw refuse(`scheme '${scheme}' cannot be fetched`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!hostAllowed(host, this.policy.hosts)) throw refuse(`host '${host}' is not allowed`);
    const address = await this.#resolve(host, refuse);
    return this.#get(url, address, refuse, signal);
  }

  async #resolve(host: string, refuse: Refuse): Promise<Address> {
    let addresses: Address[];
    try {
      addresses = isIP(host) !== 0 ? [{ address: host, family: isIP(host) }] : await lookup(host, { all: true });
    } catch {
      throw refuse(`host '${host}' does not resolve`);
    }
    // Every address the name has must pass: an attacker's DNS may return a public and a private one.
    if (!this.policy.allowPrivate && addresses.some(({ address }) => isPrivateAddress(address))) {
      throw refuse(`host '${host}' is on a private network`);
    }
    const first = addresses[0];
    if (first === undefined) throw refuse(`host '${host}' does not resolve`);
    return first;
  }

  /** §15.5: `timeoutMs` bounds the whole transfer, so a server that drips bytes cannot hold a fetch open. */
  async #get(url: URL, resolved: Address, refuse: Refuse, signal: AbortSignal): Promise<string> {
    const { timeoutMs, maxBytes } = this.policy;
    const deadline = AbortSignal.timeout(timeoutMs);
    try {
      const response = await this.#request(url, resolved, refuse, AbortSignal.any([signal, deadline]));
      return await readText(response, maxBytes, refuse);
    } catch (error) {
      if (signal.aborted) throw RpcError.from(signal.reason);
      if (error instanceof RpcError) throw error;
      if (deadline.aborted) throw refuse(`no complete answer within ${timeoutMs} ms`);
      throw refuse(`fetch failed: ${(error as Error).message}`);
    }
  }

  #request(url: URL, resolved: Address, refuse: Refuse, signal: AbortSignal): Promise<IncomingMessage> {
    // Connect to the address that was checked, whatever the name resolves to a moment later.
    const pinned: LookupFunction = (_host, options, callback) => {
      if (options.all === true) callback(null, [resolved]);
      else callback(null, resolved.address, resolved.family);
    };
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<IncomingMessage>((resolve, reject) => {
      // No agent: a fresh connection each time, so a pooled socket never bypasses the pinned, checked address.
      const req = request(url, { method: 'GET', agent: false, lookup: pinned, signal }, resolve);
      req.once('socket', (socket) => this.#checkPeer(req, socket, refuse));
      req.on('error', reject); // errors after the answer arrived reach readText through the response
      req.end();
    });
  }

  /** The address the socket really reached must pass too, whatever path led there. */
  #checkPeer(req: ClientRequest, socket: Socket, refuse: Refuse): void {
    if (this.policy.allowPrivate) return;
    socket.once('connect', () => {
      const peer = socket.remoteAddress ?? '';
      if (isPrivateAddress(peer)) req.destroy(refuse(`connected to ${peer}, on a private network`));
    });
  }
}

async function readText(response: IncomingMessage, maxBytes: number, refuse: Refuse): Promise<string> {
  const status = response.statusCode ?? 0;
  if (status < 200 || status >= 300) {
    response.destroy();
    throw refuse(
      `fetch answered HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`,
    );
  }
  if (!isText(response.headers['content-type'])) {
    response.destroy();
    throw refuse(`content type '${response.headers['content-type']}' is not text`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      response.destroy();
      throw refuse(`content exceeds ${maxBytes} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

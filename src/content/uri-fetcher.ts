import { Resolver } from 'node:dns/promises';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { RpcError } from '../protocol/errors.js';
import { stage } from '../protocol/tracing.js';
import type { UriFetcher } from './ports.js';
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
 * - names are resolved over DNS (A and AAAA, c-ares on the event loop, not getaddrinfo on libuv's small thread pool,
 *   where a few lookups that hang would stall every other fetch and file read) and `localhost` / `*.localhost` are
 *   loopback without a lookup (RFC 6761); /etc/hosts is not consulted;
 * - no redirects (a redirect would need its scheme, host and address judged again: simpler to answer none);
 *   text content types only; at most `maxBytes`; the whole transfer (name lookup, connect, headers, body) within
 *   `timeoutMs`, and the request's own signal: either cancels a lookup still running.
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

/** How the fetcher reaches the outside world; for tests, not part of the configuration. */
export interface FetcherOptions {
  /** DNS servers (`ip` or `ip:port`) to ask instead of those in /etc/resolv.conf. */
  readonly dnsServers?: readonly string[];
}

type Refuse = (why: string) => RpcError;
type Address = { address: string; family: number };

/** RFC 6761 §6.3: `localhost` and names under it are the loopback host, whatever a resolver would answer. */
const LOOPBACK: readonly Address[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];
const isLocalhost = (host: string): boolean => /(^|\.)localhost\.?$/i.test(host);

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
    private readonly options: FetcherOptions = {},
  ) {
    this.#files = new FileReader(policy.fileRoots, protectedPaths, policy.maxBytes);
  }

  async fetchText(uri: string, field: string, signal: AbortSignal): Promise<string> {
    return (await this.#fetch(uri, field, signal, { accepts: isText, what: 'text' })).bytes.toString('utf8');
  }

  async fetchBytes(uri: string, field: string, signal: AbortSignal, documentTypes: readonly string[]) {
    const accepted = (type: string | undefined) =>
      isText(type) || documentTypes.includes(type?.split(';', 1)[0]?.trim().toLowerCase() ?? '');
    return this.#fetch(uri, field, signal, { accepts: accepted, what: 'text or a document format read here' });
  }

  async #fetch(
    uri: string,
    field: string,
    signal: AbortSignal,
    accepted: Accepted,
  ): Promise<{ bytes: Buffer; mediaType: string | undefined }> {
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
    // A span names the scheme and host only: a path or query may carry what is not the operator's to see (§15.6).
    const host = url.hostname.replace(/^\[|\]$/g, '');
    return stage('content.fetch', { 'url.scheme': scheme, 'server.address': host }, async () => {
      if (scheme === 'file') return { bytes: await this.#files.read(url, refuse), mediaType: undefined };
      if (scheme !== 'http' && scheme !== 'https') throw refuse(`scheme '${scheme}' cannot be fetched`);
      if (!hostAllowed(host, this.policy.hosts)) throw refuse(`host '${host}' is not allowed`);
      return this.#get(url, host, refuse, signal, accepted);
    });
  }

  /**
   * §15.5: `timeoutMs` bounds the whole transfer, name lookup included, so neither a resolver that never answers nor
   * a server that drips bytes can hold a fetch open.
   */
  async #get(
    url: URL,
    host: string,
    refuse: Refuse,
    signal: AbortSignal,
    accepted: Accepted,
  ): Promise<{ bytes: Buffer; mediaType: string | undefined }> {
    const { timeoutMs, maxBytes } = this.policy;
    const deadline = AbortSignal.timeout(timeoutMs);
    const bounded = AbortSignal.any([signal, deadline]);
    try {
      const resolved = await this.#resolve(host, refuse, bounded);
      const response = await this.#request(url, resolved, refuse, bounded);
      const bytes = await readBody(response, maxBytes, refuse, accepted);
      return { bytes, mediaType: response.headers['content-type'] };
    } catch (error) {
      if (signal.aborted) throw RpcError.fromAbort(signal.reason);
      if (error instanceof RpcError) throw error;
      if (deadline.aborted) {
        throw refuse(
          error instanceof LookupCancelled
            ? `host '${host}' did not resolve within ${timeoutMs} ms`
            : `no complete answer within ${timeoutMs} ms`,
        );
      }
      throw refuse(`fetch failed: ${(error as Error).message}`);
    }
  }

  async #resolve(host: string, refuse: Refuse, signal: AbortSignal): Promise<Address> {
    const family = isIP(host);
    const addresses =
      family !== 0
        ? [{ address: host, family }]
        : isLocalhost(host)
          ? LOOPBACK
          : await this.#lookup(host, refuse, signal);
    // Every address the name has must pass: an attacker's DNS may return a public and a private one.
    if (!this.policy.allowPrivate && addresses.some(({ address }) => isPrivateAddress(address))) {
      throw refuse(`host '${host}' is on a private network`);
    }
    const first = addresses[0];
    if (first === undefined) throw refuse(`host '${host}' does not resolve`);
    return first;
  }

  /**
   * A and AAAA records over DNS, asked once each (no retries past the deadline), cancelled when the deadline or the
   * request's signal fires: a lookup nobody waits for stops. IPv4 addresses come first.
   */
  async #lookup(host: string, refuse: Refuse, signal: AbortSignal): Promise<Address[]> {
    if (signal.aborted) throw new LookupCancelled();
    const resolver = new Resolver({ timeout: this.policy.timeoutMs, tries: 1 });
    if (this.options.dnsServers !== undefined) resolver.setServers(this.options.dnsServers);
    const cancel = () => resolver.cancel();
    signal.addEventListener('abort', cancel, { once: true });
    let answers: PromiseSettledResult<string[]>[];
    try {
      answers = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    } finally {
      signal.removeEventListener('abort', cancel);
    }
    if (signal.aborted) throw new LookupCancelled();
    const addresses = answers.flatMap((answer, i) =>
      answer.status === 'fulfilled' ? answer.value.map((address) => ({ address, family: i === 0 ? 4 : 6 })) : [],
    );
    if (addresses.length > 0) return addresses;
    const timedOut = answers.some(
      (answer) => answer.status === 'rejected' && (answer.reason as NodeJS.ErrnoException).code === 'ETIMEOUT',
    );
    throw refuse(
      timedOut
        ? `host '${host}' did not resolve within ${this.policy.timeoutMs} ms`
        : `host '${host}' does not resolve`,
    );
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

/** The content types a fetch takes, and how a refusal names them. */
interface Accepted {
  readonly accepts: (contentType: string | undefined) => boolean;
  readonly what: string;
}

/** A lookup given up because the deadline or the request's signal fired. */
class LookupCancelled extends Error {}

async function readBody(
  response: IncomingMessage,
  maxBytes: number,
  refuse: Refuse,
  accepted: Accepted,
): Promise<Buffer> {
  const status = response.statusCode ?? 0;
  if (status < 200 || status >= 300) {
    response.destroy();
    throw refuse(
      `fetch answered HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`,
    );
  }
  if (!accepted.accepts(response.headers['content-type'])) {
    response.destroy();
    throw refuse(`content type '${response.headers['content-type']}' is not ${accepted.what}`);
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
  return Buffer.concat(chunks);
}

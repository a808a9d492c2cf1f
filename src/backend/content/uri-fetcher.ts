import { lookup } from 'node:dns/promises';
import { readFile, stat } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { fileURLToPath } from 'node:url';
import { RpcError } from '../../protocol/errors.js';
import type { UriFetcher } from '../ports.js';

/**
 * The one place the server dereferences a Content `uri` (§4.8), and the SSRF policy around it (§15.5):
 * - off unless the operator lists schemes (`content.fetch.schemes`); `file` works only when listed by name;
 * - `hosts` is an allow-list (`docs.example.com`, `*.example.com`); empty allows any host the schemes reach;
 * - a host that resolves to a private, loopback, link-local, unique-local, multicast or unspecified address is
 *   refused unless `allowPrivate`; the connection goes to the address that was checked (no DNS rebinding);
 * - no redirects; text content types only; at most `maxBytes`; at most `timeoutMs`, and the request's own signal.
 * Every refusal is -32602 naming the block's `uri` field.
 */
export interface FetchPolicy {
  readonly schemes: readonly string[];
  readonly hosts: readonly string[];
  readonly allowPrivate: boolean;
  readonly maxBytes: number;
  readonly timeoutMs: number;
}

const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv6');
}

/** Whether an IP address is in a private, loopback, link-local or otherwise non-public range (IPv4-mapped included). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined) return PRIVATE.check(mapped, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true; // not an address: refuse rather than guess
  return PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

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
  constructor(private readonly policy: FetchPolicy) {}

  async fetchText(uri: string, field: string, signal: AbortSignal): Promise<string> {
    const refuse = (why: string) => RpcError.invalidParams(field, `${why} (§15.5)`);
    if (this.policy.schemes.length === 0) throw refuse('this server does not dereference content uris');
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      throw refuse('not an absolute URI');
    }
    const scheme = url.protocol.replace(/:$/, '');
    if (!this.policy.schemes.includes(scheme)) throw refuse(`scheme '${scheme}' is not allowed`);
    if (scheme === 'file') return this.#readFile(url, refuse);
    if (scheme !== 'http' && scheme !== 'https') throw refuse(`scheme '${scheme}' cannot be fetched`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!hostAllowed(host, this.policy.hosts)) throw refuse(`host '${host}' is not allowed`);
    const address = await this.#resolve(host, refuse);
    return this.#get(url, address, refuse, signal);
  }

  async #resolve(host: string, refuse: (why: string) => RpcError): Promise<{ address: string; family: number }> {
    let addresses: { address: string; family: number }[];
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

  #get(
    url: URL,
    resolved: { address: string; family: number },
    refuse: (why: string) => RpcError,
    signal: AbortSignal,
  ): Promise<string> {
    const { maxBytes, timeoutMs } = this.policy;
    // Connect to the address that was checked, whatever the name resolves to a moment later.
    const pinned: LookupFunction = (_host, options, callback) => {
      if (options.all === true) callback(null, [resolved]);
      else callback(null, resolved.address, resolved.family);
    };
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<string>((resolve, reject) => {
      const req = request(url, { method: 'GET', lookup: pinned, timeout: timeoutMs, signal }, (response) => {
        read(response).then(resolve, reject);
      });
      req.once('timeout', () => req.destroy(refuse(`no answer within ${timeoutMs} ms`)));
      req.once('error', (error) => reject(error instanceof RpcError ? error : failure(error)));
      req.end();
    });

    function failure(error: Error): RpcError {
      if (signal.aborted) return RpcError.from(signal.reason);
      return refuse(`fetch failed: ${error.message}`);
    }

    async function read(response: IncomingMessage): Promise<string> {
      const status = response.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        response.resume();
        throw refuse(
          `fetch answered HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`,
        );
      }
      if (!isText(response.headers['content-type'])) {
        response.resume();
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
  }

  async #readFile(url: URL, refuse: (why: string) => RpcError): Promise<string> {
    if (url.hostname !== '' && url.hostname !== 'localhost') throw refuse('file uris name a local path');
    const path = fileURLToPath(url);
    try {
      if ((await stat(path)).size > this.policy.maxBytes) throw refuse(`content exceeds ${this.policy.maxBytes} bytes`);
      return await readFile(path, 'utf8');
    } catch (error) {
      if (error instanceof RpcError) throw error;
      throw refuse('file cannot be read');
    }
  }
}

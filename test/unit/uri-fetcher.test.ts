import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isPrivateAddress, PolicyUriFetcher, type FetchPolicy } from '../../src/backend/content/uri-fetcher.js';
import { RpcError } from '../../src/protocol/errors.js';

/** §15.5 SSRF policy of the Content uri fetcher: what it refuses without ever connecting. */
const POLICY: FetchPolicy = { schemes: ['https'], hosts: [], allowPrivate: false, maxBytes: 1024, timeoutMs: 1000 };
const signal = new AbortController().signal;

async function refusal(policy: Partial<FetchPolicy>, uri: string): Promise<RpcError> {
  const error = await new PolicyUriFetcher({ ...POLICY, ...policy })
    .fetchText(uri, 'inputs.0.uri', signal)
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RpcError);
  return error as RpcError;
}

describe('private addresses (§15.5)', () => {
  it('covers loopback, RFC 1918, link-local, CGNAT, unique-local, unspecified, multicast and IPv4-mapped forms', () => {
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fd00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      'not-an-address',
    ]) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect(isPrivateAddress(address), address).toBe(false);
    }
  });
});

describe('the uri fetch policy (§15.5)', () => {
  it('refuses every uri while no scheme is configured (the default)', async () => {
    const error = await refusal({ schemes: [] }, 'https://example.com/a.txt');
    expect(error.code).toBe(-32602);
    expect(error.data).toMatchObject({ field: 'inputs.0.uri' });
    expect(error.message + JSON.stringify(error.data)).toMatch(/does not dereference content uris/);
  });

  it('refuses unlisted schemes, file:// unless listed by name, unlisted hosts, and private addresses', async () => {
    expect((await refusal({}, 'http://example.com/')).message).toMatch(/scheme 'http' is not allowed/);
    expect((await refusal({}, 'file:///etc/passwd')).message).toMatch(/scheme 'file' is not allowed/);
    expect((await refusal({}, 'not a uri')).message).toMatch(/not an absolute URI/);
    expect((await refusal({ hosts: ['docs.example.com'] }, 'https://evil.example.org/')).message).toMatch(
      /host 'evil.example.org' is not allowed/,
    );
    for (const uri of [
      'https://127.0.0.1/',
      'https://[::1]/',
      'https://169.254.169.254/latest/meta-data',
      'https://localhost/',
    ]) {
      expect((await refusal({}, uri)).message, uri).toMatch(/private network/);
    }
    expect((await refusal({ schemes: ['gopher'] }, 'gopher://example.com/')).message).toMatch(/cannot be fetched/);
  });

  it('reads a listed file:// within maxBytes, and refuses a larger one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcp-uri-'));
    writeFileSync(join(dir, 'small.txt'), 'small text');
    writeFileSync(join(dir, 'large.txt'), 'x'.repeat(2048));
    const fetcher = new PolicyUriFetcher({ ...POLICY, schemes: ['file'] });
    expect(await fetcher.fetchText(pathToFileURL(join(dir, 'small.txt')).href, 'q', signal)).toBe('small text');
    await expect(fetcher.fetchText(pathToFileURL(join(dir, 'large.txt')).href, 'q', signal)).rejects.toThrow(RpcError);
    await expect(fetcher.fetchText(pathToFileURL(join(dir, 'none.txt')).href, 'q', signal)).rejects.toMatchObject({
      code: -32602,
    });
  });
});

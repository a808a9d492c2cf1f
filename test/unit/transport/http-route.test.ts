import { describe, expect, it } from 'vitest';
import { rcpRoute } from '../../../src/transport/http-route.js';

/** §5.2 the paths RCP frames are posted to, read without a router. */
describe('rcpRoute', () => {
  it('§5.2 the base takes a frame whose members name their methods; <base>/<method> names one', () => {
    expect(rcpRoute('/rcp', '/rcp')).toEqual({ method: undefined, session: undefined });
    expect(rcpRoute('/rcp', '/rcp/')).toEqual({ method: undefined, session: undefined });
    expect(rcpRoute('/rcp', '/rcp/ping')).toEqual({ method: 'ping', session: undefined });
    expect(rcpRoute('/rcp', '/rcp/index/add?x=1')).toEqual({ method: 'index/add', session: undefined });
  });

  it('§5.2 a session named in the path, with or without a method after it', () => {
    expect(rcpRoute('/rcp', '/rcp/sessions/a')).toEqual({ method: undefined, session: 'a' });
    expect(rcpRoute('/rcp', '/rcp/sessions/a/')).toEqual({ method: undefined, session: 'a' });
    expect(rcpRoute('/rcp', '/rcp/sessions/a/index/add')).toEqual({ method: 'index/add', session: 'a' });
    // Without a name, `sessions` is only a method name (one that matches no frame's method).
    expect(rcpRoute('/rcp', '/rcp/sessions')).toEqual({ method: 'sessions', session: undefined });
    expect(rcpRoute('/rcp', '/rcp/sessions//ping')).toEqual({ method: 'sessions//ping', session: undefined });
  });

  it('parts are percent-decoded after the path is split: an encoded slash stays in its part', () => {
    expect(rcpRoute('/rcp', '/rcp/index%2Fadd')).toEqual({ method: 'index/add', session: undefined });
    expect(rcpRoute('/rcp', '/rcp/sessions/a%2Fb/ping')).toEqual({ method: 'ping', session: 'a/b' });
    expect(rcpRoute('/rcp', '/rcp/bad%E0%A4')).toBeUndefined();
    expect(rcpRoute('/rcp', '/rcp/sessions/bad%E0%A4/ping')).toBeUndefined();
  });

  it('a corpus named in the path (docs/tenants.md): every route above, under <base>/corpora/<name>', () => {
    expect(rcpRoute('/rcp', '/rcp/corpora/acme')).toEqual({ method: undefined, session: undefined, corpus: 'acme' });
    expect(rcpRoute('/rcp', '/rcp/corpora/acme/')).toEqual({ method: undefined, session: undefined, corpus: 'acme' });
    expect(rcpRoute('/rcp', '/rcp/corpora/acme/index/add')).toEqual({
      method: 'index/add',
      session: undefined,
      corpus: 'acme',
    });
    expect(rcpRoute('/rcp', '/rcp/corpora/acme/sessions/s/ping')).toEqual({
      method: 'ping',
      session: 's',
      corpus: 'acme',
    });
    // The name is decoded as sent and checked where corpora are found: an encoded slash stays inside it.
    expect(rcpRoute('/rcp', '/rcp/corpora/a%2F..%2Fb/ping')).toEqual({
      method: 'ping',
      session: undefined,
      corpus: 'a/../b',
    });
    expect(rcpRoute('/rcp', '/rcp/corpora//ping')).toBeUndefined();
    expect(rcpRoute('/rcp', '/rcp/corpora/bad%E0%A4/ping')).toBeUndefined();
  });

  it('other paths are not RCP routes; a base at the root takes every path', () => {
    expect(rcpRoute('/rcp', '/elsewhere/ping')).toBeUndefined();
    expect(rcpRoute('/rcp', '/rcpx/ping')).toBeUndefined();
    expect(rcpRoute('/rcp', '/readyz')).toBeUndefined();
    expect(rcpRoute('', '/')).toEqual({ method: undefined, session: undefined });
    expect(rcpRoute('', '/ping')).toEqual({ method: 'ping', session: undefined });
    expect(rcpRoute('', '/sessions/s/ping')).toEqual({ method: 'ping', session: 's' });
  });
});

import { createHash, createHmac } from 'node:crypto';
import type { AwsCredentialIdentity } from '@smithy/types';
import { describe, expect, it } from 'vitest';
import { CostsyncError } from '../../src/errors.js';
import { catalogAuth, refreshAfterMs, type CatalogAuthOptions } from '../../src/iceberg/rest-auth.js';
import type { AuthRequest } from '../../src/iceberg/rest-types.js';

const CATALOG = 'https://catalog.test/api/catalog';
const SECRET = 'sEcReT-0f-the-client';
const CREDENTIAL = `costsync-bot:${SECRET}`;
const GET: AuthRequest = { method: 'GET', url: `${CATALOG}/v1/config`, headers: {}, body: undefined };

interface FetchCall {
  url: string;
  method: string | undefined;
  headers: Record<string, string>;
  form: URLSearchParams;
  signal: AbortSignal | undefined;
}

/** A token endpoint: each call answers with the next of `answers` (the last one repeats), and is recorded. */
function tokenEndpoint(...answers: (((n: number) => Response | Promise<Response>) | { status?: number; body: unknown })[]) {
  const calls: FetchCall[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    calls.push({
      url: String(input),
      method: init?.method,
      headers: init?.headers as Record<string, string>,
      form: new URLSearchParams(String(init?.body)),
      signal: init?.signal ?? undefined,
    });
    const answer = answers[Math.min(calls.length, answers.length) - 1]!;
    if (typeof answer === 'function') return answer(calls.length);
    return new Response(JSON.stringify(answer.body), { status: answer.status ?? 200, headers: { 'content-type': 'application/json' } });
  };
  return { calls, fetch };
}

const issued = (n: number, expiresIn?: number) =>
  new Response(
    JSON.stringify({ access_token: `token-${n}`, token_type: 'bearer', ...(expiresIn === undefined ? {} : { expires_in: expiresIn }) }),
    {
      status: 200,
    },
  );

function setup(overrides: Partial<CatalogAuthOptions> = {}) {
  const clock = { t: Date.parse('2025-06-01T12:00:00Z'), now: () => clock.t };
  const warnings: string[] = [];
  const secrets: string[] = [];
  const options: CatalogAuthOptions = {
    catalogUrl: CATALOG,
    env: {},
    oauthScope: 'catalog',
    clock,
    warn: (m) => warnings.push(m),
    addSecret: (s) => secrets.push(s),
    ...overrides,
  };
  return { options, clock, warnings, secrets };
}

/** The error `fn` throws (sync or async), which must be a CostsyncError. */
async function failure(fn: () => unknown): Promise<CostsyncError> {
  try {
    await fn();
  } catch (error) {
    expect(error).toBeInstanceOf(CostsyncError);
    return error as CostsyncError;
  }
  throw new Error('expected a failure');
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('choosing how to authorise', () => {
  it('adds nothing when nothing is set', async () => {
    const auth = catalogAuth(setup().options);
    expect(auth.description).toBe('none');
    expect(await auth.headers(GET)).toEqual({});
    expect(auth.refused(401)).toBe(false);
  });

  it('refuses two ways at once, naming both and the fix, without their values', async () => {
    const { options } = setup({ env: { COSTSYNC_CATALOG_TOKEN: 'tok-value-1', COSTSYNC_CATALOG_CREDENTIAL: CREDENTIAL } });
    const error = await failure(() => catalogAuth(options));
    expect(error.code).toBe('CS_ERR_CONFIG');
    expect(error.message).toContain('COSTSYNC_CATALOG_TOKEN and COSTSYNC_CATALOG_CREDENTIAL are both set');
    expect(error.hint).toBe('Keep the one your catalog expects: unset COSTSYNC_CATALOG_TOKEN, or unset COSTSYNC_CATALOG_CREDENTIAL.');
    expect(`${error.message} ${error.hint}`).not.toMatch(/tok-value-1|sEcReT/);

    const sigv4 = await failure(() => catalogAuth(setup({ env: { COSTSYNC_CATALOG_TOKEN: 'tok-value-1' }, sigv4: 'glue' }).options));
    expect(sigv4.message).toContain('COSTSYNC_CATALOG_TOKEN and --catalog-sigv4 glue are both set');
    expect(sigv4.hint).toContain('drop --catalog-sigv4');

    const three = await failure(() =>
      catalogAuth(setup({ env: { COSTSYNC_CATALOG_TOKEN: 'x1234', COSTSYNC_CATALOG_CREDENTIAL: CREDENTIAL }, sigv4: 's3tables' }).options),
    );
    expect(three.message).toContain('COSTSYNC_CATALOG_TOKEN, COSTSYNC_CATALOG_CREDENTIAL and --catalog-sigv4 s3tables are all set');
  });

  it('refuses flags that belong to a way not chosen', async () => {
    const oauthUri = await failure(() => catalogAuth(setup({ oauthUri: 'https://idp.test/token' }).options));
    expect(oauthUri.code).toBe('CS_ERR_CONFIG');
    expect(oauthUri.message).toContain('--catalog-oauth-uri');
    const region = await failure(() => catalogAuth(setup({ sigv4Region: 'us-east-1' }).options));
    expect(region.message).toContain('--catalog-sigv4 is not set');
  });

  it('treats an empty variable as unset', () => {
    expect(catalogAuth(setup({ env: { COSTSYNC_CATALOG_TOKEN: '  ' } }).options).description).toBe('none');
  });
});

describe('a bearer token', () => {
  it('is sent as it is, handed to redaction, and cannot be renewed', async () => {
    const { options, secrets } = setup({ env: { COSTSYNC_CATALOG_TOKEN: 'fixed-token-123\n' } });
    const auth = catalogAuth(options);
    expect(auth.description).toBe('bearer token (COSTSYNC_CATALOG_TOKEN)');
    expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer fixed-token-123' });
    expect(secrets).toEqual(['fixed-token-123']);
    expect(auth.refused(401)).toBe(false);
    expect(auth.refused(419)).toBe(false);
  });
});

describe('OAuth2 client credentials', () => {
  const env = { COSTSYNC_CATALOG_CREDENTIAL: CREDENTIAL };

  it('refuses a credential not of the form client_id:secret, without echoing it', async () => {
    for (const value of ['justTheSecretValue', ':justTheSecretValue', 'justTheSecretValue:']) {
      const error = await failure(() => catalogAuth(setup({ env: { COSTSYNC_CATALOG_CREDENTIAL: value } }).options));
      expect(error.code).toBe('CS_ERR_CONFIG');
      expect(error.message).toContain('client_id:secret');
      expect(`${error.message} ${error.hint}`).not.toContain('justTheSecretValue');
    }
  });

  it('posts the form to the default token endpoint, warns once that the spec deprecates it, and caches the token', async () => {
    const endpoint = tokenEndpoint((n) => issued(n));
    const { options, warnings, secrets } = setup({ env, fetch: endpoint.fetch, oauthScope: 'PRINCIPAL_ROLE:ALL' });
    const auth = catalogAuth(options);
    expect(auth.description).toBe(`OAuth2 client credentials (client id costsync-bot, token URL ${CATALOG}/v1/oauth/tokens)`);

    expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer token-1' });
    expect(await auth.headers({ ...GET, method: 'POST', body: '{}' })).toEqual({ authorization: 'Bearer token-1' });
    expect(endpoint.calls).toHaveLength(1);
    const call = endpoint.calls[0]!;
    expect(call.url).toBe(`${CATALOG}/v1/oauth/tokens`);
    expect(call.method).toBe('POST');
    expect(call.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(call.form)).toEqual({
      grant_type: 'client_credentials',
      client_id: 'costsync-bot',
      client_secret: SECRET,
      scope: 'PRINCIPAL_ROLE:ALL',
    });
    expect(secrets).toEqual([SECRET, 'token-1']);

    // A second token request does not warn again.
    expect(auth.refused(401)).toBe(true);
    await auth.headers(GET);
    expect(endpoint.calls).toHaveLength(2);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('deprecates');
    expect(warnings[0]).toContain('--catalog-oauth-uri');
    expect(warnings[0]).toContain('PRINCIPAL_ROLE:ALL');
  });

  it('leaves an empty scope out of the form', async () => {
    const endpoint = tokenEndpoint((n) => issued(n));
    await catalogAuth(setup({ env, fetch: endpoint.fetch, oauthScope: '' }).options).headers(GET);
    expect(endpoint.calls[0]!.form.has('scope')).toBe(false);
  });

  it('uses --catalog-oauth-uri without a warning', async () => {
    const endpoint = tokenEndpoint((n) => issued(n));
    const { options, warnings } = setup({ env, fetch: endpoint.fetch, oauthUri: 'https://idp.test/realms/x/token' });
    const auth = catalogAuth(options);
    await auth.headers(GET);
    expect(endpoint.calls[0]!.url).toBe('https://idp.test/realms/x/token');
    expect(warnings).toEqual([]);
    expect(auth.description).toContain('token URL https://idp.test/realms/x/token');
  });

  it('refreshes at 90% of the token life or a minute before it expires, whichever is earlier, by the injected clock', async () => {
    expect(refreshAfterMs(3_600_000)).toBe(3_240_000);
    expect(refreshAfterMs(300_000)).toBe(240_000);
    expect(refreshAfterMs(30_000)).toBe(27_000);

    const endpoint = tokenEndpoint((n) => issued(n, 3600));
    const { options, clock } = setup({ env, fetch: endpoint.fetch });
    const auth = catalogAuth(options);
    const start = clock.t;
    expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer token-1' });
    clock.t = start + 3_240_000 - 1;
    expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer token-1' });
    expect(endpoint.calls).toHaveLength(1);
    clock.t = start + 3_240_000;
    expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer token-2' });
    expect(endpoint.calls).toHaveLength(2);
  });

  it('keeps a token without expires_in until the catalog refuses it', async () => {
    const endpoint = tokenEndpoint((n) => issued(n));
    const { options, clock } = setup({ env, fetch: endpoint.fetch });
    const auth = catalogAuth(options);
    await auth.headers(GET);
    clock.t += 30 * 86_400_000;
    expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer token-1' });
    expect(endpoint.calls).toHaveLength(1);
  });

  it('sends one token request for concurrent callers', async () => {
    const answer = deferred<Response>();
    const endpoint = tokenEndpoint(() => answer.promise);
    const auth = catalogAuth(setup({ env, fetch: endpoint.fetch }).options);
    const waiting = Array.from({ length: 5 }, () => auth.headers(GET));
    expect(endpoint.calls).toHaveLength(1);
    answer.resolve(issued(1, 3600));
    expect(await Promise.all(waiting)).toEqual(Array.from({ length: 5 }, () => ({ authorization: 'Bearer token-1' })));
    expect(endpoint.calls).toHaveLength(1);
  });

  for (const status of [401, 419]) {
    it(`on ${status} drops the token for one more try, then gives up on the fresh one`, async () => {
      const endpoint = tokenEndpoint((n) => issued(n));
      const auth = catalogAuth(setup({ env, fetch: endpoint.fetch }).options);
      await auth.headers(GET);
      expect(auth.refused(status)).toBe(true);
      // Another request refused meanwhile: the token is gone already, and the next one is worth a try.
      expect(auth.refused(status)).toBe(true);
      expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer token-2' });
      expect(auth.refused(status)).toBe(false);
      // Nothing more is fetched: the fresh token is kept, and the caller reports the refusal.
      expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer token-2' });
      expect(endpoint.calls).toHaveLength(2);
    });
  }

  it('does not renew on statuses other than 401 and 419', async () => {
    const endpoint = tokenEndpoint((n) => issued(n));
    const auth = catalogAuth(setup({ env, fetch: endpoint.fetch }).options);
    await auth.headers(GET);
    expect(auth.refused(403)).toBe(false);
    expect(auth.refused(500)).toBe(false);
    await auth.headers(GET);
    expect(endpoint.calls).toHaveLength(1);
  });

  it('lets every request refused with the old token retry, told apart by the headers it carried', async () => {
    const endpoint = tokenEndpoint((n) => issued(n));
    const auth = catalogAuth(setup({ env, fetch: endpoint.fetch }).options);
    const [a, b, c] = await Promise.all([auth.headers(GET), auth.headers(GET), auth.headers(GET)]);
    expect(auth.refused(419, a)).toBe(true);
    const retried = await auth.headers(GET);
    expect(retried).toEqual({ authorization: 'Bearer token-2' });
    // b and c carried token-1, refused after token-2 was handed out: still worth their one retry.
    expect(auth.refused(419, b)).toBe(true);
    expect(auth.refused(419, c)).toBe(true);
    expect(auth.refused(419, retried)).toBe(false);
    expect(endpoint.calls).toHaveLength(2);
  });

  it('renews a replacement token again once it has served a while', async () => {
    const endpoint = tokenEndpoint((n) => issued(n));
    const { options, clock } = setup({ env, fetch: endpoint.fetch });
    const auth = catalogAuth(options);
    await auth.headers(GET);
    expect(auth.refused(401)).toBe(true);
    await auth.headers(GET);
    clock.t += 3_600_000;
    expect(auth.refused(401)).toBe(true);
    expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer token-3' });
    expect(auth.refused(401)).toBe(false);
  });

  it('keeps a still-valid token when its refresh fails, and fails once it has expired', async () => {
    const endpoint = tokenEndpoint(
      (n) => issued(n, 600),
      () => new Response('upstream down', { status: 503 }),
    );
    const { options, clock, warnings } = setup({ env, fetch: endpoint.fetch, oauthUri: 'https://idp.test/token' });
    const auth = catalogAuth(options);
    const start = clock.t;
    await auth.headers(GET);
    clock.t = start + 540_000;
    expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer token-1' });
    expect(endpoint.calls).toHaveLength(2);
    // Not tried again by every request: halfway to the expiry.
    expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer token-1' });
    expect(endpoint.calls).toHaveLength(2);
    clock.t = start + 570_000;
    expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer token-1' });
    expect(endpoint.calls).toHaveLength(3);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('503');
    clock.t = start + 600_000;
    const error = await failure(() => auth.headers(GET));
    expect(error.code).toBe('CS_ERR_CATALOG');
    expect(endpoint.calls).toHaveLength(4);
  });

  it('lets a caller give up waiting, and abandons the request when no one waits', async () => {
    const endpoint = tokenEndpoint(
      (n) =>
        new Promise<Response>((resolve, reject) => {
          const signal = endpoint.calls[n - 1]!.signal!;
          signal.addEventListener('abort', () => reject(signal.reason as Error));
          if (n > 1) resolve(issued(n));
        }),
    );
    const auth = catalogAuth(setup({ env, fetch: endpoint.fetch }).options);
    const first = new AbortController();
    const second = new AbortController();
    const a = auth.headers(GET, first.signal);
    const b = auth.headers(GET, second.signal);
    first.abort();
    expect((await failure(() => a)).code).toBe('CS_ERR_ABORTED');
    expect(endpoint.calls[0]!.signal!.aborted).toBe(false);
    second.abort();
    expect((await failure(() => b)).code).toBe('CS_ERR_ABORTED');
    expect(endpoint.calls[0]!.signal!.aborted).toBe(true);
    // The next caller starts a new request.
    expect(await auth.headers(GET)).toEqual({ authorization: 'Bearer token-2' });
  });

  describe('token endpoint failures name the URL and status, never a secret', () => {
    const url = 'https://idp.test/token';
    const cases: { name: string; answer: Parameters<typeof tokenEndpoint>[0]; code: string; says: string[]; hint: string }[] = [
      {
        name: '401 invalid_client',
        answer: { status: 401, body: { error: 'invalid_client', error_description: `bad secret ${SECRET}` } },
        code: 'CS_ERR_CATALOG_AUTH',
        says: [url, '401', 'invalid_client', 'costsync-bot'],
        hint: 'COSTSYNC_CATALOG_CREDENTIAL',
      },
      {
        name: '400 invalid_client',
        answer: { status: 400, body: { error: 'invalid_client' } },
        code: 'CS_ERR_CATALOG_AUTH',
        says: [url, '400', 'invalid_client'],
        hint: 'COSTSYNC_CATALOG_CREDENTIAL',
      },
      {
        name: 'invalid_scope, even with a 401',
        answer: { status: 401, body: { error: 'invalid_scope' } },
        code: 'CS_ERR_CATALOG_AUTH',
        says: [url, '401', 'invalid_scope', '"catalog"'],
        hint: '--catalog-oauth-scope',
      },
      {
        name: '404',
        answer: { status: 404, body: { error: { message: 'nope', type: 'NotFound', code: 404 } } },
        code: 'CS_ERR_CATALOG',
        says: [url, '404'],
        hint: '--catalog-oauth-uri',
      },
      {
        name: '500',
        answer: { status: 500, body: 'boom' },
        code: 'CS_ERR_CATALOG',
        says: [url, '500'],
        hint: 'run again',
      },
      {
        name: 'a 200 without access_token (its body is not quoted)',
        answer: { status: 200, body: { token: 'leaky-token-value', echo: SECRET } },
        code: 'CS_ERR_CATALOG',
        says: [url, 'access_token'],
        hint: '--catalog-oauth-uri',
      },
      {
        name: 'a refused connection',
        answer: () =>
          Promise.reject(
            Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }) }),
          ),
        code: 'CS_ERR_CATALOG_UNREACHABLE',
        says: [url, 'ECONNREFUSED'],
        hint: '--catalog-oauth-uri',
      },
      {
        name: 'a transport failure whose text carries the secret',
        answer: () => Promise.reject(new TypeError(`fetch failed: body client_secret=${SECRET}`)),
        code: 'CS_ERR_CATALOG',
        says: [url, 'fetch failed', '[REDACTED]'],
        hint: 'network',
      },
    ];
    for (const c of cases) {
      it(c.name, async () => {
        const endpoint = tokenEndpoint(c.answer);
        const auth = catalogAuth(setup({ env, fetch: endpoint.fetch, oauthUri: url }).options);
        const error = await failure(() => auth.headers(GET));
        expect(error.code).toBe(c.code);
        for (const text of c.says) expect(error.message).toContain(text);
        expect(error.hint).toContain(c.hint);
        expect(`${error.message} ${error.hint}`).not.toContain(SECRET);
        expect(`${error.message} ${error.hint}`).not.toContain('leaky-token-value');
      });
    }
  });
});

describe('AWS SigV4', () => {
  const credentials: AwsCredentialIdentity = {
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
    sessionToken: 'session-token-example',
  };
  const url =
    'https://glue.us-east-1.amazonaws.com/iceberg/v1/catalogs/123456789012/namespaces/costsync%1Fcost/tables?pageSize=10&parent=a%1Fb';
  const body = '{"name":"line_items"}';
  const request: AuthRequest = { method: 'POST', url, headers: { 'content-type': 'application/json' }, body };

  /** SigV4 computed here from AWS's description of it, independently of the signer. */
  function expectedSignature(signed: Record<string, string>, service: string, region: string): string {
    const u = new URL(url);
    const rfc3986 = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
    // Every service but S3 encodes each path segment once more than the request line carries it.
    const path = u.pathname.split('/').map(rfc3986).join('/');
    const query = [...u.searchParams]
      .map(([k, v]) => [rfc3986(k), rfc3986(v)] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`)
      .join('&');
    const headers: Record<string, string> = { ...request.headers, ...signed, host: u.host };
    delete headers.authorization;
    const names = Object.keys(headers)
      .map((n) => n.toLowerCase())
      .sort();
    const canonical = [
      'POST',
      path,
      query,
      names.map((n) => `${n}:${headers[n]!.trim()}\n`).join(''),
      names.join(';'),
      createHash('sha256').update(body).digest('hex'),
    ].join('\n');
    const date = signed['x-amz-date']!;
    const scope = `${date.slice(0, 8)}/${region}/${service}/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', date, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
    const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
    let key = hmac(`AWS4${credentials.secretAccessKey}`, date.slice(0, 8));
    for (const part of [region, service, 'aws4_request']) key = hmac(key, part);
    const signature = createHmac('sha256', key).update(toSign).digest('hex');
    return `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`;
  }

  it('signs exactly the method, URL, headers and body, and returns every header the signer added', async () => {
    const { options, secrets } = setup({ sigv4: 'glue', sigv4Region: 'us-east-1', credentials: async () => credentials });
    const auth = catalogAuth(options);
    expect(auth.description).toBe('AWS SigV4 (glue, us-east-1)');
    const headers = await auth.headers(request);
    expect(Object.keys(headers).sort()).toEqual(['authorization', 'x-amz-content-sha256', 'x-amz-date', 'x-amz-security-token']);
    expect(headers['x-amz-date']).toBe('20250601T120000Z');
    expect(headers['x-amz-security-token']).toBe('session-token-example');
    expect(headers['x-amz-content-sha256']).toBe(createHash('sha256').update(body).digest('hex'));
    expect(headers.authorization).toContain('Credential=AKIDEXAMPLE/20250601/us-east-1/glue/aws4_request');
    expect(headers.authorization).toContain('SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token');
    expect(headers.authorization).toBe(expectedSignature(headers, 'glue', 'us-east-1'));
    expect(secrets).toEqual([credentials.secretAccessKey, credentials.sessionToken]);
    expect(auth.refused(403)).toBe(false);
    expect(auth.refused(401)).toBe(false);
  });

  it('signs for s3tables in the region AWS_REGION names', async () => {
    const { options } = setup({ sigv4: 's3tables', env: { AWS_REGION: 'eu-west-1' }, credentials: async () => credentials });
    const auth = catalogAuth(options);
    expect(auth.description).toBe('AWS SigV4 (s3tables, eu-west-1)');
    const headers = await auth.headers(request);
    expect(headers.authorization).toBe(expectedSignature(headers, 's3tables', 'eu-west-1'));
  });

  it('needs a region, and says which flag gives it', async () => {
    const error = await failure(() => catalogAuth(setup({ sigv4: 'glue' }).options));
    expect(error.code).toBe('CS_ERR_CONFIG');
    expect(error.hint).toContain('--catalog-sigv4-region');
  });

  it('warns when the catalog endpoint is another service or region than the one signed for', () => {
    const { options, warnings } = setup({
      sigv4: 'glue',
      sigv4Region: 'us-west-2',
      catalogUrl: 'https://glue.us-east-1.amazonaws.com/iceberg',
    });
    catalogAuth(options);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('us-east-1');
    expect(warnings[0]).toContain('us-west-2');
  });

  it('reports missing credentials as a catalog auth error, with no secret in it', async () => {
    const { options } = setup({
      sigv4: 'glue',
      sigv4Region: 'us-east-1',
      credentials: async () => {
        throw new Error('Could not load credentials from any providers');
      },
    });
    const error = await failure(() => catalogAuth(options).headers(request));
    expect(error.code).toBe('CS_ERR_CATALOG_AUTH');
    expect(error.message).toContain('No AWS credentials');
    expect(error.message).toContain('glue, us-east-1');
    expect(error.hint).toContain('AWS_ACCESS_KEY_ID');
  });
});

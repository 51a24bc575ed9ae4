/**
 * How costsync authorises requests to an Iceberg REST catalog: a fixed bearer token, OAuth2 client
 * credentials exchanged for tokens it keeps fresh, AWS SigV4 (Glue, S3 Tables), or nothing at all.
 * Every secret it sees goes to the logger's redaction; none reaches an error message.
 */
import type { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import { errnoOf, UNREACHABLE_CODES } from '../api/client.js';
import { ConfigError, CostsyncError, redact } from '../errors.js';
import type { AuthRequest, CatalogAuth } from './rest-types.js';

export interface CatalogAuthOptions {
  /** `--catalog`, e.g. `https://host/api/catalog`. */
  catalogUrl: string;
  /** Read for COSTSYNC_CATALOG_TOKEN, COSTSYNC_CATALOG_CREDENTIAL and AWS_REGION. */
  env: NodeJS.ProcessEnv;
  /** `--catalog-oauth-uri`; absent: the catalog's own (deprecated) `/v1/oauth/tokens`. */
  oauthUri?: string | undefined;
  /** `--catalog-oauth-scope`. */
  oauthScope: string;
  /** `--catalog-sigv4`: the AWS service requests are signed for. */
  sigv4?: 'glue' | 's3tables' | undefined;
  /** `--catalog-sigv4-region`; absent: AWS_REGION. */
  sigv4Region?: string | undefined;
  clock: { now(): number };
  /** For the token endpoint. */
  fetch?: typeof globalThis.fetch;
  warn(message: string): void;
  /** Told every secret seen: the client secret, each access token as issued, AWS secret keys. */
  addSecret(secret: string): void;
  /** Absent: the AWS SDK's default chain (environment, profile, SSO, instance or container role). */
  credentials?: AwsCredentialIdentityProvider;
}

export const CATALOG_TOKEN_ENV = 'COSTSYNC_CATALOG_TOKEN';
export const CATALOG_CREDENTIAL_ENV = 'COSTSYNC_CATALOG_CREDENTIAL';

/** How long the token endpoint may take to answer. */
const TOKEN_TIMEOUT_MS = 30_000;
/** A token refreshed this long before it expires, unless a tenth of its life is shorter. */
const REFRESH_MARGIN_MS = 60_000;
/** The least wait before trying again a refresh that failed while the token still works. */
const RETRY_REFRESH_MIN_MS = 5_000;
/** A token fetched to replace a refused one, refused itself within this long: a new one would fare no better. */
const FRESH_MS = 60_000;

/** The way the settings ask for, after refusing settings that contradict each other. */
/** The catalog secrets the environment holds (the token; the client secret), for redaction from the run's first line on. */
export function catalogSecrets(env: NodeJS.ProcessEnv): string[] {
  const token = env[CATALOG_TOKEN_ENV]?.trim();
  const credential = env[CATALOG_CREDENTIAL_ENV]?.trim();
  const secret = credential?.includes(':') ? credential.slice(credential.indexOf(':') + 1) : credential;
  return [token, secret].filter((s): s is string => s !== undefined && s !== '');
}

export function catalogAuth(o: CatalogAuthOptions): CatalogAuth {
  const token = nonEmpty(o.env[CATALOG_TOKEN_ENV]);
  const credential = nonEmpty(o.env[CATALOG_CREDENTIAL_ENV]);
  const ways = [
    token !== undefined && { name: CATALOG_TOKEN_ENV, undo: `unset ${CATALOG_TOKEN_ENV}` },
    credential !== undefined && { name: CATALOG_CREDENTIAL_ENV, undo: `unset ${CATALOG_CREDENTIAL_ENV}` },
    o.sigv4 !== undefined && { name: `--catalog-sigv4 ${o.sigv4}`, undo: 'drop --catalog-sigv4' },
  ].filter((way) => way !== false);
  if (ways.length > 1) {
    throw new ConfigError(
      `${listed(ways.map((w) => w.name))} are ${ways.length === 2 ? 'both' : 'all'} set, and costsync authorises catalog requests one way only.`,
      `Keep the one your catalog expects: ${ways.map((w) => w.undo).join(', or ')}.`,
    );
  }
  if (o.oauthUri !== undefined && credential === undefined) {
    throw new ConfigError(
      `--catalog-oauth-uri names the token endpoint for ${CATALOG_CREDENTIAL_ENV}, which is not set.`,
      `Set ${CATALOG_CREDENTIAL_ENV}=client_id:secret, or drop --catalog-oauth-uri.`,
    );
  }
  if (o.sigv4Region !== undefined && o.sigv4 === undefined) {
    throw new ConfigError(
      '--catalog-sigv4-region is the region requests are signed for, but --catalog-sigv4 is not set.',
      'Add --catalog-sigv4 glue (or s3tables), or drop --catalog-sigv4-region.',
    );
  }
  if (token !== undefined) return bearerAuth(token, o);
  if (credential !== undefined) return new ClientCredentialsAuth(o, credential);
  if (o.sigv4 !== undefined) return new SigV4Auth(o, o.sigv4);
  return NO_AUTH;
}

/** Catalogs without auth exist (a local test catalog): requests go as they are. */
const NO_AUTH: CatalogAuth = {
  description: 'none',
  headers: async () => ({}),
  refused: () => false,
};

function bearerAuth(token: string, o: CatalogAuthOptions): CatalogAuth {
  o.addSecret(token);
  return {
    description: `bearer token (${CATALOG_TOKEN_ENV})`,
    headers: async () => ({ authorization: `Bearer ${token}` }),
    // A fixed token cannot be renewed: the caller reports the refusal.
    refused: () => false,
  };
}

interface IssuedToken {
  value: string;
  issuedAt: number;
  /** When to fetch the next one; null: when the catalog refuses this one. */
  refreshAt: number | null;
  /** When it stops working, as far as the endpoint said. */
  expiresAt: number | null;
  /** Fetched because the one before was refused. */
  replacement: boolean;
  handedOut: number;
  refreshFailureTold: boolean;
}

/** One token request, shared by every caller that needs a token meanwhile. */
interface TokenRequest {
  promise: Promise<IssuedToken>;
  /** Aborted when every caller waiting for it has given up. */
  controller: AbortController;
  waiters: number;
}

/** OAuth2 client credentials (RFC 6749 4.4), form-encoded, exchanged for bearer tokens refreshed before they expire. */
class ClientCredentialsAuth implements CatalogAuth {
  readonly description: string;
  private readonly clientId: string;
  private readonly secret: string;
  private readonly tokenUrl: string;
  private readonly tokenUrlDefaulted: boolean;
  private readonly fetch: typeof globalThis.fetch;
  private token: IssuedToken | null = null;
  private inFlight: TokenRequest | null = null;
  private nextIsReplacement = false;
  private deprecationTold = false;

  constructor(
    private readonly o: CatalogAuthOptions,
    credential: string,
  ) {
    const colon = credential.indexOf(':');
    if (colon <= 0 || colon === credential.length - 1) {
      // The value is not echoed: without its colon it may be the secret alone.
      throw new ConfigError(
        `${CATALOG_CREDENTIAL_ENV} must be client_id:secret (the client id, a colon, then the secret).`,
        `Set ${CATALOG_CREDENTIAL_ENV}=<client id>:<client secret>; for a token you already have, set ${CATALOG_TOKEN_ENV} instead.`,
      );
    }
    this.clientId = credential.slice(0, colon);
    this.secret = credential.slice(colon + 1);
    o.addSecret(this.secret);
    this.tokenUrlDefaulted = o.oauthUri === undefined;
    this.tokenUrl =
      o.oauthUri === undefined
        ? `${httpUrl(o.catalogUrl, '--catalog').replace(/\/+$/, '')}/v1/oauth/tokens`
        : httpUrl(o.oauthUri, '--catalog-oauth-uri');
    this.fetch = o.fetch ?? globalThis.fetch;
    this.description = `OAuth2 client credentials (client id ${this.clientId}, token URL ${this.tokenUrl})`;
  }

  async headers(_request: AuthRequest, signal?: AbortSignal): Promise<Record<string, string>> {
    const token = await this.current(signal);
    token.handedOut++;
    return { authorization: `Bearer ${token.value}` };
  }

  refused(status: number, sent?: Record<string, string>): boolean {
    if (status !== 401 && status !== 419) return false;
    const token = this.token;
    // Dropped already by another refused request: the next request fetches a new one.
    if (token === null) return true;
    const used = sent === undefined ? undefined : bearerOf(sent);
    // A request that carried an older token: the current one has not been tried.
    if (used !== undefined ? used !== token.value : token.handedOut === 0) return true;
    if (token.replacement && this.o.clock.now() - token.issuedAt < FRESH_MS) return false;
    this.token = null;
    this.nextIsReplacement = true;
    return true;
  }

  private async current(signal: AbortSignal | undefined): Promise<IssuedToken> {
    const now = this.o.clock.now();
    const token = this.token;
    if (token !== null && (token.refreshAt === null || now < token.refreshAt)) return token;
    try {
      return await this.join((this.inFlight ??= this.request()), signal);
    } catch (error) {
      // A refresh that fails while the token still works does not stop the run; its expiry will.
      if (token !== null && this.token === token && token.expiresAt !== null && now < token.expiresAt && !signal?.aborted) {
        // Tried again halfway to its expiry, not by every request: a hung endpoint would hold each one for its timeout.
        token.refreshAt = Math.min(token.expiresAt, now + Math.max((token.expiresAt - now) / 2, RETRY_REFRESH_MIN_MS));
        if (!token.refreshFailureTold) {
          token.refreshFailureTold = true;
          this.o.warn(`Could not refresh the catalog token, using the current one until it expires: ${errorText(error)}`);
        }
        return token;
      }
      throw error;
    }
  }

  private request(): TokenRequest {
    const controller = new AbortController();
    const promise = this.fetchToken(controller.signal).finally(() => {
      if (this.inFlight?.promise === promise) this.inFlight = null;
    });
    // Every waiter may have left (aborted) before it settles: its failure is then nobody's to report.
    promise.catch(() => undefined);
    return { promise, controller, waiters: 0 };
  }

  /** Waits for the shared request, or until this caller's signal aborts (the request goes on for the others). */
  private async join(request: TokenRequest, signal: AbortSignal | undefined): Promise<IssuedToken> {
    if (signal?.aborted) throw abortedError(signal);
    request.waiters++;
    if (signal === undefined) return request.promise;
    return new Promise<IssuedToken>((resolve, reject) => {
      const onAbort = () => {
        if (--request.waiters === 0) request.controller.abort();
        reject(abortedError(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      request.promise.then(
        (token) => {
          signal.removeEventListener('abort', onAbort);
          resolve(token);
        },
        // Its failures are CostsyncErrors: fetchToken wraps every one.
        (error: Error) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
  }

  private async fetchToken(stop: AbortSignal): Promise<IssuedToken> {
    if (this.tokenUrlDefaulted && !this.deprecationTold) {
      this.deprecationTold = true;
      this.o.warn(
        `No --catalog-oauth-uri: asking the catalog's own token endpoint ${this.tokenUrl}, which the Iceberg REST spec deprecates. ` +
          `Name your server's OAuth2 token endpoint with --catalog-oauth-uri (and its scope with --catalog-oauth-scope: Polaris' default needs PRINCIPAL_ROLE:ALL).`,
      );
    }
    const startedAt = this.o.clock.now();
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: this.clientId, client_secret: this.secret });
    // An empty scope is left out: some servers refuse `scope=` where they would grant their default.
    if (this.o.oauthScope !== '') form.set('scope', this.o.oauthScope);
    const timeout = AbortSignal.timeout(TOKEN_TIMEOUT_MS);
    let status: number;
    let text: string;
    try {
      const response = await this.fetch(this.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(),
        signal: AbortSignal.any([stop, timeout]),
      });
      status = response.status;
      text = await response.text();
    } catch (error) {
      throw this.transportError(error, stop, timeout);
    }
    const body = parseJson(text);
    if (status < 200 || status > 299) throw this.refusal(status, body);
    const answer = body as { access_token?: unknown; token_type?: unknown; expires_in?: unknown; refresh_token?: unknown } | null;
    if (typeof answer?.access_token !== 'string' || answer.access_token === '') {
      // The body is not quoted: it may hold a token under another name.
      throw new CostsyncError('CS_ERR_CATALOG', `The token endpoint ${this.tokenUrl} answered ${status} without an OAuth2 access_token.`, {
        hint: `Check --catalog-oauth-uri: it must name the server's OAuth2 token endpoint (client credentials grant).`,
      });
    }
    this.o.addSecret(answer.access_token);
    if (typeof answer.refresh_token === 'string' && answer.refresh_token !== '') this.o.addSecret(answer.refresh_token);
    const type = typeof answer.token_type === 'string' ? answer.token_type : 'bearer';
    if (type.toLowerCase() !== 'bearer' && type !== 'N_A') {
      throw new CostsyncError(
        'CS_ERR_CATALOG_AUTH',
        `The token endpoint ${this.tokenUrl} issued a "${type}" token; costsync sends bearer tokens only.`,
        {
          hint: 'Configure the OAuth2 server to issue bearer tokens for this client.',
        },
      );
    }
    const lifeMs = lifetimeMs(answer.expires_in);
    const token: IssuedToken = {
      value: answer.access_token,
      // From before the request: the server's clock started the token's life no earlier.
      issuedAt: startedAt,
      refreshAt: lifeMs === null ? null : startedAt + refreshAfterMs(lifeMs),
      expiresAt: lifeMs === null ? null : startedAt + lifeMs,
      replacement: this.nextIsReplacement,
      handedOut: 0,
      refreshFailureTold: false,
    };
    this.nextIsReplacement = false;
    this.token = token;
    return token;
  }

  private transportError(error: unknown, stop: AbortSignal, timeout: AbortSignal): CostsyncError {
    if (stop.aborted) return abortedError(stop);
    if (timeout.aborted) {
      return new CostsyncError(
        'CS_ERR_CATALOG',
        `The token endpoint ${this.tokenUrl} did not answer within ${TOKEN_TIMEOUT_MS / 1000} s.`,
        { hint: 'Check that the OAuth2 server is up (--catalog-oauth-uri), then run again.', cause: error },
      );
    }
    const errno = errnoOf(error);
    if (errno !== undefined) {
      return new CostsyncError(
        'CS_ERR_CATALOG_UNREACHABLE',
        `Cannot reach the catalog's token endpoint at ${this.tokenUrl}: ${UNREACHABLE_CODES[errno]} (${errno}).`,
        {
          hint: `Check ${this.tokenUrlDefaulted ? '--catalog' : '--catalog-oauth-uri'}: ${this.tokenUrl} is what costsync was given.`,
          cause: error,
        },
      );
    }
    return new CostsyncError(
      'CS_ERR_CATALOG',
      `The token request to ${this.tokenUrl} failed: ${redact(errorText(error), [this.secret])}.`,
      {
        hint: 'Check the network and the OAuth2 server, then run again.',
        cause: error,
      },
    );
  }

  private refusal(status: number, body: unknown): CostsyncError {
    const oauth = oauthErrorOf(body);
    const said = oauth === null ? '' : ` ${oauth.error}${oauth.description ? `: ${redact(oauth.description, [this.secret])}` : ''}`;
    const what = `The token endpoint ${this.tokenUrl} answered ${status}${said}`;
    const error = oauth?.error;
    if (error === 'invalid_scope') {
      return new CostsyncError('CS_ERR_CATALOG_AUTH', `${what}: it will not grant the scope "${this.o.oauthScope}".`, {
        hint: `Ask for a scope the server grants with --catalog-oauth-scope (Polaris: PRINCIPAL_ROLE:ALL, or PRINCIPAL_ROLE:<role>).`,
      });
    }
    if (status === 401 || error === 'invalid_client' || error === 'unauthorized_client') {
      return new CostsyncError('CS_ERR_CATALOG_AUTH', `${what}: it refused client id ${this.clientId} and its secret.`, {
        hint: `Check ${CATALOG_CREDENTIAL_ENV} (client_id:secret): the id or the secret is wrong, or the client was removed or disabled.`,
      });
    }
    if (status === 403 || oauth !== null) {
      return new CostsyncError('CS_ERR_CATALOG_AUTH', `${what}: no token could be had for client id ${this.clientId}.`, {
        hint: `Check that --catalog-oauth-uri names an OAuth2 token endpoint that grants client credentials to this client.`,
      });
    }
    if (status === 404 || status === 405) {
      return new CostsyncError('CS_ERR_CATALOG', `${what}: there is no token endpoint there.`, {
        hint: this.tokenUrlDefaulted
          ? `This catalog has no /v1/oauth/tokens: name its OAuth2 server's token endpoint with --catalog-oauth-uri.`
          : 'Check --catalog-oauth-uri: it must name the OAuth2 token endpoint itself.',
      });
    }
    return new CostsyncError('CS_ERR_CATALOG', `${what}.`, { hint: 'Check that the OAuth2 server is up, then run again.' });
  }
}

/** AWS Signature V4 over exactly the request the client sends, for Glue's and S3 Tables' Iceberg endpoints. */
class SigV4Auth implements CatalogAuth {
  readonly description: string;
  private readonly region: string;
  private signer: Promise<SignatureV4> | null = null;
  private readonly seen = new Set<string>();

  constructor(
    private readonly o: CatalogAuthOptions,
    private readonly service: 'glue' | 's3tables',
  ) {
    const region = nonEmpty(o.sigv4Region) ?? nonEmpty(o.env.AWS_REGION);
    if (region === undefined) {
      throw new ConfigError(
        `--catalog-sigv4 ${service} signs requests for a region, and none is set.`,
        `Add --catalog-sigv4-region <region> (e.g. us-east-1), or set AWS_REGION.`,
      );
    }
    if (!/^[a-z0-9-]+$/.test(region)) {
      throw new ConfigError(`"${region}" is not an AWS region.`, 'Give --catalog-sigv4-region (or AWS_REGION) as e.g. us-east-1.');
    }
    this.region = region;
    this.description = `AWS SigV4 (${service}, ${region})`;
    const endpoint = awsEndpointOf(o.catalogUrl);
    if (endpoint !== null && (endpoint.service !== service || endpoint.region !== region)) {
      o.warn(
        `--catalog ${o.catalogUrl} is ${endpoint.service} in ${endpoint.region}, but requests are signed for ${service} in ${region}: AWS will refuse them. ` +
          `Match --catalog-sigv4 and --catalog-sigv4-region (or AWS_REGION) to the endpoint.`,
      );
    }
  }

  async headers(request: AuthRequest, signal?: AbortSignal): Promise<Record<string, string>> {
    if (signal?.aborted) throw abortedError(signal);
    const signer = await (this.signer ??= this.load());
    const url = new URL(request.url);
    const unsigned: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) if (name.toLowerCase() !== 'host') unsigned[name] = value;
    // Signed as fetch will send it (the port only when not the scheme's default); not returned: fetch sets it.
    unsigned.host = url.host;
    const signed = await signer.sign(
      {
        method: request.method.toUpperCase(),
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port === '' ? {} : { port: Number(url.port) }),
        path: url.pathname,
        query: queryOf(url.search),
        headers: unsigned,
        body: request.body,
      },
      { signingDate: new Date(this.o.clock.now()) },
    );
    const before = new Set(Object.keys(unsigned).map((name) => name.toLowerCase()));
    const added: Record<string, string> = {};
    for (const [name, value] of Object.entries(signed.headers)) if (!before.has(name.toLowerCase())) added[name] = value;
    return added;
  }

  // Credentials do not change by asking again, and the SDK's chain already refreshes expiring ones.
  refused(): boolean {
    return false;
  }

  /** The SDK is slow to load: only a run that signs loads it. */
  private async load(): Promise<SignatureV4> {
    const [{ SignatureV4 }, { Sha256 }, provider] = await Promise.all([
      import('@smithy/signature-v4'),
      import('@smithy/core/checksum'),
      this.o.credentials ?? import('@aws-sdk/credential-provider-node').then((m) => m.defaultProvider()),
    ]);
    const credentials = async (): Promise<AwsCredentialIdentity> => {
      let found: AwsCredentialIdentity;
      try {
        found = await provider();
      } catch (error) {
        throw new CostsyncError(
          'CS_ERR_CATALOG_AUTH',
          `No AWS credentials to sign catalog requests with (${this.service}, ${this.region}): ${redact(errorText(error), [...this.seen])}`,
          {
            hint: 'Give the AWS SDK credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, or an instance or container role.',
            cause: error,
          },
        );
      }
      for (const secret of [found.secretAccessKey, found.sessionToken]) {
        if (secret !== undefined && secret !== '' && !this.seen.has(secret)) {
          this.seen.add(secret);
          this.o.addSecret(secret);
        }
      }
      return found;
    };
    return new SignatureV4({ service: this.service, region: this.region, credentials, sha256: Sha256 });
  }
}

/** The query as the signer wants it: decoded, `+` kept as itself (it is not a space in a URL's query). */
function queryOf(search: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const pair of search.replace(/^\?/, '').split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = decoded(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? '' : decoded(pair.slice(eq + 1));
    const had = query[key];
    query[key] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
  }
  return query;
}

/** Percent-decoded; a part that is not valid percent-encoding is signed as it stands rather than failing. */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** `glue.us-east-1.amazonaws.com` → glue in us-east-1; null for any other host. */
function awsEndpointOf(catalogUrl: string): { service: string; region: string } | null {
  let host: string;
  try {
    host = new URL(catalogUrl).hostname;
  } catch {
    return null;
  }
  const match = /^(glue|s3tables)(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$/.exec(host);
  return match ? { service: match[1]!, region: match[2]! } : null;
}

/** When to refresh a token that lives `lifeMs`: at 90% of its life or a minute before it expires, whichever is earlier. */
export function refreshAfterMs(lifeMs: number): number {
  const early = Math.min(lifeMs * 0.9, lifeMs - REFRESH_MARGIN_MS);
  // A token shorter-lived than the margin would never be fresh: it is kept for 90% of its life instead.
  return early > 0 ? early : lifeMs * 0.9;
}

function lifetimeMs(expiresIn: unknown): number | null {
  const seconds = typeof expiresIn === 'string' && expiresIn.trim() !== '' ? Number(expiresIn) : expiresIn;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : null;
}

function oauthErrorOf(body: unknown): { error: string; description: string | undefined } | null {
  const b = body as { error?: unknown; error_description?: unknown } | null;
  if (typeof b?.error !== 'string') return null;
  const description = typeof b.error_description === 'string' ? b.error_description.slice(0, 300) : undefined;
  return { error: b.error.slice(0, 60), description };
}

function bearerOf(headers: Record<string, string>): string | undefined {
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === 'authorization' && /^bearer /i.test(value)) return value.slice('bearer '.length);
  }
  return undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function httpUrl(value: string, flag: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${flag} "${value}" is not a URL.`, `Give ${flag} as an http(s) URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`${flag} "${value}" is not an http(s) URL.`, `Give ${flag} as an http(s) URL.`);
  }
  return value;
}

function abortedError(signal: AbortSignal): CostsyncError {
  return new CostsyncError('CS_ERR_ABORTED', 'A catalog request was not sent: the run is stopping.', { cause: signal.reason });
}

function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
  return `${error.message}${cause}`;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function listed(names: string[]): string {
  return names.length <= 2 ? names.join(' and ') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

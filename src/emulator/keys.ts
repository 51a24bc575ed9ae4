/** API keys and custom-provider connections the emulator knows, from `--keys FILE` or the defaults. */
import { ConfigError } from '../errors.js';
import { PLANS, SCOPES, type Plan, type Scope } from '../api/types.js';

export interface KeyConfig {
  key: string;
  scopes: Scope[];
  plan: Plan;
  revoked?: boolean;
  expires_at?: string;
  /** An ingest key bound to one connection; other connections get FORBIDDEN. */
  connection_id?: string;
  /** The workspace whose data the key reads (each has its own seeded data); absent: the default one. */
  workspace?: string;
}

export interface ConnectionConfig {
  id: string;
  provider_type: string;
}

export interface KeysConfig {
  keys: KeyConfig[];
  connections: ConnectionConfig[];
}

export const DEMO_KEY = 'demo-key';
export const DEMO_CONNECTION = 'demo-connection';

/** Without a keys file: one key with every scope on the business plan, one custom connection. */
export function defaultKeys(): KeysConfig {
  return {
    keys: [{ key: DEMO_KEY, scopes: [...SCOPES], plan: 'business' }],
    connections: [{ id: DEMO_CONNECTION, provider_type: 'custom' }],
  };
}

/** Validates a parsed keys file, naming the first problem and how to fix it. */
export function parseKeysConfig(value: unknown, source = 'keys file'): KeysConfig {
  const fail = (problem: string): never => {
    throw new ConfigError(
      `${source}: ${problem}`,
      'expected {"keys": [{"key", "scopes": [...], "plan", "revoked"?, "expires_at"?, "connection_id"?, "workspace"?}], "connections": [{"id", "provider_type"}]}',
    );
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail('must be a JSON object');
  const obj = value as Record<string, unknown>;
  if (!Array.isArray(obj.keys) || obj.keys.length === 0) fail('"keys" must be a non-empty array');
  const connections = obj.connections ?? [];
  if (!Array.isArray(connections)) fail('"connections" must be an array');

  const keys = (obj.keys as unknown[]).map((raw, i): KeyConfig => {
    const at = `keys[${i}]`;
    if (typeof raw !== 'object' || raw === null) return fail(`${at} must be an object`);
    const k = raw as Record<string, unknown>;
    if (typeof k.key !== 'string' || k.key.trim() === '') fail(`${at}.key must be a non-empty string`);
    if (!Array.isArray(k.scopes) || k.scopes.some((s) => !SCOPES.includes(s as Scope))) {
      fail(`${at}.scopes must be an array of ${SCOPES.join(', ')}`);
    }
    if (!PLANS.includes(k.plan as Plan)) fail(`${at}.plan must be one of ${PLANS.join(', ')}`);
    if (k.revoked !== undefined && typeof k.revoked !== 'boolean') fail(`${at}.revoked must be true or false`);
    if (k.expires_at !== undefined && (typeof k.expires_at !== 'string' || Number.isNaN(Date.parse(k.expires_at)))) {
      fail(`${at}.expires_at must be an ISO 8601 time`);
    }
    if (k.connection_id !== undefined && typeof k.connection_id !== 'string') fail(`${at}.connection_id must be a string`);
    if (k.workspace !== undefined && (typeof k.workspace !== 'string' || k.workspace === ''))
      fail(`${at}.workspace must be a non-empty string`);
    return {
      key: k.key as string,
      scopes: k.scopes as Scope[],
      plan: k.plan as Plan,
      ...(k.revoked !== undefined ? { revoked: k.revoked as boolean } : {}),
      ...(k.expires_at !== undefined ? { expires_at: k.expires_at as string } : {}),
      ...(k.connection_id !== undefined ? { connection_id: k.connection_id as string } : {}),
      ...(k.workspace !== undefined ? { workspace: k.workspace as string } : {}),
    };
  });
  const conns = (connections as unknown[]).map((raw, i): ConnectionConfig => {
    const c = (raw ?? {}) as Record<string, unknown>;
    if (typeof c.id !== 'string' || c.id === '') fail(`connections[${i}].id must be a non-empty string`);
    if (typeof c.provider_type !== 'string' || c.provider_type === '') fail(`connections[${i}].provider_type must be a non-empty string`);
    return { id: c.id as string, provider_type: c.provider_type as string };
  });
  return { keys, connections: conns };
}

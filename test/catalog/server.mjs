// An Iceberg REST catalog for the tests (and for runs by hand): the routes, shapes and errors of the
// OpenAPI document `open-api/rest-catalog-open-api.yaml` in apache/iceberg, written from that document
// alone so that it catches costsync's mistakes instead of sharing them. Pointers live in memory (or in a
// JSON file, with `statePath`); each table's metadata files are written under its location on disk.
// Plain JavaScript so that it runs under `node` as it is: `node test/catalog/server.mjs --root DIR`.
/* global structuredClone */
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { SignatureV4 } from '@smithy/signature-v4';

const JSON_TYPE = 'application/json';
/** Java's REST catalog numbers partition fields from here; 999 is the last id of an unpartitioned table. */
const PARTITION_ID_START = 1000;
const DEFAULT_TOKEN_PATH = '/v1/oauth/tokens';
const NAMESPACE_SEPARATOR = '\u001f';
const TRANSFORMS = /^(identity|year|month|day|hour|void|bucket\[\d+\]|truncate\[\d+\])$/;

/** A refusal as the spec's error model: the status, and the exception type a Java client maps it to. */
class CatalogError extends Error {
  /** @param {number} status @param {string} type @param {string} message */
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

const badRequest = (/** @type {string} */ message) => new CatalogError(400, 'BadRequestException', message);
const invalid = (/** @type {string} */ message) => new CatalogError(400, 'ValidationException', message);
const conflict = (/** @type {string} */ message) => new CatalogError(409, 'CommitFailedException', message);

/** The error type the spec names for an injected status on a route: commits cannot know their outcome. */
function faultType(/** @type {string} */ route, /** @type {number} */ status) {
  if (status === 409) return route === 'create' ? 'AlreadyExistsException' : 'CommitFailedException';
  if (status === 503) return 'SlowDownException';
  if ((route === 'commit' || route === 'transaction') && (status === 500 || status === 502 || status === 504))
    return 'CommitStateUnknownException';
  if (status === 401) return 'NotAuthorizedException';
  if (status === 419) return 'AuthenticationTimeoutException';
  return status >= 500 ? 'InternalServerError' : 'BadRequestException';
}

/** An ISO 8601 duration's length (`PT30M`, `P1D`, `PT1H30M10S`), in milliseconds. */
export function durationMs(/** @type {string} */ text) {
  const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(text);
  if (!m || text === 'P' || text.endsWith('T')) throw new Error(`Not an ISO 8601 duration: ${text}`);
  const [d, h, min, s] = m.slice(1).map((v) => Number(v ?? 0));
  return (((d * 24 + h) * 60 + min) * 60 + s) * 1000;
}

/** Bytes the signer hands over (a string, an ArrayBuffer or a view of one) as node:crypto takes them. */
const bytes = (/** @type {any} */ data) =>
  typeof data === 'string'
    ? data
    : ArrayBuffer.isView(data)
      ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
      : Buffer.from(data);

/** SHA-256 (and its HMAC) for the signer, from node:crypto. */
class Sha256 {
  /** @param {any} [secret] */
  constructor(secret) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  /** @param {any} data */
  update(data) {
    this.hash.update(bytes(data));
  }
  async digest() {
    return new Uint8Array(this.hash.digest());
  }
}

const clone = (/** @type {any} */ value) => structuredClone(value);

/** A location's file on this machine: a `file:` URL or an absolute path; null for object stores. */
function localPath(/** @type {string} */ location) {
  if (location.startsWith('file:')) return fileURLToPath(location);
  if (location.startsWith('/')) return location;
  return null;
}

/** The version number a metadata file's name starts with (`00012-<uuid>.metadata.json` → 12), else -1. */
function metadataVersion(/** @type {string | null} */ location) {
  if (location === null) return -1;
  const m = /(?:^|\/)(\d+)-[^/]*\.metadata\.json$/.exec(location);
  return m ? Number(m[1]) : -1;
}

/**
 * `type` (a struct's field type) with fresh ids: every field of a struct first, then the types inside
 * them, as Java's catalog assigns them on create. `ids` maps each old id to its new one.
 * @param {any} type @param {() => number} next @param {Map<number, number>} ids
 */
function freshType(type, next, ids) {
  if (typeof type === 'string') return type;
  if (type.type === 'struct') {
    const fields = type.fields.map((/** @type {any} */ f) => {
      const id = next();
      if (ids.has(f.id)) throw invalid(`Field id ${f.id} appears twice in the schema`);
      ids.set(f.id, id);
      return { ...f, id };
    });
    for (const f of fields) f.type = freshType(f.type, next, ids);
    return { ...type, fields };
  }
  if (type.type === 'list') {
    const elementId = next();
    ids.set(type['element-id'], elementId);
    return { ...type, 'element-id': elementId, element: freshType(type.element, next, ids) };
  }
  if (type.type === 'map') {
    const keyId = next();
    const valueId = next();
    ids.set(type['key-id'], keyId);
    ids.set(type['value-id'], valueId);
    return { ...type, 'key-id': keyId, 'value-id': valueId, key: freshType(type.key, next, ids), value: freshType(type.value, next, ids) };
  }
  throw badRequest(`Unknown type in schema: ${JSON.stringify(type)}`);
}

/** Every field id in a type (structs' fields, list elements, map keys and values), with its type. */
function fieldIds(/** @type {any} */ type, /** @type {Map<number, any>} */ out = new Map()) {
  if (typeof type === 'string') return out;
  if (type.type === 'struct') {
    for (const f of type.fields) {
      if (out.has(f.id)) throw invalid(`Field id ${f.id} appears twice in the schema`);
      out.set(f.id, f.type);
      fieldIds(f.type, out);
    }
  } else if (type.type === 'list') {
    out.set(type['element-id'], type.element);
    fieldIds(type.element, out);
  } else if (type.type === 'map') {
    out.set(type['key-id'], type.key);
    out.set(type['value-id'], type.value);
    fieldIds(type.key, out);
    fieldIds(type.value, out);
  }
  return out;
}

/** Whether a column of type `from` may be read as `to`: the same type, or one of the spec's promotions. */
function promotes(/** @type {any} */ from, /** @type {any} */ to) {
  if (typeof from !== 'string' || typeof to !== 'string')
    return typeof from === typeof to && (typeof from === 'string' || from.type === to.type);
  const a = from.replace(/\s/g, '');
  const b = to.replace(/\s/g, '');
  if (a === b || (a === 'int' && b === 'long') || (a === 'float' && b === 'double') || (a === 'date' && b === 'timestamp')) return true;
  const da = /^decimal\((\d+),(\d+)\)$/.exec(a);
  const db = /^decimal\((\d+),(\d+)\)$/.exec(b);
  return Boolean(da && db && da[2] === db[2] && Number(db[1]) >= Number(da[1]));
}

/** Two schemas with the same fields (ids, names, types, nullability) are one schema. */
function sameSchema(/** @type {any} */ a, /** @type {any} */ b) {
  const strip = (/** @type {any} */ s) => JSON.stringify({ fields: s.fields, ids: s['identifier-field-ids'] ?? [] });
  return strip(a) === strip(b);
}

/** A partition field's transform must suit its source column. */
function checkTransform(/** @type {any} */ field, /** @type {any} */ sourceType) {
  const transform = String(field.transform);
  if (!TRANSFORMS.test(transform)) throw invalid(`Unknown partition transform: ${transform}`);
  if (typeof sourceType !== 'string') throw invalid(`Cannot partition by the nested field ${field['source-id']}`);
  const dated = sourceType === 'date' || sourceType.startsWith('timestamp');
  if ((transform === 'year' || transform === 'month' || transform === 'day') && !dated)
    throw invalid(`Cannot partition ${sourceType} by ${transform}`);
  if (transform === 'hour' && !sourceType.startsWith('timestamp')) throw invalid(`Cannot partition ${sourceType} by hour`);
}

/**
 * A new table's metadata from a create request: the schema, spec and sort order with fresh ids (the
 * field ids from `firstFieldId`), as a catalog assigns them whatever the client sent.
 * @param {any} request @param {{location: string, firstFieldId: number, nowMs: number}} o
 */
export function newTableMetadata(request, o) {
  if (typeof request.name !== 'string' || request.name === '') throw badRequest('A table needs a name');
  if (!request.schema || request.schema.type !== 'struct' || !Array.isArray(request.schema.fields))
    throw badRequest('A table needs a schema (a struct)');
  // Java's catalogs give a new table zstd unless it asks for another codec.
  const properties = { 'write.parquet.compression-codec': 'zstd', ...(request.properties ?? {}) };
  const formatVersion = Number(properties['format-version'] ?? 2);
  delete properties['format-version'];
  if (formatVersion !== 2) throw badRequest(`This catalog makes tables of format version 2 only, not ${formatVersion}`);
  let last = o.firstFieldId - 1;
  /** @type {Map<number, number>} */
  const ids = new Map();
  const struct = freshType({ type: 'struct', fields: request.schema.fields }, () => ++last, ids);
  const types = fieldIds(struct);
  /** @type {any} */
  const schema = { type: 'struct', 'schema-id': 0, fields: struct.fields };
  if (request.schema['identifier-field-ids'])
    schema['identifier-field-ids'] = request.schema['identifier-field-ids'].map((/** @type {number} */ id) => ids.get(id));
  const newSource = (/** @type {number} */ id, /** @type {string} */ what) => {
    const fresh = ids.get(id);
    if (fresh === undefined) throw invalid(`The ${what} names source-id ${id}, which is not in the schema`);
    return fresh;
  };
  let partitionId = PARTITION_ID_START - 1;
  const specFields = (request['partition-spec']?.fields ?? []).map((/** @type {any} */ f) => {
    const field = {
      name: f.name,
      transform: f.transform,
      'source-id': newSource(f['source-id'], 'partition spec'),
      'field-id': ++partitionId,
    };
    checkTransform(field, types.get(field['source-id']));
    return field;
  });
  const names = new Set(specFields.map((/** @type {any} */ f) => f.name));
  if (names.size !== specFields.length) throw invalid('Partition field names must be unique');
  const orderFields = (request['write-order']?.fields ?? []).map((/** @type {any} */ f) => ({
    ...f,
    'source-id': newSource(f['source-id'], 'sort order'),
  }));
  const orderId = orderFields.length === 0 ? 0 : 1;
  return {
    'format-version': 2,
    'table-uuid': randomUUID(),
    location: o.location,
    'last-sequence-number': 0,
    'last-updated-ms': o.nowMs,
    'last-column-id': last,
    'current-schema-id': 0,
    schemas: [schema],
    'default-spec-id': 0,
    'partition-specs': [{ 'spec-id': 0, fields: specFields }],
    'last-partition-id': partitionId,
    'default-sort-order-id': orderId,
    'sort-orders': [{ 'order-id': orderId, fields: orderFields }],
    properties,
    'current-snapshot-id': -1,
    refs: {},
    snapshots: [],
    statistics: [],
    'partition-statistics': [],
    'snapshot-log': [],
    'metadata-log': [],
  };
}

/** Throws a 409 unless `metadata` (null: no table) meets every requirement. */
export function checkRequirements(/** @type {any} */ metadata, /** @type {any[]} */ requirements) {
  if (!Array.isArray(requirements)) throw badRequest('A commit needs a list of requirements');
  for (const r of requirements) {
    if (r.type === 'assert-create') {
      if (metadata !== null) throw conflict('Requirement failed: table already exists');
      continue;
    }
    if (metadata === null) continue;
    switch (r.type) {
      case 'assert-table-uuid':
        if (String(r.uuid).toLowerCase() !== String(metadata['table-uuid']).toLowerCase())
          throw conflict(`Requirement failed: UUID does not match: expected ${metadata['table-uuid']} != ${r.uuid}`);
        break;
      case 'assert-ref-snapshot-id': {
        if (!('snapshot-id' in r) || typeof r.ref !== 'string') throw badRequest('assert-ref-snapshot-id needs ref and snapshot-id');
        const ref = metadata.refs?.[r.ref];
        if (r['snapshot-id'] === null) {
          if (ref) throw conflict(`Requirement failed: ${ref.type} ${r.ref} was created concurrently`);
        } else if (!ref) {
          throw conflict(`Requirement failed: branch or tag ${r.ref} is missing, expected ${r['snapshot-id']}`);
        } else if (ref['snapshot-id'] !== r['snapshot-id']) {
          throw conflict(`Requirement failed: ${ref.type} ${r.ref} has changed: expected id ${r['snapshot-id']} != ${ref['snapshot-id']}`);
        }
        break;
      }
      case 'assert-last-assigned-field-id':
        if (metadata['last-column-id'] !== r['last-assigned-field-id'])
          throw conflict(
            `Requirement failed: last assigned field id changed: expected id ${r['last-assigned-field-id']} != ${metadata['last-column-id']}`,
          );
        break;
      case 'assert-current-schema-id':
        if (metadata['current-schema-id'] !== r['current-schema-id'])
          throw conflict(
            `Requirement failed: current schema changed: expected id ${r['current-schema-id']} != ${metadata['current-schema-id']}`,
          );
        break;
      case 'assert-last-assigned-partition-id':
        if (metadata['last-partition-id'] !== r['last-assigned-partition-id'])
          throw conflict(
            `Requirement failed: last assigned partition id changed: expected id ${r['last-assigned-partition-id']} != ${metadata['last-partition-id']}`,
          );
        break;
      case 'assert-default-spec-id':
        if (metadata['default-spec-id'] !== r['default-spec-id'])
          throw conflict(
            `Requirement failed: default partition spec changed: expected id ${r['default-spec-id']} != ${metadata['default-spec-id']}`,
          );
        break;
      case 'assert-default-sort-order-id':
        if (metadata['default-sort-order-id'] !== r['default-sort-order-id'])
          throw conflict(
            `Requirement failed: default sort order id changed: expected id ${r['default-sort-order-id']} != ${metadata['default-sort-order-id']}`,
          );
        break;
      default:
        throw badRequest(`Unknown requirement type: ${String(r.type)}`);
    }
  }
}

/** `log` without every entry up to the last one naming a snapshot no longer kept. */
function trimSnapshotLog(/** @type {any[]} */ log, /** @type {Set<number>} */ kept) {
  let cut = -1;
  log.forEach((e, i) => {
    if (!kept.has(e['snapshot-id'])) cut = i;
  });
  return log.slice(cut + 1);
}

/**
 * `base` with `updates` applied in order, validated as a catalog does; the updates costsync does not
 * send are refused. Returns the new metadata (a copy) and the snapshots added. Pure but for `nowMs`.
 * @param {any} base @param {any[]} updates @param {number} nowMs
 */
export function applyUpdates(base, updates, nowMs) {
  if (!Array.isArray(updates)) throw badRequest('A commit needs a list of updates');
  const m = clone(base);
  /** @type {number[]} */
  const added = [];
  let lastAddedSchema = /** @type {number | null} */ (null);
  let updatedMs = nowMs;
  for (const u of updates) {
    switch (u.action) {
      case 'add-snapshot': {
        const s = u.snapshot;
        if (!s || typeof s['snapshot-id'] !== 'number' || typeof s['manifest-list'] !== 'string' || typeof s['timestamp-ms'] !== 'number')
          throw badRequest('add-snapshot needs a snapshot with snapshot-id, timestamp-ms and manifest-list');
        if (!s.summary || typeof s.summary.operation !== 'string') throw badRequest('A snapshot needs a summary with an operation');
        if (m.snapshots.some((/** @type {any} */ x) => x['snapshot-id'] === s['snapshot-id']))
          throw invalid(`Snapshot already exists for id: ${s['snapshot-id']}`);
        if (typeof s['sequence-number'] !== 'number' || s['sequence-number'] <= m['last-sequence-number'])
          throw invalid(
            `Cannot add snapshot with sequence number ${s['sequence-number']} older than last sequence number ${m['last-sequence-number']}`,
          );
        if (s['schema-id'] !== undefined && !m.schemas.some((/** @type {any} */ x) => x['schema-id'] === s['schema-id']))
          throw invalid(`Snapshot ${s['snapshot-id']} names schema ${s['schema-id']}, which the table does not have`);
        m.snapshots.push(clone(s));
        m['last-sequence-number'] = s['sequence-number'];
        updatedMs = s['timestamp-ms'];
        added.push(s['snapshot-id']);
        break;
      }
      case 'set-snapshot-ref': {
        const id = u['snapshot-id'];
        const name = u['ref-name'];
        if (typeof name !== 'string' || typeof id !== 'number') throw badRequest('set-snapshot-ref needs ref-name and snapshot-id');
        if (u.type !== 'branch' && u.type !== 'tag') throw badRequest(`A ref is a branch or a tag, not ${String(u.type)}`);
        if (name === 'main' && u.type !== 'branch') throw invalid('main must be a branch');
        const snapshot = m.snapshots.find((/** @type {any} */ x) => x['snapshot-id'] === id);
        if (!snapshot) throw invalid(`Cannot set ${name} to unknown snapshot: ${id}`);
        // A new snapshot becomes main only on top of main as it is (a commit may chain several).
        const mainNow = m.refs?.main?.['snapshot-id'] ?? null;
        if (name === 'main' && added.includes(id) && (snapshot['parent-snapshot-id'] ?? null) !== mainNow)
          throw invalid(
            `Cannot set main to the new snapshot ${id}: its parent ${snapshot['parent-snapshot-id'] ?? 'null'} is not the current snapshot ${mainNow ?? 'null'}`,
          );
        /** @type {any} */
        const ref = { 'snapshot-id': id, type: u.type };
        for (const k of ['max-ref-age-ms', 'max-snapshot-age-ms', 'min-snapshots-to-keep']) if (u[k] !== undefined) ref[k] = u[k];
        m.refs = { ...m.refs, [name]: ref };
        if (name === 'main') {
          m['current-snapshot-id'] = id;
          m['snapshot-log'].push({ 'timestamp-ms': added.includes(id) ? snapshot['timestamp-ms'] : nowMs, 'snapshot-id': id });
        }
        break;
      }
      case 'remove-snapshots': {
        if (!Array.isArray(u['snapshot-ids'])) throw badRequest('remove-snapshots needs snapshot-ids');
        const gone = new Set(u['snapshot-ids']);
        m.snapshots = m.snapshots.filter((/** @type {any} */ s) => !gone.has(s['snapshot-id']));
        // A ref to a removed snapshot goes with it, main included (the table then has no current snapshot).
        for (const [name, ref] of Object.entries(m.refs ?? {})) if (gone.has(ref['snapshot-id'])) delete m.refs[name];
        if (gone.has(m['current-snapshot-id'])) m['current-snapshot-id'] = -1;
        m['snapshot-log'] = trimSnapshotLog(m['snapshot-log'], new Set(m.snapshots.map((/** @type {any} */ s) => s['snapshot-id'])));
        break;
      }
      case 'add-schema': {
        const schema = u.schema;
        if (!schema || schema.type !== 'struct' || !Array.isArray(schema.fields)) throw badRequest('add-schema needs a schema (a struct)');
        const ids = fieldIds(schema);
        /** @type {Map<number, any>} */
        const known = new Map();
        for (const s of m.schemas) for (const [id, type] of fieldIds(s)) known.set(id, type);
        for (const [id, type] of ids) {
          if (!known.has(id) && id <= m['last-column-id'])
            throw invalid(`Field id ${id} is new to the table but not above its last column id ${m['last-column-id']}`);
          if (known.has(id) && !promotes(known.get(id), type))
            throw invalid(`Field id ${id} was ${JSON.stringify(known.get(id))} and cannot become ${JSON.stringify(type)}`);
        }
        const given = u['last-column-id'];
        if (given !== undefined && given < m['last-column-id'])
          throw invalid(`Invalid last column ID: ${given} < ${m['last-column-id']} (previous last column ID)`);
        const highest = Math.max(m['last-column-id'], given ?? 0, ...ids.keys());
        const existing = m.schemas.find((/** @type {any} */ s) => sameSchema(s, schema));
        const schemaId = existing ? existing['schema-id'] : Math.max(-1, ...m.schemas.map((/** @type {any} */ s) => s['schema-id'])) + 1;
        if (!existing) m.schemas.push({ ...clone(schema), 'schema-id': schemaId });
        m['last-column-id'] = highest;
        lastAddedSchema = schemaId;
        break;
      }
      case 'set-current-schema': {
        let id = u['schema-id'];
        if (id === -1) {
          if (lastAddedSchema === null) throw invalid('Cannot set last added schema: no schema has been added');
          id = lastAddedSchema;
        }
        if (!m.schemas.some((/** @type {any} */ s) => s['schema-id'] === id))
          throw invalid(`Cannot set current schema to unknown schema: ${id}`);
        m['current-schema-id'] = id;
        break;
      }
      case 'set-properties':
        if (!u.updates || typeof u.updates !== 'object') throw badRequest('set-properties needs updates');
        for (const [k, v] of Object.entries(u.updates)) if (typeof v !== 'string') throw badRequest(`Property ${k} is not a string`);
        m.properties = { ...m.properties, ...u.updates };
        break;
      case 'remove-properties':
        if (!Array.isArray(u.removals)) throw badRequest('remove-properties needs removals');
        for (const k of u.removals) delete m.properties[k];
        break;
      default:
        throw badRequest(`Unsupported update action: ${String(u.action)}`);
    }
  }
  m['last-updated-ms'] = updatedMs;
  return { metadata: m, added };
}

/** Each metadata file is written once, exclusively; a second writer of one name is a bug here. */
function writeMetadataFile(/** @type {string} */ location, /** @type {any} */ metadata, /** @type {Map<string, string>} */ memory) {
  const text = JSON.stringify(metadata);
  const path = localPath(location);
  if (path === null) {
    memory.set(location, text);
    return;
  }
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text, { flag: 'wx' });
}

function readMetadataFile(/** @type {string} */ location, /** @type {Map<string, string>} */ memory) {
  const path = localPath(location);
  const text = path === null ? memory.get(location) : existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  if (text === undefined) throw new CatalogError(404, 'NotFoundException', `Metadata file does not exist: ${location}`);
  return JSON.parse(text);
}

/** Where the next metadata file after `previous` goes: `<NNNNN>-<uuid>.metadata.json` in the table's metadata folder. */
function nextMetadataLocation(/** @type {any} */ metadata, /** @type {string | null} */ previous) {
  const folder = metadata.properties?.['write.metadata.path'] ?? `${String(metadata.location).replace(/\/+$/, '')}/metadata`;
  return `${folder}/${String(metadataVersion(previous) + 1).padStart(5, '0')}-${randomUUID()}.metadata.json`;
}

/** The metadata log after a commit: the previous file appended, the oldest dropped past the table's limit. */
function withMetadataLog(/** @type {any} */ metadata, /** @type {any} */ previous, /** @type {string} */ previousLocation) {
  const max = Number(metadata.properties?.['write.metadata.previous-versions-max'] ?? 100);
  const log = [...(previous['metadata-log'] ?? []), { 'timestamp-ms': previous['last-updated-ms'], 'metadata-file': previousLocation }];
  return { ...metadata, 'metadata-log': log.slice(-Math.max(1, max)) };
}

/** The endpoints this server offers, as the config lists them. */
function offeredEndpoints(/** @type {boolean} */ transactions) {
  const ns = '/v1/{prefix}/namespaces';
  return [
    `GET ${ns}`,
    `POST ${ns}`,
    `GET ${ns}/{namespace}`,
    `HEAD ${ns}/{namespace}`,
    `DELETE ${ns}/{namespace}`,
    `POST ${ns}/{namespace}/properties`,
    `GET ${ns}/{namespace}/tables`,
    `POST ${ns}/{namespace}/tables`,
    `GET ${ns}/{namespace}/tables/{table}`,
    `HEAD ${ns}/{namespace}/tables/{table}`,
    `POST ${ns}/{namespace}/tables/{table}`,
    `DELETE ${ns}/{namespace}/tables/{table}`,
    `POST ${ns}/{namespace}/register`,
    `POST ${ns}/{namespace}/tables/{table}/metrics`,
    'POST /v1/{prefix}/tables/rename',
    ...(transactions ? ['POST /v1/{prefix}/transactions/commit'] : []),
  ];
}

/** What a client may assume when the config has no `endpoints` (the list in the document's `/v1/config`). */
const SPEC_DEFAULT_ENDPOINTS = offeredEndpoints(true).filter((e) => !e.startsWith('HEAD '));

/** A request's endpoint as the config names it (`POST /v1/{prefix}/namespaces/{namespace}/tables`), from the parts after the prefix. */
function endpointOf(/** @type {string} */ method, /** @type {string[]} */ parts) {
  const template = parts.map((p, i) => {
    if (parts[0] === 'namespaces' && i === 1) return '{namespace}';
    if (parts[0] === 'namespaces' && parts[2] === 'tables' && i === 3) return '{table}';
    return p;
  });
  return `${method} /v1/{prefix}/${template.join('/')}`;
}

const tableKey = (/** @type {string[]} */ namespace, /** @type {string} */ name) => JSON.stringify([...namespace, name]);
const namespaceKey = (/** @type {string[]} */ namespace) => JSON.stringify(namespace);

function readBody(/** @type {import('node:http').IncomingMessage} */ req) {
  return new Promise((resolve, reject) => {
    /** @type {Buffer[]} */
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Starts the catalog on 127.0.0.1 (port 0 unless given). See `server.d.mts` for the options and the
 * returned object.
 * @param {any} options
 */
export async function startCatalogServer(options) {
  const root = options.root;
  if (typeof root !== 'string') throw new Error('startCatalogServer needs a root folder');
  const auth = options.auth ?? { kind: 'none' };
  const prefix = options.prefix ?? null;
  const now = options.clock ?? (() => Date.now());
  const firstFieldId = (options.fieldIdOffset ?? 100) + 1;
  const expiredStatus = options.expiredStatus ?? 419;
  /** @type {string[]} */
  const advertised =
    options.endpoints === 'omit' ? SPEC_DEFAULT_ENDPOINTS : (options.endpoints ?? offeredEndpoints(Boolean(options.transactions)));
  // The document's servers may have a base path before `/v1` (AWS's catalogs are under `/iceberg`).
  const basePath = String(options.basePath ?? '').replace(/\/+$/, '');
  const configPath = `${basePath}/v1/config`;
  const tokenPath = auth.kind === 'oauth' ? (auth.tokenPath ?? `${basePath}${DEFAULT_TOKEN_PATH}`) : null;
  const idempotencyMs = options.idempotencyKeyLifetime ? durationMs(options.idempotencyKeyLifetime) : null;
  const signer =
    auth.kind === 'sigv4'
      ? new SignatureV4({
          service: auth.service,
          region: auth.region,
          credentials: { accessKeyId: auth.accessKeyId, secretAccessKey: auth.secretAccessKey },
          sha256: Sha256,
        })
      : null;

  /** @type {Map<string, {namespace: string[], properties: Record<string, string>}>} */
  const namespaces = new Map();
  /** @type {Map<string, {namespace: string[], name: string, metadataLocation: string, metadata: any}>} */
  const tables = new Map();
  /** @type {Map<string, string>} metadata files of tables whose location is not on this machine */
  const memoryFiles = new Map();
  /** @type {Map<string, number>} token → expiry (ms) */
  const tokens = new Map();
  /** @type {Map<string, {at: number, fingerprint: string, status: number, body: any}>} */
  const idempotent = new Map();
  /** @type {Map<string, Promise<any>>} */
  const inflight = new Map();
  /** @type {Set<import('node:http').ServerResponse>} */
  const hanging = new Set();
  const events = new EventEmitter();
  /** @type {any[]} */
  const faults = [];
  /** @type {any[]} */
  const requests = [];
  let commits = 0;
  // Mutations run one at a time: each reads the pointers, writes its files and swaps them as one step.
  let queue = Promise.resolve();
  const exclusive = (/** @type {() => Promise<any>} */ fn) => {
    const run = queue.then(fn);
    queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  };

  if (options.statePath && existsSync(options.statePath)) {
    const saved = JSON.parse(readFileSync(options.statePath, 'utf8'));
    for (const n of saved.namespaces) namespaces.set(namespaceKey(n.namespace), n);
    for (const t of saved.tables)
      tables.set(tableKey(t.namespace, t.name), { ...t, metadata: readMetadataFile(t.metadataLocation, memoryFiles) });
  }
  const persist = () => {
    if (!options.statePath) return;
    const state = {
      namespaces: [...namespaces.values()],
      tables: [...tables.values()].map(({ namespace, name, metadataLocation }) => ({ namespace, name, metadataLocation })),
    };
    const temp = `${options.statePath}.${process.pid}.tmp`;
    writeFileSync(temp, JSON.stringify(state, null, 2));
    renameSync(temp, options.statePath);
  };

  /** The first queued fault for this route (and table), consumed. */
  const takeFault = (/** @type {string} */ route, /** @type {string[]} */ tableNames) => {
    const i = faults.findIndex((f) => f.route === route && (f.table === undefined || tableNames.includes(f.table)));
    if (i < 0) return null;
    const fault = faults[i];
    fault.times = (fault.times ?? 1) - 1;
    if (fault.times <= 0) faults.splice(i, 1);
    return fault;
  };

  const errorBody = (/** @type {CatalogError} */ e) => ({ error: { message: e.message, type: e.type, code: e.status } });

  /** @param {import('node:http').IncomingMessage} req @param {URL} url @param {string} body */
  const authorize = async (req, url, body) => {
    const header = req.headers.authorization;
    if (auth.kind === 'none') return;
    if (auth.kind === 'bearer') {
      if (header !== `Bearer ${auth.token}`) throw new CatalogError(401, 'NotAuthorizedException', 'Not authorized to make this request');
      return;
    }
    if (auth.kind === 'oauth') {
      const token = /^Bearer (.+)$/.exec(header ?? '')?.[1];
      const expires = token === undefined ? undefined : tokens.get(token);
      if (expires === undefined) throw new CatalogError(401, 'NotAuthorizedException', 'Not authorized to make this request');
      if (expires <= now())
        throw new CatalogError(
          expiredStatus,
          expiredStatus === 419 ? 'AuthenticationTimeoutException' : 'NotAuthorizedException',
          'Credentials have timed out',
        );
      return;
    }
    if (auth.kind === 'sigv4') await verifySignature(req, url, body);
  };

  /** Signs the request again with the same credentials and compares; any difference is a 403. */
  const verifySignature = async (/** @type {any} */ req, /** @type {URL} */ url, /** @type {string} */ body) => {
    const header = req.headers.authorization ?? '';
    const m =
      /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(
        header,
      );
    if (!m) throw new CatalogError(401, 'NotAuthorizedException', 'Missing or malformed SigV4 Authorization header');
    const [, keyId, day, region, service, signedHeaders, signature] = m;
    const forbidden = (/** @type {string} */ why) => new CatalogError(403, 'ForbiddenException', why);
    if (keyId !== auth.accessKeyId) throw forbidden('The security token included in the request is invalid');
    if (region !== auth.region || service !== auth.service)
      throw forbidden(`Credential should be scoped to ${auth.region}/${auth.service}`);
    const amzDate = String(req.headers['x-amz-date'] ?? '');
    const dm = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
    if (!dm || amzDate.slice(0, 8) !== day) throw forbidden('X-Amz-Date is missing or does not match the credential scope');
    const signingDate = new Date(Date.UTC(+dm[1], +dm[2] - 1, +dm[3], +dm[4], +dm[5], +dm[6]));
    if (Math.abs(signingDate.getTime() - now()) > 15 * 60_000) throw forbidden('Signature expired');
    /** @type {Record<string, string>} */
    const headers = {};
    for (const name of signedHeaders.split(';')) {
      const value = req.headers[name];
      if (value === undefined) throw forbidden(`Signed header ${name} is missing`);
      headers[name] = Array.isArray(value) ? value.join(',') : String(value);
    }
    if (!('host' in headers)) throw forbidden('The host header must be signed');
    /** @type {Record<string, string | string[]>} */
    const query = {};
    for (const [k, v] of url.searchParams) {
      const had = query[k];
      query[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
    }
    const rawPath = (req.url ?? '/').split('?')[0];
    const resigned = await signer.sign(
      {
        method: req.method,
        protocol: 'http:',
        hostname: headers.host,
        path: rawPath,
        query,
        headers,
        body: body === '' ? undefined : body,
      },
      { signingDate },
    );
    const expected = /Signature=([0-9a-f]{64})/.exec(String(resigned.headers.authorization))?.[1];
    const expectedSigned = /SignedHeaders=([^,]+)/.exec(String(resigned.headers.authorization))?.[1];
    if (expected !== signature || expectedSigned !== signedHeaders)
      throw forbidden('The request signature we calculated does not match the signature you provided');
  };

  /** `POST /v1/oauth/tokens`: client credentials (in the form or a Basic header), or a token exchanged for a fresh one. */
  const issueToken = (/** @type {any} */ req, /** @type {string} */ body) => {
    const form = new URLSearchParams(body);
    const oauthError = (/** @type {number} */ status, /** @type {string} */ error, /** @type {string} */ description) => ({
      status,
      body: { error, error_description: description },
    });
    const grant = form.get('grant_type');
    const scope = form.get('scope');
    if (auth.scope !== undefined && scope !== null && !scope.split(' ').includes(auth.scope))
      return oauthError(400, 'invalid_scope', `Scope must include ${auth.scope}`);
    if (grant === 'client_credentials') {
      let id = form.get('client_id');
      let secret = form.get('client_secret');
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (basic !== undefined) {
        const decoded = Buffer.from(basic, 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        id = decodeURIComponent(decoded.slice(0, colon));
        secret = decodeURIComponent(decoded.slice(colon + 1));
      }
      if (!auth.clients.some((/** @type {any} */ c) => c.id === id && c.secret === secret))
        return oauthError(401, 'invalid_client', 'Unknown client or wrong secret');
    } else if (grant === 'urn:ietf:params:oauth:grant-type:token-exchange') {
      const expires = tokens.get(form.get('subject_token') ?? '');
      if (expires === undefined || expires <= now()) return oauthError(401, 'invalid_grant', 'The subject token is not valid');
    } else {
      return oauthError(400, 'unsupported_grant_type', `Unsupported grant type: ${String(grant)}`);
    }
    const ttl = auth.tokenTtlSeconds ?? 3600;
    const token = randomBytes(24).toString('base64url');
    tokens.set(token, now() + ttl * 1000);
    return {
      status: 200,
      body: {
        access_token: token,
        token_type: 'bearer',
        expires_in: ttl,
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        ...(scope !== null && { scope }),
      },
    };
  };

  const tableConfig = (/** @type {any} */ req, /** @type {any} */ metadata) => {
    const delegation = String(req.headers['x-iceberg-access-delegation'] ?? '');
    if (
      !options.vendedCredentials ||
      !delegation
        .split(',')
        .map((s) => s.trim())
        .includes('vended-credentials')
    )
      return { config: {} };
    return {
      config: { ...options.vendedCredentials },
      'storage-credentials': [{ prefix: metadata.location, config: { ...options.vendedCredentials } }],
    };
  };

  const requireNamespace = (/** @type {string[]} */ namespace) => {
    const ns = namespaces.get(namespaceKey(namespace));
    if (!ns) throw new CatalogError(404, 'NoSuchNamespaceException', `Namespace does not exist: ${namespace.join('.')}`);
    return ns;
  };
  const requireTable = (/** @type {string[]} */ namespace, /** @type {string} */ name) => {
    const t = tables.get(tableKey(namespace, name));
    if (!t) throw new CatalogError(404, 'NoSuchTableException', `Table does not exist: ${[...namespace, name].join('.')}`);
    return t;
  };
  const parseJson = (/** @type {string} */ body) => {
    /** @type {number | null} */
    let unsafe = null;
    let parsed;
    try {
      parsed = JSON.parse(body, (_key, value) => {
        if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) unsafe = value;
        return value;
      });
    } catch {
      throw badRequest('Malformed request: the body is not JSON');
    }
    // JavaScript would round it and write another id than the one sent: refused, not silently changed.
    if (unsafe !== null) throw badRequest(`This catalog keeps integers below 2^53; the request has ${unsafe}`);
    return parsed;
  };

  /**
   * Checks every change against the current pointers, then writes each table's new metadata file and
   * swaps all the pointers at once; a failed check leaves everything as it was.
   * @param {{namespace: string[], name: string, requirements: any[], updates: any[]}[]} changes
   */
  const commitChanges = async (changes) => {
    /** @type {Map<string, {table: any, metadata: any, added: number[], changed: boolean}>} */
    const staged = new Map();
    for (const c of changes) {
      const key = tableKey(c.namespace, c.name);
      const table = requireTable(c.namespace, c.name);
      const current = staged.get(key) ?? { table, metadata: table.metadata, added: [], changed: false };
      checkRequirements(current.metadata, c.requirements);
      if (c.updates.length === 0) {
        staged.set(key, current);
        continue;
      }
      const { metadata, added } = applyUpdates(current.metadata, c.updates, now());
      staged.set(key, { table, metadata, added: [...current.added, ...added], changed: true });
    }
    const written = [];
    for (const s of staged.values()) {
      if (!s.changed) {
        written.push({ ...s, location: s.table.metadataLocation, metadata: s.table.metadata });
        continue;
      }
      const location = nextMetadataLocation(s.metadata, s.table.metadataLocation);
      const metadata = withMetadataLog(s.metadata, s.table.metadata, s.table.metadataLocation);
      writeMetadataFile(location, metadata, memoryFiles);
      written.push({ ...s, location, metadata });
    }
    for (const w of written) {
      w.table.metadataLocation = w.location;
      w.table.metadata = w.metadata;
    }
    persist();
    for (const w of written) {
      if (!w.changed) continue;
      commits += 1;
      events.emit('commit', { table: w.table.name, snapshotIds: w.added, metadataLocation: w.location, count: commits });
    }
    return written;
  };

  /**
   * The route's answer: `{status, body, headers?}`, and `fault`, a queued fault that applies once the
   * change is made.
   * @param {import('node:http').IncomingMessage} req @param {URL} url @param {string} body
   */
  const route = async (req, url, body) => {
    const method = req.method ?? 'GET';
    const path = url.pathname;
    if (tokenPath !== null && path === tokenPath && method === 'POST') {
      const fault = takeFault('token', []);
      if (fault && fault.when === 'before') throw new CatalogError(fault.status, faultType('token', fault.status), 'Injected fault');
      return { ...issueToken(req, body), fault };
    }
    if (path === configPath && method === 'GET') {
      const fault = takeFault('config', []);
      if (fault) throw new CatalogError(fault.status, faultType('config', fault.status), 'Injected fault');
      const asked = url.searchParams.get('warehouse');
      if (options.warehouse !== undefined && asked === null) throw badRequest('Please specify a warehouse');
      if (options.warehouse !== undefined && asked !== options.warehouse)
        throw new CatalogError(404, 'NoSuchWarehouseException', `Warehouse does not exist: ${asked}`);
      return {
        status: 200,
        body: {
          defaults: { ...(options.defaults ?? {}) },
          overrides: { ...(options.overrides ?? {}), ...(prefix !== null && { prefix }) },
          ...(options.endpoints !== 'omit' && { endpoints: advertised }),
          ...(options.idempotencyKeyLifetime && { 'idempotency-key-lifetime': options.idempotencyKeyLifetime }),
        },
      };
    }
    // The prefix goes into paths exactly as the config gave it (an encoded one stays encoded, once).
    const base = prefix === null ? `${basePath}/v1/` : `${basePath}/v1/${prefix}/`;
    const rest = path.startsWith(base) ? path.slice(base.length) : null;
    if (rest === null) throw new CatalogError(404, 'NotFoundException', `No route for ${method} ${path}`);
    const parts = rest.split('/').map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        throw badRequest(`Malformed path: ${path}`);
      }
    });
    const nsOf = (/** @type {string} */ text) => text.split(NAMESPACE_SEPARATOR);
    const key = `${method} ${rest}`;
    // A client calls only what the config offered (or, with no list there, what the document says to assume).
    const endpoint = endpointOf(method, parts);
    if (!advertised.includes(endpoint))
      throw new CatalogError(406, 'UnsupportedOperationException', `${endpoint} is not among the endpoints this catalog advertises`);

    // Namespaces.
    if (parts[0] === 'namespaces' && parts.length === 1) {
      if (method === 'GET') {
        const parentText = url.searchParams.get('parent');
        const parent = parentText === null || parentText === '' ? [] : nsOf(parentText);
        // A parent exists when it was created or when a namespace under it was.
        const under = (/** @type {string[]} */ ns) => ns.length > parent.length && parent.every((p, i) => ns[i] === p);
        if (parent.length > 0 && !namespaces.has(namespaceKey(parent)) && ![...namespaces.values()].some((n) => under(n.namespace)))
          requireNamespace(parent);
        const children = new Map();
        for (const n of namespaces.values()) {
          if (!under(n.namespace)) continue;
          const child = n.namespace.slice(0, parent.length + 1);
          children.set(namespaceKey(child), child);
        }
        return { status: 200, body: { namespaces: [...children.values()] } };
      }
      if (method === 'POST') {
        const request = parseJson(body);
        if (
          !Array.isArray(request.namespace) ||
          request.namespace.length === 0 ||
          request.namespace.some((/** @type {any} */ p) => typeof p !== 'string' || p === '')
        )
          throw badRequest('A namespace is a non-empty list of names');
        return exclusive(async () => {
          const k = namespaceKey(request.namespace);
          if (namespaces.has(k))
            throw new CatalogError(409, 'AlreadyExistsException', `Namespace already exists: ${request.namespace.join('.')}`);
          const entry = { namespace: request.namespace, properties: { ...(request.properties ?? {}) } };
          namespaces.set(k, entry);
          persist();
          return { status: 200, body: clone(entry) };
        });
      }
    }
    if (parts[0] === 'namespaces' && parts.length >= 2) {
      const namespace = nsOf(parts[1]);
      if (parts.length === 2) {
        if (method === 'GET') return { status: 200, body: clone(requireNamespace(namespace)) };
        if (method === 'HEAD') {
          requireNamespace(namespace);
          return { status: 204 };
        }
        if (method === 'DELETE')
          return exclusive(async () => {
            requireNamespace(namespace);
            const prefixKey = namespaceKey(namespace).slice(0, -1);
            if ([...tables.values()].some((t) => namespaceKey(t.namespace) === namespaceKey(namespace)))
              throw new CatalogError(409, 'NamespaceNotEmptyException', `Namespace is not empty: ${namespace.join('.')}`);
            if ([...namespaces.keys()].some((k) => k.startsWith(`${prefixKey},`)))
              throw new CatalogError(409, 'NamespaceNotEmptyException', `Namespace has namespaces under it: ${namespace.join('.')}`);
            namespaces.delete(namespaceKey(namespace));
            persist();
            return { status: 204 };
          });
      }
      if (parts.length === 3 && parts[2] === 'properties' && method === 'POST') {
        const request = parseJson(body);
        return exclusive(async () => {
          const ns = requireNamespace(namespace);
          const updates = request.updates ?? {};
          const removals = request.removals ?? [];
          if (removals.some((/** @type {string} */ k) => k in updates))
            throw new CatalogError(422, 'UnprocessableEntityException', 'A key is both updated and removed');
          const missing = removals.filter((/** @type {string} */ k) => !(k in ns.properties));
          for (const k of removals) delete ns.properties[k];
          Object.assign(ns.properties, updates);
          persist();
          return {
            status: 200,
            body: { updated: Object.keys(updates), removed: removals.filter((/** @type {string} */ k) => !missing.includes(k)), missing },
          };
        });
      }
      if (parts.length === 3 && parts[2] === 'tables') {
        if (method === 'GET') {
          requireNamespace(namespace);
          const identifiers = [...tables.values()]
            .filter((t) => namespaceKey(t.namespace) === namespaceKey(namespace))
            .map((t) => ({ namespace: t.namespace, name: t.name }));
          return { status: 200, body: { identifiers } };
        }
        if (method === 'POST') {
          const request = parseJson(body);
          const fault = takeFault('create', [request.name]);
          if (fault && fault.when === 'before') throw new CatalogError(fault.status, faultType('create', fault.status), 'Injected fault');
          const answer = await exclusive(async () => {
            requireNamespace(namespace);
            const location = String(request.location ?? pathToFileURL(join(root, ...namespace, String(request.name))).href).replace(
              /\/+$/,
              '',
            );
            const metadata = newTableMetadata(request, { location, firstFieldId, nowMs: now() });
            if (tables.has(tableKey(namespace, request.name)))
              throw new CatalogError(409, 'AlreadyExistsException', `Table already exists: ${[...namespace, request.name].join('.')}`);
            if (request['stage-create'] === true) return { status: 200, body: { metadata, ...tableConfig(req, metadata) } };
            const metadataLocation = nextMetadataLocation(metadata, null);
            writeMetadataFile(metadataLocation, metadata, memoryFiles);
            tables.set(tableKey(namespace, request.name), { namespace, name: request.name, metadataLocation, metadata });
            persist();
            return {
              status: 200,
              body: { 'metadata-location': metadataLocation, metadata, ...tableConfig(req, metadata) },
            };
          });
          return { ...answer, fault };
        }
      }
      if (parts.length === 3 && parts[2] === 'register' && method === 'POST') {
        const request = parseJson(body);
        if (typeof request.name !== 'string' || typeof request['metadata-location'] !== 'string')
          throw badRequest('Registering a table needs name and metadata-location');
        return exclusive(async () => {
          requireNamespace(namespace);
          const k = tableKey(namespace, request.name);
          if (tables.has(k) && request.overwrite !== true)
            throw new CatalogError(409, 'AlreadyExistsException', `Table already exists: ${[...namespace, request.name].join('.')}`);
          const metadata = readMetadataFile(request['metadata-location'], memoryFiles);
          if (typeof metadata['table-uuid'] !== 'string' || typeof metadata.location !== 'string')
            throw invalid('Not a table metadata file');
          tables.set(k, { namespace, name: request.name, metadataLocation: request['metadata-location'], metadata });
          persist();
          return {
            status: 200,
            body: { 'metadata-location': request['metadata-location'], metadata, ...tableConfig(req, metadata) },
          };
        });
      }
      if (parts.length === 4 && parts[2] === 'tables') {
        const name = parts[3];
        if (method === 'GET') {
          const fault = takeFault('load', [name]);
          if (fault) throw new CatalogError(fault.status, faultType('load', fault.status), 'Injected fault');
          requireNamespace(namespace);
          const t = requireTable(namespace, name);
          const etag = `"${createHash('sha256').update(t.metadataLocation).digest('hex').slice(0, 32)}"`;
          if (req.headers['if-none-match'] === etag) return { status: 304, headers: { etag } };
          const metadata = clone(t.metadata);
          if (url.searchParams.get('snapshots') === 'refs') {
            const referenced = new Set(Object.values(metadata.refs ?? {}).map((/** @type {any} */ r) => r['snapshot-id']));
            metadata.snapshots = metadata.snapshots.filter((/** @type {any} */ s) => referenced.has(s['snapshot-id']));
          }
          return {
            status: 200,
            headers: { etag },
            body: { 'metadata-location': t.metadataLocation, metadata, ...tableConfig(req, metadata) },
          };
        }
        if (method === 'HEAD') {
          requireNamespace(namespace);
          requireTable(namespace, name);
          return { status: 204 };
        }
        if (method === 'POST') {
          const request = parseJson(body);
          if (
            request.identifier &&
            (request.identifier.name !== name || namespaceKey(request.identifier.namespace) !== namespaceKey(namespace))
          )
            throw badRequest('The identifier in the body does not match the path');
          const fault = takeFault('commit', [name]);
          if (fault && fault.when === 'before') throw new CatalogError(fault.status, faultType('commit', fault.status), 'Injected fault');
          const answer = await exclusive(async () => {
            requireNamespace(namespace);
            if (!Array.isArray(request.requirements) || !Array.isArray(request.updates))
              throw badRequest('A commit needs requirements and updates');
            const [w] = await commitChanges([{ namespace, name, requirements: request.requirements, updates: request.updates }]);
            return { status: 200, body: { 'metadata-location': w.location, metadata: w.metadata } };
          });
          return { ...answer, fault };
        }
        if (method === 'DELETE')
          return exclusive(async () => {
            requireNamespace(namespace);
            requireTable(namespace, name);
            tables.delete(tableKey(namespace, name));
            persist();
            return { status: 204 };
          });
      }
      if (parts.length === 5 && parts[2] === 'tables' && parts[4] === 'metrics' && method === 'POST') {
        requireTable(namespace, parts[3]);
        return { status: 204 };
      }
    }
    if (key === 'POST tables/rename') {
      const request = parseJson(body);
      return exclusive(async () => {
        const source = requireTable(request.source?.namespace ?? [], request.source?.name);
        requireNamespace(request.destination?.namespace ?? []);
        const k = tableKey(request.destination.namespace, request.destination.name);
        if (tables.has(k)) throw new CatalogError(409, 'AlreadyExistsException', 'The destination table already exists');
        tables.delete(tableKey(source.namespace, source.name));
        tables.set(k, { ...source, namespace: request.destination.namespace, name: request.destination.name });
        persist();
        return { status: 204 };
      });
    }
    if (key === 'POST transactions/commit' && options.transactions) {
      const request = parseJson(body);
      const changes = request['table-changes'];
      if (!Array.isArray(changes) || changes.length === 0) throw badRequest('A transaction needs table-changes');
      for (const c of changes)
        if (!c.identifier || !Array.isArray(c.identifier.namespace) || typeof c.identifier.name !== 'string')
          throw badRequest('Each table change in a transaction needs an identifier');
      const fault = takeFault(
        'transaction',
        changes.map((/** @type {any} */ c) => c.identifier.name),
      );
      if (fault && fault.when === 'before') throw new CatalogError(fault.status, faultType('transaction', fault.status), 'Injected fault');
      const answer = await exclusive(async () => {
        for (const c of changes) {
          requireNamespace(c.identifier.namespace);
          if (!Array.isArray(c.requirements) || !Array.isArray(c.updates))
            throw badRequest('A table change needs requirements and updates');
        }
        await commitChanges(
          changes.map((/** @type {any} */ c) => ({
            namespace: c.identifier.namespace,
            name: c.identifier.name,
            requirements: c.requirements,
            updates: c.updates,
          })),
        );
        return { status: 204 };
      });
      return { ...answer, fault };
    }
    throw new CatalogError(404, 'NotFoundException', `No route for ${method} ${path}`);
  };

  /**
   * Idempotency-Key: a key seen before (within the lifetime) gets the first final answer again, nothing
   * applied twice; a key reused for another request is refused. 5xx answers are not final.
   */
  const withIdempotency = async (/** @type {any} */ req, /** @type {URL} */ url, /** @type {string} */ body) => {
    if (url.pathname !== tokenPath) await authorize(req, url, body);
    const key = req.headers['idempotency-key'];
    const mutating = req.method === 'POST' || req.method === 'DELETE';
    if (idempotencyMs === null || typeof key !== 'string' || !mutating || url.pathname === configPath || url.pathname === tokenPath)
      return route(req, url, body);
    // The document asks for a UUIDv7 (RFC 9562) as text: 36 characters, version nibble 7.
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.test(key))
      throw badRequest('Idempotency-Key must be a UUIDv7');
    const fingerprint = createHash('sha256').update(`${req.method} ${url.pathname}\n${body}`).digest('hex');
    for (const [k, v] of idempotent) if (v.at + idempotencyMs < now()) idempotent.delete(k);
    // A retry that arrives while the first is still running waits for its answer.
    while (inflight.has(key)) await inflight.get(key)?.catch(() => undefined);
    const seen = idempotent.get(key);
    if (seen) {
      if (seen.fingerprint !== fingerprint)
        throw new CatalogError(422, 'UnprocessableEntityException', 'The Idempotency-Key was used for a different request');
      return { status: seen.status, body: clone(seen.body), replayed: true };
    }
    const running = route(req, url, body);
    inflight.set(key, running);
    try {
      const answer = await running;
      if (answer.status < 500) idempotent.set(key, { at: now(), fingerprint, status: answer.status, body: clone(answer.body) });
      return answer;
    } catch (error) {
      if (error instanceof CatalogError && error.status < 500)
        idempotent.set(key, { at: now(), fingerprint, status: error.status, body: errorBody(error) });
      throw error;
    } finally {
      inflight.delete(key);
    }
  };

  const server = createServer((req, res) => {
    respond(req, res).catch(() => res.destroy());
  });

  /** @param {import('node:http').IncomingMessage} req @param {import('node:http').ServerResponse} res */
  const respond = async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const body = await readBody(req);
    /** @type {{status: number, body?: any, headers?: Record<string, string>, fault?: any}} */
    let answer;
    try {
      answer = await withIdempotency(req, url, body);
    } catch (error) {
      const e = error instanceof CatalogError ? error : new CatalogError(500, 'InternalServerError', String(error?.message ?? error));
      answer = { status: e.status, body: errorBody(e) };
    }
    const fault = answer.fault;
    if (fault && fault.when === 'hang-after') {
      hanging.add(res);
      log(req, url, 0);
      return;
    }
    if (fault && fault.when === 'after') {
      const e = new CatalogError(fault.status, faultType(fault.route, fault.status), 'Injected fault after the change was applied');
      answer = { status: e.status, body: errorBody(e) };
    }
    log(req, url, answer.status);
    const text = answer.body === undefined || req.method === 'HEAD' ? undefined : JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      ...(answer.headers ?? {}),
      ...(text !== undefined && { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) }),
    });
    res.end(text);
  };

  const log = (/** @type {any} */ req, /** @type {URL} */ url, /** @type {number} */ status) => {
    const headers = { ...req.headers };
    for (const secret of ['authorization', 'x-amz-security-token']) if (headers[secret] !== undefined) headers[secret] = '[redacted]';
    const record = { method: req.method, path: url.pathname + url.search, headers, status };
    requests.push(record);
    events.emit('request', record);
  };

  server.listen(options.port ?? 0, options.host ?? '127.0.0.1');
  await once(server, 'listening');
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    port,
    faults,
    events,
    requests,
    get commits() {
      return commits;
    },
    expireTokens() {
      for (const k of tokens.keys()) tokens.set(k, 0);
    },
    /** @param {string[]} namespace @param {string} name */
    table(namespace, name) {
      const t = tables.get(tableKey(namespace, name));
      return t ? { metadataLocation: t.metadataLocation, metadata: clone(t.metadata) } : null;
    },
    async close() {
      for (const res of hanging) res.destroy();
      hanging.clear();
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}

/** `node test/catalog/server.mjs --root DIR [...]`: a catalog for pyiceberg or costsync by hand, until killed. */
async function main() {
  const { values } = parseArgs({
    options: {
      root: { type: 'string' },
      port: { type: 'string', default: '8181' },
      prefix: { type: 'string' },
      'base-path': { type: 'string' },
      warehouse: { type: 'string' },
      oauth: { type: 'string' },
      token: { type: 'string' },
      transactions: { type: 'boolean', default: false },
      state: { type: 'string' },
    },
  });
  if (!values.root) {
    process.stderr.write(
      'usage: node test/catalog/server.mjs --root DIR [--port 8181] [--base-path /iceberg] [--prefix P] [--warehouse W] [--oauth id:secret] [--token T] [--transactions] [--state FILE]\n',
    );
    process.exit(2);
  }
  mkdirSync(values.root, { recursive: true });
  let auth = { kind: 'none' };
  if (values.oauth) {
    const colon = values.oauth.indexOf(':');
    auth = { kind: 'oauth', clients: [{ id: values.oauth.slice(0, colon), secret: values.oauth.slice(colon + 1) }], tokenTtlSeconds: 3600 };
  } else if (values.token) {
    auth = { kind: 'bearer', token: values.token };
  }
  const server = await startCatalogServer({
    root: values.root,
    port: Number(values.port),
    prefix: values.prefix,
    basePath: values['base-path'],
    warehouse: values.warehouse,
    transactions: values.transactions,
    statePath: values.state ?? join(values.root, 'catalog-state.json'),
    auth,
  });
  process.stdout.write(`${server.url}\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();

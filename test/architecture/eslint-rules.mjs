// @ts-check
/**
 * costsync's architecture rules as ESLint rules, so they read syntax, not lines: an alias, a destructuring,
 * a bracket access or an import under another name is the same reference, and a comment is none.
 * eslint.config.js applies them to src/ (`npm run lint`); test/architecture/eslint-rules.unit.test.ts lints
 * src/ with them in `npm test` and plants a violation of each form each one claims to catch.
 */

import { relative, sep } from 'node:path';

/**
 * A source's progress has one writer per home (docs/internals.md, "A source's progress"): each entry names
 * what writes a home, the names through which code reaches that writer (a method, a function, a class, an
 * SQL file's name) and SQL text that writes it, and the only modules allowed to. A progress is a readonly
 * value (src/state/store.ts): changing one in place is the compiler's to refuse.
 */
export const PROGRESS_WRITERS = [
  { writes: 'the state file (StateStore.saveAsync)', names: ['saveAsync'], allowed: ['src/state/source-state.ts'] },
  {
    writes: "a source's progress (SourceState.checkpoint)",
    names: ['checkpoint'],
    allowed: ['src/sync/windowed.ts', 'src/sync/window-fetch.ts', 'src/sync/anomalies.ts', 'src/sync/recheck.ts'],
  },
  { writes: "the source's state owner (new SourceState)", names: ['SourceState'], allowed: ['src/sync/runner.ts'] },
  {
    writes: "the warehouse's carried copy (its table and SQL)",
    names: [],
    sql: String.raw`state/carry_(insert|update)|(delete\s+from|insert\s+(or\s+(replace|ignore)\s+)?into|update)\s+"?_costsync_sync_state\b`,
    allowed: ['src/state/source-state.ts'],
  },
  {
    writes: "the warehouse's carried copy (a window's carry, in its commit)",
    names: ['carry'],
    allowed: ['src/sync/windowed.ts', 'src/state/source-state.ts'],
  },
  {
    writes: "the warehouse's carried copy (the lake seed's)",
    names: ['carriedFromLake'],
    allowed: ['src/outputs/lake-seed.ts'],
  },
  { writes: 'the carried state (carriedState)', names: ['carriedState'], allowed: ['src/state/carried.ts', 'src/state/source-state.ts'] },
  {
    writes: "the lake's state object",
    names: ['writeStateObjects', 'stateObjects', 'stateProperty'],
    allowed: ['src/outputs/lake-seed.ts', 'src/outputs/lake.ts', 'src/outputs/iceberg.ts'],
  },
];

/** The built-in error classes: src/ raises errors with a registry code (src/errors.ts), never one of these. */
const BUILTIN_ERRORS = new Set([
  'Error',
  'TypeError',
  'RangeError',
  'SyntaxError',
  'ReferenceError',
  'EvalError',
  'URIError',
  'AggregateError',
]);

/** The file's path from the repository's root, with `/`. */
function pathOf(context) {
  return relative(context.cwd ?? process.cwd(), context.physicalFilename ?? context.filename)
    .split(sep)
    .join('/');
}

/** The name a member access reaches: `a.b`, `a['b']`, `a?.b`. */
function memberName(node) {
  if (!node.computed && node.property.type === 'Identifier') return node.property.name;
  if (node.computed && node.property.type === 'Literal' && typeof node.property.value === 'string') return node.property.value;
  return null;
}

/** The name a destructured property takes: `{ b }`, `{ b: c }`, `{ 'b': c }`. */
function keyName(node) {
  if (node.key.type === 'Identifier' && !node.computed) return node.key.name;
  if (node.key.type === 'Literal' && typeof node.key.value === 'string') return node.key.value;
  return null;
}

/** `costsync/one-writer`: a reference to a progress writer outside the modules allowed to use it. */
const oneWriter = {
  meta: {
    type: 'problem',
    docs: { description: 'Each home of a source’s progress has one writer.' },
    schema: { type: 'array' },
    messages: { writer: '{{writes}} is written by {{allowed}} only; {{file}} reaches it through `{{through}}`.' },
  },
  create(context) {
    const file = pathOf(context);
    const rules = (context.options.length > 0 ? context.options : PROGRESS_WRITERS).filter((r) => !r.allowed.includes(file));
    if (rules.length === 0) return {};
    const report = (node, rule, through) =>
      context.report({
        node,
        messageId: 'writer',
        data: { writes: rule.writes, allowed: rule.allowed.join(', ') || 'no module', file, through },
      });
    const byName = (node, name) => {
      if (name === null) return;
      for (const rule of rules) if (rule.names.includes(name)) report(node, rule, name);
    };
    const sqlRules = rules.filter((r) => r.sql !== undefined).map((r) => ({ rule: r, re: new RegExp(r.sql, 'i') }));
    const bySql = (node, text) => {
      for (const { rule, re } of sqlRules) if (re.test(text)) report(node, rule, text.trim().slice(0, 60));
    };
    return {
      MemberExpression: (node) => byName(node, memberName(node)),
      'ObjectPattern > Property': (node) => byName(node, keyName(node)),
      // A type-only import reaches no code.
      ImportSpecifier: (node) => {
        if (node.importKind !== 'type' && node.parent.importKind !== 'type')
          byName(node, node.imported.type === 'Identifier' ? node.imported.name : String(node.imported.value));
      },
      'CallExpression > Identifier.callee': (node) => byName(node, node.name),
      'NewExpression > Identifier.callee': (node) => byName(node, node.name),
      Literal: (node) => {
        if (typeof node.value === 'string') bySql(node, node.value);
      },
      TemplateLiteral: (node) => bySql(node, node.quasis.map((q) => q.value.cooked ?? q.value.raw).join(' ')),
    };
  },
};

/** `costsync/coded-errors`: every error src/ raises has a code in src/errors.ts's registry. */
const codedErrors = {
  meta: {
    type: 'problem',
    docs: { description: 'Errors raised in src/ carry a registry code (CostsyncError and its kinds in src/errors.ts).' },
    schema: [],
    messages: {
      builtin: '`{{name}}` has no registry code: raise a CostsyncError (or one of src/errors.ts) with a code from ERRORS.',
      alias: '`{{name}}` under another name would raise an error without a code.',
      subclass: 'An error class outside src/errors.ts: declare it there, with its code.',
      thrown: 'A thrown {{what}} has no code: throw a CostsyncError.',
    },
  },
  create(context) {
    const inRegistry = pathOf(context) === 'src/errors.ts';
    const builtin = (node) =>
      node.type === 'Identifier'
        ? BUILTIN_ERRORS.has(node.name)
          ? node.name
          : null
        : node.type === 'MemberExpression' && BUILTIN_ERRORS.has(memberName(node) ?? '')
          ? memberName(node)
          : null;
    return {
      'NewExpression, CallExpression'(node) {
        const name = builtin(node.callee);
        if (name !== null && !inRegistry) context.report({ node, messageId: 'builtin', data: { name } });
      },
      'VariableDeclarator, AssignmentExpression'(node) {
        const value = node.type === 'VariableDeclarator' ? node.init : node.right;
        const name = value === null ? null : builtin(value);
        if (name !== null) context.report({ node, messageId: 'alias', data: { name } });
      },
      'ClassDeclaration, ClassExpression'(node) {
        if (node.superClass !== null && !inRegistry && builtin(node.superClass) !== null) context.report({ node, messageId: 'subclass' });
      },
      ThrowStatement(node) {
        const arg = node.argument;
        const what =
          arg.type === 'Literal'
            ? `${typeof arg.value} literal`
            : arg.type === 'TemplateLiteral'
              ? 'template string'
              : arg.type === 'ObjectExpression'
                ? 'plain object'
                : null;
        if (what !== null) context.report({ node, messageId: 'thrown', data: { what } });
      },
    };
  },
};

/** `costsync/async-local-storage-at-module-level`: before Node 24 each live AsyncLocalStorage slows every await. */
const alsAtModuleLevel = {
  meta: {
    type: 'problem',
    docs: { description: 'Every AsyncLocalStorage is made once, at module level.' },
    schema: [],
    messages: { inner: 'An AsyncLocalStorage made here would be made again and again: make it once, at module level.' },
  },
  create(context) {
    const locals = new Set();
    const atModuleLevel = (node) => {
      const decl = node.parent;
      const declaration = decl?.parent;
      if (decl?.type !== 'VariableDeclarator' || decl.init !== node || declaration?.type !== 'VariableDeclaration') return false;
      const owner = declaration.parent;
      return owner?.type === 'Program' || (owner?.type === 'ExportNamedDeclaration' && owner.parent?.type === 'Program');
    };
    return {
      ImportSpecifier(node) {
        const imported = node.imported.type === 'Identifier' ? node.imported.name : String(node.imported.value);
        if (imported === 'AsyncLocalStorage') locals.add(node.local.name);
      },
      NewExpression(node) {
        const made =
          (node.callee.type === 'Identifier' && locals.has(node.callee.name)) ||
          (node.callee.type === 'MemberExpression' && memberName(node.callee) === 'AsyncLocalStorage');
        if (made && !atModuleLevel(node)) context.report({ node, messageId: 'inner' });
      },
    };
  },
};

export default {
  meta: { name: 'costsync' },
  rules: { 'one-writer': oneWriter, 'coded-errors': codedErrors, 'async-local-storage-at-module-level': alsAtModuleLevel },
};

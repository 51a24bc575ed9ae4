/**
 * `costsync/emulator`: the Cost Data API emulator as a package entry of its own, beside the product.
 * The CLI's `emulator` and `demo` commands load it on demand, so a sync never loads it.
 */
export {
  DEFAULT_SPAN_DAYS,
  parseTimestamp,
  resolveEmulatorOptions,
  startEmulator,
  type AnomalyOrder,
  type ChargePeriodDates,
  type CursorMode,
  type DuplicateRows,
  type Emulator,
  type EmulatorInput,
  type EmulatorOptions,
  type InvalidRows,
  type LastPageCursor,
  type LineItemOrder,
  type RowErrorShape,
  type TooLarge,
} from './server.js';
export { DEMO_CONNECTION, DEMO_KEY, defaultKeys, parseKeysConfig, type ConnectionConfig, type KeyConfig, type KeysConfig } from './keys.js';
export { FAULT_KINDS, NO_FAULTS, type FaultKind, type FaultOptions, type ScriptedFault } from './faults.js';
export { DataChangeError, type AnomalyBurst, type DayRestatement, type DayRestatementResult, type RestatementOptions } from './dataset.js';
export { CHANGE_ACTIONS, CONTROL_PREFIX, type ChangeAction, type ChangeResult } from './changes.js';
export type { LoggedRequest } from './request-log.js';

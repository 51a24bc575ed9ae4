/** The costsync library: what the CLI is built from, for programs and tests. */
export * from './errors.js';
export * from './api/types.js';
export { createApiClient, parseBaseUrl, type ApiClient, type ApiClientOptions } from './api/client.js';
export { keyFingerprint } from './fingerprint.js';
export { createRequestLimiter, systemClock, type Clock, type RequestLimiter } from './api/resilience.js';

/** Types of `rgw.mjs`, for the TypeScript tests. */
export declare const ACCESS_KEY_ID: string;
export declare const SECRET_ACCESS_KEY: string;

export interface Radosgw {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Ends the gateway and the cluster under it; the caller removes the folder. */
  stop(): Promise<void>;
}

export declare function startRadosgw(dir: string, options?: { storeBytes?: number; timeoutMs?: number }): Promise<Radosgw>;

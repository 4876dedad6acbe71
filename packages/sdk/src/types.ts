/** The API's resources as JSON, in the API's own field names (see README "API"). */

/** RFC 7807 problem as Cairn answers it. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  request_id?: string;
  errors?: Array<{ path: string; message: string }>;
  [extension: string]: unknown;
}

export interface SignResult {
  asset_id: string;
  manifest_id: string;
  watermark_id?: string;
  manifest_uri: string;
  verifier_url: string;
  asset_url: string;
  media_type: string;
  /** Notes on the sign, a closed set: `watermark_not_embedded` (then `watermark_id` is absent). */
  warnings?: Array<'watermark_not_embedded'>;
  /** With `watermark_not_embedded`: why (content too flat, too small, …). */
  watermark_not_embedded_reason?: string;
  [field: string]: unknown;
}

/** `POST /v1/uploads`: where to PUT a big file before naming it by `upload_id` in a sign or verify. */
export interface UploadSession {
  upload_id: string;
  upload_url: string;
  method: 'PUT';
  expires_at: string;
  max_bytes: number;
}

export interface Job {
  job_id: string;
  kind?: 'sign' | 'verify';
  /** A newer server may add states: known ones are listed for completion, any other string is accepted. */
  status: 'queued' | 'running' | 'done' | 'failed' | (string & {});
  poll_url: string;
  problem?: Problem;
  result?: Verification;
  /** A sign job: how far its current run is (written at most every 500 ms); absent before it reports. */
  progress?: JobProgress;
  [field: string]: unknown;
}

export interface JobProgress {
  /** reading, watermarking, signing or storing; a newer server may add steps. */
  stage: 'reading' | 'watermarking' | 'signing' | 'storing' | (string & {});
  /** 0..1, never falling within a run: frames marked / frames expected while a video is watermarked. */
  fraction: number;
  updated_at: string;
}

export interface VerificationMatch {
  asset_id: string;
  manifest_uri: string;
  verifier_url: string;
  via: string;
  similarity: number;
}

export interface Verification {
  status: string;
  confidence: number | null;
  signals: Record<string, boolean | string>;
  claims?: {
    origin?: string;
    generator?: string;
    model?: string;
    ai_generated?: boolean;
    ai_assisted?: boolean;
    created_at?: string;
    signed_by?: string;
    signed_at?: string;
    /** Whose key signed a Cairn asset's manifest: Cairn's own, or the signing tenant's (bring your own key). */
    signing_key?: 'cairn' | 'tenant';
  };
  matches: VerificationMatch[];
  warnings: string[];
  developer_explanation: string;
  user_explanation: string;
  proves: string[];
  does_not_prove: string[];
  manifest_id?: string;
  asset_id?: string;
  verified_at: string;
}

export interface LookupResult {
  matches: Array<{
    asset_id: string;
    manifest_uri: string;
    verifier_url: string;
    distance: number;
    similarity: number;
    alg: string;
  }>;
}

export interface Usage {
  period_start: string;
  period_end: string;
  meters: Record<string, { used: number; limit: number | null; reserved?: number; overage?: number }>;
  spend_usd: number;
  spending_cap_usd: number | null;
}

export interface AuditEntry {
  entry_id: string;
  event_id: string;
  event_type: string;
  created_at: string;
  recorded_at: string;
  data: unknown;
  seq: number;
  prev_hash: string;
  hash: string;
}

export interface AuditPage {
  entries: AuditEntry[];
  next_cursor: string | null;
}

export interface Webhook {
  webhook_id: string;
  url: string;
  events: string[];
  description?: string;
  payload_format: string;
  /** Shown once: on create and on rotate-secret. */
  secret?: string;
  created_at: string;
  /** After a rotation, until when the replaced secret still signs deliveries beside the new one. */
  previous_secret_expires_at?: string;
}

export interface WebhookDelivery {
  delivery_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  [field: string]: unknown;
}

export interface ApiKey {
  key_id: string;
  scope: string;
  description: string | null;
  status: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  /** Shown once: when the key is created. */
  api_key?: string;
}

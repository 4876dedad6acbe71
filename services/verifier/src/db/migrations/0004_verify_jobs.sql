CREATE TABLE "verifier"."verify_jobs" (
	"job_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"status" text NOT NULL,
	"upload_blob_key" text NOT NULL,
	"reservation_id" text DEFAULT '' NOT NULL,
	"result" jsonb,
	"problem" jsonb,
	"attempts" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "verifier"."verify_jobs" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE POLICY "verify_jobs_tenant" ON "verifier"."verify_jobs" AS PERMISSIVE FOR ALL TO public USING ("verifier"."verify_jobs"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("verifier"."verify_jobs"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
-- The service role owns the table; FORCE makes the tenant policy bind it too.
ALTER TABLE "verifier"."verify_jobs" FORCE ROW LEVEL SECURITY;

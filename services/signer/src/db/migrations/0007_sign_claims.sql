CREATE TABLE "signer"."sign_claims" (
	"asset_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"claim_id" text NOT NULL,
	"lease_expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "signer"."sign_claims" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE UNIQUE INDEX "jobs_asset_idx" ON "signer"."jobs" USING btree (("request"->>'assetId'));--> statement-breakpoint
CREATE POLICY "sign_claims_tenant" ON "signer"."sign_claims" AS PERMISSIVE FOR ALL TO public USING ("signer"."sign_claims"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("signer"."sign_claims"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "sign_claims_by_id" ON "signer"."sign_claims" AS PERMISSIVE FOR SELECT TO public USING ("signer"."sign_claims"."asset_id" = current_setting('cairn.asset_id', true));--> statement-breakpoint
-- The service role owns the table; FORCE makes its policies bind it too.
ALTER TABLE "signer"."sign_claims" FORCE ROW LEVEL SECURITY;

CREATE TABLE "signer"."assets" (
	"asset_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"recipe_id" text NOT NULL,
	"media_type" text NOT NULL,
	"size_bytes" bigint NOT NULL,
	"content_sha256" text NOT NULL,
	"upload_sha256" text NOT NULL,
	"watermark_id" text,
	"watermark_payload" text,
	"manifest_id" text NOT NULL,
	"blob_key" text,
	"metadata" jsonb NOT NULL,
	"signer_name" text NOT NULL,
	"certificate_serial" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "signer"."assets" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "signer"."jobs" (
	"job_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"status" text NOT NULL,
	"request" jsonb NOT NULL,
	"result" jsonb,
	"problem" jsonb,
	"attempts" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "signer"."jobs" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "signer"."manifests" (
	"manifest_id" text PRIMARY KEY NOT NULL,
	"asset_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	"blob_key" text NOT NULL,
	"label" text NOT NULL,
	"size_bytes" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "signer"."manifests" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE INDEX "assets_tenant_created_idx" ON "signer"."assets" USING btree ("tenant_id","created_at");--> statement-breakpoint
CREATE INDEX "assets_expiry_idx" ON "signer"."assets" USING btree ("expires_at") WHERE "signer"."assets"."deleted_at" is null;--> statement-breakpoint
CREATE INDEX "jobs_tenant_created_idx" ON "signer"."jobs" USING btree ("tenant_id","created_at");--> statement-breakpoint
CREATE POLICY "assets_tenant" ON "signer"."assets" AS PERMISSIVE FOR ALL TO public USING ("signer"."assets"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("signer"."assets"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "assets_by_id" ON "signer"."assets" AS PERMISSIVE FOR SELECT TO public USING ("signer"."assets"."asset_id" = current_setting('cairn.asset_id', true));--> statement-breakpoint
CREATE POLICY "assets_expiry_sweep" ON "signer"."assets" AS PERMISSIVE FOR ALL TO public USING (current_setting('cairn.system', true) = 'asset-expiry' and "signer"."assets"."expires_at" < now()) WITH CHECK (current_setting('cairn.system', true) = 'asset-expiry');--> statement-breakpoint
CREATE POLICY "jobs_tenant" ON "signer"."jobs" AS PERMISSIVE FOR ALL TO public USING ("signer"."jobs"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("signer"."jobs"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "manifests_tenant" ON "signer"."manifests" AS PERMISSIVE FOR ALL TO public USING ("signer"."manifests"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("signer"."manifests"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "manifests_by_id" ON "signer"."manifests" AS PERMISSIVE FOR SELECT TO public USING ("signer"."manifests"."manifest_id" = current_setting('cairn.manifest_id', true));
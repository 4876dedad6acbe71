CREATE TABLE "softbinding"."audio_landmarks" (
	"tenant_id" text NOT NULL,
	"asset_id" text NOT NULL,
	"hash" integer NOT NULL,
	"t" integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE "softbinding"."audio_landmarks" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "softbinding"."indexed_assets" (
	"tenant_id" text NOT NULL,
	"asset_id" text NOT NULL,
	"alg" text NOT NULL,
	"manifest_id" text NOT NULL,
	"manifest_uri" text NOT NULL,
	"verifier_url" text NOT NULL,
	"signature" text,
	"features" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "indexed_assets_tenant_id_asset_id_alg_pk" PRIMARY KEY("tenant_id","asset_id","alg")
);
--> statement-breakpoint
ALTER TABLE "softbinding"."indexed_assets" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "softbinding"."text_bands" (
	"tenant_id" text NOT NULL,
	"asset_id" text NOT NULL,
	"band" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "softbinding"."text_bands" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE INDEX "audio_landmarks_hash_idx" ON "softbinding"."audio_landmarks" USING btree ("hash");--> statement-breakpoint
CREATE INDEX "audio_landmarks_asset_idx" ON "softbinding"."audio_landmarks" USING btree ("tenant_id","asset_id");--> statement-breakpoint
CREATE INDEX "text_bands_band_idx" ON "softbinding"."text_bands" USING btree ("band");--> statement-breakpoint
CREATE INDEX "text_bands_asset_idx" ON "softbinding"."text_bands" USING btree ("tenant_id","asset_id");--> statement-breakpoint
CREATE POLICY "audio_landmarks_isolation" ON "softbinding"."audio_landmarks" AS PERMISSIVE FOR ALL TO public USING ("softbinding"."audio_landmarks"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("softbinding"."audio_landmarks"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "audio_landmarks_public_lookup" ON "softbinding"."audio_landmarks" AS PERMISSIVE FOR SELECT TO public USING (current_setting('cairn.softbinding_public', true) = 'on');--> statement-breakpoint
CREATE POLICY "indexed_assets_isolation" ON "softbinding"."indexed_assets" AS PERMISSIVE FOR ALL TO public USING ("softbinding"."indexed_assets"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("softbinding"."indexed_assets"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "indexed_assets_public_lookup" ON "softbinding"."indexed_assets" AS PERMISSIVE FOR SELECT TO public USING (current_setting('cairn.softbinding_public', true) = 'on');--> statement-breakpoint
CREATE POLICY "text_bands_isolation" ON "softbinding"."text_bands" AS PERMISSIVE FOR ALL TO public USING ("softbinding"."text_bands"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("softbinding"."text_bands"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "text_bands_public_lookup" ON "softbinding"."text_bands" AS PERMISSIVE FOR SELECT TO public USING (current_setting('cairn.softbinding_public', true) = 'on');--> statement-breakpoint
-- As for fingerprints (0002): the service connects as the owner; FORCE makes the policies bind it too.
ALTER TABLE "softbinding"."audio_landmarks" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "softbinding"."indexed_assets" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "softbinding"."text_bands" FORCE ROW LEVEL SECURITY;

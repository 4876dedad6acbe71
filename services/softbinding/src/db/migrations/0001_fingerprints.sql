CREATE TABLE "softbinding"."fingerprints" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"asset_id" text NOT NULL,
	"manifest_id" text NOT NULL,
	"manifest_uri" text NOT NULL,
	"verifier_url" text NOT NULL,
	"alg" text NOT NULL,
	"variant" text NOT NULL,
	"hash" bit(256) NOT NULL,
	"quality" integer NOT NULL,
	"c0" integer NOT NULL,
	"c1" integer NOT NULL,
	"c2" integer NOT NULL,
	"c3" integer NOT NULL,
	"c4" integer NOT NULL,
	"c5" integer NOT NULL,
	"c6" integer NOT NULL,
	"c7" integer NOT NULL,
	"c8" integer NOT NULL,
	"c9" integer NOT NULL,
	"c10" integer NOT NULL,
	"c11" integer NOT NULL,
	"c12" integer NOT NULL,
	"c13" integer NOT NULL,
	"c14" integer NOT NULL,
	"c15" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "softbinding"."fingerprints" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE UNIQUE INDEX "fingerprints_asset_variant_idx" ON "softbinding"."fingerprints" USING btree ("tenant_id","asset_id","alg","variant");--> statement-breakpoint
CREATE INDEX "fingerprints_c0_idx" ON "softbinding"."fingerprints" USING btree ("c0");--> statement-breakpoint
CREATE INDEX "fingerprints_c1_idx" ON "softbinding"."fingerprints" USING btree ("c1");--> statement-breakpoint
CREATE INDEX "fingerprints_c2_idx" ON "softbinding"."fingerprints" USING btree ("c2");--> statement-breakpoint
CREATE INDEX "fingerprints_c3_idx" ON "softbinding"."fingerprints" USING btree ("c3");--> statement-breakpoint
CREATE INDEX "fingerprints_c4_idx" ON "softbinding"."fingerprints" USING btree ("c4");--> statement-breakpoint
CREATE INDEX "fingerprints_c5_idx" ON "softbinding"."fingerprints" USING btree ("c5");--> statement-breakpoint
CREATE INDEX "fingerprints_c6_idx" ON "softbinding"."fingerprints" USING btree ("c6");--> statement-breakpoint
CREATE INDEX "fingerprints_c7_idx" ON "softbinding"."fingerprints" USING btree ("c7");--> statement-breakpoint
CREATE INDEX "fingerprints_c8_idx" ON "softbinding"."fingerprints" USING btree ("c8");--> statement-breakpoint
CREATE INDEX "fingerprints_c9_idx" ON "softbinding"."fingerprints" USING btree ("c9");--> statement-breakpoint
CREATE INDEX "fingerprints_c10_idx" ON "softbinding"."fingerprints" USING btree ("c10");--> statement-breakpoint
CREATE INDEX "fingerprints_c11_idx" ON "softbinding"."fingerprints" USING btree ("c11");--> statement-breakpoint
CREATE INDEX "fingerprints_c12_idx" ON "softbinding"."fingerprints" USING btree ("c12");--> statement-breakpoint
CREATE INDEX "fingerprints_c13_idx" ON "softbinding"."fingerprints" USING btree ("c13");--> statement-breakpoint
CREATE INDEX "fingerprints_c14_idx" ON "softbinding"."fingerprints" USING btree ("c14");--> statement-breakpoint
CREATE INDEX "fingerprints_c15_idx" ON "softbinding"."fingerprints" USING btree ("c15");--> statement-breakpoint
CREATE POLICY "fingerprints_isolation" ON "softbinding"."fingerprints" AS PERMISSIVE FOR ALL TO public USING ("softbinding"."fingerprints"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("softbinding"."fingerprints"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "fingerprints_public_lookup" ON "softbinding"."fingerprints" AS PERMISSIVE FOR SELECT TO public USING (current_setting('cairn.softbinding_public', true) = 'on');
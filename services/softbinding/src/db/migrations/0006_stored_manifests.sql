CREATE TABLE "softbinding"."stored_bindings" (
	"tenant_id" text NOT NULL,
	"alg" text NOT NULL,
	"value" text NOT NULL,
	"manifest_id" text NOT NULL,
	"source" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "stored_bindings_tenant_id_alg_value_pk" PRIMARY KEY("tenant_id","alg","value")
);
--> statement-breakpoint
ALTER TABLE "softbinding"."stored_bindings" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "softbinding"."stored_manifests" (
	"manifest_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"label" text NOT NULL,
	"sha256" text NOT NULL,
	"bytes" "bytea" NOT NULL,
	"receipt" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "softbinding"."stored_manifests" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "softbinding"."stored_bindings" ADD CONSTRAINT "stored_bindings_manifest_id_stored_manifests_manifest_id_fk" FOREIGN KEY ("manifest_id") REFERENCES "softbinding"."stored_manifests"("manifest_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "stored_bindings_value_idx" ON "softbinding"."stored_bindings" USING btree ("value");--> statement-breakpoint
CREATE INDEX "stored_bindings_manifest_idx" ON "softbinding"."stored_bindings" USING btree ("manifest_id");--> statement-breakpoint
CREATE INDEX "stored_manifests_tenant_idx" ON "softbinding"."stored_manifests" USING btree ("tenant_id");--> statement-breakpoint
CREATE POLICY "stored_bindings_isolation" ON "softbinding"."stored_bindings" AS PERMISSIVE FOR ALL TO public USING ("softbinding"."stored_bindings"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("softbinding"."stored_bindings"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "stored_bindings_public_lookup" ON "softbinding"."stored_bindings" AS PERMISSIVE FOR SELECT TO public USING (current_setting('cairn.softbinding_public', true) = 'on');--> statement-breakpoint
CREATE POLICY "stored_manifests_isolation" ON "softbinding"."stored_manifests" AS PERMISSIVE FOR ALL TO public USING ("softbinding"."stored_manifests"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("softbinding"."stored_manifests"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "stored_manifests_public_lookup" ON "softbinding"."stored_manifests" AS PERMISSIVE FOR SELECT TO public USING (current_setting('cairn.softbinding_public', true) = 'on');--> statement-breakpoint
-- As for fingerprints (0002): the service connects as the owner; FORCE makes the policies bind it too.
ALTER TABLE "softbinding"."stored_manifests" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "softbinding"."stored_bindings" FORCE ROW LEVEL SECURITY;

CREATE TABLE "watermark"."marks" (
	"watermark_id" text PRIMARY KEY NOT NULL,
	"payload_hex" text NOT NULL,
	"tenant_id" text NOT NULL,
	"asset_id" text NOT NULL,
	"algorithm" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "watermark"."marks" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE UNIQUE INDEX "marks_payload_idx" ON "watermark"."marks" USING btree ("payload_hex");--> statement-breakpoint
CREATE INDEX "marks_tenant_asset_idx" ON "watermark"."marks" USING btree ("tenant_id","asset_id");--> statement-breakpoint
CREATE POLICY "marks_isolation" ON "watermark"."marks" AS PERMISSIVE FOR ALL TO public USING ("watermark"."marks"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("watermark"."marks"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "marks_by_payload" ON "watermark"."marks" AS PERMISSIVE FOR SELECT TO public USING ("watermark"."marks"."payload_hex" = current_setting('cairn.watermark_payload', true));
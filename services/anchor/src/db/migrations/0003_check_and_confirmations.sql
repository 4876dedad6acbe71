ALTER TABLE "anchor"."batches" ADD COLUMN "confirmations" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "leaves_asset_idx" ON "anchor"."leaves" USING btree ("asset_id");
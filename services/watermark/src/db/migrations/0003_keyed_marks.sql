CREATE TABLE "watermark"."generated_keys" (
	"kid" text PRIMARY KEY NOT NULL,
	"sealed_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "watermark"."marks" ADD COLUMN "key_id" text;
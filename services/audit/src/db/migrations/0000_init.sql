CREATE SCHEMA "audit";
--> statement-breakpoint
CREATE TABLE "audit"."entries" (
	"entry_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"event_id" text NOT NULL,
	"event_type" text NOT NULL,
	"occurred_at" timestamp with time zone NOT NULL,
	"recorded_at" timestamp with time zone DEFAULT now() NOT NULL,
	"data" jsonb NOT NULL
);
--> statement-breakpoint
ALTER TABLE "audit"."entries" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "audit"."outbox" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"event_id" text NOT NULL,
	"subject" text NOT NULL,
	"envelope" jsonb NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone,
	CONSTRAINT "outbox_event_id_unique" UNIQUE("event_id")
);
--> statement-breakpoint
CREATE TABLE "audit"."processed_events" (
	"consumer" text NOT NULL,
	"event_id" text NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "processed_events_consumer_event_id_pk" PRIMARY KEY("consumer","event_id")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "entries_tenant_event_idx" ON "audit"."entries" USING btree ("tenant_id","event_id");--> statement-breakpoint
CREATE INDEX "entries_tenant_type_time_idx" ON "audit"."entries" USING btree ("tenant_id","event_type","occurred_at");--> statement-breakpoint
CREATE POLICY "entries_isolation" ON "audit"."entries" AS PERMISSIVE FOR ALL TO public USING ("audit"."entries"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("audit"."entries"."tenant_id" = current_setting('cairn.tenant_id', true));
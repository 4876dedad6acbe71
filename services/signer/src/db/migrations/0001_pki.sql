CREATE TABLE "signer"."certificates" (
	"serial_hex" text PRIMARY KEY NOT NULL,
	"role" text NOT NULL,
	"subject" text NOT NULL,
	"issuer_serial" text,
	"sequence" integer DEFAULT 1 NOT NULL,
	"pem" text NOT NULL,
	"encrypted_private_key" text,
	"key_backend" text DEFAULT 'software' NOT NULL,
	"pkcs11_label" text,
	"not_before" timestamp with time zone NOT NULL,
	"not_after" timestamp with time zone NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"revoked_at" timestamp with time zone,
	"revocation_reason" text,
	"activated_at" timestamp with time zone,
	"retired_at" timestamp with time zone,
	"expiring_notified_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "certificates_role_check" CHECK ("signer"."certificates"."role" in ('root', 'intermediate', 'signing', 'ocsp_responder')),
	CONSTRAINT "certificates_status_check" CHECK ("signer"."certificates"."status" in ('active', 'retired', 'revoked')),
	CONSTRAINT "certificates_key_backend_check" CHECK ("signer"."certificates"."key_backend" in ('software', 'pkcs11')),
	CONSTRAINT "certificates_key_location_check" CHECK (("signer"."certificates"."key_backend" = 'software' and "signer"."certificates"."encrypted_private_key" is not null) or ("signer"."certificates"."key_backend" = 'pkcs11' and "signer"."certificates"."pkcs11_label" is not null and "signer"."certificates"."encrypted_private_key" is null)),
	CONSTRAINT "certificates_revoked_check" CHECK (("signer"."certificates"."status" = 'revoked') = ("signer"."certificates"."revoked_at" is not null)),
	CONSTRAINT "certificates_issuer_check" CHECK (("signer"."certificates"."role" = 'root') = ("signer"."certificates"."issuer_serial" is null))
);
--> statement-breakpoint
ALTER TABLE "signer"."certificates" ADD CONSTRAINT "certificates_issuer_serial_certificates_serial_hex_fk" FOREIGN KEY ("issuer_serial") REFERENCES "signer"."certificates"("serial_hex") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "certificates_one_active_per_role" ON "signer"."certificates" USING btree ("role") WHERE "signer"."certificates"."status" = 'active';--> statement-breakpoint
CREATE INDEX "certificates_role_status_idx" ON "signer"."certificates" USING btree ("role","status");
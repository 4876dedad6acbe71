DROP POLICY "api_keys_gateway_import" ON "tenant"."api_keys" CASCADE;--> statement-breakpoint
DROP POLICY "onboarding_requests_gateway_import" ON "tenant"."onboarding_requests" CASCADE;--> statement-breakpoint
DROP POLICY "tenants_gateway_import" ON "tenant"."tenants" CASCADE;
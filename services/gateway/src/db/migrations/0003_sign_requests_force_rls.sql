ALTER TABLE "gateway"."sign_requests" FORCE ROW LEVEL SECURITY;

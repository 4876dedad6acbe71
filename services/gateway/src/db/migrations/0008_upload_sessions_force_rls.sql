ALTER TABLE "gateway"."upload_sessions" FORCE ROW LEVEL SECURITY;

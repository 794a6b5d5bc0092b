-- A namespace's definition can change (PUT /v1/namespaces/{name}): updated_at says when it last did.
-- A namespace never changed shows its creation time, so existing rows start from created_at.
ALTER TABLE "namespaces" ADD COLUMN "updated_at" TIMESTAMPTZ(3);
UPDATE "namespaces" SET "updated_at" = "created_at";
ALTER TABLE "namespaces" ALTER COLUMN "updated_at" SET NOT NULL, ALTER COLUMN "updated_at" SET DEFAULT CURRENT_TIMESTAMP;

-- Identifiers compare in byte order (COLLATE "C"): listings promise ascending byte order,
-- and keyset pagination needs the index order to be exactly that order.

-- CreateTable
CREATE TABLE "tenants" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "cursor_secret" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tenants_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" TEXT COLLATE "C" NOT NULL,
    "tenant_id" UUID NOT NULL,
    "prefix" TEXT COLLATE "C" NOT NULL,
    "secret_hash" BYTEA NOT NULL,
    "label" TEXT NOT NULL,
    "scopes" TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "namespaces" (
    "tenant_id" UUID NOT NULL,
    "name" TEXT COLLATE "C" NOT NULL,
    "relations" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "namespaces_pkey" PRIMARY KEY ("tenant_id","name")
);

-- CreateTable
CREATE TABLE "agents" (
    "tenant_id" UUID NOT NULL,
    "external_id" TEXT COLLATE "C" NOT NULL,
    "display_name" TEXT,
    "owner" TEXT,
    "scope" TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agents_pkey" PRIMARY KEY ("tenant_id","external_id")
);

-- CreateTable
CREATE TABLE "grants" (
    "tenant_id" UUID NOT NULL,
    "object_ns" TEXT COLLATE "C" NOT NULL,
    "object_id" TEXT COLLATE "C" NOT NULL,
    "relation" TEXT COLLATE "C" NOT NULL,
    "subject_ns" TEXT COLLATE "C" NOT NULL,
    "subject_id" TEXT COLLATE "C" NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "grants_pkey" PRIMARY KEY ("tenant_id","object_ns","object_id","relation","subject_ns","subject_id")
);

-- CreateIndex
CREATE UNIQUE INDEX "tenants_name_key" ON "tenants"("name");

-- CreateIndex
CREATE INDEX "api_keys_prefix_idx" ON "api_keys"("prefix");

-- CreateIndex
CREATE INDEX "api_keys_tenant_id_created_at_idx" ON "api_keys"("tenant_id", "created_at");

-- CreateIndex
CREATE INDEX "grants_by_subject" ON "grants"("tenant_id", "subject_ns", "subject_id", "relation", "object_ns", "object_id");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "namespaces" ADD CONSTRAINT "namespaces_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agents" ADD CONSTRAINT "agents_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "grants" ADD CONSTRAINT "grants_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- OAuth 2.0 (docs/oauth.md): the tenants' clients, and what the authorization server library
-- persists. Deleting a client deletes its records; deleting an agent deletes its clients.

-- CreateTable
CREATE TABLE "oauth_clients" (
    "client_id" TEXT COLLATE "C" NOT NULL,
    "tenant_id" UUID NOT NULL,
    "secret_hash" BYTEA,
    "name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "redirect_uris" TEXT[],
    "scopes" TEXT[],
    "agent_external_id" TEXT COLLATE "C",
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "oauth_clients_pkey" PRIMARY KEY ("client_id")
);

-- CreateTable
CREATE TABLE "oauth_records" (
    "kind" TEXT COLLATE "C" NOT NULL,
    "id" TEXT COLLATE "C" NOT NULL,
    "payload" JSONB NOT NULL,
    "grant_id" TEXT COLLATE "C",
    "uid" TEXT COLLATE "C",
    "client_id" TEXT COLLATE "C",
    "account_id" TEXT COLLATE "C",
    "expires_at" TIMESTAMPTZ(3),
    "consumed_at" TIMESTAMPTZ(3),

    CONSTRAINT "oauth_records_pkey" PRIMARY KEY ("kind","id")
);

-- CreateIndex
CREATE INDEX "oauth_clients_tenant_id_created_at_idx" ON "oauth_clients"("tenant_id", "created_at");

-- CreateIndex
CREATE INDEX "oauth_clients_tenant_id_agent_external_id_idx" ON "oauth_clients"("tenant_id", "agent_external_id");

-- CreateIndex
CREATE INDEX "oauth_records_grant_id_idx" ON "oauth_records"("grant_id");

-- CreateIndex
CREATE INDEX "oauth_records_uid_idx" ON "oauth_records"("uid");

-- CreateIndex
CREATE INDEX "oauth_records_expires_at_idx" ON "oauth_records"("expires_at");

-- CreateIndex
CREATE INDEX "oauth_records_client_id_idx" ON "oauth_records"("client_id");

-- CreateIndex
CREATE INDEX "oauth_records_account_id_idx" ON "oauth_records"("account_id");

-- AddForeignKey
ALTER TABLE "oauth_clients" ADD CONSTRAINT "oauth_clients_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "oauth_clients" ADD CONSTRAINT "oauth_clients_tenant_id_agent_external_id_fkey" FOREIGN KEY ("tenant_id", "agent_external_id") REFERENCES "agents"("tenant_id", "external_id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "oauth_records" ADD CONSTRAINT "oauth_records_client_id_fkey" FOREIGN KEY ("client_id") REFERENCES "oauth_clients"("client_id") ON DELETE CASCADE ON UPDATE CASCADE;

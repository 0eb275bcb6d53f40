-- CreateIndex
CREATE INDEX "Job_concurrencyKey_status_idx" ON "Job"("concurrencyKey", "status");

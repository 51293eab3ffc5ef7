-- Retention (src/retention/): an ended job's data is cleared after RETAIN_JOB_DATA, and the row, which
-- stays, says when. The jobs still to clear and the oldest uploads are found by index, not by a scan.
ALTER TABLE "Job" ADD COLUMN "dataClearedAt" TIMESTAMP(3);

CREATE INDEX "Job_dataClearedAt_endedAt_idx" ON "Job"("dataClearedAt", "endedAt");
CREATE INDEX "Upload_createdAt_idx" ON "Upload"("createdAt");

-- CreateTable
CREATE TABLE "Upload" (
    "id" UUID NOT NULL,
    "conversationId" UUID NOT NULL,
    "mimeType" TEXT NOT NULL,
    "name" TEXT,
    "size" INTEGER NOT NULL,
    "bytes" BYTEA NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Upload_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Upload_conversationId_idx" ON "Upload"("conversationId");

-- AddForeignKey
ALTER TABLE "Upload" ADD CONSTRAINT "Upload_conversationId_fkey" FOREIGN KEY ("conversationId") REFERENCES "Conversation"("id") ON DELETE CASCADE ON UPDATE CASCADE;

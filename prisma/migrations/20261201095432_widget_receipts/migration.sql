-- A widget receipt that came while its message was still being pushed: applied by the delivery decision.
-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "receipt" TEXT;

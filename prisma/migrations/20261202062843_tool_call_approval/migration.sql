-- AlterTable
ALTER TABLE "Job" ADD COLUMN     "approval" TEXT,
ADD COLUMN     "approvalDecision" JSONB;

-- Job events with approvals: job.started tells of a call waiting for approval too (its status says so);
-- job.approval tells of the decision (approved, refused, timed_out); job.ended also tells of a call whose
-- approval was refused or never came (status refused).
CREATE OR REPLACE FUNCTION hub_job_events() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM "HubEventSink") THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    PERFORM hub_event('job.started', NEW."conversationId", jsonb_build_object(
      'jobId', NEW."id", 'tool', NEW."tool", 'toolCallId', NEW."toolCallId", 'arguments', NEW."arguments",
      'status', NEW."status", 'attempt', NEW."attempt", 'rerunOf', NEW."rerunOf",
      'timeoutAt', hub_event_time(NEW."timeoutAt")));
    RETURN NULL;
  END IF;
  IF OLD."status" = 'awaiting_approval' AND NEW."status" <> 'awaiting_approval' THEN
    PERFORM hub_event('job.approval', NEW."conversationId", jsonb_build_object(
      'jobId', NEW."id", 'tool', NEW."tool", 'toolCallId', NEW."toolCallId", 'status', NEW."status",
      'approval', NEW."approval", 'decision', NEW."approvalDecision"->'decision', 'by', NEW."approvalDecision"->'by'));
  END IF;
  IF OLD."status" IN ('running', 'awaiting_approval') AND NEW."status" NOT IN ('running', 'awaiting_approval') THEN
    PERFORM hub_event('job.ended', NEW."conversationId", jsonb_build_object(
      'jobId', NEW."id", 'tool', NEW."tool", 'toolCallId', NEW."toolCallId", 'status', NEW."status",
      'result', NEW."result", 'attachments', NEW."attachments", 'error', NEW."error",
      'cancelledBy', NEW."cancelledBy", 'attempt', NEW."attempt",
      'endedAt', hub_event_time(coalesce(NEW."endedAt", NEW."updatedAt"))));
  END IF;
  RETURN NULL;
END
$$;

-- A call's approval entry (role approval) is told as job.approval, as tool_call and progress entries are told as
-- job events.
CREATE OR REPLACE FUNCTION hub_message_events() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM "HubEventSink") THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    IF NEW."role" NOT IN ('tool_call', 'progress', 'approval') THEN
      PERFORM hub_event('message.created', NEW."conversationId", jsonb_strip_nulls(jsonb_build_object(
        'messageId', NEW."id", 'role', NEW."role", 'text', NEW."text", 'jobId', NEW."jobId",
        'toolCallId', NEW."toolCallId", 'status', NEW."status", 'attachments', NEW."attachments",
        'buttons', NEW."buttons", 'createdAt', hub_event_time(NEW."createdAt"))));
    END IF;
    RETURN NULL;
  END IF;
  IF NEW."decision" IS DISTINCT FROM OLD."decision" AND NEW."decision" IS NOT NULL THEN
    PERFORM hub_event('delivery.decided', NEW."conversationId", jsonb_build_object(
      'messageId', NEW."id", 'role', NEW."role", 'decision', NEW."decision", 'statusReason', NEW."statusReason",
      'status', NEW."status"));
  END IF;
  IF NEW."status" IS DISTINCT FROM OLD."status" AND NEW."status" IS NOT NULL THEN
    PERFORM hub_event('message.status', NEW."conversationId", jsonb_build_object(
      'messageId', NEW."id", 'role', NEW."role", 'status', NEW."status", 'previousStatus', OLD."status",
      'statusReason', NEW."statusReason"));
  END IF;
  RETURN NULL;
END
$$;

-- Outgoing events (docs/events.md). Triggers on the tables whose changes are events write the outbox
-- ("HubEvent") in the very transaction of the change, so no statement has to remember to, and a change
-- that rolls back has no event. They write only while the hub has endpoints: "HubEventSink" holds one row
-- per endpoint (set by the hub at start from its settings); with none, each trigger is one EXISTS.

-- The endpoints events go to: a stable key per endpoint (a hash of its URL, never the secret) and the
-- event types it wants (patterns such as "message.*"; null: every type).
CREATE TABLE "HubEventSink" (
    "endpoint" TEXT NOT NULL,
    "events" TEXT[],
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "HubEventSink_pkey" PRIMARY KEY ("endpoint")
);

-- One event to one endpoint: tried until delivered (a 2xx), or dropped once it has been retried long
-- enough. `seq` and `conversationId` are the event's, copied for the per-conversation order: only the
-- first delivery still owed of a conversation to an endpoint is `ready`, and delivering or dropping it makes
-- the next one ready. A sender taking a delivery moves its `nextAttemptAt` past the time its post may take:
-- that is its lease (no transaction stays open while it posts), and a process that dies lets it run out.
CREATE TABLE "HubEventDelivery" (
    "eventId" UUID NOT NULL,
    "endpoint" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    "conversationId" UUID,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "ready" BOOLEAN NOT NULL DEFAULT true,
    "nextAttemptAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deliveredAt" TIMESTAMP(3),
    "droppedAt" TIMESTAMP(3),
    "lastError" TEXT,

    CONSTRAINT "HubEventDelivery_pkey" PRIMARY KEY ("eventId", "endpoint")
);

ALTER TABLE "HubEventDelivery" ADD CONSTRAINT "HubEventDelivery_eventId_fkey" FOREIGN KEY ("eventId")
    REFERENCES "HubEvent"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Only deliveries still owed are read: the sender takes the ready ones that are due (however long the line
-- behind them), and a conversation's next one is found by its seq.
CREATE INDEX "HubEventDelivery_due_idx" ON "HubEventDelivery"("endpoint", "nextAttemptAt")
    WHERE "ready" AND "deliveredAt" IS NULL AND "droppedAt" IS NULL;
CREATE INDEX "HubEventDelivery_owed_conversation_idx" ON "HubEventDelivery"("endpoint", "conversationId", "seq")
    WHERE "deliveredAt" IS NULL AND "droppedAt" IS NULL;

-- One conversation's line to one endpoint changes under this transaction-scoped lock (the event triggers
-- and the sender take it), so a new event and the end of the one before it cannot miss each other.
CREATE FUNCTION hub_event_line_lock(endpoint TEXT, conversation UUID) RETURNS VOID
LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock(hashtextextended('hub_event_line:' || endpoint || ':' || conversation::text, 0))
$$;

-- Whether an endpoint's patterns take an event type: the type itself, "<prefix>.*", or "*".
CREATE FUNCTION hub_event_wanted(patterns TEXT[], event_type TEXT) RETURNS BOOLEAN
LANGUAGE sql IMMUTABLE AS $$
  SELECT patterns IS NULL OR EXISTS (
    SELECT 1 FROM unnest(patterns) AS p
    WHERE p = event_type OR p = '*' OR (p LIKE '%.*' AND starts_with(event_type, left(p, -1))))
$$;

-- Writes one event, when some endpoint wants its type; the channel is the conversation's.
CREATE FUNCTION hub_event(event_type TEXT, conversation UUID, payload JSONB) RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM "HubEventSink" s WHERE hub_event_wanted(s."events", event_type)) THEN
    RETURN;
  END IF;
  INSERT INTO "HubEvent" ("id", "type", "conversationId", "channel", "payload", "occurredAt")
  SELECT gen_random_uuid(), event_type, conversation,
         (SELECT c."channel" FROM "Conversation" c WHERE c."id" = conversation),
         payload, (now() AT TIME ZONE 'UTC');
END
$$;

-- Every event, however written (these triggers, or a statement of its own such as an erasure's), gets
-- one delivery per endpoint that wants it: ready unless an earlier event of its conversation is still owed.
CREATE FUNCTION hub_event_fan_out() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
  sink RECORD;
BEGIN
  FOR sink IN SELECT s."endpoint" FROM "HubEventSink" s WHERE hub_event_wanted(s."events", NEW."type")
    ORDER BY s."endpoint" LOOP
    IF NEW."conversationId" IS NOT NULL THEN
      PERFORM hub_event_line_lock(sink."endpoint", NEW."conversationId");
    END IF;
    INSERT INTO "HubEventDelivery" ("eventId", "endpoint", "seq", "conversationId", "ready", "nextAttemptAt")
    VALUES (NEW."id", sink."endpoint", NEW."seq", NEW."conversationId",
      NEW."conversationId" IS NULL OR NOT EXISTS (
        SELECT 1 FROM "HubEventDelivery" d
        WHERE d."endpoint" = sink."endpoint" AND d."conversationId" = NEW."conversationId"
          AND d."deliveredAt" IS NULL AND d."droppedAt" IS NULL),
      (now() AT TIME ZONE 'UTC'));
  END LOOP;
  RETURN NULL;
END
$$;

CREATE TRIGGER "HubEvent_fan_out" AFTER INSERT ON "HubEvent"
    FOR EACH ROW EXECUTE FUNCTION hub_event_fan_out();

-- A timestamp(3) column (UTC wall time) as the ISO string the hub's API gives.
CREATE FUNCTION hub_event_time(at TIMESTAMP) RETURNS TEXT
LANGUAGE sql IMMUTABLE AS $$
  SELECT to_char(at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- Message: a new conversation entry (message.created); its delivery decision (delivery.decided) and its
-- status (message.status) when they change. tool_call and progress entries are told as job events.
CREATE FUNCTION hub_message_events() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM "HubEventSink") THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    IF NEW."role" NOT IN ('tool_call', 'progress') THEN
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

CREATE TRIGGER "Message_events" AFTER INSERT OR UPDATE OF "status", "decision" ON "Message"
    FOR EACH ROW EXECUTE FUNCTION hub_message_events();

-- Conversation: who has it (take-over, hand-back, the agent's hand-off request) and whether it is closed.
-- An erased conversation tells nothing more.
CREATE FUNCTION hub_conversation_events() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
  action TEXT;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM "HubEventSink") OR NEW."erasedAt" IS NOT NULL THEN
    RETURN NULL;
  END IF;
  IF OLD."closedAt" IS NULL AND NEW."closedAt" IS NOT NULL THEN
    action := 'close';
  ELSIF OLD."closedAt" IS NOT NULL AND NEW."closedAt" IS NULL THEN
    action := 'reopen';
  ELSIF OLD."handoffAt" IS NULL AND NEW."handoffAt" IS NOT NULL THEN
    action := 'handoff_request';
  ELSIF OLD."control" = 'human' AND NEW."control" = 'agent' THEN
    action := 'hand_back';
  ELSIF NEW."control" = 'human' AND (OLD."control" <> 'human' OR NEW."humanAgent" IS DISTINCT FROM OLD."humanAgent") THEN
    action := 'take_over';
  ELSE
    RETURN NULL;
  END IF;
  PERFORM hub_event('conversation.control', NEW."id", jsonb_build_object(
    'action', action, 'control', NEW."control", 'humanAgent', NEW."humanAgent",
    'handoffReason', CASE WHEN action = 'handoff_request' THEN NEW."handoffReason" END,
    'closed', NEW."closedAt" IS NOT NULL));
  RETURN NULL;
END
$$;

CREATE TRIGGER "Conversation_events"
    AFTER UPDATE OF "control", "humanAgent", "handoffAt", "closedAt" ON "Conversation"
    FOR EACH ROW EXECUTE FUNCTION hub_conversation_events();

-- Job: started (insert) and ended (its status leaving running).
CREATE FUNCTION hub_job_events() RETURNS TRIGGER
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
  ELSIF OLD."status" = 'running' AND NEW."status" <> 'running' THEN
    PERFORM hub_event('job.ended', NEW."conversationId", jsonb_build_object(
      'jobId', NEW."id", 'tool', NEW."tool", 'toolCallId', NEW."toolCallId", 'status', NEW."status",
      'result', NEW."result", 'attachments', NEW."attachments", 'error', NEW."error",
      'cancelledBy', NEW."cancelledBy", 'attempt', NEW."attempt",
      'endedAt', hub_event_time(coalesce(NEW."endedAt", NEW."updatedAt"))));
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER "Job_events" AFTER INSERT OR UPDATE OF "status" ON "Job"
    FOR EACH ROW EXECUTE FUNCTION hub_job_events();

-- JobProgress: a job's progress line.
CREATE FUNCTION hub_job_progress_events() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM "HubEventSink") THEN
    RETURN NULL;
  END IF;
  PERFORM hub_event('job.progress', j."conversationId", jsonb_build_object(
      'jobId', NEW."jobId", 'tool', j."tool", 'progressId', NEW."id", 'text', NEW."text", 'notify', NEW."notify",
      'at', hub_event_time(NEW."createdAt")))
  FROM "Job" j WHERE j."id" = NEW."jobId";
  RETURN NULL;
END
$$;

CREATE TRIGGER "JobProgress_events" AFTER INSERT ON "JobProgress"
    FOR EACH ROW EXECUTE FUNCTION hub_job_progress_events();

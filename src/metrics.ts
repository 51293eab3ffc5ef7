// Prometheus metrics, one registry per hub (several hubs can share a process in tests).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "hub_" });
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
    new Counter<L>({ name, help, labelNames, registers: [registry] });
  return {
    registry,
    callbacks: counter("hub_callbacks_total", "Tool-backend callbacks by answer", ["outcome"]),
    jobsStarted: counter("hub_jobs_started_total", "Tool calls by outcome", ["tool", "outcome"]),
    jobsEnded: counter("hub_jobs_ended_total", "Jobs ended, by final status", ["tool", "status"]),
    cancelRequests: counter(
      "hub_cancel_requests_total",
      "Cancel requests sent to backends, by answer: delivered (below 400), not_found (404), refused (other 4xx), failed (5xx, no answer; sent again)",
      ["tool", "outcome"],
    ),
    correctedResults: counter(
      "hub_corrected_results_total",
      "Results (or errors) posted after their job had ended with a different one: recorded, the first kept",
      ["tool"],
    ),
    toolReloads: counter(
      "hub_tool_reloads_total",
      "Reloads of the tool files: applied, unchanged, or refused (a broken file; the previous set stays in force)",
      ["outcome"],
    ),
    toolFilesRefused: new Gauge({
      name: "hub_tool_files_refused",
      help: "1 while the last reload of the tool files was refused (the previous tools are in force), else 0",
      registers: [registry],
    }),
    deliveries: counter(
      "hub_deliveries_total",
      "Routing decisions by channel and decision: live, stored, sent, template, awaiting_reply, held, failed",
      ["channel", "decision"],
    ),
    sendFailures: counter("hub_send_failures_total", "Sends that failed for good, by Meta error code", [
      "channel",
      "code",
    ]),
    whatsappCharges: counter(
      "hub_whatsapp_charges_total",
      "Messages Meta reported pricing for (a status's `pricing`), once per message, by category, billable and pricing model",
      ["category", "billable", "pricing_model"],
    ),
    whatsappTemplateStatuses: counter(
      "hub_whatsapp_template_statuses_total",
      "WhatsApp template status reports recorded (message_template_status_update), by status",
      ["status"],
    ),
    marketingHolds: counter(
      "hub_whatsapp_marketing_holds_total",
      "People whose marketing templates Meta's per-person limit (131049) held for 24 hours",
      [],
    ),
    sendsDeferred: counter("hub_sends_deferred_total", "Sends Meta did not accept for a passing reason (retried)", [
      "channel",
      "code",
    ]),
    turns: counter("hub_turns_total", "Turns run, by outcome", ["outcome"]),
    emailsReceived: counter(
      "hub_email_received_total",
      "E-mails offered to the SMTP listener: accepted (committed), duplicate (a Message-ID already in), refused",
      ["outcome"],
    ),
    emailEvents: counter("hub_email_events_total", "Inbound e-mails processed, by what they meant", ["outcome"]),
    emailSends: counter("hub_email_sends_total", "E-mails sent over SMTP: sent, failed (5xx), deferred (retried)", [
      "outcome",
      "code",
    ]),
    modelRequests: counter("hub_agent_model_requests_total", "The LLM agent's model calls, by model and outcome", [
      "model",
      "outcome",
    ]),
    modelTokens: counter("hub_agent_model_tokens_total", "Tokens the LLM agent's model read (in) and wrote (out)", [
      "model",
      "direction",
    ]),
    safeguardRemovals: counter(
      "hub_agent_safeguard_removals_total",
      "Items the LLM agent's safeguard removed from a reply (a link, e-mail, phone or amount found nowhere)",
      ["kind"],
    ),
    repeatedCalls: counter(
      "hub_agent_repeated_calls_total",
      "Calls the LLM agent's model repeated that the hub answered with a note instead of making (same_turn, while_running)",
      ["tool", "reason"],
    ),
    turnSeconds: new Histogram({
      name: "hub_turn_duration_seconds",
      help: "How long a turn took, agent runtime included",
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    webhooks: counter("hub_meta_webhooks_total", "Meta webhook deliveries committed", ["source"]),
    metaEvents: counter("hub_meta_events_total", "Meta webhook events processed, by what they meant", [
      "channel",
      "outcome",
    ]),
    metaIgnored: counter("hub_meta_events_ignored_total", "Meta webhook events with nothing to do, by reason", [
      "channel",
      "reason",
    ]),
    metaStatusesDropped: counter(
      "hub_meta_statuses_dropped_total",
      "Meta statuses for a message the hub never sent (after a short wait for its send to be recorded)",
      ["channel"],
    ),
    telegramUpdates: counter(
      "hub_telegram_updates_total",
      "Telegram webhook updates answered 200, by outcome: committed, or duplicate (an update_id already committed)",
      ["outcome"],
    ),
    telegramEvents: counter(
      "hub_telegram_events_total",
      "Telegram updates processed, by what they meant: message, tap, blocked, unblocked, ignored",
      ["outcome"],
    ),
    telegramSends: counter(
      "hub_telegram_sends_total",
      "Bot API calls that send (sendMessage, sendPhoto, sendDocument, sendChatAction), by outcome: sent, deferred, failed, unreachable",
      ["method", "outcome"],
    ),
    smsWebhooks: counter("hub_sms_webhooks_total", "Twilio webhook deliveries committed, by kind (inbound, status)", [
      "kind",
    ]),
    smsEvents: counter("hub_sms_events_total", "Twilio webhook deliveries processed, by what they meant", ["outcome"]),
    smsStatusesDropped: new Counter({
      name: "hub_sms_statuses_dropped_total",
      help: "Twilio status callbacks for a message the hub never sent (after a short wait for its send to be recorded)",
      registers: [registry],
    }),
    pushSends: counter(
      "hub_push_sends_total",
      "Push notification tries by service and outcome (sent, gone, retry, failed, skipped)",
      ["service", "outcome"],
    ),
    pushRegistrations: counter("hub_push_registrations_total", "Push devices registered, by platform", ["platform"]),
    events: counter(
      "hub_events_total",
      "Outgoing event posts by endpoint (its position in the settings, never its URL) and outcome (delivered, retried, dropped)",
      ["endpoint", "outcome"],
    ),
    supportAssignments: counter(
      "hub_support_assignments_total",
      "Support teams' assignment decisions, by team and reason: handoff, assigned, reassigned, taken, moved, queued, opened, released",
      ["team", "reason"],
    ),
    supportQueued: new Gauge({
      name: "hub_support_queued",
      help: "Conversations waiting in a team's queue with nobody on them, by team (as of this process's last sweep)",
      labelNames: ["team"],
      registers: [registry],
    }),
    supportBreaches: counter(
      "hub_support_breaches_total",
      "Response targets a support team missed (a first or next response past its due time), by team and kind",
      ["team", "kind"],
    ),
    redisLost: counter("hub_redis_connections_lost_total", "Redis connections of this process lost, by connection", [
      "connection",
    ]),
    redisReopened: counter(
      "hub_redis_reconnects_forced_total",
      "Redis connections the client library gave up on and the hub opened again, by connection",
      ["connection"],
    ),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

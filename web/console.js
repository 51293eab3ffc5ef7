// chat-delivery-hub support console: plain browser JavaScript, no build step. It reads the console API
// (Bearer CONSOLE_API_KEY) and listens to the `/console` socket.io namespace; every event only schedules a
// (debounced) re-read of the list and of the open timeline, so the page always shows what the hub stored.
// Operator notes: docs/console.md.
(function () {
  "use strict";

  const STORE = "cdh-console:";
  const REFRESH_DEBOUNCE_MS = 150;
  // Searching asks the hub (the list is limited, so filtering only what was loaded would miss people).
  const SEARCH_DEBOUNCE_MS = 250;
  // Some changes reach no event (read receipts, entries released by a hand-back): re-read now and then.
  const ROLE_LABEL = {
    user: "Person",
    agent: "Agent",
    human: "Team member",
    tool_call: "Tool call",
    tool_result: "Tool result",
    template: "Template",
    progress: "Progress",
    approval: "Approval",
  };
  const CHANNEL_LABEL = {
    web: "Web",
    ios: "iOS",
    android: "Android",
    flutter: "Flutter",
    whatsapp: "WhatsApp",
    instagram: "Instagram",
    messenger: "Messenger",
  };

  const $ = (id) => document.getElementById(id);
  const ui = {
    status: $("console-status"),
    connection: $("console-connection"),
    who: $("console-who"),
    logout: $("console-logout"),
    loginForm: $("login-form"),
    key: $("console-key"),
    agentId: $("agent-id"),
    agentName: $("agent-name"),
    console: $("console"),
    filterChannel: $("filter-channel"),
    filterControl: $("filter-control"),
    filterHeld: $("filter-held"),
    filterWaiting: $("filter-waiting"),
    search: $("search"),
    list: $("conversation-list"),
    emptyDetail: $("empty-detail"),
    detail: $("detail"),
    detailName: $("detail-name"),
    detailMeta: $("detail-meta"),
    detailIds: $("detail-ids-list"),
    back: $("back-to-list"),
    controlState: $("control-state"),
    takeover: $("takeover"),
    handback: $("handback"),
    close: $("close-conversation"),
    heldBanner: $("held-banner"),
    jobs: $("jobs"),
    timeline: $("timeline"),
    replyForm: $("reply-form"),
    replyInput: $("reply-input"),
    replySend: $("reply-send"),
  };

  const state = {
    key: "",
    agent: { id: "", name: "" },
    conversations: [],
    /** The running job whose Cancel was pressed once: it asks for confirmation before calling the hub. */
    confirmingCancel: null,
    selectedId: null,
    /** The open conversation's latest timeline answer. */
    timeline: null,
    busy: false,
  };
  let socket = null;

  // ---------------------------------------------------------------- storage

  function load(name, fallback) {
    try {
      const raw = localStorage.getItem(STORE + name);
      return raw ? JSON.parse(raw) : fallback;
    } catch {
      return fallback;
    }
  }

  function save(name, value) {
    try {
      if (value === undefined || value === null) localStorage.removeItem(STORE + name);
      else localStorage.setItem(STORE + name, JSON.stringify(value));
    } catch {
      // Storage disabled: the console still works until the page is closed.
    }
  }

  // ---------------------------------------------------------------- DOM helpers

  function el(tag, attributes, children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "text") node.textContent = value;
      else if (name === "class") node.className = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children || []) if (child) node.appendChild(child);
    return node;
  }

  function chip(text, kind, title) {
    return el("span", { class: `chip chip-${kind || "plain"}`, text, title });
  }

  function formatTime(iso, withSeconds) {
    if (!iso) return "";
    const date = new Date(iso);
    if (Number.isNaN(date.getTime())) return "";
    const sameDay = date.toDateString() === new Date().toDateString();
    const time = date.toLocaleTimeString([], {
      hour: "2-digit",
      minute: "2-digit",
      ...(withSeconds ? { second: "2-digit" } : {}),
    });
    return sameDay ? time : `${date.toLocaleDateString([], { month: "short", day: "numeric" })} ${time}`;
  }

  function compact(value, max) {
    let text;
    try {
      text = typeof value === "string" ? value : JSON.stringify(value);
    } catch {
      text = String(value);
    }
    text = text === undefined ? "" : text;
    return text.length > max ? `${text.slice(0, max - 1)}…` : text;
  }

  /** Status line: the last action's outcome or the last error, kept until the next one. */
  function setStatus(text, kind) {
    ui.status.textContent = text || "";
    ui.status.setAttribute("data-kind", kind || "info");
  }

  function setConnection(stateName, text) {
    ui.connection.setAttribute("data-state", stateName);
    ui.connection.textContent = text;
  }

  // ---------------------------------------------------------------- API

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(method, path, body) {
    let res;
    try {
      res = await fetch(path, {
        method,
        headers: {
          Authorization: `Bearer ${state.key}`,
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch {
      throw new ApiError(0, "network", "the hub cannot be reached");
    }
    const text = await res.text();
    let parsed;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const error = (parsed && parsed.error) || {};
      const details = Array.isArray(error.details)
        ? ` (${error.details.map((d) => `${d.field}: ${d.message}`).join("; ")})`
        : "";
      throw new ApiError(
        res.status,
        error.code || `http_${res.status}`,
        `${error.message || res.statusText}${details}`,
      );
    }
    return parsed;
  }

  function showError(action, error) {
    if (error instanceof ApiError && error.status === 401) {
      signOut(`${action}: the console key was refused`);
      return;
    }
    const code = error instanceof ApiError && error.status ? ` [${error.status} ${error.code}]` : "";
    setStatus(`${action} failed: ${error.message}${code}`, "error");
  }

  // ---------------------------------------------------------------- refreshing (debounced, never overlapping)

  /** A refresher: `schedule()` coalesces calls; a call during a run causes one more run afterwards. */
  function refresher(run) {
    let timer;
    let running = false;
    let again = false;
    async function go() {
      timer = undefined;
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        await run();
      } finally {
        running = false;
        if (again) {
          again = false;
          schedule(0);
        }
      }
    }
    function schedule(delay) {
      if (timer !== undefined) return;
      timer = setTimeout(go, delay === undefined ? REFRESH_DEBOUNCE_MS : delay);
    }
    return { schedule, now: () => go() };
  }

  const listRefresh = refresher(loadList);
  const timelineRefresh = refresher(loadTimeline);

  function filterQuery() {
    const params = new URLSearchParams();
    if (ui.filterChannel.value) params.set("channel", ui.filterChannel.value);
    if (ui.filterControl.value) params.set("control", ui.filterControl.value);
    if (ui.filterHeld.checked) params.set("held", "true");
    if (ui.filterWaiting.checked) params.set("waiting", "true");
    const search = ui.search.value.trim();
    if (search) params.set("q", search);
    params.set("limit", "200");
    return params.toString();
  }

  async function loadList() {
    if (!state.key) return;
    try {
      const body = await api("GET", `/v1/conversations?${filterQuery()}`);
      state.conversations = body.conversations || [];
      renderList();
    } catch (error) {
      showError("Loading conversations", error);
    }
  }

  async function loadTimeline() {
    const id = state.selectedId;
    if (!state.key || !id) return;
    try {
      const body = await api("GET", `/v1/conversations/${encodeURIComponent(id)}/timeline`);
      if (id !== state.selectedId) return; // another conversation was opened meanwhile
      state.timeline = body;
      renderDetail();
    } catch (error) {
      if (id !== state.selectedId) return;
      showError("Loading the timeline", error);
    }
  }

  // ---------------------------------------------------------------- conversation list

  /** The hub's label for the person (their name, phone, or "Visitor 3f9a"); the raw ids are in the details. */
  function displayName(conversation) {
    if (conversation.label) return conversation.label;
    const known = state.conversations.find((c) => c.id === conversation.id);
    if (known && known.label) return known.label;
    if (state.timeline && state.timeline.conversation.id === conversation.id) return state.timeline.conversation.label;
    return conversation.name || conversation.contact || conversation.id;
  }

  /** What identifies the person on their channel, for tooltips and the details. */
  function contactKind(channel) {
    if (channel === "whatsapp") return "WhatsApp number or id";
    if (channel === "instagram") return "Instagram-scoped id";
    if (channel === "messenger") return "Page-scoped id";
    return "Visitor id";
  }

  function fullIds(conversation) {
    return `${contactKind(conversation.channel)}: ${conversation.contact}\nConversation: ${conversation.id}`;
  }

  /** Who wrote an entry: the person by their label, a human agent by the name they signed in with. */
  function authorLabel(message, conversation) {
    if (message.role === "user") return conversation ? displayName(conversation) : ROLE_LABEL.user;
    if (message.role !== "human") return ROLE_LABEL[message.role] || message.role;
    const data = message.data && typeof message.data === "object" ? message.data : {};
    const agent = data.agent && typeof data.agent === "object" ? data.agent : null;
    if (!agent || !agent.name) return "Team member";
    return agent.id === state.agent.id ? `${agent.name} (you)` : agent.name;
  }

  function controlBadge(conversation) {
    if (conversation.control !== "human") return chip("Agent", "agent", "The AI agent answers");
    const holder = conversation.humanAgent;
    // The agent handed it to the team and nobody has taken it yet: waiting, with the agent's reason.
    if (!holder && conversation.handoff)
      return chip(
        "Waiting for the team",
        "waiting",
        `The agent asked for a person: ${conversation.handoff.reason || ""}`,
      );
    const mine = holder && holder.id === state.agent.id;
    const label = mine ? "You" : `Human${holder ? `: ${holder.name}` : ""}`;
    return chip(label, "human", holder ? `Taken over by ${holder.name} (${holder.id})` : "Taken over");
  }

  function lastMessageLine(message, conversation) {
    if (!message) return el("div", { class: "last muted", text: "No messages yet" });
    return el("div", { class: "last" }, [
      el("span", {
        class: "last-role",
        text: `${message.role === "user" ? "Person" : authorLabel(message, conversation)}: `,
      }),
      el("span", { text: compact(message.text || "", 140) }),
    ]);
  }

  function renderList() {
    const items = state.conversations.map((conversation) => {
      const held = Number(conversation.held) || 0;
      const waiting = Number(conversation.waiting) || 0;
      const selected = conversation.id === state.selectedId;
      const item = el(
        "li",
        {
          class: `conversation${selected ? " selected" : ""}${held ? " has-held" : ""}`,
          "data-id": conversation.id,
          "data-control": conversation.control,
          tabindex: "0",
          role: "button",
          "aria-current": selected ? "true" : undefined,
        },
        [
          el("div", { class: "row" }, [
            el("span", { class: "name", text: displayName(conversation), title: fullIds(conversation) }),
            el("span", {
              class: "time",
              text: formatTime((conversation.lastMessage || conversation).createdAt),
            }),
          ]),
          el("div", { class: "row badges" }, [
            chip(
              CHANNEL_LABEL[conversation.channel] || conversation.channel,
              "channel",
              conversation.account ? `via ${conversation.account}` : undefined,
            ),
            controlBadge(conversation),
            el("span", {
              class: "chip chip-held held-count",
              "data-count": held,
              text: `${held} held`,
              title: "Results held while a human has the conversation",
            }),
            el("span", {
              class: "chip chip-waiting waiting-count",
              "data-count": waiting,
              text: `${waiting} waiting`,
              title: "Messages waiting for the person to write again (messaging window closed)",
            }),
          ]),
          lastMessageLine(conversation.lastMessage, conversation),
        ],
      );
      item.addEventListener("click", () => select(conversation.id, { fromList: true }));
      item.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          select(conversation.id, { fromList: true });
        }
      });
      return item;
    });
    if (items.length === 0) {
      const search = ui.search.value.trim();
      const filtered = Boolean(
        ui.filterChannel.value || ui.filterControl.value || ui.filterHeld.checked || ui.filterWaiting.checked,
      );
      const text = search
        ? `No conversation matches “${search}”${filtered ? " with these filters" : ""}.`
        : filtered
          ? "No conversations match these filters."
          : "No conversations yet.";
      items.push(el("li", { class: "list-empty", text }));
    }
    ui.list.replaceChildren(...items);
  }

  /**
   * On a narrow screen the list and the open conversation are two views (CSS reads `data-view`); on a wide
   * one both show. Opening a conversation from the list adds a history entry, so the phone's own back
   * gesture, like the Back button, returns to the list.
   */
  function showView(view) {
    ui.console.setAttribute("data-view", view);
  }

  function select(id, options) {
    const fromList = Boolean(options && options.fromList);
    showView("conversation");
    const hash = `#${encodeURIComponent(id)}`;
    if (fromList && location.hash !== hash) history.pushState({ conversation: id }, "", hash);
    else if (location.hash !== hash) history.replaceState(history.state, "", hash);
    if (id === state.selectedId) {
      timelineRefresh.schedule(0);
      return;
    }
    state.selectedId = id;
    state.timeline = null;
    state.confirmingCancel = null;
    for (const node of ui.list.querySelectorAll(".conversation")) {
      const selected = node.getAttribute("data-id") === id;
      node.classList.toggle("selected", selected);
      if (selected) node.setAttribute("aria-current", "true");
      else node.removeAttribute("aria-current");
    }
    ui.timeline.replaceChildren();
    ui.jobs.replaceChildren();
    ui.emptyDetail.hidden = true;
    ui.detail.hidden = false;
    ui.detailName.textContent = "Loading…";
    ui.detailMeta.textContent = "";
    updateControls();
    timelineRefresh.schedule(0);
  }

  // ---------------------------------------------------------------- the open conversation

  function mineNow(conversation) {
    return Boolean(
      conversation &&
      conversation.control === "human" &&
      conversation.humanAgent &&
      conversation.humanAgent.id === state.agent.id,
    );
  }

  function updateControls() {
    const conversation = state.timeline && state.timeline.conversation;
    const human = Boolean(conversation && conversation.control === "human");
    const mine = mineNow(conversation);
    ui.takeover.disabled = !conversation || mine || state.busy;
    ui.handback.disabled = !conversation || !human || state.busy;
    // Closed until the person writes again (which reopens it): closing again would change nothing.
    ui.close.disabled = !conversation || Boolean(conversation.closedAt) || state.busy;
    ui.close.textContent = conversation && conversation.closedAt ? "Closed" : "Close";
    ui.replyInput.disabled = !mine;
    ui.replySend.disabled = !mine || state.busy;
    ui.replyInput.placeholder = mine
      ? "Reply to the person (Enter sends, Shift+Enter for a new line)"
      : human
        ? conversation && !conversation.humanAgent
          ? "Take over to reply to the person…"
          : "Someone else has this conversation"
        : "Take over to reply to the person…";
    if (!conversation) {
      ui.controlState.textContent = "";
      return;
    }
    const holder = conversation.humanAgent;
    ui.controlState.textContent = !human
      ? "The agent has this conversation"
      : mine
        ? "You have this conversation"
        : !holder && conversation.handoff
          ? `Waiting for the team — the agent asked for a person: ${conversation.handoff.reason || "no reason given"}`
          : `${holder ? `${holder.name} (${holder.id})` : "A human"} has this conversation`;
    ui.controlState.setAttribute("data-control", mine ? "mine" : human ? "human" : "agent");
  }

  function renderDetail() {
    const data = state.timeline;
    if (!data) return;
    const conversation = data.conversation;
    ui.detailName.textContent = displayName(conversation);
    ui.detailName.title = fullIds(conversation);
    const meta = [
      chip(CHANNEL_LABEL[conversation.channel] || conversation.channel, "channel"),
      controlBadge(conversation),
      el("span", { class: "muted", text: `since ${formatTime(conversation.createdAt)}` }),
    ];
    if (conversation.window && !["web", "ios", "android", "flutter"].includes(conversation.channel)) {
      meta.push(
        conversation.window.open
          ? chip(`window open until ${formatTime(conversation.window.closesAt)}`, "ok")
          : chip("window closed", "warn", "Only a template can reach this person until they write again"),
      );
    }
    if (conversation.closedAt) {
      meta.push(
        chip(
          `closed ${formatTime(conversation.closedAt)}`,
          "warn",
          "Nothing automated reaches the person until they write again; results that arrive meanwhile expire",
        ),
      );
    }
    // WhatsApp: templates Meta will not take now (a result that needs one waits), and the marketing hold.
    if (data.whatsapp) {
      for (const template of data.whatsapp.unusableTemplates || []) {
        meta.push(
          chip(
            `template ${template.name} (${template.language}) ${template.status}`,
            "warn",
            `Not sent while Meta has it ${String(template.status).toLowerCase()}${template.reason ? `: ${template.reason}` : ""}`,
          ),
        );
      }
      if (data.whatsapp.marketingHeldUntil) {
        meta.push(
          chip(
            `marketing held until ${formatTime(data.whatsapp.marketingHeldUntil)}`,
            "warn",
            "Meta's per-person marketing limit (131049): no marketing template to this person until then",
          ),
        );
      }
    }
    ui.detailMeta.replaceChildren(...meta);
    renderIds(conversation);

    const held = (data.held || []).length;
    ui.heldBanner.hidden = held === 0;
    ui.heldBanner.textContent = held
      ? `${held} held ${held === 1 ? "item" : "items"}: kept from the person while a human has the conversation; ` +
        "the agent gets them on hand-back."
      : "";

    renderJobs(data.jobs || []);
    renderTimeline(data.messages || []);
    updateControls();
  }

  /** Every id the hub knows the person by, in full (what to quote to a colleague or search for). */
  function renderIds(conversation) {
    const rows = [];
    if (conversation.name) rows.push(["Name", conversation.name]);
    rows.push([contactKind(conversation.channel), conversation.contact]);
    // Meta channels: which of the hub's numbers, accounts or pages the person writes to (replies leave from it).
    if (conversation.account) rows.push(["Writes to", conversation.account]);
    rows.push(["Conversation", conversation.id]);
    rows.push(["Started", formatTime(conversation.createdAt)]);
    ui.detailIds.replaceChildren(
      ...rows.flatMap(([term, value]) => [el("dt", { text: term }), el("dd", { text: value })]),
    );
  }

  function renderJobs(jobs) {
    ui.jobs.hidden = jobs.length === 0;
    ui.jobs.replaceChildren(...jobs.map(jobCard));
  }

  function jobCard(job) {
    const latest = (job.progress || [])[(job.progress || []).length - 1];
    const result = job.result && typeof job.result === "object" ? job.result.message : undefined;
    const detail =
      job.status === "running"
        ? latest
          ? `${latest.text} · ${formatTime(latest.at, true)}`
          : job.message || "started"
        : job.error || result || job.message || "";
    const tool = job.tool.replace(/_/g, " ");
    return el("div", { class: "job", "data-id": job.id, "data-status": job.status }, [
      el("div", { class: "row" }, [
        el("span", { class: "job-tool", text: tool }),
        chip(job.status.replace(/_/g, " "), statusKind(job.status)),
        // A lost job ran again: which attempt this is, and which one replaced it.
        job.attempt > 1 ? chip(`attempt ${job.attempt}`, "plain", `a re-run of job ${job.rerunOf}`) : null,
        job.rerunAs ? chip("ran again", "warn", `as job ${job.rerunAs}`) : null,
      ]),
      el("div", { class: "job-detail", text: detail, title: detail }),
      el("div", {
        class: "job-time muted",
        text:
          `started ${formatTime(job.createdAt, true)}` +
          (job.endedAt ? ` · ended ${formatTime(job.endedAt, true)}` : ` · times out ${formatTime(job.timeoutAt)}`),
      }),
      job.status === "running" ? cancelControls(job, tool) : null,
      job.status === "awaiting_approval" && job.approval && job.approval.by === "team"
        ? approvalControls(job, tool)
        : null,
      job.status === "awaiting_approval" && job.approval && job.approval.by === "person"
        ? el("div", { class: "job-detail muted", text: "Waiting for the person to answer yes or no." })
        : null,
    ]);
  }

  /**
   * A call that waits for the team's yes: its backend has heard nothing yet. Approve makes the call; Refuse
   * ends it, and the agent tells the person it was not made.
   */
  function approvalControls(job, tool) {
    const approve = el("button", { type: "button", class: "job-approve small", text: "Approve" });
    const refuse = el("button", { type: "button", class: "job-refuse small danger", text: "Refuse" });
    approve.disabled = state.busy;
    refuse.disabled = state.busy;
    approve.addEventListener("click", () => decideApproval(job, tool, "approve"));
    refuse.addEventListener("click", () => decideApproval(job, tool, "refuse"));
    return el("div", { class: "job-actions job-confirm", role: "group", "aria-label": `Approve ${tool}?` }, [
      el("p", {
        class: "job-confirm-text",
        text: `The agent wants to run ${tool} with ${compact(job.arguments, 300)}. Nothing is done before you approve.`,
      }),
      el("div", { class: "job-confirm-buttons" }, [approve, refuse]),
    ]);
  }

  function decideApproval(job, tool, decision) {
    act(decision === "approve" ? "Approve call" : "Refuse call", async () => {
      try {
        await api("POST", `/v1/jobs/${encodeURIComponent(job.id)}/approval`, { decision, agent: state.agent });
        setStatus(decision === "approve" ? `Approved ${tool}; it is starting.` : `Refused ${tool}.`, "ok");
      } catch (error) {
        if (error instanceof ApiError && error.code === "not_awaiting_approval") {
          setStatus(`${tool} is no longer waiting for approval.`, "info");
          return;
        }
        throw error;
      }
    });
  }

  /**
   * Cancelling is final (the backend is told to stop, a late result is refused, the agent tells the person),
   * so the first press only asks; the second, on a button that says what it does, cancels.
   */
  function cancelControls(job, tool) {
    if (state.confirmingCancel !== job.id) {
      const button = el("button", { type: "button", class: "job-cancel small", text: "Cancel job…" });
      button.addEventListener("click", () => {
        state.confirmingCancel = job.id;
        renderJobs((state.timeline && state.timeline.jobs) || []);
        const confirm = ui.jobs.querySelector(`.job[data-id="${job.id}"] .job-cancel-confirm`);
        if (confirm) confirm.focus();
      });
      return el("div", { class: "job-actions" }, [button]);
    }
    const yes = el("button", { type: "button", class: "job-cancel-confirm small danger", text: "Yes, cancel it" });
    const no = el("button", { type: "button", class: "job-cancel-keep small", text: "Keep running" });
    yes.disabled = state.busy;
    yes.addEventListener("click", () => cancelJob(job, tool));
    no.addEventListener("click", () => {
      state.confirmingCancel = null;
      renderJobs((state.timeline && state.timeline.jobs) || []);
    });
    return el("div", { class: "job-actions job-confirm", role: "group", "aria-label": `Cancel ${tool}?` }, [
      el("p", {
        class: "job-confirm-text",
        text:
          `Cancel ${tool}? The hub stops waiting for it and tells its backend to stop (when the tool says how); ` +
          "a result sent later is dropped, and the agent tells the person it was cancelled.",
      }),
      el("div", { class: "job-confirm-buttons" }, [yes, no]),
    ]);
  }

  function cancelJob(job, tool) {
    act("Cancel job", async () => {
      state.confirmingCancel = null;
      try {
        await api("POST", `/v1/jobs/${encodeURIComponent(job.id)}/cancel`, { agent: state.agent });
        setStatus(`Cancelled ${tool}.`, "ok");
      } catch (error) {
        if (error instanceof ApiError && error.code === "job_ended") {
          setStatus(`${tool} had already ended; nothing was cancelled.`, "info");
          return;
        }
        throw error;
      }
    });
  }

  function statusKind(status) {
    switch (status) {
      case "held":
        return "held";
      case "failed":
      case "timed_out":
      case "cancelled":
      case "refused":
        return "bad";
      case "awaiting_reply":
      case "awaiting_approval":
      case "pending":
      case "running":
      case "expired":
        return "warn";
      case "delivered":
      case "read":
      case "sent":
      case "live":
      case "succeeded":
        return "ok";
      default:
        return "plain";
    }
  }

  /** Result data as lines a person can read: lists as bullets, objects as "key: value". */
  function readable(value, depth) {
    const level = depth || 0;
    if (value === null || value === undefined) return "";
    if (typeof value !== "object") return String(value);
    if (level > 2) return compact(value, 200);
    if (Array.isArray(value)) return value.map((item) => `• ${readable(item, level + 1)}`).join("\n");
    return Object.entries(value)
      .map(([key, item]) => {
        const text = readable(item, level + 1);
        return text.includes("\n") ? `${key}:\n${text}` : `${key}: ${text}`;
      })
      .join("\n");
  }

  function entryText(message) {
    const data = message.data && typeof message.data === "object" ? message.data : {};
    if (message.role === "tool_call") {
      return `${data.tool || "tool"}(${compact(data.arguments === undefined ? "" : data.arguments, 300)})`;
    }
    if (message.role === "tool_result") {
      const parts = [message.text || (data.outcome ? `(${data.outcome})` : "")];
      const result = data.result && typeof data.result === "object" ? data.result : undefined;
      if (result && result.data !== undefined) parts.push(compact(readable(result.data), 800));
      return parts.filter(Boolean).join("\n");
    }
    if (message.role === "template") return `Template “${message.text || ""}” sent to bring the person back`;
    return message.text || "";
  }

  /** Only web links are opened: a `javascript:` or `data:` URL never becomes a link in the console. */
  function webLink(url) {
    try {
      const parsed = new URL(String(url));
      return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : undefined;
    } catch {
      return undefined;
    }
  }

  // The files an entry carries: each a link with its name and type, opened in a new tab.
  function attachmentsElement(attachments) {
    if (!Array.isArray(attachments) || attachments.length === 0) return null;
    return el(
      "ul",
      { class: "entry-attachments" },
      attachments.map((file) => {
        const href = webLink(file.url);
        const name = file.name || String(file.url).split("/").pop() || "file";
        const label = `${name}${file.mimeType ? ` (${file.mimeType})` : ""}${file.caption ? ` — ${file.caption}` : ""}`;
        return el("li", {}, [
          href
            ? el("a", { href, target: "_blank", rel: "noopener noreferrer", text: label })
            : el("span", { text: label }),
        ]);
      }),
    );
  }

  // The choices offered with an entry, as the person saw them (the payload the agent gets, when it differs).
  function buttonsElement(buttons) {
    if (!Array.isArray(buttons) || buttons.length === 0) return null;
    return el(
      "div",
      { class: "entry-buttons" },
      buttons.map((button) =>
        el("span", {
          class: "entry-button",
          text: button.title,
          title: button.payload && button.payload !== button.title ? `payload: ${button.payload}` : undefined,
        }),
      ),
    );
  }

  function entryElement(message, conversation) {
    const held = message.status === "held";
    const data = message.data && typeof message.data === "object" ? message.data : {};
    const canceller = data.outcome === "cancelled" && data.agent && data.agent.name ? data.agent : null;
    const chips = [];
    if (message.status) chips.push(chip(message.status.replace(/_/g, " "), statusKind(message.status)));
    // A lost job that the hub started again: its re-run's entries follow.
    if (data.outcome === "ran_again") chips.push(chip("ran again", "warn", `as job ${data.next}`));
    if (message.decision && message.decision !== message.status) {
      chips.push(chip(`decision: ${message.decision.replace(/_/g, " ")}`, "plain"));
    }
    return el(
      "li",
      {
        class: `entry entry-${message.role}${held ? " held" : ""}`,
        "data-id": message.id,
        "data-role": message.role,
        "data-status": message.status || "",
        "data-job-id": message.jobId || undefined,
      },
      [
        el("div", { class: "entry-head" }, [
          el("span", {
            class: "entry-role",
            text: authorLabel(message, conversation),
            title: message.role === "human" ? "Human agent" : undefined,
          }),
          el("span", { class: "entry-time", text: formatTime(message.createdAt, true) }),
          ...chips,
        ]),
        el("div", { class: "entry-text", text: entryText(message) }),
        message.role === "user" && (message.attachments || []).length
          ? el(
              "ul",
              { class: "entry-files", "aria-label": "Files the person sent" },
              message.attachments.map(fileElement),
            )
          : attachmentsElement(message.attachments),
        buttonsElement(message.buttons),
        held
          ? el("div", {
              class: "entry-note",
              text: "Held: not sent to the person. The agent gets it when the conversation is handed back.",
            })
          : null,
        message.editedAt
          ? el("div", {
              class: "entry-note muted",
              text: `edited ${formatTime(message.editedAt, true)}${(message.edits || []).length ? ` — before: ${message.edits.map((e) => e.text).join(" / ")}` : ""}`,
            })
          : null,
        message.deletedAt
          ? el("div", { class: "entry-note", text: `deleted by the person ${formatTime(message.deletedAt, true)}` })
          : null,
        message.reaction ? el("div", { class: "entry-note muted", text: `reaction: ${message.reaction}` }) : null,
        canceller
          ? el("div", {
              class: "entry-note cancelled-by",
              text: `Cancelled from the console by ${canceller.id === state.agent.id ? `${canceller.name} (you)` : canceller.name}`,
            })
          : null,
        message.statusReason && !held
          ? el("div", { class: "entry-note muted", text: `reason: ${message.statusReason.replace(/_/g, " ")}` })
          : null,
      ],
    );
  }

  /** A file the person sent: a thumbnail for an image, else its name and type; either opens the hub's copy. */
  function fileElement(file) {
    const label = file.name || file.mimeType;
    const size = typeof file.size === "number" ? ` · ${Math.max(1, Math.round(file.size / 1024))} KB` : "";
    const content = /^image\//.test(file.mimeType)
      ? el("img", { class: "entry-thumb", src: file.url, alt: label, loading: "lazy" })
      : el("span", { text: `${label} (${file.mimeType}${size})` });
    return el("li", {}, [
      el("a", { class: "entry-file", href: file.url, target: "_blank", rel: "noopener noreferrer", title: label }, [
        content,
      ]),
    ]);
  }

  function renderTimeline(messages) {
    const box = ui.timeline;
    const atEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 60;
    const top = box.scrollTop;
    const conversation = state.timeline && state.timeline.conversation;
    box.replaceChildren(...messages.map((message) => entryElement(message, conversation)));
    if (messages.length === 0) box.appendChild(el("li", { class: "timeline-empty", text: "No entries yet." }));
    box.scrollTop = atEnd ? box.scrollHeight : top;
  }

  // ---------------------------------------------------------------- actions

  async function act(label, run) {
    if (state.busy) return;
    state.busy = true;
    updateControls();
    try {
      await run();
    } catch (error) {
      showError(label, error);
    } finally {
      state.busy = false;
      updateControls();
      timelineRefresh.schedule(0);
      listRefresh.schedule(0);
    }
  }

  function currentId() {
    return state.selectedId ? encodeURIComponent(state.selectedId) : "";
  }

  ui.takeover.addEventListener("click", () =>
    act("Take over", async () => {
      const body = await api("POST", `/v1/conversations/${currentId()}/takeover`, { agent: state.agent });
      if (state.timeline) state.timeline.conversation = body.conversation;
      setStatus(`You took over ${displayName(body.conversation)}: the agent's output is held.`, "ok");
      ui.replyInput.disabled = false;
      ui.replyInput.focus();
    }),
  );

  ui.handback.addEventListener("click", () =>
    act("Hand back", async () => {
      const body = await api("POST", `/v1/conversations/${currentId()}/handback`);
      if (state.timeline) state.timeline.conversation = body.conversation;
      setStatus(`Handed ${displayName(body.conversation)} back to the agent.`, "ok");
    }),
  );

  ui.close.addEventListener("click", () =>
    act("Close", async () => {
      const body = await api("POST", `/v1/conversations/${currentId()}/close`);
      if (state.timeline) state.timeline.conversation = { ...state.timeline.conversation, ...body.conversation };
      setStatus(`Closed ${displayName(body.conversation)}: nothing more is sent until the person writes again.`, "ok");
    }),
  );

  ui.replyForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = ui.replyInput.value.trim();
    if (!text) return;
    act("Send", async () => {
      await api("POST", `/v1/conversations/${currentId()}/human-messages`, { text, agent: state.agent });
      ui.replyInput.value = "";
      setStatus("Reply sent.", "ok");
    });
  });

  ui.replyInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      ui.replyForm.requestSubmit();
    }
  });

  for (const input of [ui.filterChannel, ui.filterControl, ui.filterHeld, ui.filterWaiting]) {
    input.addEventListener("change", () => {
      save("filters", {
        channel: ui.filterChannel.value,
        control: ui.filterControl.value,
        held: ui.filterHeld.checked,
        waiting: ui.filterWaiting.checked,
      });
      listRefresh.schedule(0);
    });
  }

  let searchTimer;
  ui.search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => listRefresh.schedule(0), SEARCH_DEBOUNCE_MS);
  });
  ui.search.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      clearTimeout(searchTimer);
      listRefresh.schedule(0);
    }
  });

  // ---------------------------------------------------------------- list ⇄ conversation (narrow screens)

  ui.back.addEventListener("click", () => {
    showView("list");
    // Undo the entry select() pushed, so the browser's back does not reopen the conversation.
    if (history.state && history.state.conversation) history.back();
    else history.replaceState(null, "", location.pathname + location.search);
    const item = ui.list.querySelector(".conversation.selected");
    if (item) item.focus();
  });

  window.addEventListener("popstate", () => {
    const id = decodeURIComponent(location.hash.slice(1));
    if (!id) showView("list");
    else if (state.key) select(id);
  });

  // ---------------------------------------------------------------- live updates

  function connect() {
    disconnect();
    if (typeof io !== "function") {
      setConnection("offline", "No live updates");
      setStatus("The socket.io client did not load: the page shows changes only when reloaded.", "error");
      return;
    }
    setConnection("connecting", "Connecting…");
    socket = io(`${location.origin}/console`, { auth: { key: state.key } });
    socket.on("connect", () => {
      setConnection("online", "Live");
      // Whatever happened while disconnected: read it again.
      listRefresh.schedule(0);
      timelineRefresh.schedule(0);
    });
    socket.on("disconnect", (reason) => {
      setConnection("offline", "Reconnecting…");
      if (reason === "io server disconnect" && socket) setTimeout(() => socket && socket.connect(), 1500);
    });
    socket.on("connect_error", (error) => {
      if (error && error.message === "unauthorized") {
        signOut("The console key was refused by the live connection");
        return;
      }
      setConnection("offline", "Reconnecting…");
    });
    socket.on("messages", (payload) => {
      listRefresh.schedule();
      const changes = (payload && payload.changes) || [];
      if (changes.some((change) => change && change.conversationId === state.selectedId)) timelineRefresh.schedule();
    });
    socket.on("control", (payload) => {
      listRefresh.schedule();
      if (payload && payload.conversationId === state.selectedId) timelineRefresh.schedule();
    });
  }

  function disconnect() {
    if (!socket) return;
    const old = socket;
    socket = null;
    old.removeAllListeners();
    old.disconnect();
  }

  // ---------------------------------------------------------------- sign in / out

  async function signIn(key, agent) {
    state.key = key;
    state.agent = agent;
    setStatus("Signing in…", "info");
    try {
      await api("GET", "/v1/conversations?limit=1");
    } catch (error) {
      state.key = "";
      ui.loginForm.hidden = false;
      ui.console.hidden = true;
      if (error instanceof ApiError && error.status === 401) setStatus("That console key was refused.", "error");
      else showError("Sign in", error);
      return;
    }
    save("key", key);
    save("agent", agent);
    ui.loginForm.hidden = true;
    ui.console.hidden = false;
    ui.logout.hidden = false;
    ui.who.hidden = false;
    ui.who.textContent = agent.name;
    ui.who.title = `Signed in as ${agent.name} (id ${agent.id})`;
    setStatus(`Signed in as ${agent.name}.`, "ok");
    connect();
    await listRefresh.now();
    const fromHash = decodeURIComponent(location.hash.slice(1));
    if (fromHash && !state.selectedId) select(fromHash);
  }

  function signOut(reason) {
    disconnect();
    state.key = "";
    state.conversations = [];
    state.selectedId = null;
    state.timeline = null;
    save("key", null);
    ui.key.value = "";
    ui.list.replaceChildren();
    ui.console.hidden = true;
    showView("list");
    ui.detail.hidden = true;
    ui.emptyDetail.hidden = false;
    ui.loginForm.hidden = false;
    ui.logout.hidden = true;
    ui.who.hidden = true;
    setConnection("offline", "Offline");
    setStatus(reason || "Signed out.", reason ? "error" : "info");
  }

  /** An id made from the name when none is given: the same name signs in as the same human. */
  function idFromName(name) {
    const slug = name
      .normalize("NFD")
      .replace(/[\u0300-\u036f]/g, "")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 100);
    return slug || "agent";
  }

  function agentFromForm() {
    const name = ui.agentName.value.trim();
    return name ? { id: ui.agentId.value.trim() || idFromName(name), name } : null;
  }

  ui.loginForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const key = ui.key.value.trim();
    const agent = agentFromForm();
    if (!key) {
      setStatus("Enter the console key.", "error");
      return;
    }
    if (!agent) {
      setStatus("Enter your name: it is shown with your replies.", "error");
      ui.agentName.focus();
      return;
    }
    signIn(key, agent);
  });

  ui.logout.addEventListener("click", () => signOut());

  // ---------------------------------------------------------------- start

  const filters = load("filters", null);
  if (filters) {
    ui.filterChannel.value = filters.channel || "";
    ui.filterControl.value = filters.control || "";
    ui.filterHeld.checked = Boolean(filters.held);
    ui.filterWaiting.checked = Boolean(filters.waiting);
  }
  const savedAgent = load("agent", null);
  if (savedAgent && typeof savedAgent.id === "string" && typeof savedAgent.name === "string") {
    ui.agentId.value = savedAgent.id;
    ui.agentName.value = savedAgent.name;
  }
  const savedKey = load("key", "");
  const knownAgent = agentFromForm();
  if (typeof savedKey === "string" && savedKey && knownAgent) {
    ui.key.value = savedKey;
    ui.loginForm.hidden = true;
    signIn(savedKey, knownAgent);
  } else {
    if (typeof savedKey === "string") ui.key.value = savedKey;
    setStatus("Sign in with the console key and your name.", "info");
  }
})();

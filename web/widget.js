// chat-delivery-hub web widget: plain browser JavaScript, no build step.
//
//   <script src="https://your-hub.example/widget.js" async></script>
//
// `data-hub` is optional (the hub's origin; default: the script's own origin); `data-title` names the panel;
// `data-service-worker` names the site's own service worker for notifications (see web/widget-sw.js). For a
// logged-in person, the site's server renders `data-identifier` (its own user id) and `data-identifier-hash` (the
// hex HMAC-SHA256 of it with the hub's WIDGET_IDENTITY_SECRET): that person's conversation then follows them
// across browsers and apps. The widget keeps
// its session (visitor id or identifier, conversation id, token), a copy of the transcript, the newest message id and the
// messages not yet acknowledged in localStorage, so a reload or a returning visitor continues the same
// conversation and asks the hub only for what is new. The protocol is described in docs/widget-protocol.md.
(function () {
  "use strict";
  if (window.ChatDeliveryHubWidget) return;

  const script = document.currentScript;
  const hub = resolveHub(script);
  const DEFAULT_TITLE = "Chat";
  const title = (script && script.dataset.title) || DEFAULT_TITLE;
  // The launcher's accessible name contains its visible text (title), as speech users say what they see.
  const OPEN_LABEL = title === DEFAULT_TITLE ? "Open chat" : `Open chat: ${title}`;
  const STORE = `cdh-widget:${hub}:`;
  const CACHE_LIMIT = 200;
  const SEND_ACK_TIMEOUT_MS = 5000;
  const SEND_RETRY_MS = 2000;
  const READ_DELAY_MS = 1000;
  const TYPING_MAX_MS = 60000;
  // The reply follows `typing: false` (committed, then sent): the indicator stays until it is on screen, or
  // this long after `false` when none comes — a fast agent's turn alone would show it for a few milliseconds.
  const TYPING_REPLY_WAIT_MS = 2000;
  const ROLE_LABEL = { user: "You", agent: "Assistant", human: "Team member" };
  // What the file picker offers; the hub's WIDGET_UPLOAD_TYPES decides what it takes.
  const UPLOAD_TYPES = (script && script.dataset.uploadTypes) || "image/*,application/pdf";

  // ---------------------------------------------------------------- storage (never fatal: it may be disabled)

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
      // Private mode or full storage: the widget still works for this page's lifetime.
    }
  }

  /** The person the embedding site verified, if it named one. */
  const identity =
    script && script.dataset.identifier && script.dataset.identifierHash
      ? { identifier: script.dataset.identifier, identifierHash: script.dataset.identifierHash }
      : undefined;
  /**
   * { visitorId? | identifier?, conversationId?, token?, expiresAt? }: the hub issues the visitor id on the first
   * session; asking again with it (or with the identity) renews the token.
   */
  let session = load("session", null) || {};
  // Someone else is signed in now, or nobody is any more: not their conversation, nor its copy on this device.
  if ((identity ? identity.identifier : undefined) !== session.identifier) {
    session = {};
    for (const name of ["cursor", "messages", "outbox"]) save(name, null);
  }
  // A token past its time is renewed before connecting, not offered to the hub.
  if (session.expiresAt && Date.parse(session.expiresAt) <= Date.now()) delete session.token;
  /** { id, createdAt } of the newest message the hub sent us: history resumes after it. */
  let cursor = load("cursor", null);

  // Read-modify-write, so two tabs of the same visitor do not erase each other's entries.
  function remember(message) {
    const cached = load("messages", []).filter((m) => m.id !== message.id);
    cached.push(message);
    save("messages", cached.slice(-CACHE_LIMIT));
  }

  function outbox() {
    return load("outbox", []);
  }

  function enqueue(entry) {
    save("outbox", outbox().concat(entry));
  }

  function dequeue(clientId) {
    save(
      "outbox",
      outbox().filter((entry) => entry.clientId !== clientId),
    );
  }

  function advanceCursor(message) {
    if (cursor && message.createdAt < cursor.createdAt) return;
    cursor = { id: message.id, createdAt: message.createdAt };
    save("cursor", cursor);
  }

  // ---------------------------------------------------------------- DOM

  const ui = buildUi();
  /** message id → element: the dedupe of history and live events. */
  const shown = new Map();
  /** clientId → element of the person's messages not yet acknowledged. */
  const pending = new Map();
  /** jobId → { jobId, tool, at, progress? }: the jobs running now, as the hub said (job events, history). */
  const jobs = new Map();
  /** Jobs seen ending: a history read just before the end must not bring one back. */
  const endedJobs = new Set();
  /** Jobs started since this connection opened: its history may have been read before they started. */
  const jobsSinceConnect = new Set();
  /** jobId → texts of the messages about it: progress already told in a message is not repeated. */
  const jobTexts = new Map();
  let unread = 0;
  let typingTimer;

  function el(tag, attributes, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children || []) node.appendChild(child);
    return node;
  }

  function buildUi() {
    const launcher = el(
      "button",
      { id: "cdh-launcher", type: "button", "aria-expanded": "false", "aria-label": OPEN_LABEL },
      [
        el("span", { class: "cdh-launcher-label", text: title }),
        // Its count is in the launcher's label: read once, not as a stray number after the title.
        el("span", { id: "cdh-unread", class: "cdh-unread", "aria-hidden": "true", hidden: "" }),
      ],
    );
    const status = el("span", {
      id: "cdh-status",
      class: "cdh-status",
      "data-state": "connecting",
      text: "Connecting…",
    });
    const close = el("button", { type: "button", class: "cdh-close", "aria-label": "Close chat", text: "×" });
    const messages = el("ol", { id: "cdh-messages", role: "log", "aria-live": "polite", "aria-label": "Messages" });
    const progressLine = el("div", { id: "cdh-progress", class: "cdh-progress", role: "status", hidden: "" });
    const typing = el("div", { id: "cdh-typing", class: "cdh-typing", hidden: "" }, [
      el("span", { class: "cdh-dots", "aria-hidden": "true" }, [el("i"), el("i"), el("i")]),
      el("span", { text: "The assistant is writing…" }),
    ]);
    const input = el("textarea", {
      id: "cdh-input",
      rows: "1",
      placeholder: "Write a message…",
      "aria-label": "Message",
      maxlength: "4000",
    });
    const sendButton = el("button", { id: "cdh-send", type: "submit", text: "Send" });
    // A file goes to the hub first (POST /widget/uploads), then with the message that names it.
    const fileInput = el("input", { id: "cdh-file", type: "file", accept: UPLOAD_TYPES, hidden: "" });
    const attachButton = el("button", {
      id: "cdh-attach",
      type: "button",
      class: "cdh-attach",
      "aria-label": "Attach a file",
      title: "Attach a file",
      text: "+",
    });
    const form = el("form", { class: "cdh-composer" }, [attachButton, fileInput, input, sendButton]);
    const panel = el("section", { id: "cdh-panel", class: "cdh-panel", "aria-label": title, hidden: "" }, [
      el("header", { class: "cdh-header" }, [
        el("div", {}, [el("div", { class: "cdh-title", text: title }), status]),
        close,
      ]),
      messages,
      el("div", { class: "cdh-activity" }, [progressLine, typing]),
      form,
    ]);
    const root = el("div", { id: "cdh-widget", "data-ready": "false", hidden: "" }, [panel, launcher]);

    launcher.addEventListener("click", () => (panel.hidden ? open() : closePanel()));
    close.addEventListener("click", () => closePanel());
    panel.addEventListener("keydown", (event) => {
      if (event.key !== "Escape" || event.isComposing) return;
      event.preventDefault();
      closePanel();
    });
    attachButton.addEventListener("click", () => fileInput.click());
    fileInput.addEventListener("change", () => {
      const file = fileInput.files && fileInput.files[0];
      fileInput.value = "";
      if (!file) return;
      const text = input.value;
      input.value = "";
      attach(file, text).catch(() => {});
      input.focus();
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const text = input.value;
      input.value = "";
      send(text).catch(() => {});
      input.focus();
    });
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    return { root, launcher, panel, status, messages, progressLine, typing, input, sendButton };
  }

  function mount() {
    if (!document.querySelector(`link[data-cdh-style]`)) {
      const link = el("link", { rel: "stylesheet", href: `${hub}/widget.css`, "data-cdh-style": "" });
      // Shown once styled (or if the stylesheet fails), never as a flash of unstyled markup.
      const reveal = () => {
        ui.root.hidden = false;
        scrollToEnd(true);
      };
      link.addEventListener("load", reveal);
      link.addEventListener("error", reveal);
      document.head.appendChild(link);
    } else {
      ui.root.hidden = false;
    }
    document.body.appendChild(ui.root);
    for (const message of load("messages", [])) addMessage(message, { from: "cache" });
    for (const entry of outbox()) showPending(entry);
    if (load("open", false)) open({ focus: false });
    scrollToEnd(true);
  }

  function formatTime(iso) {
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? "" : date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }

  // A human agent's reply carries the name they gave the support console, as Chatwoot's widget shows it.
  function messageElement(role, text, createdAt, senderName, kind) {
    // A notice is the hub's own word (the assistant cannot answer now), shown apart from the conversation.
    const notice = kind === "notice";
    const who = notice ? "Notice" : role === "human" && senderName ? senderName : ROLE_LABEL[role] || role;
    return el("li", { class: notice ? "cdh-message cdh-notice" : "cdh-message", "data-role": role }, [
      el("div", { class: "cdh-bubble", text }),
      el("div", { class: "cdh-meta", text: `${who} · ${formatTime(createdAt)}` }),
    ]);
  }

  /** Only web links are opened or shown: a `javascript:` or `data:` URL never reaches the page. */
  function safeUrl(url) {
    try {
      const parsed = new URL(String(url));
      return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : undefined;
    } catch {
      return undefined;
    }
  }

  // Images inline; any other file as a card with its name and type that opens it in a new tab.
  function attachmentElement(attachment) {
    const href = safeUrl(attachment.url);
    if (!href) return undefined;
    const name = String(attachment.name || "file");
    const type = String(attachment.mimeType || "");
    const link = { href, target: "_blank", rel: "noopener noreferrer" };
    if (attachment.kind === "image") {
      return el("a", { ...link, class: "cdh-attachment cdh-image", "data-kind": "image" }, [
        el("img", { src: href, alt: attachment.caption || name, loading: "lazy" }),
      ]);
    }
    return el("a", { ...link, class: "cdh-attachment cdh-file", "data-kind": attachment.kind || "file" }, [
      el("span", { class: "cdh-file-name", text: name }),
      el("span", { class: "cdh-file-type", text: type }),
    ]);
  }

  // A choice answers with its title as the person's words and its payload for the agent; once, by one tap
  // (the hub refuses a second), except a reusable one, which stays as it is.
  function buttonsElement(buttons) {
    const row = el("div", { class: "cdh-buttons" });
    for (const button of buttons) {
      const label = String(button.title || "");
      if (!label) continue;
      const node = el("button", { type: "button", class: "cdh-choice", text: label });
      if (!button.reusable) node.dataset.once = "true";
      node.addEventListener("click", () => {
        const spent = button.reusable ? [] : row.querySelectorAll("button[data-once]");
        for (const other of spent) other.disabled = true;
        if (!button.reusable) node.classList.add("cdh-chosen");
        send(label, { payload: button.payload || label }).catch(() => {
          for (const other of spent) other.disabled = false;
        });
      });
      row.appendChild(node);
    }
    return row;
  }

  function addExtras(node, message) {
    const files = (Array.isArray(message.attachments) ? message.attachments : [])
      .map(attachmentElement)
      .filter(Boolean);
    if (files.length) node.insertBefore(el("div", { class: "cdh-attachments" }, files), node.lastChild);
    if (Array.isArray(message.buttons) && message.buttons.length && message.role !== "user") {
      node.insertBefore(buttonsElement(message.buttons), node.lastChild);
    }
  }

  function nearEnd() {
    const list = ui.messages;
    return list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  }

  function scrollToEnd(force) {
    if (force || nearEnd()) ui.messages.scrollTop = ui.messages.scrollHeight;
  }

  /** A message from the hub (cache, history or live). Returns false for one already shown. */
  function addMessage(message, options) {
    if (!message || !message.id || shown.has(message.id)) return false;
    const stick = nearEnd();
    let node = message.clientId ? pending.get(message.clientId) : undefined;
    if (node) {
      // Our own message, now confirmed by the hub.
      pending.delete(message.clientId);
      node.classList.remove("cdh-pending", "cdh-failed");
      node.querySelector(".cdh-meta").textContent = `${ROLE_LABEL.user} · ${formatTime(message.createdAt)}`;
      dequeue(message.clientId);
    } else {
      node = messageElement(message.role, message.text, message.createdAt, message.senderName, message.kind);
      addExtras(node, message);
      ui.messages.appendChild(node);
    }
    node.setAttribute("data-id", message.id);
    if (message.kind) node.setAttribute("data-kind", message.kind);
    if (message.jobId) {
      node.setAttribute("data-job-id", message.jobId);
      jobTexts.set(message.jobId, (jobTexts.get(message.jobId) || []).concat(message.text || ""));
      renderJobs();
    }
    shown.set(message.id, node);
    const from = (options && options.from) || "hub";
    if (from !== "cache") remember(message);
    // Only what the hub sent advances the cursor: a send's ack can arrive after a newer reply.
    if (from === "hub") advanceCursor(message);
    if (from === "hub" && message.role !== "user") {
      hideTyping();
      if (ui.panel.hidden || document.visibilityState !== "visible") setUnread(unread + 1);
    }
    scrollToEnd(stick || message.role === "user");
    return true;
  }

  function showPending(entry) {
    if (pending.has(entry.clientId)) return;
    const node = messageElement("user", entryText(entry), entry.createdAt);
    node.classList.add("cdh-pending");
    node.setAttribute("data-client-id", entry.clientId);
    node.querySelector(".cdh-meta").textContent = "Sending…";
    ui.messages.appendChild(node);
    pending.set(entry.clientId, node);
    scrollToEnd(true);
  }

  /** What the person's message shows: what they wrote, else the files it carries. */
  function entryText(entry) {
    if (entry.text) return entry.text;
    return (entry.files || [])
      .map((file) => `[${/^image\//.test(file.mimeType) ? "image" : "file"}: ${file.name}]`)
      .join(" ");
  }

  function failPending(entry, reason) {
    const node = pending.get(entry.clientId);
    dequeue(entry.clientId);
    if (!node) return;
    pending.delete(entry.clientId);
    node.classList.remove("cdh-pending");
    node.classList.add("cdh-failed");
    node.querySelector(".cdh-meta").textContent = `Not sent: ${reason}`;
  }

  function setStatus(state, text) {
    ui.status.setAttribute("data-state", state);
    ui.status.textContent = text;
    if (state !== "online") ui.root.setAttribute("data-ready", "false");
  }

  function setUnread(count) {
    unread = count;
    const badge = ui.launcher.querySelector("#cdh-unread");
    badge.textContent = String(count);
    badge.hidden = count === 0 || !ui.panel.hidden;
    ui.launcher.setAttribute("aria-label", badge.hidden ? OPEN_LABEL : `${OPEN_LABEL}, ${count} unread`);
  }

  function typed(on) {
    clearTimeout(typingTimer);
    if (on) {
      ui.typing.hidden = false;
      // A lost `typing: false` must not leave the indicator on for ever.
      typingTimer = setTimeout(hideTyping, TYPING_MAX_MS);
    } else if (!ui.typing.hidden) {
      typingTimer = setTimeout(hideTyping, TYPING_REPLY_WAIT_MS);
    }
  }

  function hideTyping() {
    clearTimeout(typingTimer);
    ui.typing.hidden = true;
  }

  // ---------------------------------------------------------------- running jobs

  const toolLabel = (tool) => String(tool || "").replace(/_/g, " ");

  /** Progress the person already has as a message (a notify-progress) is not repeated on the line. */
  function told(job) {
    const update = job.progress;
    if (!update || update.notify) return true;
    return (jobTexts.get(job.jobId) || []).some((text) => text.includes(update.text));
  }

  // One line for the running jobs: the one with the newest news, and how many more there are.
  function renderJobs() {
    const running = [...jobs.values()];
    const newest = (job) => (job.progress && job.progress.at > job.at ? job.progress.at : job.at);
    const latest = running.sort((a, b) => (newest(a) < newest(b) ? 1 : -1))[0];
    ui.progressLine.hidden = !latest;
    if (!latest) {
      withdrawNotificationOffer();
      return void (ui.progressLine.textContent = "");
    }
    const line = told(latest)
      ? `Working on ${toolLabel(latest.tool)}…`
      : `${toolLabel(latest.tool)}: ${latest.progress.text}`;
    ui.progressLine.textContent = running.length > 1 ? `${line} (+${running.length - 1} more)` : line;
  }

  function jobChanged(job) {
    if (!job || !job.jobId) return;
    if (job.status === "running") {
      if (endedJobs.has(job.jobId)) return;
      jobsSinceConnect.add(job.jobId);
      jobs.set(job.jobId, Object.assign({ progress: null }, jobs.get(job.jobId), job));
    } else {
      // Ended, whatever happens to its result (held for a human, say): the job is no longer running.
      endedJobs.add(job.jobId);
      jobs.delete(job.jobId);
    }
    renderJobs();
  }

  function showProgress(update) {
    if (!update || !update.jobId || endedJobs.has(update.jobId)) return;
    const job = jobs.get(update.jobId) || { jobId: update.jobId, tool: update.tool, at: update.at };
    if (job.progress && job.progress.at > update.at) return;
    jobs.set(update.jobId, Object.assign({}, job, { progress: update }));
    renderJobs();
  }

  // The history's list is what ran when the hub read it: a job missing from it has ended (while this page was
  // away), unless it started after that read (its job event can come before the history).
  function restoreJobs(listed) {
    if (!Array.isArray(listed)) return;
    const ids = new Set(listed.map((job) => job && job.jobId));
    for (const id of [...jobs.keys()]) if (!ids.has(id) && !jobsSinceConnect.has(id)) jobs.delete(id);
    for (const job of listed) {
      if (!job || !job.jobId || endedJobs.has(job.jobId)) continue;
      const known = jobs.get(job.jobId);
      const progressOf = (entry) => (entry && entry.progress) || null;
      const newer =
        progressOf(known) && (!progressOf(job) || progressOf(known).at > progressOf(job).at)
          ? progressOf(known)
          : progressOf(job);
      jobs.set(job.jobId, { jobId: job.jobId, tool: job.tool, at: job.at, progress: newer });
    }
    renderJobs();
  }

  // ---------------------------------------------------------------- hub connection

  let socket;
  const inFlight = new Set();
  let retryTimer;
  let lastRead;
  let readTimer;
  /** clientId → the promise callbacks of send(). */
  const waiters = new Map();

  let renewTimer;

  async function requestSession() {
    const body = identity
      ? { channel: "web", identifier: identity.identifier, identifierHash: identity.identifierHash }
      : session.visitorId
        ? { channel: "web", visitorId: session.visitorId }
        : { channel: "web" };
    const res = await fetch(`${hub}/widget/sessions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    if (res.status === 400 && !identity) {
      // A visitor id the hub does not accept (not one it issued, corrupted storage): start over as a new visitor.
      session = {};
      throw new Error("visitor id refused");
    }
    if (res.status === 400 || res.status === 401) {
      // The site's identity is wrong or the hub does not verify identities: nothing this page can repair.
      const answer = await res.json().catch(() => ({}));
      throw Object.assign(new Error((answer.error && answer.error.message) || "identity refused"), { final: true });
    }
    if (!res.ok) throw new Error(`session request failed: ${res.status}`);
    const answer = await res.json();
    if (session.conversationId && session.conversationId !== answer.conversationId) forgetConversation();
    session = {
      ...(identity ? { identifier: answer.identifier } : { visitorId: answer.visitorId }),
      conversationId: answer.conversationId,
      token: answer.token,
      expiresAt: answer.expiresAt,
    };
    save("session", session);
    scheduleRenewal();
  }

  // The token is renewed before it expires, so the next reconnection has a valid one; a connection that is open
  // stays open either way.
  function scheduleRenewal() {
    clearTimeout(renewTimer);
    if (!session.expiresAt) return;
    const left = Date.parse(session.expiresAt) - Date.now();
    // Renewed at 80 % of its life (at least a second from now); a long wait is capped (setTimeout's 24.8 days).
    const wait = Math.min(2 ** 31 - 1, Math.max(1000, left * 0.8));
    renewTimer = setTimeout(() => {
      requestSession().catch(() => scheduleRenewal());
    }, wait);
  }

  function forgetConversation() {
    cursor = null;
    lastRead = undefined;
    save("cursor", null);
    save("messages", null);
    save("outbox", null);
    shown.clear();
    pending.clear();
    jobs.clear();
    jobTexts.clear();
    ui.messages.replaceChildren();
    renderJobs();
  }

  /** Drops the messages shown (not the person's unsent ones) and the cursor, to show the hub's list instead. */
  function forgetMessages() {
    for (const node of shown.values()) node.remove();
    shown.clear();
    jobTexts.clear();
    cursor = null;
    save("cursor", null);
    save("messages", null);
  }

  async function ensureSession() {
    if (session.token) scheduleRenewal();
    for (let attempt = 0; !session.token; attempt++) {
      try {
        await requestSession();
      } catch (error) {
        if (error && error.final) throw error;
        setStatus("offline", "Cannot reach the chat, retrying…");
        await sleep(Math.min(30000, 1000 * 2 ** attempt) * (0.5 + Math.random()));
      }
    }
  }

  /** The socket.io client, loaded from the hub so that it defines no global: the host page's `io` is its own. */
  let ioClient;

  function loadSocketIo() {
    if (ioClient) return Promise.resolve(ioClient);
    return new Promise((resolve, reject) => {
      const tag = el("script", { src: `${hub}/widget/socket.io.js`, async: "" });
      // The hub's wrapper hands the client over in this event while it runs, before `load`.
      tag.addEventListener("cdh:socket.io", (event) => (ioClient = event.detail));
      tag.addEventListener("load", () => {
        tag.remove();
        if (typeof ioClient === "function") resolve(ioClient);
        else reject(new Error("socket.io client did not load"));
      });
      tag.addEventListener("error", () => {
        tag.remove();
        reject(new Error("socket.io client did not load"));
      });
      document.head.appendChild(tag);
    });
  }

  async function start() {
    setStatus("connecting", "Connecting…");
    await ensureSession();
    for (let attempt = 0; ; attempt++) {
      try {
        await loadSocketIo();
        break;
      } catch {
        setStatus("offline", "Cannot reach the chat, retrying…");
        await sleep(Math.min(30000, 1000 * 2 ** attempt));
      }
    }
    socket = ioClient(`${hub}/widget`, {
      // A function, so every reconnection sends the newest token and message id.
      auth: (cb) => cb(cursor ? { token: session.token, lastMessageId: cursor.id } : { token: session.token }),
    });
    socket.on("connect", () => {
      jobsSinceConnect.clear();
      setStatus("online", "Online");
    });
    socket.on("history", (payload) => {
      const messages = (payload && payload.messages) || [];
      // The hub does not know our cursor: these are the newest messages, not what follows ours.
      if (payload && payload.reset) forgetMessages();
      for (const message of messages) addMessage(message);
      restoreJobs(payload && payload.jobs);
      // Shown and kept: only now does the hub count them as delivered.
      const last = messages[messages.length - 1];
      if (last && last.id) socket.timeout(SEND_ACK_TIMEOUT_MS).emit("received", { upTo: last.id }, () => {});
      ready();
    });
    socket.on("message", (message, ack) => {
      addMessage(message);
      if (typeof ack === "function") ack({ ok: true });
      markRead();
      if (message && message.jobId) offerNotifications();
    });
    socket.on("progress", (update) => {
      showProgress(update);
      offerNotifications();
    });
    socket.on("job", (job) => {
      jobChanged(job);
      // A slow job has started: the moment to offer to tell the person when it is done.
      if (job && job.status === "running") offerNotifications();
    });
    socket.on("typing", (payload) => typed(Boolean(payload && payload.typing)));
    socket.on("disconnect", (reason) => {
      inFlight.clear();
      hideTyping();
      setStatus("offline", "Reconnecting…");
      // The hub closed the connection itself (a restart): socket.io does not reconnect on its own then.
      if (reason === "io server disconnect") setTimeout(() => socket.connect(), 1000 + Math.random() * 2000);
    });
    socket.on("connect_error", (error) => {
      setStatus("offline", "Reconnecting…");
      if (socket.active) return; // a transport problem: socket.io retries by itself
      if (error && (error.message === "unauthorized" || error.message === "token_expired")) {
        // A new token for the same person; the messages waiting in the outbox go once the history is in.
        delete session.token;
        ensureSession().then(
          () => setTimeout(() => socket.connect(), 100 + Math.random() * 400),
          (failure) => {
            setStatus("offline", "The chat is unavailable");
            console.error("chat-delivery-hub widget:", failure);
          },
        );
      } else {
        // Refused for now (rate_limited, too_many_connections, unavailable): try again, when told if told.
        const wait = error && error.data && error.data.retryAfterMs;
        setTimeout(() => socket.connect(), (wait || 2000) + Math.random() * 3000);
      }
    });
  }

  // The hub has answered with the history: the conversation is in sync.
  function ready() {
    ui.root.setAttribute("data-ready", "true");
    flushOutbox();
    markRead();
  }

  function flushOutbox() {
    if (!socket || !socket.connected) return;
    for (const entry of outbox()) if (!inFlight.has(entry.clientId)) transmit(entry);
  }

  // Sends one queued message; without an ack it stays queued and goes again with the same clientId.
  function transmit(entry) {
    inFlight.add(entry.clientId);
    const payload = { text: entry.text, clientId: entry.clientId };
    if (entry.files && entry.files.length)
      payload.attachments = entry.files.map((file) => ({ uploadId: file.uploadId }));
    if (entry.payload) payload.payload = entry.payload;
    socket.timeout(SEND_ACK_TIMEOUT_MS).emit("send", payload, (err, answer) => {
      inFlight.delete(entry.clientId);
      if (!err && answer && answer.id) {
        const own = {
          id: answer.id,
          role: "user",
          text: entryText(entry),
          createdAt: entry.createdAt,
          clientId: entry.clientId,
        };
        addMessage(own, { from: "ack" });
        dequeue(entry.clientId);
        const waiter = waiters.get(entry.clientId);
        if (waiter) waiter.resolve(answer.id);
        waiters.delete(entry.clientId);
        return;
      }
      if (!err && answer && answer.error && answer.error.code === "invalid_request") {
        failPending(entry, answer.error.message);
        const waiter = waiters.get(entry.clientId);
        if (waiter) waiter.reject(new Error(answer.error.message));
        waiters.delete(entry.clientId);
        return;
      }
      // Not stored yet (the hub was busy, or asked us to slow down): the same clientId goes again later.
      const wait = answer && answer.error && answer.error.retryAfterMs;
      clearTimeout(retryTimer);
      retryTimer = setTimeout(flushOutbox, wait || SEND_RETRY_MS);
    });
  }

  // Read receipts go out shortly after the newest message is shown (one per burst of messages), and again
  // if the hub did not acknowledge them.
  function markRead() {
    clearTimeout(readTimer);
    readTimer = setTimeout(sendRead, READ_DELAY_MS);
  }

  function sendRead() {
    if (!socket || !socket.connected || !cursor || cursor.id === lastRead) return;
    if (ui.panel.hidden || document.visibilityState !== "visible") return;
    const upTo = cursor.id;
    socket.timeout(SEND_ACK_TIMEOUT_MS).emit("read", { upTo }, (err, answer) => {
      if (!err && answer && answer.ok) lastRead = upTo;
      else if (err) markRead();
    });
  }

  // ---------------------------------------------------------------- notifications (web/widget-push.js)

  let notificationsOffered = false;
  let pushScript;

  // Offered while a slow job is under way, never on load and never once nothing runs; the offer itself lives in
  // widget-push.js.
  function offerNotifications() {
    const worker = serviceWorkerUrl();
    if (notificationsOffered || jobs.size === 0 || !worker || !("PushManager" in window)) return;
    notificationsOffered = true;
    const offer = () => {
      const push = window.ChatDeliveryHubPush;
      if (!push || jobs.size === 0) return;
      push
        .offer({
          hub,
          worker,
          token: () => session.token,
          store: STORE,
          container: ui.panel.querySelector(".cdh-activity"),
          // Asked again once the hub's key is in: the job may have ended meanwhile.
          wanted: () => jobs.size > 0,
        })
        .catch((error) => console.error("chat-delivery-hub widget: notifications:", error));
    };
    if (pushScript) return void (pushScript.loaded ? offer() : pushScript.addEventListener("load", offer));
    pushScript = el("script", { src: `${hub}/widget-push.js` });
    pushScript.addEventListener("load", () => {
      pushScript.loaded = true;
      offer();
    });
    document.head.appendChild(pushScript);
  }

  // Nothing runs any more: an unanswered offer goes (an answered one finishes its own word), and the next slow
  // job may offer again.
  function withdrawNotificationOffer() {
    const box = ui.panel.querySelector("#cdh-push-offer");
    if (box && box.getAttribute("data-state") !== "done") {
      box.remove();
      ui.panel.querySelector(".cdh-activity").setAttribute("data-push", "withdrawn");
    }
    notificationsOffered = false;
  }

  // A service worker must come from the page's origin: the hub's own /widget-sw.js on pages the hub serves,
  // or the one the embedding site names with data-service-worker. Without one, no notifications are offered.
  function serviceWorkerUrl() {
    if (!("serviceWorker" in navigator)) return undefined;
    try {
      if (script && script.dataset.serviceWorker) {
        const url = new URL(script.dataset.serviceWorker, location.href);
        return url.origin === location.origin ? url.href : undefined;
      }
    } catch {
      return undefined;
    }
    return hub === location.origin ? `${hub}/widget-sw.js` : undefined;
  }

  // ---------------------------------------------------------------- public API

  /**
   * Sends the person's message; resolves with its id once the hub has stored it. `extra.files`: uploads sent
   * with it; `extra.payload`: the choice a tapped button stands for, given to the agent with the message.
   */
  function send(text, extra = {}) {
    const { files, payload } = extra;
    const trimmed = String(text == null ? "" : text).trim();
    if (!trimmed && !(files && files.length)) return Promise.reject(new Error("empty message"));
    const entry = { clientId: uuid(), text: trimmed, createdAt: new Date().toISOString() };
    if (files && files.length) entry.files = files;
    if (payload) entry.payload = String(payload);
    enqueue(entry);
    showPending(entry);
    const answer = new Promise((resolve, reject) => waiters.set(entry.clientId, { resolve, reject }));
    if (socket && socket.connected) transmit(entry);
    return answer;
  }

  /**
   * Uploads a file (a File or Blob) with the widget's token, then sends it with `text`; resolves with the
   * message's id. A refused file (too large, a type the hub does not take) is shown as not sent, with why.
   */
  async function attach(file, text) {
    const name = file.name || "file";
    const mimeType = file.type || "application/octet-stream";
    const shownEntry = {
      clientId: uuid(),
      text: String(text || "").trim(),
      files: [{ name, mimeType }],
      createdAt: new Date().toISOString(),
    };
    showPending(shownEntry);
    let answer;
    try {
      for (let attempt = 0; ; attempt++) {
        await ensureSession();
        const res = await fetch(`${hub}/widget/uploads?name=${encodeURIComponent(name)}`, {
          method: "POST",
          headers: { Authorization: `Bearer ${session.token}`, "Content-Type": mimeType },
          body: file,
        });
        answer = await res.json().catch(() => ({}));
        if (res.status === 401 && attempt === 0) {
          delete session.token; // renewed, then tried once more
          continue;
        }
        if (!res.ok) throw new Error((answer.error && answer.error.message) || `upload failed (${res.status})`);
        break;
      }
    } catch (error) {
      failPending(shownEntry, error.message);
      throw error;
    }
    const node = pending.get(shownEntry.clientId);
    if (node) node.remove();
    pending.delete(shownEntry.clientId);
    const upload = answer.upload;
    return send(shownEntry.text, {
      files: [{ uploadId: upload.id, name: upload.name || name, mimeType: upload.mimeType }],
    });
  }

  function open(options) {
    ui.panel.hidden = false;
    ui.launcher.setAttribute("aria-expanded", "true");
    ui.launcher.classList.add("cdh-launcher-open");
    save("open", true);
    setUnread(0);
    scrollToEnd(true);
    if (!options || options.focus !== false) ui.input.focus({ preventScroll: true });
    markRead();
  }

  function closePanel() {
    // Focus inside the panel would be left on a hidden element: it goes back to what opened the panel.
    const hadFocus = ui.panel.contains(document.activeElement);
    ui.panel.hidden = true;
    ui.launcher.setAttribute("aria-expanded", "false");
    ui.launcher.classList.remove("cdh-launcher-open");
    save("open", false);
    setUnread(0);
    if (hadFocus) ui.launcher.focus();
  }

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState !== "visible") return;
    if (!ui.panel.hidden) setUnread(0);
    markRead();
  });

  window.ChatDeliveryHubWidget = { open: () => open(), close: () => closePanel(), send: (text) => send(text), attach };

  // ---------------------------------------------------------------- helpers

  function resolveHub(tag) {
    try {
      // An origin: socket.io is served at /socket.io/ on the hub's root.
      if (tag && tag.dataset.hub) return new URL(tag.dataset.hub, location.href).origin;
      if (tag && tag.src) return new URL(tag.src, location.href).origin;
    } catch {
      // fall through to the page's own origin
    }
    return location.origin;
  }

  function randomBytes(n) {
    return crypto.getRandomValues(new Uint8Array(n));
  }

  // crypto.randomUUID exists only in secure contexts (https, localhost).
  function uuid() {
    if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
    const b = randomBytes(16);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  function boot() {
    mount();
    start().catch((error) => {
      setStatus("offline", "The chat is unavailable");
      console.error("chat-delivery-hub widget:", error);
    });
  }

  if (document.body) boot();
  else document.addEventListener("DOMContentLoaded", boot);
})();

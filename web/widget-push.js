// chat-delivery-hub web widget: the offer to be notified when a slow job's result is ready (Web Push).
// widget.js loads this file once a slow job is under way (a progress line, a message about a job), never on
// load: only then does the person have a reason to say yes. It asks the browser's permission only when the
// person presses the button, registers the widget's service worker, subscribes with the hub's public key and
// posts the subscription to the hub with the widget session's token (docs/widget-protocol.md).
(function () {
  "use strict";
  if (window.ChatDeliveryHubPush) return;

  function supported() {
    return (
      window.isSecureContext && "serviceWorker" in navigator && "PushManager" in window && "Notification" in window
    );
  }

  function el(tag, attributes, text) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
    if (text) node.textContent = text;
    return node;
  }

  function keyBytes(base64url) {
    const base64 = base64url.replace(/-/g, "+").replace(/_/g, "/");
    const raw = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4));
    return Uint8Array.from(raw, (c) => c.charCodeAt(0));
  }

  async function publicKey(hub) {
    const res = await fetch(`${hub}/widget/push-key`);
    if (!res.ok) return undefined; // Web Push is off on this hub
    return (await res.json()).publicKey;
  }

  /** The registration once its worker is active (a push subscription needs an active worker). */
  async function activeRegistration(workerUrl) {
    const registration = await navigator.serviceWorker.register(workerUrl);
    if (registration.active) return registration;
    const worker = registration.installing || registration.waiting;
    await new Promise((resolve, reject) => {
      worker.addEventListener("statechange", () => {
        if (worker.state === "activated") resolve();
        if (worker.state === "redundant") reject(new Error("the service worker did not install"));
      });
    });
    return registration;
  }

  async function subscribe(options, key) {
    const registration = await activeRegistration(options.worker);
    const subscription =
      (await registration.pushManager.getSubscription()) ||
      (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(key) }));
    const res = await fetch(`${options.hub}/widget/push-subscriptions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${options.token()}`, "Content-Type": "application/json" },
      body: JSON.stringify({ subscription: subscription.toJSON(), url: location.href }),
    });
    if (!res.ok) throw new Error(`the hub refused the subscription: ${res.status}`);
  }

  /**
   * options: { hub, worker (the service worker's URL, same origin), token () → the session token,
   * container (where the offer goes), store (localStorage key prefix), wanted () → whether the offer still
   * has a reason (a job is running; the caller withdraws it when none is) }.
   */
  async function offer(options) {
    // Where the offer stands, on its container: unavailable, subscribed, declined, offered, refused, failed.
    const state = (value) => options.container.setAttribute("data-push", value);
    if (!supported() || Notification.permission === "denied") return state("unavailable");
    const key = await publicKey(options.hub);
    if (!key) return state("unavailable");
    if (Notification.permission === "granted") {
      // Allowed before: keep the hub's record of this browser current, without asking anything.
      await subscribe(options, key);
      return state("subscribed");
    }
    if (options.wanted && !options.wanted()) return;
    const dismissedKey = `${options.store}push-dismissed`;
    try {
      if (localStorage.getItem(dismissedKey)) return state("declined");
    } catch {
      // storage disabled: offer anyway
    }
    if (options.container.querySelector("#cdh-push-offer")) return;
    const text = el("span", { class: "cdh-push-text" }, "Get a notification when it is ready?");
    const yes = el("button", { type: "button", class: "cdh-push-yes" }, "Notify me");
    const no = el("button", { type: "button", class: "cdh-push-no", "aria-label": "No, thanks" }, "×");
    const box = el("div", {
      id: "cdh-push-offer",
      class: "cdh-push-offer",
      role: "group",
      "aria-label": "Notifications",
    });
    box.append(text, yes, no);
    options.container.appendChild(box);
    state("offered");
    const done = (message) => {
      text.textContent = message;
      yes.remove();
      no.remove();
      box.setAttribute("data-state", "done");
      setTimeout(() => box.remove(), 5000);
    };
    no.addEventListener("click", () => {
      try {
        localStorage.setItem(dismissedKey, "1");
      } catch {
        // nothing to remember it in
      }
      box.remove();
      state("declined");
    });
    yes.addEventListener("click", async () => {
      yes.disabled = true;
      try {
        // Asked here, inside the person's click, as browsers require.
        const permission = await Notification.requestPermission();
        if (permission !== "granted") {
          state("refused");
          return done("Notifications are off in this browser.");
        }
        await subscribe(options, key);
        state("subscribed");
        done("You will get a notification when it is ready.");
      } catch (error) {
        console.error("chat-delivery-hub widget: notifications:", error);
        state("failed");
        done("Notifications could not be turned on.");
      }
    });
  }

  window.ChatDeliveryHubPush = { offer };
})();

// chat-delivery-hub widget service worker: shows the hub's push notifications ("Your results are ready")
// and, when one is clicked, brings the chat page that asked for them back to the front (or opens it).
//
// A service worker must come from the page's own origin. On pages the hub serves, the widget registers this
// file at /widget-sw.js. A site that embeds the widget serves a one-line worker of its own and names it with
// `data-service-worker` on the widget's script tag:
//
//   importScripts("https://HUB/widget-sw.js");
//
// It has no fetch handler: it never stands between the page and the network.
"use strict";

self.addEventListener("push", (event) => {
  let data;
  try {
    data = (event.data && event.data.json()) || {};
  } catch {
    data = {};
  }
  const title = typeof data.title === "string" && data.title ? data.title : "Your results are ready";
  const options = { data: { url: typeof data.url === "string" ? data.url : null } };
  // One notification per conversation: a newer one replaces it, and says so again.
  if (typeof data.tag === "string" && data.tag) Object.assign(options, { tag: data.tag, renotify: true });
  event.waitUntil(self.registration.showNotification(title, options));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(openChat(event.notification.data && event.notification.data.url));
});

/** Focuses a window on the chat page if one is open, else opens it; only pages of this origin. */
async function openChat(url) {
  let target = self.registration.scope;
  try {
    if (url && new URL(url).origin === self.location.origin) target = url;
  } catch {
    // not a URL: the worker's scope will do
  }
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const same = windows.find((client) => client.url === target);
  if (same) return same.focus();
  return self.clients.openWindow(target);
}

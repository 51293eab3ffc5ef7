// The demo page's script: a file of its own, so the page's Content-Security-Policy allows no inline script.

// The embed snippet, as the README gives it, with this hub's address.
document.getElementById("cdh-embed-snippet").textContent = `<script src="${location.origin}/widget.js" async></script>`;

// The button (on the demo page, not the plain chat page) opens the widget and asks the agent (the built-in one,
// or the LLM agent) to run the demo search.
document.getElementById("cdh-demo-button")?.addEventListener("click", () => {
  const widget = window.ChatDeliveryHubWidget;
  if (!widget) return; // still loading (it loads async)
  widget.open();
  widget.send("Please run the demo search").catch(() => {});
});

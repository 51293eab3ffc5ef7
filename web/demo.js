// The demo page's button: opens the widget and asks the built-in agent to run the demo search.
// A file of its own, so the page's Content-Security-Policy allows no inline script.
document.getElementById("cdh-demo-button").addEventListener("click", () => {
  const widget = window.ChatDeliveryHubWidget;
  widget.open();
  widget.send("Please run the demo search").catch(() => {});
});

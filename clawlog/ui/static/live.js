/* clawlog console: pages follow the log. On each new batch of events (server-sent by
 * /live, from the store's subscription) the page is fetched again and every element
 * marked data-live="NAME" is swapped for the fresh page's element of that name: the
 * server's own escaped rendering, never event text inserted as markup by this script.
 * Forms stay as the operator left them (they are not live regions). One fetch at a
 * time, at most one every MIN_GAP ms; a change seen meanwhile is fetched right after. */
(function () {
  "use strict";
  var status = document.getElementById("live-status");
  if (!status || !window.EventSource || !window.fetch) { return; }
  var MIN_GAP = 200;
  var busy = false;
  var pending = false;
  var lastStart = 0;

  function say(text, on) {
    status.textContent = text;
    status.classList.toggle("on", on);
  }

  function swap(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html");
    document.querySelectorAll("[data-live]").forEach(function (region) {
      var name = region.getAttribute("data-live");
      var replacement = fresh.querySelector('[data-live="' + CSS.escape(name) + '"]');
      if (replacement) { region.replaceWith(document.importNode(replacement, true)); }
    });
  }

  function refresh() {
    if (busy) { pending = true; return; }
    var wait = lastStart + MIN_GAP - Date.now();
    if (wait > 0) {
      busy = true;
      window.setTimeout(function () { busy = false; refresh(); }, wait);
      return;
    }
    busy = true;
    pending = false;
    lastStart = Date.now();
    fetch(window.location.href, { credentials: "same-origin", headers: { accept: "text/html" } })
      .then(function (answer) {
        if (!answer.ok) { throw new Error("the server answered " + answer.status); }
        return answer.text();
      })
      .then(function (html) { swap(html); say("live", true); })
      .catch(function (error) { say("live update failed: " + error.message + " (reload)", false); })
      .finally(function () {
        busy = false;
        if (pending) { refresh(); }
      });
  }

  var source = new EventSource("/live?after=" + encodeURIComponent(status.dataset.after || "0"));
  source.addEventListener("head", refresh);
  source.addEventListener("open", function () { say("live", true); });
  source.addEventListener("error", function () { say("live: reconnecting", false); });
  window.addEventListener("pagehide", function () { source.close(); });
}());

/* The overview follows the log: on new events (server-sent, /timeline/live) it reloads
 * its panels from the server (the same escaped HTML a reload would show), at most once a
 * second. No event text is ever inserted as markup by this script: only the server's
 * rendering of the page replaces the page's main element. */
(function () {
  "use strict";
  var status = document.getElementById("live-status");
  if (!status || !window.EventSource) { return; }
  var after = status.dataset.after || "0";
  var pending = false;
  var busy = false;

  function refresh() {
    if (busy) { pending = true; return; }
    busy = true;
    pending = false;
    fetch(window.location.pathname + window.location.search, { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("status " + response.status); }
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("page");
        var page = document.getElementById("page");
        if (fresh && page) {
          page.replaceChildren.apply(page, Array.prototype.slice.call(fresh.childNodes));
          status = document.getElementById("live-status");
        }
        if (status) { status.textContent = "live"; status.classList.add("on"); }
      })
      .catch(function (error) {
        if (status) { status.textContent = "live update failed: " + error.message + " (reload)"; }
      })
      .finally(function () {
        busy = false;
        if (pending) { window.setTimeout(refresh, 1000); }
      });
  }

  var source = new EventSource("/timeline/live?after=" + encodeURIComponent(after));
  var last = 0;
  function changed() {
    var now = Date.now();
    if (now - last < 1000) { if (!pending) { pending = true; window.setTimeout(refresh, 1000); } return; }
    last = now;
    refresh();
  }
  source.addEventListener("window", changed);
  source.addEventListener("open", function () {
    if (status) { status.textContent = "live"; status.classList.add("on"); }
  });
  source.addEventListener("error", function () {
    if (status) { status.textContent = "live: reconnecting"; status.classList.remove("on"); }
  });
  window.addEventListener("pagehide", function () { source.close(); });
}());

/* gangsched dashboard: refresh and filters. No framework, nothing fetched but the page.
 *
 * Every few seconds (served pages only, not files) the page is fetched again and its
 * <main> replaces this one's; the details the reader opened stay open. The filters
 * (namespace, queue, state) live in the query string, so a filtered page can be linked;
 * rows are shown or hidden by their data-* attributes. Nothing here builds HTML from
 * strings: the new <main> is the server's own page, parsed as a document. */
(function () {
  "use strict";
  var seconds = parseFloat(document.body.getAttribute("data-refresh"));
  var REFRESH_MS = seconds > 0 ? seconds * 1000 : 3000;
  var live = document.body.getAttribute("data-live") === "true" &&
    window.location.protocol !== "file:";

  function query() { return new URLSearchParams(window.location.search); }

  function applyFilters() {
    var q = query();
    var selects = document.querySelectorAll("select[data-filter]");
    selects.forEach(function (s) { s.value = q.get(s.name) || ""; });
    var shown = 0;
    document.querySelectorAll("[data-gang]").forEach(function (row) {
      var ok = true;
      selects.forEach(function (s) {
        var want = q.get(s.name);
        if (want && row.getAttribute("data-" + s.name) !== want) { ok = false; }
      });
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    var counter = document.getElementById("shown");
    if (counter) { counter.textContent = shown + " shown"; }
  }

  function onFilter(event) {
    var s = event.target;
    if (!s.matches || !s.matches("select[data-filter]")) { return; }
    var q = query();
    if (s.value) { q.set(s.name, s.value); } else { q.delete(s.name); }
    var search = q.toString();
    window.history.replaceState(null, "", window.location.pathname + (search ? "?" + search : ""));
    applyFilters();
    if (live) { refresh(); }  /* the server filters too: fetch the rows it left out */
  }

  function openKeys() {
    var keys = {};
    document.querySelectorAll("details[open][data-key]").forEach(function (d) {
      keys[d.getAttribute("data-key")] = true;
    });
    return keys;
  }

  function refresh() {
    var note = document.getElementById("refresh");
    fetch(window.location.href, { cache: "no-store", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var main = doc.getElementById("content");
        var stamp = doc.getElementById("stamp");
        if (!main) { throw new Error("no content"); }
        var keys = openKeys();  /* as the reader left them, now */
        document.getElementById("content").replaceWith(document.adoptNode(main));
        if (stamp) { document.getElementById("stamp").textContent = stamp.textContent; }
        document.querySelectorAll("details[data-key]").forEach(function (d) {
          if (keys[d.getAttribute("data-key")]) { d.open = true; }
        });
        if (note) { note.textContent = ""; }
        applyFilters();
      })
      .catch(function (error) {
        if (note) { note.textContent = "refresh failed: " + error.message; }
      });
  }

  document.addEventListener("change", onFilter);
  applyFilters();
  if (live) { window.setInterval(refresh, REFRESH_MS); }
}());

/* clawlog timeline: draws swimlanes from windows of items (JSON from the server, or
 * embedded in a static export), merges further windows fetched on scroll and zoom and
 * live ones from server-sent events, and shows a clicked item's events.
 *
 * The x axis is the log's order: one slot per loaded event position (a filtered view
 * stays dense). A box spans its events; its label sits inside or right of it (layout),
 * so no zoom cuts labels to stubs. A lane an arrow points at sits under the arrow's
 * lane (laneOrder) and the arrow leaves its box where no item is in its way (arrowX).
 * Every text goes into the page with textContent: a payload holding a script tag stays
 * text. */
(function () {
  "use strict";

  var root = document.getElementById("timeline");
  var dataElement = document.getElementById("timeline-data");
  if (!root || !dataElement) { return; }

  var LABEL_WIDTH = 190;
  var ROW_HEIGHT = 22;
  var MIN_SCALE = 2;
  var MAX_SCALE = 120;
  var EDGE = 60;
  var MIN_BOX = 8;      // px: the narrowest box, whatever the zoom
  var LABEL_MAX = 240;  // px: a longer label ends in an ellipsis (the title has it all)
  var LABEL_PAD = 14;   // px around a label inside its box (borders 5, padding 8)
  var LABEL_GAP = 3;    // px between a box and the label right of it
  var FIT_TAIL = 160;   // px kept right of the last event when fitted (its label)
  var LABEL_MIN = 40;   // px: a minor item's label shown cut short, not narrower
  var ITEM_FONT_SIZE = "11px";
  var SVG = "http://www.w3.org/2000/svg";

  var mode = root.dataset.mode || "live";
  var query = root.dataset.query || "";
  var lanesElement = document.getElementById("timeline-lanes");
  var axisElement = document.getElementById("timeline-axis");
  var arrowsElement = document.getElementById("timeline-arrows");
  var statusElement = document.getElementById("timeline-status");
  var panel = document.getElementById("event-panel");

  var state = {
    lanes: new Map(),
    items: new Map(),
    positions: [],
    start: Infinity,
    end: 0,
    head: 0,
    moreBefore: false,
    moreAfter: false,
    scale: 16,
    events: {},
    loading: false,
    live: null,
    selected: null
  };

  function merge(win) {
    win.lanes.forEach(function (lane) {
      if (!state.lanes.has(lane.name)) { state.lanes.set(lane.name, lane); }
    });
    win.items.forEach(function (piece) {
      var item = state.items.get(piece.key);
      if (!item) {
        item = Object.assign({}, piece);
        item.positions = piece.positions.slice();
        item.types = piece.types.slice();
        state.items.set(piece.key, item);
        return;
      }
      var known = new Set(item.positions);
      if (piece.positions.every(function (p) { return known.has(p); })) { return; }
      if (piece.first < item.first) {  // the earliest event names the item
        item.first = piece.first; item.start = piece.start;
        item.label = piece.label; item.lane = piece.lane;
        if (piece.to_lane) { item.to_lane = piece.to_lane; }
        if (!item.outcome) { item.outcome = piece.outcome; }
      }
      if (piece.last > item.last) {  // the latest one says how it ended
        item.last = piece.last; item.end = piece.end;
        if (piece.outcome && (piece.outcome !== "waiting" || !item.outcome)) { item.outcome = piece.outcome; }
        if (piece.detail) { item.detail = piece.detail; }
        if (piece.outcome === "refused") { item.label = piece.label; }
        if (!item.to_lane && piece.to_lane) { item.to_lane = piece.to_lane; }
      }
      piece.positions.forEach(function (p) { if (!known.has(p)) { item.positions.push(p); } });
      item.positions.sort(function (a, b) { return a - b; });
      piece.types.forEach(function (t) { if (item.types.indexOf(t) < 0) { item.types.push(t); } });
    });
    var all = new Set(state.positions);
    win.items.forEach(function (piece) { piece.positions.forEach(function (p) { all.add(p); }); });
    state.positions = Array.from(all).sort(function (a, b) { return a - b; });
    if (win.start < state.start) { state.start = win.start; state.moreBefore = win.more_before; }
    if (win.end >= state.end) { state.end = win.end; state.moreAfter = win.more_after; }
    state.head = Math.max(state.head, win.head);
    if (win.events) { Object.assign(state.events, win.events); }
  }

  function rank(position) {
    var low = 0, high = state.positions.length;
    while (low < high) {
      var middle = (low + high) >> 1;
      if (state.positions[middle] < position) { low = middle + 1; } else { high = middle; }
    }
    return low;
  }

  function clock(seconds) {
    return new Date(seconds * 1000).toISOString().slice(11, 23);
  }

  function labelOf(item) {
    if (item.kind === "approval" && item.outcome && item.outcome !== "waiting") {
      return item.label + " · waited " + (item.end - item.start).toFixed(1) + " s";
    }
    return item.label;
  }

  function titleOf(item) {
    var lines = [labelOf(item)];
    if (item.outcome) { lines.push("outcome: " + item.outcome); }
    if (item.detail) { lines.push(item.detail); }
    lines.push("positions " + item.first + (item.last !== item.first ? "–" + item.last : "") +
      " · " + clock(item.start) + (item.end !== item.start ? " → " + clock(item.end) : ""));
    return lines.join("\n");
  }

  /* Label widths, measured once per text in the items' own font. */
  var measure = document.createElement("canvas").getContext("2d");
  var widths = new Map();
  function textWidth(text, bold) {
    var key = (bold ? "b" : "n") + text;
    if (!widths.has(key)) {
      var probe = window.getComputedStyle(lanesElement);
      measure.font = (bold ? "600 " : "400 ") + ITEM_FONT_SIZE + " " + probe.fontFamily;
      widths.set(key, Math.ceil(measure.measureText(text).width));
    }
    return widths.get(key);
  }

  /* Whether an item's label may be hidden when its lane is crowded (a plain event, an
   * MCP state change, a model request: the box stays, its title says what it is). */
  function minor(item) {
    return item.kind === "event" || item.kind === "mcp" || item.kind === "model";
  }

  function fits(track, start, end) {
    return track.every(function (taken) { return end <= taken[0] || start >= taken[1]; });
  }

  /* The first track where [start, end) is free, or -1. */
  function freeTrack(tracks, start, end) {
    for (var t = 0; t < tracks.length; t += 1) {
      if (fits(tracks[t], start, end)) { return t; }
    }
    return -1;
  }

  /* The room right of `from` on a track before the next thing on it. */
  function roomAfter(track, from) {
    var next = Infinity;
    track.forEach(function (taken) { if (taken[0] >= from) { next = Math.min(next, taken[0]); } });
    return next - from;
  }

  /* Items of each lane on tracks: turns on the top tracks, the rest packed below. A box
   * spans its events; its label sits inside when it fits, else just right of the box.
   * Items whose label matters (turns, tool calls, approvals, delegations, subagents,
   * handoffs) keep the room their label needs; minor ones (plain events, MCP changes,
   * model requests) are packed by their box, then labelled where the room is left, else
   * shown as a bare box. Every label is also the box's title (a tooltip). */
  function layout() {
    var byLane = new Map();
    state.items.forEach(function (item) {
      if (!byLane.has(item.lane)) { byLane.set(item.lane, []); }
      byLane.get(item.lane).push(item);
    });
    var placed = new Map();
    var right = 0;
    byLane.forEach(function (items, lane) {
      items.sort(function (a, b) { return a.first - b.first; });
      var turnTracks = [], otherTracks = [];
      var spots = [];
      function place(item, labelled) {
        var left = rank(item.first) * state.scale;
        var box = Math.max(MIN_BOX, (rank(item.last) - rank(item.first) + 1) * state.scale - 2);
        var label = Math.min(LABEL_MAX, textWidth(labelOf(item), item.outcome === "refused") + LABEL_PAD);
        var inside = box >= label;
        var extent = inside || !labelled ? box : box + LABEL_GAP + label;
        var tracks = item.kind === "turn" ? turnTracks : otherTracks;
        var track = freeTrack(tracks, left, left + extent + 2);
        if (track < 0) { track = tracks.length; tracks.push([]); }
        tracks[track].push([left, left + extent + 2]);
        right = Math.max(right, left + extent);
        var spot = {
          item: item, left: left, width: box, track: track, turn: item.kind === "turn",
          label: label, tracks: tracks, outside: labelled && !inside, bare: !labelled && !inside
        };
        spots.push(spot);
        return spot;
      }
      items.filter(function (i) { return !minor(i); }).forEach(function (i) { place(i, true); });
      var crowded = items.filter(minor).map(function (i) { return place(i, false); });
      crowded.forEach(function (spot) {  // a label where the lane has room for it
        if (!spot.bare) { return; }
        var track = spot.tracks[spot.track];
        var from = spot.left + spot.width + 2;
        var room = Math.min(spot.label, roomAfter(track, from) - LABEL_GAP - 2);
        if (room < LABEL_MIN) {  // no room beside it: inside, cut short, if the box is wide
          spot.bare = spot.width < LABEL_MIN;
          return;
        }
        spot.bare = false;
        spot.outside = true;
        spot.labelWidth = room;
        track.push([from, from + LABEL_GAP + room + 2]);
        right = Math.max(right, from + LABEL_GAP + room);
      });
      spots.forEach(function (spot) {
        if (!spot.turn) { spot.track += turnTracks.length; }
      });
      placed.set(lane, { spots: spots, rows: Math.max(1, turnTracks.length + otherTracks.length) });
    });
    return { lanes: placed, right: right };
  }

  /* Lanes in the order they came, except that a lane an arrow points at (a subagent, a
   * delegate's session, the session a handoff continued in) comes right under the lane
   * the arrow starts from: arrows stay short and do not cross unrelated lanes. */
  function laneOrder() {
    var parentOf = new Map(), children = new Map();
    var arrows = [];
    state.items.forEach(function (item) {
      if (item.to_lane && item.to_lane !== item.lane && state.lanes.has(item.to_lane)) { arrows.push(item); }
    });
    arrows.sort(function (a, b) { return a.first - b.first; });
    arrows.forEach(function (item) {
      if (parentOf.has(item.to_lane)) { return; }
      parentOf.set(item.to_lane, item.lane);
      if (!children.has(item.lane)) { children.set(item.lane, []); }
      children.get(item.lane).push(item.to_lane);
    });
    var order = [], seen = new Set();
    function visit(name) {
      if (seen.has(name)) { return; }
      seen.add(name);
      order.push(name);
      (children.get(name) || []).forEach(visit);
    }
    state.lanes.forEach(function (lane, name) { if (!parentOf.has(name)) { visit(name); } });
    state.lanes.forEach(function (lane, name) { visit(name); });  // lanes on a cycle of arrows
    return order;
  }

  function render() {
    var placed = layout();
    var width = Math.max(state.positions.length * state.scale + 40, placed.right + 20);
    lanesElement.textContent = "";
    axisElement.textContent = "";
    arrowsElement.textContent = "";
    if (state.items.size === 0) {
      var empty = document.createElement("p");
      empty.className = "timeline-empty";
      empty.textContent = "No events match" + (state.moreBefore ? " in this window: load earlier ones." : ".");
      lanesElement.appendChild(empty);
    }
    var laneTops = new Map();
    var elements = new Map();
    laneOrder().forEach(function (name) {
      var lane = state.lanes.get(name);
      var spot = placed.lanes.get(name);
      var rows = spot ? spot.rows : 1;
      var row = document.createElement("div");
      row.className = "lane";
      row.dataset.lane = name;
      var label = document.createElement("div");
      label.className = "lane-label";
      label.title = name;
      var kind = document.createElement("span");
      kind.className = "kind";
      kind.textContent = lane.kind;
      label.appendChild(kind);
      label.appendChild(document.createTextNode(lane.label));
      row.appendChild(label);
      var track = document.createElement("div");
      track.className = "lane-track";
      track.style.width = width + "px";
      track.style.height = (rows * ROW_HEIGHT + 4) + "px";
      (spot ? spot.spots : []).forEach(function (s) {
        var item = s.item;
        var box = document.createElement("div");
        box.className = "item kind-" + item.kind + (item.outcome ? " outcome-" + item.outcome : "") +
          (s.outside ? " label-out" : "") + (s.bare ? " bare" : "");
        if (state.selected === item.key) { box.classList.add("selected"); }
        box.dataset.key = item.key;
        box.dataset.kind = item.kind;
        box.dataset.position = String(item.first);
        box.dataset.type = item.types.join(" ");
        box.dataset.outcome = item.outcome || "";
        box.style.left = s.left + "px";
        box.style.top = (2 + s.track * ROW_HEIGHT) + "px";
        box.style.width = s.width + "px";
        var text = document.createElement("span");
        text.className = "item-label";
        text.textContent = labelOf(item);
        if (s.labelWidth) { text.style.maxWidth = s.labelWidth + "px"; }
        box.appendChild(text);
        box.title = titleOf(item);
        box.tabIndex = 0;
        track.appendChild(box);
        elements.set(item.key, { box: box, spot: s });
      });
      row.appendChild(track);
      lanesElement.appendChild(row);
      laneTops.set(name, { row: row, top: 0, height: rows * ROW_HEIGHT + 4 });
    });
    drawAxis(width);
    laneTops.forEach(function (lane) {  // measured: borders and fonts vary
      lane.top = lanesElement.offsetTop + lane.row.offsetTop;
      lane.height = lane.row.offsetHeight;
    });
    drawArrows(laneTops, elements, width + LABEL_WIDTH, lanesElement.offsetTop + lanesElement.offsetHeight);
    showStatus();
  }

  function drawAxis(width) {
    axisElement.style.width = (width + LABEL_WIDTH) + "px";
    var every = Math.max(1, Math.ceil(90 / state.scale));
    var times = new Map();
    state.items.forEach(function (item) { times.set(item.first, item.start); times.set(item.last, item.end); });
    for (var i = 0; i < state.positions.length; i += every) {
      var tick = document.createElement("span");
      tick.className = "tick";
      tick.style.left = (LABEL_WIDTH + i * state.scale) + "px";
      var position = state.positions[i];
      tick.textContent = "#" + position + (times.has(position) ? " " + clock(times.get(position)).slice(0, 8) : "");
      axisElement.appendChild(tick);
    }
  }

  /* The x range a placed item covers on its track: its box and a label right of it. */
  function covers(spot, x) {
    var end = spot.left + spot.width + (spot.outside ? LABEL_GAP + (spot.labelWidth || spot.label) : 0);
    return x >= spot.left - 1 && x <= end + 1;
  }

  /* Where an arrow leaves its item: a point of the box whose way down (or up) to the
   * target lane meets no other item, in its own lane below (above) it or in a lane it
   * passes; the box's left part if there is no such point. */
  function arrowX(spot, from, to, laneSpots, lanesBetween) {
    var down = to.top > from.top;
    var inTheWay = (laneSpots.get(spot.item.lane) || []).filter(function (other) {
      return other !== spot && (down ? other.track > spot.track : other.track < spot.track);
    });
    lanesBetween.forEach(function (name) { inTheWay = inTheWay.concat(laneSpots.get(name) || []); });
    var first = spot.left + Math.min(spot.width / 2, 10);
    var candidates = [first];
    for (var x = spot.left + 3; x <= spot.left + spot.width - 3; x += 3) { candidates.push(x); }
    for (var i = 0; i < candidates.length; i += 1) {
      var here = candidates[i];
      if (!inTheWay.some(function (other) { return covers(other, here); })) { return here; }
    }
    return first;
  }

  /* An arrow from the item down (or up) to the lane it points at. Lanes an arrow points
   * at sit right under their source (laneOrder), and it leaves its box where nothing is
   * in its way (arrowX): it does not cross other items. */
  function drawArrows(laneTops, elements, width, height) {
    arrowsElement.setAttribute("width", String(width));
    arrowsElement.setAttribute("height", String(height));
    var laneSpots = new Map();
    elements.forEach(function (placed) {
      var lane = placed.spot.item.lane;
      if (!laneSpots.has(lane)) { laneSpots.set(lane, []); }
      laneSpots.get(lane).push(placed.spot);
    });
    elements.forEach(function (placed, key) {
      var item = state.items.get(key);
      if (!item.to_lane || !laneTops.has(item.to_lane) || item.to_lane === item.lane) { return; }
      var from = laneTops.get(item.lane), to = laneTops.get(item.to_lane);
      var down = to.top > from.top;
      var between = [];
      laneTops.forEach(function (lane, name) {
        if (down ? lane.top > from.top && lane.top < to.top : lane.top < from.top && lane.top > to.top) {
          between.push(name);
        }
      });
      var x = LABEL_WIDTH + arrowX(placed.spot, from, to, laneSpots, between);
      var y1 = from.top + 2 + placed.spot.track * ROW_HEIGHT + (down ? 19 : 0);
      var y2 = to.top + (down ? 2 : to.height - 2);
      var line = document.createElementNS(SVG, "line");
      line.setAttribute("x1", String(x)); line.setAttribute("y1", String(y1));
      line.setAttribute("x2", String(x)); line.setAttribute("y2", String(y2));
      line.setAttribute("class", "kind-" + item.kind);
      line.dataset.arrow = key;
      line.dataset.from = item.lane;
      line.dataset.to = item.to_lane;
      var head = document.createElementNS(SVG, "polygon");
      var tip = down ? -6 : 6;
      head.setAttribute("points", x + "," + y2 + " " + (x - 4) + "," + (y2 + tip) + " " + (x + 4) + "," + (y2 + tip));
      head.setAttribute("class", "kind-" + item.kind);
      arrowsElement.appendChild(line);
      arrowsElement.appendChild(head);
    });
  }

  function showStatus(note) {
    var text = state.items.size + " items from " + state.positions.length + " events";
    if (state.positions.length) {
      text += " (positions " + state.positions[0] + "–" + state.positions[state.positions.length - 1] +
        " of " + state.head + ")";
    }
    if (note) { text += " · " + note; }
    var open = Boolean(state.live) && state.live.readyState === EventSource.OPEN;
    statusElement.textContent = text + (open ? " · live" : state.live ? " · connecting" : "");
    statusElement.classList.toggle("live", open);
    var earlier = document.querySelector("[data-load=earlier]");
    if (earlier) { earlier.disabled = !state.moreBefore || mode === "export"; }
  }

  function withQuery(path, extra) {
    var parts = [extra, query].filter(function (p) { return p; });
    return path + (parts.length ? "?" + parts.join("&") : "");
  }

  function fetchWindow(direction) {
    if (mode === "export" || state.loading) { return; }
    if (direction === "before" && !state.moreBefore) { return; }
    if (direction === "after" && (!state.moreAfter || state.live)) { return; }
    state.loading = true;
    showStatus("loading…");
    var cursor = direction === "before" ? "before=" + state.start : "after=" + state.end;
    var firstBefore = state.positions.length;
    var scrolledRank = Math.floor((root.scrollLeft) / state.scale);
    fetch(withQuery("/timeline/window", cursor), { headers: { accept: "application/json" } })
      .then(function (answer) {
        if (!answer.ok) { throw new Error("the server answered " + answer.status); }
        return answer.json();
      })
      .then(function (win) {
        var firstPosition = state.positions[scrolledRank];
        merge(win);
        render();
        if (direction === "before" && firstPosition !== undefined) {
          root.scrollLeft = rank(firstPosition) * state.scale;
        }
        state.loading = false;
        showStatus(state.positions.length === firstBefore ? "no more events there" : "");
        if (direction === "after") { goLive(); }
      })
      .catch(function (error) {
        state.loading = false;
        showStatus("could not load: " + error.message);
      });
  }

  function goLive() {
    if (mode === "export" || state.live || state.moreAfter || /(^|&)until=/.test(query)) { return; }
    var source = new EventSource(withQuery("/timeline/live", "after=" + state.end));
    state.live = source;
    source.addEventListener("window", function (message) {
      var atEnd = root.scrollLeft + root.clientWidth >= root.scrollWidth - EDGE;
      merge(JSON.parse(message.data));
      render();
      if (atEnd) { root.scrollLeft = root.scrollWidth; }
    });
    source.addEventListener("open", function () { showStatus(); });
    source.addEventListener("head", function (message) {
      state.end = Math.max(state.end, Number(message.data));
    });
    source.onerror = function () {  // reconnect from where the page is, not the first URL
      source.close();
      state.live = null;
      showStatus("live updates lost; retrying");
      window.setTimeout(goLive, 1000);
    };
    showStatus();
  }

  function zoom(factor, anchorX) {
    var anchor = anchorX === undefined ? root.clientWidth / 2 : anchorX;
    var anchorRank = (root.scrollLeft + anchor - LABEL_WIDTH) / state.scale;
    state.scale = Math.min(MAX_SCALE, Math.max(MIN_SCALE, state.scale * factor));
    render();
    root.scrollLeft = anchorRank * state.scale - anchor + LABEL_WIDTH;
    checkEdges();
  }

  function fit() {  // every loaded event in view, with room for the last labels
    var room = root.clientWidth - LABEL_WIDTH - 40 - FIT_TAIL;
    state.scale = Math.min(MAX_SCALE, Math.max(MIN_SCALE, room / Math.max(1, state.positions.length)));
    render();
    root.scrollLeft = 0;
    checkEdges();
  }

  function checkEdges() {
    if (root.scrollLeft <= EDGE) { fetchWindow("before"); }
    if (root.scrollLeft + root.clientWidth >= root.scrollWidth - EDGE) { fetchWindow("after"); }
  }

  function showEvents(item) {
    state.selected = item.key;
    document.querySelectorAll(".item.selected").forEach(function (e) { e.classList.remove("selected"); });
    var box = lanesElement.querySelector('.item[data-key="' + CSS.escape(item.key) + '"]');
    if (box) { box.classList.add("selected"); }
    panel.hidden = false;
    document.getElementById("event-panel-title").textContent = labelOf(item);
    var json = document.getElementById("event-panel-json");
    json.textContent = "loading…";
    var positions = item.positions.slice(0, 200);
    var shown = function (documents) {
      var list = positions.map(function (p) { return documents[String(p)]; }).filter(Boolean);
      fillSummary(item, list);
      json.textContent = JSON.stringify(list.length === 1 ? list[0] : list, null, 2);
    };
    if (mode === "export") { shown(state.events); return; }
    fetch("/timeline/events?positions=" + positions.join(","), { headers: { accept: "application/json" } })
      .then(function (answer) {
        if (!answer.ok) { throw new Error("the server answered " + answer.status); }
        return answer.json();
      })
      .then(shown)
      .catch(function (error) { json.textContent = "could not load the events: " + error.message; });
  }

  function fillSummary(item, documents) {
    var summary = document.getElementById("event-panel-summary");
    summary.textContent = "";
    var first = documents[0] || {};
    var rows = [
      ["lane", item.lane],
      ["outcome", item.outcome || "—"],
      ["positions", item.positions.join(", ")],
      ["types", item.types.join(", ")],
      ["correlation", first.correlation_id || "—"],
      ["causation", first.causation_id || "—"],
      ["actor", first.actor || "—"],
      ["recorded", first.recorded_at ? new Date(first.recorded_at * 1000).toISOString() : "—"]
    ];
    if (item.detail) { rows.splice(2, 0, ["detail", item.detail]); }
    rows.forEach(function (row) {
      var term = document.createElement("dt");
      term.textContent = row[0];
      var value = document.createElement("dd");
      value.textContent = row[1];
      value.dataset.field = row[0];
      summary.appendChild(term);
      summary.appendChild(value);
    });
  }

  lanesElement.addEventListener("click", function (event) {
    var box = event.target.closest(".item");
    if (box && state.items.has(box.dataset.key)) { showEvents(state.items.get(box.dataset.key)); }
  });
  lanesElement.addEventListener("keydown", function (event) {
    var box = event.target.closest(".item");
    if (box && event.key === "Enter") { showEvents(state.items.get(box.dataset.key)); }
  });
  document.getElementById("event-panel-close").addEventListener("click", function () {
    panel.hidden = true;
    state.selected = null;
    document.querySelectorAll(".item.selected").forEach(function (e) { e.classList.remove("selected"); });
  });
  document.querySelectorAll("[data-zoom]").forEach(function (button) {
    button.addEventListener("click", function () {
      var how = button.dataset.zoom;
      if (how === "fit") { fit(); } else { zoom(how === "in" ? 1.5 : 1 / 1.5); }
    });
  });
  var earlierButton = document.querySelector("[data-load=earlier]");
  if (earlierButton) { earlierButton.addEventListener("click", function () { fetchWindow("before"); }); }
  root.addEventListener("wheel", function (event) {
    if (!event.ctrlKey) { return; }
    event.preventDefault();
    zoom(event.deltaY < 0 ? 1.25 : 0.8, event.clientX - root.getBoundingClientRect().left);
  }, { passive: false });
  var scrollPending = false;
  root.addEventListener("scroll", function () {
    if (scrollPending) { return; }
    scrollPending = true;
    window.requestAnimationFrame(function () { scrollPending = false; checkEdges(); });
  });

  merge(JSON.parse(dataElement.textContent));
  var room = root.clientWidth - LABEL_WIDTH - 40;  // a short window spreads out to be read
  state.scale = Math.min(48, Math.max(16, room / Math.max(1, state.positions.length)));
  render();
  if (!/(^|&)since=/.test(query)) { root.scrollLeft = root.scrollWidth; }  // the latest first
  goLive();
}());

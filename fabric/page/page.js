// The fabric map: lays out the model of nichealth-fabric map (tiers from
// the top spine row down to the HCAs under their leaf switch), and lets
// the operator collapse switches and chassis, search by name and hover a
// port for its details. No library: the file must open offline.
//
// Every string in the data is text from the fabric or the fleet (node
// names, a daemon's conditions): the DOM is built with createElementNS,
// textContent and setAttribute, never from markup, and the only words
// that become classes are this script's own (kinds and verdicts are
// numbers looked up in the tables below).
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var KINDS = ["unknown", "switch", "hca", "router"];
  var VERDICTS = ["", "unknown", "healthy", "degraded", "fatal"];
  var RANK = { "": 0, unknown: 1, healthy: 2, degraded: 3, fatal: 4 };

  function code(v, table) {
    return typeof v === "number" && v >= 0 && v < table.length && Math.floor(v) === v ? v : -1;
  }
  function kindOf(v) { var c = code(v, KINDS); return c < 0 ? "unknown" : KINDS[c]; }
  function verdictOf(v) { var c = code(v, VERDICTS); return c < 0 ? "unknown" : VERDICTS[c]; }
  function str(v) { return typeof v === "string" ? v : ""; }
  function num(v) { return typeof v === "number" && isFinite(v) ? v : 0; }
  function arr(v) { return Array.isArray(v) ? v : []; }

  var D = JSON.parse(document.getElementById("fabric-data").textContent);
  var rates = arr(D.rates).map(function (r) { return { label: str(r[0]) + str(r[1]), gbps: num(r[2]) }; });
  function rateOf(i) { return code(i, rates) < 0 ? { label: "", gbps: 0 } : rates[i]; }
  var chassisNames = arr(D.chassis).map(str);
  var nodes = arr(D.nodes).map(function (r, i) {
    return {
      i: i, kind: kindOf(r[0]), id: str(r[1]), name: str(r[2]), lid: num(r[3]), tier: num(r[4]),
      chassis: code(r[5], chassisNames) < 0 ? "" : chassisNames[r[5]], leafIndex: r[6], verdict: verdictOf(r[7]), leaf: ""
    };
  });
  var byId = new Map();
  nodes.forEach(function (n) {
    byId.set(n.id, n);
    if (code(n.leafIndex, nodes) >= 0) n.leaf = nodes[n.leafIndex].id;
  });
  function nodeAt(i) { return code(i, nodes) < 0 ? null : nodes[i]; }
  var links = [];
  arr(D.links).forEach(function (r) {
    var a = nodeAt(r[0]), b = nodeAt(r[2]);
    if (!a || !b) return;
    var rate = rateOf(r[4]), flags = num(r[6]);
    links.push({
      a: a.id, ap: num(r[1]), b: b.id, bp: num(r[3]), rate: rate.label, gbps: rate.gbps,
      expected: code(r[5], rates) < 0 ? "" : rates[r[5]].label, degraded: (flags & 1) !== 0, disagree: (flags & 2) !== 0,
      unread: (flags & 4) !== 0, errA: (flags & 8) !== 0, errB: (flags & 16) !== 0, verdict: verdictOf(r[7])
    });
  });
  // Ports that carry more than their node and number: GUIDs, LIDs,
  // labels, and what their daemon said.
  var ports = new Map();
  function port(n, num) {
    var k = n.id + "/" + num, p = ports.get(k);
    if (!p) { p = { guid: "", lid: 0, label: "", verdict: "", reporter: "", state: "", conditions: [], unread: false }; ports.set(k, p); }
    return p;
  }
  arr(D.ends).forEach(function (r) {
    var n = nodeAt(r[0]);
    if (!n) return;
    var p = port(n, num(r[1]));
    p.guid = str(r[2]); p.lid = num(r[3]); p.label = str(r[4]);
  });
  arr(D.reports).forEach(function (r) {
    var n = nodeAt(r[0]);
    if (!n) return;
    var p = port(n, num(r[1]));
    p.verdict = verdictOf(r[2]); p.reporter = str(r[3]); p.state = str(r[4]); p.conditions = arr(r[5]).map(str);
    p.unread = (num(r[6]) & 1) !== 0;
  });

  var collapsed = new Map();      // switch id or "chassis:" + name -> true
  var groupChassis = false;
  var query = "";

  var SW_W = 150, SW_H = 30, HCA_W = 120, HCA_H = 22, ROW_GAP = 120, HCA_ROWS = 4, PAD = 20;

  function el(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function vclass(v) { return "v-" + (RANK.hasOwnProperty(v) && v ? v : "unknown"); }
  function short(s, n) { return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }
  function matches(n) {
    if (!query) return false;
    return n.name.toLowerCase().indexOf(query) >= 0 || n.id.indexOf(query) >= 0;
  }
  function worse(a, b) { return (RANK[b || ""] || 0) > (RANK[a || ""] || 0) ? b : a; }

  // The box a switch is drawn as: itself, or its chassis when grouped.
  function boxOf(n) {
    if (n.kind === "switch" && groupChassis && n.chassis) return "chassis:" + n.chassis;
    return n.id;
  }
  function isCollapsed(sw) {
    if (!sw) return false;
    if (collapsed.get(sw.id)) return true;
    return !!(groupChassis && sw.chassis && collapsed.get("chassis:" + sw.chassis));
  }
  // An HCA or router is hidden when the switch it hangs under is collapsed.
  function hidden(n) {
    return n.kind !== "switch" && n.leaf !== "" && isCollapsed(byId.get(n.leaf));
  }
  function byName(a, b) { return a.name.localeCompare(b.name) || a.id.localeCompare(b.id); }

  function layout() {
    var maxTier = 1;
    nodes.forEach(function (n) { if (n.tier > maxTier) maxTier = n.tier; });
    // Leaves in name order; HCAs under them in name order.
    var leaves = nodes.filter(function (n) { return n.kind === "switch" && n.tier === 1; }).sort(byName);
    var under = new Map();
    nodes.forEach(function (n) {
      if (n.kind === "switch") return;
      var k = n.leaf && byId.has(n.leaf) ? n.leaf : "";
      if (!under.has(k)) under.set(k, []);
      under.get(k).push(n);
    });
    under.forEach(function (list) { list.sort(byName); });
    var pos = new Map(), boxes = new Map(), badges = [];
    var y0 = PAD + maxTier * ROW_GAP;
    var x = PAD;
    function place(leafId, hcas) {
      var start = x;
      var sw = byId.get(leafId);
      if (sw && isCollapsed(sw)) {
        var fatal = hcas.filter(function (h) { return h.verdict === "fatal"; }).length;
        badges.push({ x: x, y: y0, n: hcas.length, fatal: fatal, leaf: leafId });
        x += HCA_W + 20;
      } else {
        hcas.forEach(function (h, i) {
          pos.set(h.id, { x: x + Math.floor(i / HCA_ROWS) * (HCA_W + 10), y: y0 + (i % HCA_ROWS) * (HCA_H + 14), w: HCA_W, h: HCA_H });
        });
        x += Math.max(1, Math.ceil(hcas.length / HCA_ROWS)) * (HCA_W + 10) + 20;
      }
      return (start + x - 20) / 2;
    }
    var leafX = new Map();
    leaves.forEach(function (l) { leafX.set(l.id, place(l.id, under.get(l.id) || [])); });
    if (under.has("")) place("", under.get(""));
    var width = Math.max(x, 600);
    // Switch rows: tier 1 at its HCAs' centre, higher tiers spread evenly.
    // A chassis box sits on the row of its lowest member (its line boards).
    var boxTier = new Map();
    nodes.forEach(function (n) {
      if (n.kind !== "switch") return;
      var b = boxOf(n);
      boxTier.set(b, boxTier.has(b) ? Math.min(boxTier.get(b), n.tier) : n.tier);
    });
    for (var t = 1; t <= maxTier; t++) {
      var row = nodes.filter(function (n) { return n.kind === "switch" && boxTier.get(boxOf(n)) === t; });
      var members = new Map();
      row.forEach(function (n) {
        var b = boxOf(n);
        if (!members.has(b)) members.set(b, []);
        members.get(b).push(n);
      });
      var ids = Array.from(members.keys()).sort();
      var y = PAD + (maxTier - t) * ROW_GAP;
      ids.forEach(function (b, i) {
        var ms = members.get(b), cx;
        if (t === 1) {
          var xs = ms.map(function (n) { return leafX.get(n.id); }).filter(function (v) { return v !== undefined; });
          cx = xs.length ? xs.reduce(function (a, v) { return a + v; }, 0) / xs.length : PAD + (i + 0.5) * width / ids.length;
        } else {
          cx = PAD + (i + 0.5) * (width - 2 * PAD) / ids.length;
        }
        var w = b.indexOf("chassis:") === 0 ? SW_W + 40 : SW_W;
        var box = { x: cx - w / 2, y: y, w: w, h: SW_H, members: ms };
        boxes.set(b, box);
        ms.forEach(function (n) { pos.set(n.id, box); });
      });
    }
    return { pos: pos, boxes: boxes, badges: badges, width: width + PAD, height: y0 + HCA_ROWS * (HCA_H + 14) + PAD };
  }

  var svg = document.getElementById("fabric");

  function render() {
    var L = layout(), out = document.createDocumentFragment();
    // Port anchor points: ports spread along the box edge facing the peer.
    var anchors = new Map(), edgePorts = new Map();
    links.forEach(function (l, i) {
      var a = byId.get(l.a), b = byId.get(l.b);
      if (!a || !b || hidden(a) || hidden(b) || !L.pos.has(a.id) || !L.pos.has(b.id)) return;
      if (boxOf(a) === boxOf(b) && a.kind === "switch") return; // inside one chassis
      [[a, l.ap, b], [b, l.bp, a]].forEach(function (e) {
        var p = L.pos.get(e[0].id), q = L.pos.get(e[2].id);
        var side = q.y < p.y ? "top" : "bottom";
        var key = boxOf(e[0]) + "|" + side;
        if (!edgePorts.has(key)) edgePorts.set(key, { side: side, list: [] });
        edgePorts.get(key).list.push({ node: e[0], port: e[1], link: i, peerX: q.x + q.w / 2 });
      });
    });
    edgePorts.forEach(function (edge) {
      var list = edge.list, box = L.pos.get(list[0].node.id);
      list.sort(function (u, v) { return u.peerX - v.peerX || u.port - v.port; });
      list.forEach(function (e, j) {
        anchors.set(e.node.id + "/" + e.port, {
          node: e.node, port: e.port,
          x: box.x + (j + 1) * box.w / (list.length + 1), y: edge.side === "top" ? box.y : box.y + box.h
        });
      });
    });
    links.forEach(function (l) {
      var pa = anchors.get(l.a + "/" + l.ap), pb = anchors.get(l.b + "/" + l.bp);
      if (!pa || !pb) return;
      var line = el("line", {
        "class": "link " + vclass(l.verdict) + (l.degraded ? " mismatch" : "") + (l.unread ? " unread" : ""), "data-a": l.a, "data-ap": l.ap,
        "data-b": l.b, "data-bp": l.bp, "data-verdict": l.verdict || "unknown", "data-degraded": l.degraded ? "true" : "false",
        "data-unread": l.unread ? "true" : "false",
        x1: pa.x, y1: pa.y, x2: pb.x, y2: pb.y
      });
      line.appendChild(el("title", {}, l.rate + (l.degraded ? " (peers " + l.expected + ")" : "") + (l.unread ? " - read by no node" : "")));
      out.appendChild(line);
      // The half of an HCA's link whose receiver counts errors (its
      // daemon's cable verdict), drawn over the link from that end to the
      // middle.
      [[l.errA, pa, l.a, l.ap, "a"], [l.errB, pb, l.b, l.bp, "b"]].forEach(function (h) {
        if (!h[0]) return;
        var half = el("line", {
          "class": "cable-err", "data-node": h[2], "data-port": h[3], "data-end": h[4],
          x1: h[1].x, y1: h[1].y, x2: (pa.x + pb.x) / 2, y2: (pa.y + pb.y) / 2
        });
        half.appendChild(el("title", {}, "errors counted at " + h[2] + " port " + h[3]));
        out.appendChild(half);
      });
    });
    var drawn = new Map();
    nodes.forEach(function (n) {
      if (hidden(n) || !L.pos.has(n.id)) return;
      var b = boxOf(n);
      if (drawn.has(b)) return;
      drawn.set(b, true);
      var p = L.pos.get(n.id), chassis = b.indexOf("chassis:") === 0;
      var members = chassis ? L.boxes.get(b).members : [n];
      // A collapsed switch wears the worst verdict of what it hides.
      var verdict = members.reduce(function (v, m) {
        v = worse(v, m.verdict);
        if (isCollapsed(m)) nodes.forEach(function (h) { if (h.leaf === m.id) v = worse(v, h.verdict); });
        return v;
      }, "");
      var hit = members.some(matches);
      var kind = chassis ? "switch chassis" : n.kind;
      var label = chassis ? n.chassis + " (" + members.length + " switches)" : n.name || n.id;
      // Switches often share one description: the LID tells them apart.
      var shown = n.kind === "switch" && !chassis && n.lid ? short(label, 19) + " L" + n.lid : label;
      var g = el("g", {
        "class": "node " + kind + " " + vclass(verdict) + (members.some(isCollapsed) ? " collapsed" : "") + (hit ? " match" : query ? " dim" : ""),
        id: "node-" + (chassis ? "chassis-" + n.chassis.replace(/[^A-Za-z0-9]+/g, "-") : n.id),
        "data-box": b, "data-guid": chassis ? "" : n.id, "data-name": label, "data-kind": n.kind, "data-tier": n.tier,
        "data-verdict": verdict || "unknown"
      });
      g.appendChild(el("rect", { x: p.x, y: p.y, width: p.w, height: p.h, rx: 4 }));
      g.appendChild(el("text", { x: p.x + 5, y: p.y + p.h / 2 + 4 }, short(shown, chassis ? 30 : 24)));
      out.appendChild(g);
    });
    L.badges.forEach(function (bd) {
      var g = el("g", { "class": "badge", "data-leaf": bd.leaf });
      g.appendChild(el("rect", { x: bd.x, y: bd.y, width: HCA_W, height: HCA_H, rx: 4 }));
      g.appendChild(el("text", { x: bd.x + 5, y: bd.y + 15 }, bd.n + " hidden" + (bd.fatal ? ", " + bd.fatal + " fatal" : "")));
      out.appendChild(g);
    });
    anchors.forEach(function (a) {
      var p = ports.get(a.node.id + "/" + a.port), v = p ? p.verdict : "";
      out.appendChild(el("circle", {
        "class": "port " + vclass(v) + (p && p.unread ? " unread" : ""), id: "port-" + a.node.id + "-" + a.port, "data-node": a.node.id, "data-port": a.port,
        "data-verdict": v || "unknown", cx: a.x, cy: a.y, r: 4
      }));
    });
    svg.setAttribute("width", L.width);
    svg.setAttribute("height", L.height);
    svg.replaceChildren(out);
    var m = nodes.filter(matches).length;
    document.getElementById("matches").textContent = query ? m + (m === 1 ? " match" : " matches") : "";
  }

  function linkAt(id, num) {
    for (var i = 0; i < links.length; i++) {
      var l = links[i];
      if ((l.a === id && l.ap === num) || (l.b === id && l.bp === num)) return l;
    }
    return null;
  }

  function portText(id, num) {
    var n = byId.get(id);
    if (!n) return "";
    var p = ports.get(id + "/" + num), link = linkAt(id, num);
    var lines = [n.name + "  port " + num + (p && p.label ? " (" + p.label + ")" : ""), "node GUID " + n.id + (n.lid ? "  LID " + n.lid : "")];
    if (p && p.guid) lines.push("port GUID " + p.guid + (p.lid ? "  LID " + p.lid : ""));
    if (link) {
      var far = link.a === id && link.ap === num ? [link.b, link.bp] : [link.a, link.ap];
      var fn = byId.get(far[0]), fp = ports.get(far[0] + "/" + far[1]);
      lines.push("to " + (fn ? fn.name : far[0]) + " port " + far[1] + (fp && fp.label ? " (" + fp.label + ")" : "") + " (" + far[0] + ")");
      lines.push("link " + link.rate + (link.gbps ? " (" + link.gbps + " Gb/s)" : "") +
        (link.degraded ? " - trained below its peers (" + link.expected + ")" : "") +
        (link.disagree ? " - the two ends report different rates" : ""));
    }
    if (p && (p.verdict || p.unread)) {
      lines.push("health: " + (p.verdict ? p.verdict.toUpperCase() : "not judged") + (p.reporter ? " (" + p.reporter + ")" : "") + (p.state ? "  " + p.state : ""));
      if (p.unread) lines.push("  READ BY NO NODE: nobody watches this switch port's counters");
      p.conditions.forEach(function (c) { lines.push("  " + c); });
    } else if (n.kind !== "switch") {
      lines.push("health: not reported (no nichealthd seen for this port)");
    }
    return lines.join("\n");
  }

  var tip = document.getElementById("tooltip");
  svg.addEventListener("mousemove", function (ev) {
    var t = ev.target, text = "";
    if (t.classList.contains("port")) text = portText(t.getAttribute("data-node"), +t.getAttribute("data-port"));
    else if (t.closest && t.closest(".node")) {
      var g = t.closest(".node"), n = byId.get(g.getAttribute("data-guid"));
      text = n ? n.name + "\n" + n.kind + " " + n.id + (n.lid ? "  LID " + n.lid : "") + (n.chassis ? "\n" + n.chassis : "") +
        (n.kind === "switch" ? "\nclick to " + (isCollapsed(n) ? "expand" : "collapse") : "") : g.getAttribute("data-name") + "\nclick to collapse or expand";
    }
    if (!text) { tip.style.display = "none"; return; }
    tip.textContent = text;
    tip.style.display = "block";
    tip.style.left = (ev.clientX + 14) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  });
  svg.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  svg.addEventListener("click", function (ev) {
    var g = ev.target.closest && (ev.target.closest(".node.switch") || ev.target.closest(".badge"));
    if (!g) return;
    toggle(g.classList.contains("badge") ? g.getAttribute("data-leaf") : g.getAttribute("data-box"));
  });

  function toggle(key) {
    if (collapsed.get(key)) collapsed.delete(key); else collapsed.set(key, true);
    render();
  }
  document.getElementById("search").addEventListener("input", function (ev) {
    query = ev.target.value.trim().toLowerCase();
    // A match hidden under a collapsed switch is brought into view.
    nodes.forEach(function (n) {
      if (matches(n) && hidden(n)) {
        var sw = byId.get(n.leaf);
        collapsed.delete(sw.id);
        if (sw.chassis) collapsed.delete("chassis:" + sw.chassis);
      }
    });
    render();
  });
  document.getElementById("collapse-leaves").addEventListener("click", function () {
    nodes.forEach(function (n) { if (n.kind === "switch" && n.tier === 1) collapsed.set(n.id, true); });
    render();
  });
  document.getElementById("expand-all").addEventListener("click", function () { collapsed = new Map(); render(); });
  document.getElementById("group-chassis").addEventListener("change", function (ev) { groupChassis = ev.target.checked; render(); });

  // Tests and the Grafana link may open the page on a node: #q=name.
  var h = decodeURIComponent(location.hash || "");
  if (h.indexOf("#q=") === 0) {
    document.getElementById("search").value = h.slice(3);
    query = h.slice(3).trim().toLowerCase();
  }
  render();
  document.body.setAttribute("data-ready", "true");
})();

// The fabric map: lays out the model of nichealth-fabric map (tiers from
// the top spine row down to the HCAs under their leaf switch), and lets
// the operator collapse switches and chassis, search by name and hover a
// port for its details. No library: the file must open offline.
(function () {
  "use strict";
  var M = JSON.parse(document.getElementById("fabric-data").textContent);
  var byId = {};
  M.nodes.forEach(function (n) { byId[n.id] = n; });
  var collapsed = {};      // switch id -> true
  var groupChassis = false;
  var query = "";

  var SW_W = 150, SW_H = 30, HCA_W = 120, HCA_H = 22, ROW_GAP = 120, HCA_ROWS = 4, PAD = 20;

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function vclass(v) { return "v-" + (v || "unknown"); }
  function short(s, n) { return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }
  function matches(n) {
    if (!query) return false;
    return n.name.toLowerCase().indexOf(query) >= 0 || n.id.indexOf(query) >= 0;
  }

  // The box a switch is drawn as: itself, or its chassis when grouped.
  function boxOf(n) {
    if (n.kind === "switch" && groupChassis && n.chassis) return "chassis:" + n.chassis;
    return n.id;
  }
  function isCollapsed(sw) {
    if (!sw) return false;
    if (collapsed[sw.id]) return true;
    return groupChassis && sw.chassis && collapsed["chassis:" + sw.chassis];
  }
  // An HCA or router is hidden when the switch it hangs under is collapsed.
  function hidden(n) {
    return n.kind !== "switch" && n.leaf && isCollapsed(byId[n.leaf]);
  }

  function layout() {
    var tiers = {}, maxTier = 1;
    M.nodes.forEach(function (n) { if (n.tier > maxTier) maxTier = n.tier; });
    // Leaves in name order; HCAs under them in name order.
    var leaves = M.nodes.filter(function (n) { return n.kind === "switch" && n.tier === 1; })
      .sort(function (a, b) { return a.name.localeCompare(b.name) || a.id.localeCompare(b.id); });
    var under = {};
    M.nodes.forEach(function (n) {
      if (n.kind === "switch") return;
      var k = n.leaf && byId[n.leaf] ? n.leaf : "";
      (under[k] = under[k] || []).push(n);
    });
    Object.keys(under).forEach(function (k) {
      under[k].sort(function (a, b) { return a.name.localeCompare(b.name) || a.id.localeCompare(b.id); });
    });
    var pos = {}, boxes = {}, badges = [];
    var y0 = PAD + (maxTier - 0) * ROW_GAP;
    var x = PAD;
    function place(leafId, hcas) {
      var start = x;
      var sw = byId[leafId];
      if (sw && isCollapsed(sw)) {
        var fatal = hcas.filter(function (h) { return h.verdict === "fatal"; }).length;
        badges.push({ x: x, y: y0, n: hcas.length, fatal: fatal, leaf: leafId });
        x += HCA_W + 20;
      } else {
        hcas.forEach(function (h, i) {
          pos[h.id] = { x: x + Math.floor(i / HCA_ROWS) * (HCA_W + 10), y: y0 + (i % HCA_ROWS) * (HCA_H + 14), w: HCA_W, h: HCA_H };
        });
        x += Math.max(1, Math.ceil(hcas.length / HCA_ROWS)) * (HCA_W + 10) + 20;
      }
      return (start + x - 20) / 2;
    }
    var leafX = {};
    leaves.forEach(function (l) {
      leafX[l.id] = place(l.id, under[l.id] || []);
    });
    if (under[""]) place("", under[""]);
    var width = Math.max(x, 600);
    // Switch rows: tier 1 at its HCAs' centre, higher tiers spread evenly.
    // A chassis box sits on the row of its lowest member (its line boards).
    var boxTier = {};
    M.nodes.forEach(function (n) {
      if (n.kind !== "switch") return;
      var b = boxOf(n);
      boxTier[b] = boxTier[b] === undefined ? n.tier : Math.min(boxTier[b], n.tier);
    });
    for (var t = 1; t <= maxTier; t++) {
      var row = M.nodes.filter(function (n) { return n.kind === "switch" && boxTier[boxOf(n)] === t; });
      var ids = [], seen = {};
      row.forEach(function (n) {
        var b = boxOf(n);
        if (!seen[b]) { seen[b] = true; ids.push(b); }
      });
      ids.sort();
      var y = PAD + (maxTier - t) * ROW_GAP;
      ids.forEach(function (b, i) {
        var cx;
        var members = row.filter(function (n) { return boxOf(n) === b; });
        if (t === 1) {
          var xs = members.map(function (n) { return leafX[n.id]; }).filter(function (v) { return v !== undefined; });
          cx = xs.length ? xs.reduce(function (a, v) { return a + v; }, 0) / xs.length : PAD + (i + 0.5) * width / ids.length;
        } else {
          cx = PAD + (i + 0.5) * (width - 2 * PAD) / ids.length;
        }
        var w = b.indexOf("chassis:") === 0 ? SW_W + 40 : SW_W;
        boxes[b] = { x: cx - w / 2, y: y, w: w, h: SW_H, members: members };
        members.forEach(function (n) { pos[n.id] = boxes[b]; });
      });
    }
    return { pos: pos, boxes: boxes, badges: badges, width: width + PAD, height: y0 + HCA_ROWS * (HCA_H + 14) + PAD };
  }

  function render() {
    var L = layout(), out = [];
    // Port anchor points: ports spread along the box edge facing the peer.
    var anchors = {};
    var edgePorts = {};
    M.links.forEach(function (l, i) {
      var a = byId[l.a], b = byId[l.b];
      if (!a || !b || hidden(a) || hidden(b) || !L.pos[a.id] || !L.pos[b.id]) return;
      if (boxOf(a) === boxOf(b) && a.kind === "switch") return; // inside one chassis
      [[a, l.ap, b], [b, l.bp, a]].forEach(function (e) {
        var p = L.pos[e[0].id], q = L.pos[e[2].id];
        var side = q.y < p.y ? "top" : "bottom";
        var key = boxOf(e[0]) + "|" + side;
        (edgePorts[key] = edgePorts[key] || []).push({ node: e[0], port: e[1], link: i, peerX: q.x + q.w / 2 });
      });
    });
    Object.keys(edgePorts).forEach(function (key) {
      var list = edgePorts[key], parts = key.split("|"), side = parts[1];
      var box = L.pos[list[0].node.id];
      list.sort(function (u, v) { return u.peerX - v.peerX || u.port - v.port; });
      list.forEach(function (e, j) {
        var px = box.x + (j + 1) * box.w / (list.length + 1);
        var py = side === "top" ? box.y : box.y + box.h;
        anchors[e.node.id + "/" + e.port] = { x: px, y: py };
      });
    });
    M.links.forEach(function (l) {
      var pa = anchors[l.a + "/" + l.ap], pb = anchors[l.b + "/" + l.bp];
      if (!pa || !pb) return;
      var cls = "link " + vclass(l.verdict) + (l.degraded ? " mismatch" : "");
      out.push('<line class="' + cls + '" data-a="' + l.a + '" data-ap="' + l.ap + '" data-b="' + l.b + '" data-bp="' + l.bp +
        '" data-verdict="' + (l.verdict || "unknown") + '" data-degraded="' + (l.degraded ? "true" : "false") +
        '" x1="' + pa.x + '" y1="' + pa.y + '" x2="' + pb.x + '" y2="' + pb.y + '"><title>' +
        esc(l.width + l.speed + (l.degraded ? " (peers " + l.expected + ")" : "")) + "</title></line>");
    });
    var drawn = {};
    M.nodes.forEach(function (n) {
      if (hidden(n) || !L.pos[n.id]) return;
      var b = boxOf(n);
      if (drawn[b]) return;
      drawn[b] = true;
      var p = L.pos[n.id], chassis = b.indexOf("chassis:") === 0;
      var members = chassis ? L.boxes[b].members : [n];
      // A collapsed switch wears the worst verdict of what it hides.
      var verdict = members.reduce(function (v, m) {
        v = worse(v, m.verdict);
        if (isCollapsed(m)) M.nodes.forEach(function (h) { if (h.leaf === m.id) v = worse(v, h.verdict); });
        return v;
      }, "");
      var hit = members.some(matches);
      var cls = "node " + (chassis ? "switch chassis" : n.kind) + " " + vclass(verdict) +
        (members.some(isCollapsed) ? " collapsed" : "") + (hit ? " match" : query ? " dim" : "");
      var label = chassis ? n.chassis + " (" + members.length + " switches)" : n.name || n.id;
      // Switches often share one description: the LID tells them apart.
      var shown = n.kind === "switch" && !chassis && n.lid ? short(label, 19) + " L" + n.lid : label;
      out.push('<g class="' + cls + '" id="node-' + (chassis ? "chassis-" + esc(n.chassis).replace(/[^A-Za-z0-9]+/g, "-") : n.id) +
        '" data-box="' + esc(b) + '" data-guid="' + (chassis ? "" : n.id) + '" data-name="' + esc(label) + '" data-kind="' + n.kind +
        '" data-tier="' + n.tier + '" data-verdict="' + (verdict || "unknown") + '">' +
        '<rect x="' + p.x + '" y="' + p.y + '" width="' + p.w + '" height="' + p.h + '" rx="4"></rect>' +
        '<text x="' + (p.x + 5) + '" y="' + (p.y + p.h / 2 + 4) + '">' + esc(short(shown, chassis ? 30 : 24)) + "</text></g>");
    });
    L.badges.forEach(function (g) {
      out.push('<g class="badge" data-leaf="' + g.leaf + '"><rect x="' + g.x + '" y="' + g.y + '" width="' + HCA_W + '" height="' + HCA_H + '" rx="4"></rect>' +
        '<text x="' + (g.x + 5) + '" y="' + (g.y + 15) + '">' + g.n + " hidden" + (g.fatal ? ", " + g.fatal + " fatal" : "") + "</text></g>");
    });
    Object.keys(anchors).forEach(function (k) {
      var a = anchors[k], i = k.lastIndexOf("/"), id = k.slice(0, i), num = +k.slice(i + 1);
      var n = byId[id], port = (n.ports || []).filter(function (p) { return p.num === num; })[0] || { num: num };
      out.push('<circle class="port ' + vclass(port.verdict) + '" id="port-' + id + "-" + num + '" data-node="' + id + '" data-port="' + num +
        '" data-verdict="' + (port.verdict || "unknown") + '" cx="' + a.x + '" cy="' + a.y + '" r="4"></circle>');
    });
    var svg = document.getElementById("fabric");
    svg.setAttribute("width", L.width);
    svg.setAttribute("height", L.height);
    svg.innerHTML = out.join("");
    var n = M.nodes.filter(matches).length;
    document.getElementById("matches").textContent = query ? n + (n === 1 ? " match" : " matches") : "";
  }

  function worse(a, b) {
    var r = { "": 0, healthy: 1, degraded: 2, fatal: 3 };
    return (r[b || ""] || 0) > (r[a || ""] || 0) ? b : a;
  }

  function portText(id, num) {
    var n = byId[id], p = (n.ports || []).filter(function (q) { return q.num === num; })[0];
    var lines = [n.name + "  port " + num, "node GUID " + n.id + (n.lid ? "  LID " + n.lid : "")];
    if (!p) {
      // A node with no block of its own: the link says what is known.
      M.links.forEach(function (l) {
        if (l.a === id && l.ap === num) lines.push("to " + byId[l.b].name + " port " + l.bp + ", " + l.width + l.speed);
        if (l.b === id && l.bp === num) lines.push("to " + byId[l.a].name + " port " + l.ap + ", " + l.width + l.speed);
      });
      return lines.join("\n");
    }
    if (p.guid) lines.push("port GUID " + p.guid + (p.lid ? "  LID " + p.lid : ""));
    lines.push("to " + p.remoteName + " port " + p.remotePort + " (" + p.remote + ")");
    var link = M.links.filter(function (l) { return (l.a === id && l.ap === num) || (l.b === id && l.bp === num); })[0];
    var ws = link ? link.width + link.speed : p.width + p.speed;
    lines.push("link " + ws + (link && link.gbps ? " (" + link.gbps + " Gb/s)" : "") +
      (link && link.degraded ? " - trained below its peers (" + link.expected + ")" : "") +
      (link && link.disagree ? " - the two ends report different rates" : ""));
    if (p.verdict) {
      lines.push("health: " + p.verdict.toUpperCase() + (p.reporter ? " (" + p.reporter + ")" : "") + (p.state ? "  " + p.state : ""));
      (p.conditions || []).forEach(function (c) { lines.push("  " + c); });
    } else if (n.kind !== "switch") {
      lines.push("health: not reported (no nichealthd seen for this port)");
    }
    return lines.join("\n");
  }

  var tip = document.getElementById("tooltip");
  var svg = document.getElementById("fabric");
  svg.addEventListener("mousemove", function (ev) {
    var t = ev.target, text = "";
    if (t.classList.contains("port")) text = portText(t.getAttribute("data-node"), +t.getAttribute("data-port"));
    else if (t.closest && t.closest(".node")) {
      var g = t.closest(".node"), id = g.getAttribute("data-guid"), n = byId[id];
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
    var key = g.classList.contains("badge") ? g.getAttribute("data-leaf") : g.getAttribute("data-box");
    toggle(key);
  });

  function toggle(key) {
    if (collapsed[key]) delete collapsed[key]; else collapsed[key] = true;
    render();
  }
  document.getElementById("search").addEventListener("input", function (ev) {
    query = ev.target.value.trim().toLowerCase();
    // A match hidden under a collapsed switch is brought into view.
    M.nodes.forEach(function (n) {
      if (matches(n) && hidden(n)) {
        var sw = byId[n.leaf];
        delete collapsed[sw.id];
        if (sw.chassis) delete collapsed["chassis:" + sw.chassis];
      }
    });
    render();
  });
  document.getElementById("collapse-leaves").addEventListener("click", function () {
    M.nodes.forEach(function (n) { if (n.kind === "switch" && n.tier === 1) collapsed[n.id] = true; });
    render();
  });
  document.getElementById("expand-all").addEventListener("click", function () { collapsed = {}; render(); });
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

// armctl web: draws the arm from the joint positions the server sends (its forward kinematics),
// shades the reachable region it sampled, and sends clicks as move targets. Millimetres and
// degrees here; the server plans, checks and streams every move.
// A planar arm is drawn in its plane (one canvas). An arm on a rotating base gets two panes: a top
// view (x, y: the base's range and angle, the reach on the table) and a side view (the arm's own
// vertical plane at the current base angle: distance from the base axis and height). A click on the
// top view moves the tool there at the height in the z box (empty: the tool's height); a click on the
// side view moves it within the plane the arm stands in. The top view shades the reach at that height
// (the z box, else the tool's), the side view's row at that height turned through the base's range.
// Jog buttons move the tool one step along x, y (z on a base arm) or turn the tool angle (3 links).
// Served by 'armctl web --watch', the page only watches an arm another armctl drives: no control.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token") || "";
const HEARTBEAT_MS = 100;

const $ = (id) => document.getElementById(id);
// The pane being drawn or clicked: its canvas, 2-d context, transform and reach image. A planar arm
// has one pane; a base arm two ("top" and "side"), each drawn after use(pane).
let canvas = $("arm-canvas");
let ctx = canvas.getContext("2d");
let panes = null;        // base arms: {top, side}

let arm = null;          // /api/arm
let state = null;        // the latest event
let session = "";        // control session, "" when read-only
let reachImage = null;   // offscreen canvas of the reachable cells
let view = { scale: 1, ox: 0, oy: 0, w: 0, h: 0 };  // px per mm, base position in CSS px
let target = null;       // {x, y, [z], ok, text}: the last target asked for
let preview = null;      // {x, y, pane}: where the pointer is while dragging (pane coordinates)
let trail = [];          // tool positions while moving (mm)
let program = null;      // {name, text, path_mm, steps, duration_s}: the program loaded (previewed)
let events = null;
let heartbeat = null;

// --- talking to the server -------------------------------------------------------------------------

function headers() {
  const h = { "Content-Type": "application/json" };
  if (TOKEN) h["X-Armctl-Token"] = TOKEN;
  if (session) h["X-Armctl-Session"] = session;
  return h;
}

async function post(path, body) {
  try {
    const r = await fetch(path, { method: "POST", headers: headers(), body: JSON.stringify(body || {}) });
    let data = {};
    try { data = await r.json(); } catch (e) { /* empty body */ }
    return { status: r.status, data };
  } catch (e) {
    return { status: 0, data: { error: "cannot reach the server: " + e.message } };
  }
}

async function claim() {
  const r = await post("/api/session");
  session = r.status === 200 ? r.data.session : "";
  if (!session) say(r.data.error || "read-only view", r.status !== 409);
  openEvents();
  clearInterval(heartbeat);
  if (session) {
    heartbeat = setInterval(async () => {
      const b = await post("/api/heartbeat");
      if (b.status !== 200 && session) { session = ""; say(b.data.error || "lost control of the arm", true); openEvents(); }
    }, HEARTBEAT_MS);
  }
}

function openEvents() {
  if (events) events.close();
  const q = new URLSearchParams();
  if (session) q.set("session", session);
  if (TOKEN) q.set("token", TOKEN);
  events = new EventSource("/api/events?" + q.toString());
  events.onmessage = (ev) => onState(JSON.parse(ev.data));
  events.addEventListener("ping", (ev) => setRole(JSON.parse(ev.data)));
  events.onerror = () => setStatus("disconnected", "pill-off");
}

// --- state ---------------------------------------------------------------------------------------------

function say(text, bad) {
  const m = $("message");
  m.textContent = text;
  m.className = "message" + (bad ? " bad" : "");
}

function setStatus(text, cls) {
  const s = $("status");
  s.textContent = text;
  s.className = "pill " + cls;
}

function setRole(st) {
  if (arm && arm.watch) {  // armctl web --watch: never in control
    for (const b of document.querySelectorAll("aside button")) b.disabled = true;
    $("take-control").hidden = true;
    setStatus(st.moving ? "watching: moving" : "watching (read-only)", "pill-watch");
    return;
  }
  const control = st.role === "control";
  if (!control && session) session = "";
  for (const id of ["home", "grip-open", "grip-close"]) $(id).disabled = !control || (id !== "home" && !arm.gripper);
  for (const b of document.querySelectorAll(".jog-grid button")) b.disabled = !control;
  if (arm && arm.record_file) {
    $("record-pose").disabled = !control || !!(state && state.moving);
    $("record-undo").disabled = !control || !state || !state.can_undo;
  }
  $("take-control").hidden = control || st.control_held;
  if (st.moving && st.control && st.control.state === "held") setStatus("held", "pill-moving");
  else if (st.moving) setStatus("moving", "pill-moving");
  else if (control) setStatus("in control", "pill-control");
  else setStatus(st.control_held ? "read-only: another page controls the arm" : "read-only", "pill-view");
}

function onState(st) {
  const wasMoving = state && state.moving;
  state = st;
  setRole(st);
  if (st.moving && !wasMoving) trail = [];
  if (st.moving && st.tool_mm) trail.push(st.tool_mm);
  if (trail.length > 2000) trail.shift();
  if (st.message && (st.moving || st.message !== lastMessage)) {
    say(st.message, !!st.error);
    lastMessage = st.message;
  }
  renderControl(st.control);
  $("progress-bar").style.width = (100 * (st.moving ? st.progress || 0 : 0)).toFixed(1) + "%";
  renderPanel();
  if (panes) shadeTopAt(shadeZ());
  draw();
}
let lastMessage = "";

function renderControl(c) {  // feed hold and speed override, as the server reports them
  if (!c) return;
  $("override").textContent = `${Math.round(100 * c.override)} %`;
  const words = { held: "HELD: Resume goes on", holding: "holding…", running: "", idle: "" };
  let text = c.paused && c.state !== "held" ? "holding…" : words[c.state] || "";
  if (c.capped) text += (text ? ", " : "") + "at a joint speed limit";
  $("hold-state").textContent = text;
  $("pause").disabled = !session || c.paused;
  $("resume").disabled = !session || !c.paused;
  $("program-run").disabled = !session || !program || !!(state && state.moving);
}

function fmt(v, digits) { return v === null || v === undefined ? "–" : v.toFixed(digits); }

function renderPanel() {
  if (!arm || !state) return;
  const rows = arm.joint_names.map((name, i) => {
    const q = state.q_deg ? state.q_deg[i] : null;
    const lo = arm.min_deg[i], hi = arm.max_deg[i];
    const near = q !== null && Math.min(q - lo, hi - q) < 5;
    const us = state.pulses_us ? state.pulses_us[i] : null;
    return `<tr><td>${name}</td><td class="${near ? "near-limit" : ""}">${fmt(q, 1)}°</td>` +
      `<td>${lo.toFixed(0)}…${hi.toFixed(0)}°</td><td>${fmt(us, 1)} µs</td></tr>`;
  });
  if (arm.gripper && state.pulses_us && state.pulses_us.length > arm.joint_names.length) {
    rows.push(`<tr><td>gripper</td><td>${fmt(state.gripper_deg, 1)}°</td>` +
      `<td>${arm.gripper.closed_deg.toFixed(0)}…${arm.gripper.open_deg.toFixed(0)}°</td>` +
      `<td>${fmt(state.pulses_us[arm.joint_names.length], 1)} µs</td></tr>`);
  }
  $("joints").tBodies[0].innerHTML = rows.join("");
  $("tool-xy").textContent = state.tool_mm ? state.tool_mm.map((v) => fmt(v, 1)).join(", ") + " mm" : "–";
  $("tool-phi").textContent = state.phi_deg === undefined ? "–" : `${fmt(state.phi_deg, 1)}°`;
  $("tool-roll").textContent = state.roll_deg === undefined || state.roll_deg === null ? "–" : `${fmt(state.roll_deg, 1)}°`;
  const m = state.manipulability_m2;
  if (arm.dim === 3) {  // m³: small numbers for a small arm; relative to the home pose's
    $("manip").textContent = m === undefined ? "–" : `${m.toExponential(2)} m³`;
  } else {
    $("manip").textContent = m === undefined ? "–" : `${m.toFixed(4)} m²` + (m < 0.005 ? " (near a singularity)" : "");
  }
  $("gripper").textContent = state.gripper_deg === null || state.gripper_deg === undefined ? "–" :
    (arm.gripper && Math.abs(state.gripper_deg - arm.gripper.closed_deg) < 2 ? "closed" :
      arm.gripper && Math.abs(state.gripper_deg - arm.gripper.open_deg) < 2 ? "open" : `${fmt(state.gripper_deg, 1)}°`);
  $("measured").textContent = state.measured || "–";
  if (arm.record_file && state.recorded) {
    $("record-name").placeholder = state.record_next || "";
    const done = state.recorded.length ? `this session: ${state.recorded.join(", ")}` : "nothing recorded yet";
    $("record-file").textContent = `into ${arm.record_file}; ${done}`;
  }
}

// --- geometry ------------------------------------------------------------------------------------------

function buildReachImage(map) {
  const off = document.createElement("canvas");
  off.width = map.width;
  off.height = map.height;
  const g = off.getContext("2d");
  const img = g.createImageData(map.width, map.height);
  const bits = atob(map.bits_b64);
  const rowBytes = Math.ceil(map.width / 8);
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (let r = 0; r < map.height; r++) {
    for (let c = 0; c < map.width; c++) {
      const on = (bits.charCodeAt(r * rowBytes + (c >> 3)) >> (7 - (c & 7))) & 1;
      if (!on) continue;
      const p = ((map.height - 1 - r) * map.width + c) * 4;  // row 0 is the lowest y: flip
      img.data[p] = 14; img.data[p + 1] = 165; img.data[p + 2] = 233; img.data[p + 3] = 72;
      minX = Math.min(minX, c); maxX = Math.max(maxX, c); minY = Math.min(minY, r); maxY = Math.max(maxY, r);
    }
  }
  g.putImageData(img, 0, 0);
  const cell = map.cell_m * 1000, ox = map.origin_m[0] * 1000, oy = map.origin_m[1] * 1000;
  return { canvas: off, cell, ox, oy, bits, rowBytes, map,
    bbox: [ox + minX * cell, oy + minY * cell, ox + (maxX + 1) * cell, oy + (maxY + 1) * cell] };
}

function reachableAt(x, y) {
  const R = reachImage;
  const c = Math.floor((x - R.ox) / R.cell), r = Math.floor((y - R.oy) / R.cell);
  if (r < 0 || c < 0 || r >= R.map.height || c >= R.map.width) return false;
  return ((R.bits.charCodeAt(r * R.rowBytes + (c >> 3)) >> (7 - (c & 7))) & 1) === 1;
}

function use(p) {
  canvas = p.canvas; ctx = p.ctx; view = p.view; reachImage = p.reach;
}

function layout() {
  if (panes) { for (const p of [panes.top, panes.side]) { use(p); fit(p, p.bbox()); } draw(); return; }
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  const [x0, y0, x1, y1] = reachImage.bbox;
  const bx0 = Math.min(x0, -60), by0 = Math.min(y0, -60), bx1 = Math.max(x1, 60), by1 = Math.max(y1, 60);
  const pad = 36;
  const scale = Math.min((w - 2 * pad) / (bx1 - bx0), (h - 2 * pad) / (by1 - by0));
  view = { scale, w, h, ox: w / 2 - scale * (bx0 + bx1) / 2, oy: h / 2 + scale * (by0 + by1) / 2 };
  draw();
}

function fit(p, [bx0, by0, bx1, by1]) {
  // size pane p's canvas to its box on the page and fit the world box (mm) in it
  const dpr = window.devicePixelRatio || 1;
  const w = p.canvas.clientWidth, h = p.canvas.clientHeight;
  p.canvas.width = Math.round(w * dpr);
  p.canvas.height = Math.round(h * dpr);
  p.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  const pad = 36;
  const scale = Math.min((w - 2 * pad) / (bx1 - bx0), (h - 2 * pad) / (by1 - by0));
  p.view = { scale, w, h, ox: w / 2 - scale * (bx0 + bx1) / 2, oy: h / 2 + scale * (by0 + by1) / 2 };
  if (view === undefined || canvas === p.canvas) view = p.view;
}

const toPx = (x, y) => [view.ox + x * view.scale, view.oy - y * view.scale];
const toMm = (px, py) => [(px - view.ox) / view.scale, (view.oy - py) / view.scale];

// For tests and tools: where the world point (x, y) mm is, in CSS px from the canvas's top-left corner.
// On a base arm: armctlView.top.toCanvas(x, y) on the top view, armctlView.side.toCanvas(r, z) on the
// side view (distance from the base axis in the arm's plane, height); toCanvas is the side view's.
function paneToCanvas(p, x, y) { return { x: p.view.ox + x * p.view.scale, y: p.view.oy - y * p.view.scale }; }
window.armctlView = {
  toCanvas: (x, y) => (panes ? paneToCanvas(panes.side, x, y) : (([px, py]) => ({ x: px, y: py }))(toPx(x, y))),
  top: { toCanvas: (x, y) => paneToCanvas(panes.top, x, y) },
  side: { toCanvas: (x, y) => paneToCanvas(panes.side, x, y) },
};

// --- drawing -------------------------------------------------------------------------------------------

function draw() {
  if (!arm || !reachImage) return;
  if (panes) { drawTopPane(); drawSidePane(); return; }
  const { w, h, scale } = view;
  ctx.clearRect(0, 0, w, h);
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, w, h);
  drawGrid();
  // reachable region
  const R = reachImage;
  const [rx, ry] = toPx(R.ox, R.oy + R.map.height * R.cell);
  ctx.imageSmoothingEnabled = true;
  ctx.drawImage(R.canvas, rx, ry, R.map.width * R.cell * scale, R.map.height * R.cell * scale);
  // reach circles
  ctx.save();
  ctx.setLineDash([6, 5]);
  ctx.strokeStyle = "#94a3b8";
  ctx.lineWidth = 1.2;
  const [bx, by] = toPx(0, 0);
  for (const r of arm.reach_mm) {
    if (r <= 0) continue;
    ctx.beginPath();
    ctx.arc(bx, by, r * scale, 0, 2 * Math.PI);
    ctx.stroke();
  }
  ctx.restore();
  drawZones("plane");
  drawProgram((p) => p);
  drawTrail();
  drawTarget();
  if (state && state.joints_mm) drawArm();
  if (preview) drawPreview();
}

function drawGrid(xName, yName) {
  const step = 100, label = view.scale * 100 >= 45 ? 100 : 200;  // grid every 100 mm, labels >= 45 px apart
  const [x0, y1] = toMm(0, 0), [x1, y0] = toMm(view.w, view.h);
  const [ax, ay] = toPx(0, 0);
  ctx.lineWidth = 1;
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillStyle = "#94a3b8";
  for (let x = Math.ceil(x0 / step) * step; x <= x1; x += step) {
    const [px] = toPx(x, 0);
    ctx.strokeStyle = x === 0 ? "#cbd5e1" : "#f1f5f9";
    ctx.beginPath(); ctx.moveTo(px, 0); ctx.lineTo(px, view.h); ctx.stroke();
    if (x !== 0 && x % label === 0) ctx.fillText(`${x}`, px + 3, ay + 13);
  }
  for (let y = Math.ceil(y0 / step) * step; y <= y1; y += step) {
    const [, py] = toPx(0, y);
    ctx.strokeStyle = y === 0 ? "#cbd5e1" : "#f1f5f9";
    ctx.beginPath(); ctx.moveTo(0, py); ctx.lineTo(view.w, py); ctx.stroke();
    if (y !== 0 && y % label === 0) ctx.fillText(`${y}`, ax + 4, py - 3);
  }
  ctx.fillText(xName || "x mm", view.w - 8 - ctx.measureText(xName || "x mm").width, ay - 5);
  ctx.fillText(yName || "y mm", ax + 4, 14);
}

function wedge(cx, cy, r, a0, a1, current) {
  // angles in degrees, counter-clockwise from +x (world); canvas y points down
  const rad = Math.PI / 180;
  ctx.beginPath();
  ctx.moveTo(cx, cy);
  ctx.arc(cx, cy, r, -a0 * rad, -a1 * rad, true);
  ctx.closePath();
  ctx.fillStyle = "rgba(217, 119, 6, 0.13)";
  ctx.fill();
  ctx.strokeStyle = "rgba(217, 119, 6, 0.75)";
  ctx.lineWidth = 1.2;
  for (const a of [a0, a1]) {
    ctx.beginPath();
    ctx.moveTo(cx, cy);
    ctx.lineTo(cx + r * Math.cos(a * rad), cy - r * Math.sin(a * rad));
    ctx.stroke();
  }
  ctx.beginPath();
  ctx.arc(cx, cy, r, -a0 * rad, -a1 * rad, true);
  ctx.stroke();
  if (current !== undefined) {
    ctx.strokeStyle = "#b45309";
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.arc(cx, cy, r - 4, -current * rad - 0.06, -current * rad + 0.06);
    ctx.stroke();
  }
}

function drawArm() {
  const pts = state.joints_mm.map(([x, y]) => toPx(x, y));
  const q = state.q_deg;
  const linkW = Math.max(7, Math.min(18, 26 * view.scale));
  // joint limits: joint i's range is measured from link i-1's direction
  let base = 0;
  for (let i = 0; i < q.length; i++) {
    const r = Math.max(26, Math.min(52, arm.links_mm[i] * view.scale * 0.22));
    if (arm.linkage === "parallelogram" && i === 1) {  // the forearm's own angle, cut by the link angle's range
      const lo = Math.max(arm.min_deg[1], q[0] + arm.link_angle_deg[0] - 180);
      const hi = Math.min(arm.max_deg[1], q[0] + arm.link_angle_deg[1] - 180);
      wedge(pts[i][0], pts[i][1], r, lo, hi, q[1]);
      base = q[1];
      continue;
    }
    wedge(pts[i][0], pts[i][1], r, base + arm.min_deg[i], base + arm.max_deg[i], base + q[i]);
    base += q[i];
  }
  // base block
  const [bx, by] = pts[0];
  ctx.fillStyle = "#475569";
  ctx.beginPath();
  ctx.roundRect(bx - 22, by + 8, 44, 14, 3);
  ctx.fill();
  // links
  ctx.lineCap = "round";
  for (let i = 0; i < pts.length - 1; i++) {
    ctx.strokeStyle = "#334155";
    ctx.lineWidth = linkW;
    ctx.beginPath(); ctx.moveTo(...pts[i]); ctx.lineTo(...pts[i + 1]); ctx.stroke();
    ctx.strokeStyle = "#64748b";
    ctx.lineWidth = linkW * 0.35;
    ctx.beginPath(); ctx.moveTo(...pts[i]); ctx.lineTo(...pts[i + 1]); ctx.stroke();
  }
  drawGripper(pts[pts.length - 1], base, linkW);
  for (let i = 0; i < pts.length - 1; i++) {
    ctx.fillStyle = "#f8fafc";
    ctx.strokeStyle = "#0f172a";
    ctx.lineWidth = 2.5;
    ctx.beginPath(); ctx.arc(pts[i][0], pts[i][1], linkW * 0.55, 0, 2 * Math.PI); ctx.fill(); ctx.stroke();
  }
  // tool point
  const [tx, ty] = pts[pts.length - 1];
  ctx.fillStyle = "#0ea5e9";
  ctx.beginPath(); ctx.arc(tx, ty, 4, 0, 2 * Math.PI); ctx.fill();
}

function drawGripper([tx, ty], phiDeg, linkW) {
  if (!arm.gripper) return;
  const g = state.gripper_deg === null || state.gripper_deg === undefined ? arm.gripper.open_deg : state.gripper_deg;
  const span = Math.max(1, arm.gripper.open_deg - arm.gripper.closed_deg);
  const open = Math.min(1, Math.max(0, (g - arm.gripper.closed_deg) / span));
  const a = -phiDeg * Math.PI / 180;  // canvas angle of the last link
  const ux = Math.cos(a), uy = Math.sin(a), nx = -uy, ny = ux;
  const half = linkW * (0.35 + 0.75 * open), len = linkW * 1.3;
  ctx.strokeStyle = "#334155";
  ctx.lineWidth = Math.max(3, linkW * 0.32);
  ctx.lineCap = "round";
  ctx.beginPath();
  ctx.moveTo(tx - nx * half, ty - ny * half); ctx.lineTo(tx + nx * half, ty + ny * half);
  for (const s of [-1, 1]) {
    ctx.moveTo(tx + s * nx * half, ty + s * ny * half);
    ctx.lineTo(tx + s * nx * half + ux * len, ty + s * ny * half + uy * len);
  }
  ctx.stroke();
}

function drawProgram(project) {  // the loaded program's tool path, dashed
  if (!program || program.path_mm.length < 2) return;
  ctx.save();
  ctx.setLineDash([4, 3]);
  ctx.strokeStyle = "rgba(147, 51, 234, 0.8)";
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  program.path_mm.forEach((p, i) => {
    const [px, py] = toPx(...project(p));
    if (i) ctx.lineTo(px, py); else ctx.moveTo(px, py);
  });
  ctx.stroke();
  ctx.restore();
}

function drawTrail() {
  if (trail.length < 2) return;
  ctx.strokeStyle = "rgba(14, 165, 233, 0.85)";
  ctx.lineWidth = 2;
  ctx.beginPath();
  trail.forEach(([x, y], i) => { const [px, py] = toPx(x, y); if (i) ctx.lineTo(px, py); else ctx.moveTo(px, py); });
  ctx.stroke();
}

function marker(x, y, ok, text) {
  const [px, py] = toPx(x, y);
  ctx.lineWidth = 2.5;
  if (ok) {
    ctx.strokeStyle = "#16a34a";
    ctx.beginPath(); ctx.arc(px, py, 9, 0, 2 * Math.PI); ctx.stroke();
    ctx.beginPath(); ctx.moveTo(px - 14, py); ctx.lineTo(px + 14, py); ctx.moveTo(px, py - 14); ctx.lineTo(px, py + 14);
    ctx.stroke();
  } else {
    ctx.strokeStyle = "#dc2626";
    ctx.beginPath(); ctx.moveTo(px - 9, py - 9); ctx.lineTo(px + 9, py + 9); ctx.moveTo(px + 9, py - 9); ctx.lineTo(px - 9, py + 9);
    ctx.stroke();
  }
  if (text) {
    ctx.font = "600 13px system-ui, sans-serif";
    const tw = ctx.measureText(text).width;
    const left = px + 14 + tw + 12 > view.w ? px - 14 - tw - 10 : px + 14;
    ctx.fillStyle = ok ? "rgba(240, 253, 244, 0.95)" : "rgba(254, 242, 242, 0.95)";
    ctx.strokeStyle = ok ? "#16a34a" : "#dc2626";
    ctx.lineWidth = 1;
    ctx.beginPath(); ctx.roundRect(left, py - 24, tw + 10, 20, 4); ctx.fill(); ctx.stroke();
    ctx.fillStyle = ok ? "#166534" : "#991b1b";
    ctx.fillText(text, left + 5, py - 9);
  }
}

function drawTarget() {
  if (!target) return;
  if (!target.ok && state && state.tool_mm) {
    // the shortfall: from the target to the nearest reachable point along the ray from the base
    ctx.save();
    ctx.setLineDash([4, 4]);
    ctx.strokeStyle = "rgba(220, 38, 38, 0.6)";
    ctx.lineWidth = 1.5;
    const [ax, ay] = toPx(0, 0), [px, py] = toPx(target.x, target.y);
    ctx.beginPath(); ctx.moveTo(ax, ay); ctx.lineTo(px, py); ctx.stroke();
    ctx.restore();
  }
  marker(target.x, target.y, target.ok, target.text);
}

function drawPreview() {
  if (panes && preview.pane !== (canvas === panes.top.canvas ? "top" : "side")) return;
  const ok = reachableAt(preview.x, preview.y);
  const [px, py] = toPx(preview.x, preview.y);
  ctx.strokeStyle = ok ? "rgba(22, 163, 74, 0.7)" : "rgba(220, 38, 38, 0.7)";
  ctx.lineWidth = 1.5;
  ctx.beginPath(); ctx.arc(px, py, 12, 0, 2 * Math.PI); ctx.stroke();
}

// --- input ---------------------------------------------------------------------------------------------

function paneOf(el) {
  if (!panes) return null;
  return el === panes.top.canvas ? panes.top : panes.side;
}

function pointerMm(ev) {
  const p = paneOf(ev.currentTarget);
  if (p) use(p);
  const r = canvas.getBoundingClientRect();
  return toMm(ev.clientX - r.left, ev.clientY - r.top);
}

function onDown(ev) {
  if (!arm) return;
  ev.currentTarget.setPointerCapture(ev.pointerId);
  const [x, y] = pointerMm(ev);
  preview = { x, y, pane: panes ? paneOf(ev.currentTarget).kind : "" };
  draw();
}
function onMove(ev) {
  if (!arm) return;
  const [x, y] = pointerMm(ev);
  const names = panes && paneOf(ev.currentTarget).kind === "side" ? ["r", "z"] : ["x", "y"];
  $("cursor").textContent = `${names[0]} ${x.toFixed(0)} mm, ${names[1]} ${y.toFixed(0)} mm` +
    (reachableAt(x, y) ? "" : "  (out of reach)");
  if (preview) { preview = { x, y, pane: preview.pane }; draw(); }
}
function onUp(ev) {
  if (!preview) return;
  const [x, y] = pointerMm(ev);
  const pane = preview.pane;
  preview = null;
  if (!panes) { moveTo(x, y); return; }
  if (pane === "top") {  // x, y on the table, at the height asked for (else where the tool is)
    const zBox = $("z").value.trim();
    const z = zBox !== "" ? Number(zBox) : (state && state.tool_mm ? state.tool_mm[2] : arm.home_tool_mm[2]);
    moveTo(x, y, z);
  } else {  // distance from the axis and height, in the plane the arm stands in
    const b = baseRad();
    moveTo(x * Math.cos(b), x * Math.sin(b), y);
  }
}
for (const c of [$("arm-canvas"), $("top-canvas")]) {
  if (!c) continue;
  c.addEventListener("pointerdown", onDown);
  c.addEventListener("pointermove", onMove);
  c.addEventListener("pointerup", onUp);
}

const r1 = (v) => Math.round(v * 10) / 10;

async function moveTo(x, y, z) {
  if (!session) { say("read-only: this page does not control the arm", true); return; }
  const body = { x_mm: r1(x), y_mm: r1(y), speed_mm_s: Number($("speed").value) };
  if (z !== undefined) body.z_mm = r1(z);
  body.mode = document.querySelector("input[name=mode]:checked").value;
  const phi = $("phi").value.trim();
  if (phi !== "" && arm.links_mm.length === 3) body.phi_deg = Number(phi);
  const roll = $("roll").value.trim();
  if (roll !== "" && arm.roll) body.roll_deg = Number(roll);
  target = { x: body.x_mm, y: body.y_mm, z: body.z_mm, ok: true, text: "" };
  draw();
  const r = await post("/api/move", body);
  if (r.status === 200) {
    target.text = [body.x_mm, body.y_mm, body.z_mm].filter((v) => v !== undefined).map((v) => v.toFixed(0)).join(", ") + " mm";
  } else {
    target.ok = false;
    target.text = r.data.shortfall_mm !== undefined ? `${r.data.shortfall_mm.toFixed(1)} mm out of reach` : "refused";
    if (r.status !== 409 || !/superseded/.test(r.data.error || "")) say(r.data.error || `refused (${r.status})`, true);
  }
  draw();
}

async function command(path, body, what) {
  const r = await post(path, body);
  if (r.status !== 200) say(r.data.error || `${what}: refused (${r.status})`, true);
  return r;
}

$("stop").addEventListener("click", () => command("/api/stop", {}, "stop"));
$("home").addEventListener("click", async () => {
  const r = await command("/api/home", {}, "home");
  if (r.status === 200) {
    target = { x: arm.home_tool_mm[0], y: arm.home_tool_mm[1], z: arm.home_tool_mm[2], ok: true, text: "home" };
  }
});
$("grip-open").addEventListener("click", () => command("/api/gripper", { state: "open" }, "gripper"));
$("grip-close").addEventListener("click", () => command("/api/gripper", { state: "close" }, "gripper"));
$("take-control").addEventListener("click", claim);
$("pause").addEventListener("click", () => command("/api/pause", {}, "pause"));
$("resume").addEventListener("click", () => command("/api/resume", {}, "resume"));
function overrideBy(step) {
  const now = state && state.control ? Math.round(100 * state.control.override) : 100;
  const pct = Math.max(10, Math.min(200, now + step));
  command("/api/override", { percent: pct }, "speed override");
}
window.addEventListener("keydown", (ev) => {  // run control keys, as in the terminal (not while typing)
  if (!session || ev.ctrlKey || ev.metaKey || ev.altKey || /^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(ev.target.tagName)) return;
  const act = { " ": "pause", Enter: "resume", r: "resume", "+": "faster", "=": "faster", "-": "slower" }[ev.key];
  if (!act) return;
  ev.preventDefault();
  if (act === "pause") command("/api/pause", {}, "pause");
  else if (act === "resume") command("/api/resume", {}, "resume");
  else overrideBy(act === "faster" ? 10 : -10);
});
$("faster").addEventListener("click", () => overrideBy(10));
$("slower").addEventListener("click", () => overrideBy(-10));
$("program-file").addEventListener("change", async (ev) => {
  const file = ev.target.files[0];
  if (!file) return;
  const text = await file.text();
  const r = await post("/api/program/preview", { text, name: file.name });
  if (r.status !== 200) {
    program = null;
    $("program-info").textContent = r.data.error || `refused (${r.status})`;
    say(r.data.error || `program refused (${r.status})`, true);
  } else {
    program = { ...r.data, name: file.name, text };
    $("program-info").textContent = `${file.name}: ${r.data.steps.length} steps, ${r.data.duration_s.toFixed(1)} s (the dashed path)`;
  }
  $("program-run").disabled = !session || !program;
  draw();
});
$("program-run").addEventListener("click", async () => {
  if (!program) return;
  const r = await command("/api/program/run", { text: program.text, name: program.name }, "run");
  if (r.status === 200) say(`running ${program.name} (${r.data.duration_s.toFixed(1)} s)`, false);
});
$("record-pose").addEventListener("click", async () => {
  const name = $("record-name").value.trim();
  const r = await command("/api/record", name ? { name } : {}, "record");
  if (r.status === 200) {
    $("record-name").value = "";
    say(`recorded '${r.data.name}' at ${r.data.tool_mm.map((v) => v.toFixed(1)).join(", ")} mm: ${r.data.poses} poses in the file`, false);
  }
});
$("record-name").addEventListener("keydown", (ev) => { if (ev.key === "Enter") $("record-pose").click(); });
$("record-undo").addEventListener("click", async () => {
  const r = await command("/api/record/undo", {}, "undo");
  if (r.status === 200) say(`took back '${r.data.name}'`, false);
});
$("speed").addEventListener("input", () => { $("speed-out").textContent = `${$("speed").value} mm/s`; });
window.addEventListener("resize", layout);
window.addEventListener("keydown", (ev) => {  // Escape stops, like the button
  if (ev.key === "Escape") { ev.preventDefault(); command("/api/stop", {}, "stop"); }
});

// --- jog buttons: one step from where the tool is (or from the last target, once reached) ---------------

function jogFrom() {
  const t = state && state.tool_mm;
  if (!t) return null;
  if (target && target.ok && !(state && state.moving)) {
    const tz = target.z === undefined ? t[2] : target.z;
    const d = Math.hypot(target.x - t[0], target.y - t[1], (tz || 0) - (t[2] || 0));
    if (d < 2) return arm.dim === 3 ? [target.x, target.y, tz] : [target.x, target.y];  // exact: no creep
  }
  return t.slice();
}

async function jog(axis, dir) {
  if (!session) { say("read-only: this page does not control the arm", true); return; }
  const from = jogFrom();
  if (!from) return;
  const step = Number($("jog-step").value) * dir;
  const i = { x: 0, y: 1, z: 2 }[axis];
  const p = from.slice();
  if (i !== undefined) p[i] += step;
  let phi;
  if (arm.links_mm.length === 3 && state.phi_deg !== undefined) {
    phi = state.phi_deg + (axis === "phi" ? step : 0);  // x/y/z keep the tool angle; φ turns it
    phi = ((phi + 540) % 360) - 180;
  }
  const body = { x_mm: r1(p[0]), y_mm: r1(p[1]), speed_mm_s: Number($("speed").value), mode: "line" };
  if (arm.dim === 3) body.z_mm = r1(p[2]);
  if (phi !== undefined) body.phi_deg = r1(phi);
  if (axis === "roll" && arm.roll && state.roll_deg !== undefined && state.roll_deg !== null) {
    body.roll_deg = r1(state.roll_deg + step);  // x/y/z/φ keep the roll; roll turns it
  }
  target = { x: body.x_mm, y: body.y_mm, z: body.z_mm, ok: true, text: "" };
  draw();
  const r = await post("/api/move", body);
  if (r.status !== 200) {
    target.ok = false;
    target.text = r.data.shortfall_mm !== undefined ? `${r.data.shortfall_mm.toFixed(1)} mm out of reach` : "refused";
    say(r.data.error || `jog refused (${r.status})`, true);
  } else {
    target.text = `jog ${axis} ${step > 0 ? "+" : ""}${step}`;
  }
  draw();
}

for (const b of document.querySelectorAll(".jog-grid button")) {
  b.addEventListener("click", () => jog(b.dataset.axis, Number(b.dataset.dir)));
}
$("z").addEventListener("input", () => { if (panes) { shadeTopAt(shadeZ()); draw(); } });

// --- start ---------------------------------------------------------------------------------------------

async function init() {
  const h = TOKEN ? { "X-Armctl-Token": TOKEN } : {};
  let r;
  try { r = await fetch("/api/arm", { headers: h }); } catch (e) { say("cannot reach the server", true); return; }
  if (r.status !== 200) {
    const d = await r.json().catch(() => ({}));
    say(d.error || `the server refused (${r.status})`, true);
    setStatus("no access", "pill-off");
    return;
  }
  arm = await r.json();
  $("arm-name").textContent = `${arm.name} · ${arm.links_mm.map((l) => l.toFixed(0)).join(" + ")} mm`;
  $("board").textContent = `${arm.backend} backend on ${arm.port}` + (arm.firmware ? ` (${arm.firmware})` : "");
  $("speed").value = arm.default_speed_mm_s;
  $("speed-out").textContent = `${arm.default_speed_mm_s} mm/s`;
  if (arm.links_mm.length !== 3) {
    $("phi-row").hidden = true;
    for (const id of ["jog-phi-", "jog-phi+"]) $(id).hidden = true;
  }
  if (arm.dim === 3) for (const id of ["jog-z-", "jog-z+"]) $(id).hidden = false;
  if (arm.roll) for (const id of ["jog-roll-", "jog-roll+", "roll-row", "roll-state"]) $(id).hidden = false;
  $("record").hidden = !arm.record_file;
  reachImage = buildReachImage(arm.reach_map);
  if (arm.dim === 3) { setUpBasePanes(); shadeTopAt(shadeZ()); }
  layout();
  if (arm.watch) {  // read-only: no claim, no heartbeat; the stream shows what the driving armctl does
    document.body.classList.add("watching");
    say("watching (read-only): another armctl drives this arm", false);
    openEvents();
    return;
  }
  await claim();
}

init();

// --- an arm on a rotating base: the top and side panes ---------------------------------------------------

const RAD = Math.PI / 180;
const baseRad = () => (state && state.q_deg ? state.q_deg[0] : arm.home_deg[0]) * RAD;

function setUpBasePanes() {
  document.body.classList.add("base-arm");
  const top = $("top-canvas");
  top.hidden = false;
  $("z-row").hidden = false;
  $("tool-label").textContent = "x, y, z";
  const ring = document.querySelector("#legend .sw-ring");
  if (ring) ring.parentElement.lastChild.textContent = "base range";
  const extent = Math.max(...arm.links_mm.map(Math.abs)) * arm.links_mm.length + Math.abs(arm.base_offset_mm);
  const side = buildReachImage(arm.reach_map), onTable = buildReachImage(arm.top_map);
  sideMap = side;
  const wedgeBox = () => {  // the base's whole range, framed
    const xs = [0], ys = [0];
    for (let a = arm.base.min_deg; a <= arm.base.max_deg + 1e-9; a += Math.max(1, (arm.base.max_deg - arm.base.min_deg) / 60)) {
      xs.push(extent * Math.cos(a * RAD)); ys.push(extent * Math.sin(a * RAD));
    }
    return [Math.min(...xs) - 20, Math.min(...ys) - 20, Math.max(...xs) + 20, Math.max(...ys) + 20];
  };
  const sideBox = () => {
    const [x0, y0, x1, y1] = side.bbox;
    return [Math.min(x0, -40), Math.min(y0, -40), Math.max(x1, 40), Math.max(y1, arm.shoulder_height_mm + 20)];
  };
  panes = {
    top: { kind: "top", canvas: top, ctx: top.getContext("2d"), reach: onTable, view: {}, bbox: wedgeBox, extent },
    side: { kind: "side", canvas: $("arm-canvas"), ctx: $("arm-canvas").getContext("2d"), reach: side, view: {}, bbox: sideBox },
  };
}

// The reach on the table at height z (mm): the side view's row at z, turned through the base's range (and
// half a turn round where the chain reaches back over the base axis), on the top map's grid.
let sideMap = null;
let shadedZ = null;

function shadeZ() {
  const box = $("z").value.trim();
  if (box !== "" && Number.isFinite(Number(box))) return Number(box);
  return state && state.tool_mm ? state.tool_mm[2] : arm.home_tool_mm[2];
}

function topMapAt(z) {
  const S = sideMap.map, T = arm.top_map;
  const sCell = S.cell_m * 1000, sx = S.origin_m[0] * 1000, sy = S.origin_m[1] * 1000;
  const row = Math.floor((z - sy) / sCell);
  const sRow = Math.ceil(S.width / 8);
  const hit = (u) => {
    const c = Math.floor((u - sx) / sCell);
    if (row < 0 || row >= S.height || c < 0 || c >= S.width) return false;
    return ((sideMap.bits.charCodeAt(row * sRow + (c >> 3)) >> (7 - (c & 7))) & 1) === 1;
  };
  const inBase = (a) => {
    for (const turn of [-720, -360, 0, 360, 720]) {
      if (a + turn >= arm.base.min_deg - 1e-9 && a + turn <= arm.base.max_deg + 1e-9) return true;
    }
    return false;
  };
  const cell = T.cell_m * 1000, ox = T.origin_m[0] * 1000, oy = T.origin_m[1] * 1000;
  const rowBytes = Math.ceil(T.width / 8);
  const bytes = new Uint8Array(rowBytes * T.height);
  for (let r = 0; r < T.height; r++) {
    const y = oy + (r + 0.5) * cell;
    for (let c = 0; c < T.width; c++) {
      const x = ox + (c + 0.5) * cell;
      const rho = Math.hypot(x, y), az = Math.atan2(y, x) / RAD;
      if ((inBase(az) && hit(rho)) || (inBase(az + 180) && hit(-rho))) bytes[r * rowBytes + (c >> 3)] |= 0x80 >> (c & 7);
    }
  }
  let bin = "";
  for (let k = 0; k < bytes.length; k++) bin += String.fromCharCode(bytes[k]);
  return { width: T.width, height: T.height, origin_m: T.origin_m, cell_m: T.cell_m, bits_b64: btoa(bin) };
}

function shadeTopAt(z) {
  if (!panes || !sideMap) return;
  const cellMm = sideMap.cell;
  if (shadedZ !== null && Math.floor(z / cellMm) === Math.floor(shadedZ / cellMm)) return;  // same row
  shadedZ = z;
  panes.top.reach = buildReachImage(topMapAt(z));
}

window.armctlView.top.shadedAt = (x, y) => {  // for tests: is (x, y) mm shaded on the top view now
  use(panes.top);
  return reachableAt(x, y);
};
window.armctlView.top.shadedZ = () => shadedZ;

function clearPane(xName, yName) {
  const { w, h, scale } = view;
  ctx.clearRect(0, 0, w, h);
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, w, h);
  drawGrid(xName, yName);
  const R = reachImage;
  const [rx, ry] = toPx(R.ox, R.oy + R.map.height * R.cell);
  ctx.imageSmoothingEnabled = true;
  ctx.drawImage(R.canvas, rx, ry, R.map.width * R.cell * scale, R.map.height * R.cell * scale);
}

function polyline(pts, color, width) {
  ctx.strokeStyle = color;
  ctx.lineWidth = width;
  ctx.lineCap = "round";
  ctx.lineJoin = "round";
  ctx.beginPath();
  pts.forEach(([x, y], i) => { const [px, py] = toPx(x, y); if (i) ctx.lineTo(px, py); else ctx.moveTo(px, py); });
  ctx.stroke();
}

function dots(pts, r) {
  for (const [x, y] of pts) {
    const [px, py] = toPx(x, y);
    ctx.fillStyle = "#f8fafc";
    ctx.strokeStyle = "#0f172a";
    ctx.lineWidth = 2;
    ctx.beginPath(); ctx.arc(px, py, r, 0, 2 * Math.PI); ctx.fill(); ctx.stroke();
  }
}

function drawTopPane() {
  use(panes.top);
  clearPane("x mm", "y mm");
  drawZones("top");
  // the base's range (its end stops) and where it points now
  const [ox, oy] = toPx(0, 0);
  const R = panes.top.extent * view.scale;
  wedge(ox, oy, R, arm.base.min_deg, arm.base.max_deg, undefined);
  const b = baseRad();
  ctx.save();
  ctx.setLineDash([5, 4]);
  polyline([[0, 0], [panes.top.extent * Math.cos(b), panes.top.extent * Math.sin(b)]], "#b45309", 1.5);
  ctx.restore();
  drawProgram(([x, y]) => [x, y]);
  // the path while moving, the target, the arm seen from above
  if (trail.length > 1) polyline(trail.map(([x, y]) => [x, y]), "rgba(14, 165, 233, 0.85)", 2);
  if (target) marker(target.x, target.y, target.ok, target.text);
  if (state && state.joints_mm) {
    const pts = state.joints_mm.slice(1).map(([x, y]) => [x, y]);  // the axis, shoulder, elbow(s), tool
    const linkW = Math.max(6, Math.min(16, 22 * view.scale));
    polyline(pts, "#334155", linkW);
    polyline(pts, "#64748b", linkW * 0.35);
    dots(pts.slice(1, -1), linkW * 0.5);
    ctx.fillStyle = "#475569";
    ctx.beginPath(); ctx.arc(ox, oy, Math.max(8, linkW * 0.9), 0, 2 * Math.PI); ctx.fill();
    const [tx, ty] = toPx(...pts[pts.length - 1]);
    ctx.fillStyle = "#0ea5e9";
    ctx.beginPath(); ctx.arc(tx, ty, 4, 0, 2 * Math.PI); ctx.fill();
  }
  if (preview) drawPreview();
  caption(`top view · reach at z ${shadedZ === null ? "–" : shadedZ.toFixed(0)} mm · base ${(b / RAD).toFixed(1)}° (range ${arm.base.min_deg.toFixed(0)}…${arm.base.max_deg.toFixed(0)}°)`);
}

// Keep-out zones (arm.zones, mm), hatched red with their names. kind: "plane" (a planar arm), "top" (a base
// arm from above: boxes and the base), "side" (its own plane: the table, the base, boxes by their distance
// from the base axis and height).
function drawZones(kind) {
  if (!arm.zones || !arm.zones.length) return;
  const [left, bottom] = toMm(0, view.h), [right, top] = toMm(view.w, 0);
  const shapes = [];  // [x0, y0, x1, y1, name] or ["circle", r, name]
  for (const z of arm.zones) {
    if (z.kind === "table" && kind !== "top") shapes.push([left, bottom, right, z.level_mm, z.name]);
    else if (z.kind === "base" && kind === "top") shapes.push(["circle", z.radius_mm, z.name]);
    else if (z.kind === "base") shapes.push([-z.radius_mm, bottom, z.radius_mm, z.top_mm, z.name]);
    else if (z.kind === "box" && kind !== "side") shapes.push([z.min_mm[0], z.min_mm[1], z.max_mm[0], z.max_mm[1], z.name]);
    else if (z.kind === "box") {
      const near = (lo, hi) => (lo <= 0 && 0 <= hi ? 0 : Math.min(Math.abs(lo), Math.abs(hi)));
      const far = Math.max(...[z.min_mm[0], z.max_mm[0]].flatMap((x) => [z.min_mm[1], z.max_mm[1]].map((y) => Math.hypot(x, y))));
      shapes.push([Math.hypot(near(z.min_mm[0], z.max_mm[0]), near(z.min_mm[1], z.max_mm[1])), z.min_mm[2], far, z.max_mm[2], z.name]);
    }
  }
  ctx.save();
  ctx.fillStyle = "rgba(220, 38, 38, 0.3)";
  ctx.strokeStyle = "rgba(185, 28, 28, 0.8)";
  ctx.lineWidth = 1.2;
  ctx.font = "11px system-ui, sans-serif";
  for (const s of shapes) {
    ctx.beginPath();
    let label;
    if (s[0] === "circle") {
      const [cx, cy] = toPx(0, 0);
      ctx.arc(cx, cy, s[1] * view.scale, 0, 2 * Math.PI);
      label = toPx(s[1] * 0.7, s[1] * 0.7);
    } else {
      const [x0, y0, x1, y1] = s.map((v, i) => (i < 4 ? v : 0));
      const [px0, py1] = toPx(Math.max(x0, left), Math.min(y1, top)), [px1, py0] = toPx(Math.min(x1, right), Math.max(y0, bottom));
      ctx.rect(px0, py1, px1 - px0, py0 - py1);
      label = [px0 + 3, py1 - 4];
    }
    ctx.fill();
    ctx.stroke();
    ctx.fillStyle = "#991b1b";
    ctx.fillText(`keep-out: ${s[s.length - 1]}`, label[0], label[1]);
    ctx.fillStyle = "rgba(220, 38, 38, 0.3)";
  }
  ctx.restore();
}

function caption(text) {  // top right of the pane, clear of the cursor readout and the legend
  ctx.font = "600 12px system-ui, sans-serif";
  const w = ctx.measureText(text).width;
  ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
  ctx.fillRect(view.w - w - 18, 34, w + 12, 20);
  ctx.fillStyle = "#475569";
  ctx.fillText(text, view.w - w - 12, 49);
}

function inPlane([x, y, z], b) { return [x * Math.cos(b) + y * Math.sin(b), z]; }

function drawSidePane() {
  use(panes.side);
  clearPane("r mm", "z mm");
  drawZones("side");
  const b = baseRad();
  ctx.save();  // the base axis
  ctx.setLineDash([6, 5]);
  polyline([[0, toMm(0, view.h)[1]], [0, toMm(0, 0)[1]]], "#94a3b8", 1.2);
  ctx.restore();
  if (trail.length > 1) polyline(trail.map((p) => inPlane(p, b)), "rgba(14, 165, 233, 0.85)", 2);
  if (target && target.z !== undefined) {
    const [u, z] = inPlane([target.x, target.y, target.z], b);
    marker(u, z, target.ok, target.text);
  }
  if (state && state.joints_mm && state.q_deg) {
    const pts = state.joints_mm.map((p) => inPlane(p, b));  // foot, axis top, shoulder, elbow(s), tool
    const q = state.q_deg;
    const linkW = Math.max(7, Math.min(18, 26 * view.scale));
    // joint limits at the shoulder (from the horizontal) and the elbow; a parallelogram's elbow range
    // depends on the shoulder: the forearm's own range cut by the link angle's
    const chain = pts.slice(2);
    let abs = 0;
    for (let i = 1; i < q.length; i++) {
      const r = Math.max(24, Math.min(48, arm.links_mm[i - 1] * view.scale * 0.22));
      let lo = arm.min_deg[i], hi = arm.max_deg[i], now = q[i];
      if (arm.linkage === "parallelogram" && i === 2) {
        lo = Math.max(lo, q[1] + arm.link_angle_deg[0] - 180);
        hi = Math.min(hi, q[1] + arm.link_angle_deg[1] - 180);
      } else if (i > 1) { lo += abs; hi += abs; now += abs; }
      const [px, py] = toPx(...chain[i - 1]);
      wedge(px, py, r, lo, hi, now);
      abs = arm.linkage === "parallelogram" ? q[i] : abs + q[i];
    }
    polyline(pts.slice(0, 3), "#94a3b8", linkW * 0.8);  // the base column and the shoulder's offset
    polyline(chain, "#334155", linkW);
    polyline(chain, "#64748b", linkW * 0.35);
    const last = arm.linkage === "parallelogram" ? 0 : abs;  // a parallelogram holds the hand level
    drawGripper(toPx(...chain[chain.length - 1]), last, linkW);
    dots(chain.slice(0, -1), linkW * 0.55);
    const [bx, by] = toPx(0, 0);
    ctx.fillStyle = "#475569";
    ctx.beginPath(); ctx.roundRect(bx - 22, by, 44, 12, 3); ctx.fill();
    const [tx, ty] = toPx(...chain[chain.length - 1]);
    ctx.fillStyle = "#0ea5e9";
    ctx.beginPath(); ctx.arc(tx, ty, 4, 0, 2 * Math.PI); ctx.fill();
  }
  if (preview) drawPreview();
  caption(`side view · the arm's plane at base ${(b / RAD).toFixed(1)}°`);
}

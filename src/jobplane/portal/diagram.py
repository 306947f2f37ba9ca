"""The compiled workflow as an SVG drawn from the job's ASL, so the job page shows exactly what
Step Functions runs (no client-side diagram library, nothing fetched from the internet).

Layout: states in layers by their longest distance from StartAt along forward edges; edges that go
back (retry loops) are drawn dashed. Parallel branches are drawn as a note on their state.
"""

from __future__ import annotations

from html import escape

from jobplane.contract.types import JsonObject

BOX_W, BOX_H, GAP_X, GAP_Y = 190, 34, 24, 30
COLORS = {"Task": "#e8f0fe", "Choice": "#fff4e5", "Wait": "#f3f3f3", "Fail": "#fde8e8", "Succeed": "#e6f4ea",
          "Parallel": "#ede7f6", "Pass": "#f3f3f3"}


def edges_of(state: JsonObject) -> list[str]:
    out = []
    if state.get("Next"):
        out.append(state["Next"])
    out += [c["Next"] for c in state.get("Choices", []) if "Next" in c]
    if state.get("Default"):
        out.append(state["Default"])
    out += [c["Next"] for c in state.get("Catch", [])]
    return list(dict.fromkeys(out))


def layers(definition: JsonObject) -> dict[str, int]:
    states = definition["States"]
    order = list(states)
    index = {name: i for i, name in enumerate(order)}
    depth = {definition["StartAt"]: 0}
    # Longest path over edges that go forward in definition order (the compiler writes states in
    # execution order, so backward edges are the loops).
    for name in order:
        if name not in depth:
            continue
        for nxt in edges_of(states[name]):
            if nxt in index and index[nxt] > index[name]:
                depth[nxt] = max(depth.get(nxt, 0), depth[name] + 1)
    for name in order:  # unreachable from the start (should not happen): put them last
        depth.setdefault(name, max(depth.values(), default=0) + 1)
    return depth


def svg(definition: JsonObject) -> str:
    states = definition["States"]
    depth = layers(definition)
    rows: dict[int, list[str]] = {}
    for name in states:
        rows.setdefault(depth[name], []).append(name)
    width = max(len(r) for r in rows.values()) * (BOX_W + GAP_X) + GAP_X
    height = (max(rows) + 1) * (BOX_H + GAP_Y) + GAP_Y
    pos = {}
    for d, names in rows.items():
        offset = (width - len(names) * (BOX_W + GAP_X) + GAP_X) / 2
        for i, name in enumerate(names):
            pos[name] = (offset + i * (BOX_W + GAP_X), GAP_Y + d * (BOX_H + GAP_Y))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="workflow" width="{width:.0f}" height="{height:.0f}" '
             f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="state machine diagram">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
             'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#777"/></marker></defs>']
    for name, state in states.items():
        x1, y1 = pos[name]
        for nxt in edges_of(state):
            if nxt not in pos:
                continue
            x2, y2 = pos[nxt]
            back = depth[nxt] <= depth[name]
            dash = ' stroke-dasharray="4 3"' if back else ""
            parts.append(f'<line x1="{x1 + BOX_W / 2:.0f}" y1="{y1 + BOX_H:.0f}" x2="{x2 + BOX_W / 2:.0f}" '
                         f'y2="{y2:.0f}" stroke="#999"{dash} marker-end="url(#arrow)"/>')
    for name, state in states.items():
        x, y = pos[name]
        kind = state["Type"]
        label = name if len(name) <= 28 else name[:26] + "…"
        extra = f" ({len(state.get('Branches', []))} branches)" if kind == "Parallel" else ""
        parts.append(f'<g class="state state-{kind.lower()}" data-state="{escape(name)}"><title>{escape(name)} — {kind}{extra}</title>'
                     f'<rect x="{x:.0f}" y="{y:.0f}" width="{BOX_W}" height="{BOX_H}" rx="6" '
                     f'fill="{COLORS.get(kind, "#fff")}" stroke="#888"/>'
                     f'<text x="{x + BOX_W / 2:.0f}" y="{y + BOX_H / 2 + 4:.0f}" text-anchor="middle" '
                     f'font-size="11" font-family="sans-serif">{escape(label)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)

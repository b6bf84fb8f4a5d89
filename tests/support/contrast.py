"""How a browser test measures contrast: every visible text and control outline below WCAG AA, as rendered."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

# Every visible text element and control outline, with the colours it is rendered in and on.
MEASURE = """() => {
  const parse = (text) => {
    let m = text.match(/rgba?\\(([^)]+)\\)/);
    if (m) { const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
             return [p[0] / 255, p[1] / 255, p[2] / 255, p.length > 3 ? p[3] : 1]; }
    m = text.match(/color\\(srgb ([^)]+)\\)/);
    if (m) { const p = m[1].split(/[ \\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; }
    return [0, 0, 0, 0];
  };
  const over = (top, under) => { const a = top[3];
    return [top[0] * a + under[0] * (1 - a), top[1] * a + under[1] * (1 - a), top[2] * a + under[2] * (1 - a), 1]; };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let out = [1, 1, 1, 1];
    for (let i = layers.length - 1; i >= 0; i--) out = over(layers[i], out);
    return out;
  };
  const opacity = (el) => { let o = 1;
    for (let e = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity); return o; };
  const lum = (c) => { const f = (v) => v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const visible = (el) => { const s = getComputedStyle(el);
    return el.getClientRects().length > 0 && s.visibility !== 'hidden' && s.display !== 'none' && opacity(el) > 0; };
  const modal = document.querySelector('dialog:modal');
  const root = modal || document.body;
  const found = [];
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
    + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
  for (const el of root.querySelectorAll('*')) {
    if (el.closest('svg, script, style, template, [hidden]') || !visible(el)) continue;
    const texts = Array.from(el.childNodes).filter((n) => n.nodeType === 3 && n.textContent.trim());
    const control = el.matches('input:not([type=hidden]):not([type=checkbox]), select, button, .button, textarea');
    const bg = background(el);
    if (texts.length || (control && (el.value || el.textContent.trim()))) {
      const s = getComputedStyle(el);
      const fg = parse(s.color);
      const shown = over([fg[0], fg[1], fg[2], fg[3] * opacity(el)], bg);
      const size = parseFloat(s.fontSize), weight = Number(s.fontWeight) || 400;
      const large = size >= 24 || (size >= 18.66 && weight >= 700);
      const r = ratio(shown, bg);
      if (r < (large ? 3 : 4.5)) {
        found.push({kind: 'text', el: name(el), text: (el.textContent || el.value).trim().slice(0, 60), ratio: r.toFixed(2)});
      }
    }
    if (control || el.matches('input[type=checkbox]')) {
      const s = getComputedStyle(el);
      if (parseFloat(s.borderTopWidth) > 0 && s.borderTopStyle !== 'none') {
        const line = over(parse(s.borderTopColor), el.parentElement ? background(el.parentElement) : bg);
        const outside = el.parentElement ? background(el.parentElement) : bg;
        const r = Math.max(ratio(line, outside), ratio(line, bg));
        if (r < 3) {
          found.push({kind: 'outline', el: name(el), text: (el.textContent || el.value || '').trim().slice(0, 40),
                      ratio: r.toFixed(2)});
        }
      }
    }
  }
  return found;
}"""


def below_aa(page: Page) -> list[dict[str, Any]]:
    page.mouse.move(0, 0)
    found: list[dict[str, Any]] = page.evaluate(MEASURE)
    for item in found:
        print("BELOW AA", page.url.split("/", 3)[-1], item)
    return found

/** A small SVG line chart (log-scale y, categorical x, min–max whiskers), written without any library. */
import type { Spread } from "./stats";

export interface Series {
  name: string;
  color: string;
  dashed?: boolean;
  /** One value per x category; null where the series has no point. */
  values: Array<Spread | null>;
}

export interface Panel {
  title: string;
  xLabel: string;
  categories: string[];
  series: Series[];
}

const W = 480;
const H = 400;
const M = { left: 64, right: 16, top: 40, bottom: 150 };

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

function fmtTick(v: number): string {
  return v >= 1000 ? `${v / 1000}k` : String(v);
}

function panelSvg(panel: Panel, offsetX: number): string {
  const all = panel.series.flatMap((s) => s.values.filter((v): v is Spread => v !== null));
  const lo = Math.min(...all.map((v) => v.min));
  const hi = Math.max(...all.map((v) => v.max));
  const yMin = 10 ** Math.floor(Math.log10(Math.max(lo, 1)));
  const yMax = 10 ** Math.ceil(Math.log10(Math.max(hi, 10)));
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const x = (i: number) => M.left + (plotW * (i + 0.5)) / panel.categories.length;
  const y = (v: number) =>
    M.top + plotH - (plotH * (Math.log10(v) - Math.log10(yMin))) / (Math.log10(yMax) - Math.log10(yMin));
  const out: string[] = [`<g transform="translate(${offsetX},0)">`];
  out.push(
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">${esc(panel.title)}</text>`,
  );
  // Grid and y ticks: 1, 2, 5 per decade.
  for (let decade = yMin; decade < yMax * 1.0001; decade *= 10) {
    for (const m of [1, 2, 5]) {
      const v = decade * m;
      if (v > yMax * 1.0001) break;
      const yy = y(v).toFixed(1);
      out.push(
        `<line x1="${M.left}" x2="${W - M.right}" y1="${yy}" y2="${yy}" stroke="#ddd" stroke-width="${m === 1 ? 1 : 0.5}"/>`,
      );
      out.push(`<text x="${M.left - 6}" y="${yy}" dy="4" text-anchor="end" font-size="11">${fmtTick(v)}</text>`);
    }
  }
  out.push(`<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${M.top + plotH}" stroke="#333"/>`);
  out.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${M.top + plotH}" y2="${M.top + plotH}" stroke="#333"/>`);
  panel.categories.forEach((c, i) => {
    out.push(
      `<text x="${x(i).toFixed(1)}" y="${M.top + plotH + 16}" text-anchor="middle" font-size="12">${esc(c)}</text>`,
    );
  });
  out.push(
    `<text x="${M.left + plotW / 2}" y="${M.top + plotH + 34}" text-anchor="middle" font-size="12">${esc(panel.xLabel)}</text>`,
  );
  out.push(
    `<text transform="translate(16,${M.top + plotH / 2}) rotate(-90)" text-anchor="middle" font-size="12">tasks/s (log scale)</text>`,
  );
  for (const s of panel.series) {
    const pts = s.values.map((v, i) => (v ? `${x(i).toFixed(1)},${y(v.median).toFixed(1)}` : null));
    let path = "";
    for (const p of pts) if (p) path += `${path ? "L" : "M"}${p} `;
    out.push(
      `<path d="${path.trim()}" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ""}/>`,
    );
    s.values.forEach((v, i) => {
      if (!v) return;
      const xx = x(i).toFixed(1);
      out.push(
        `<line x1="${xx}" x2="${xx}" y1="${y(v.min).toFixed(1)}" y2="${y(v.max).toFixed(1)}" stroke="${s.color}"/>`,
      );
      out.push(`<circle cx="${xx}" cy="${y(v.median).toFixed(1)}" r="3.5" fill="${s.color}"/>`);
    });
  }
  // Legend below the axis label.
  panel.series.forEach((s, i) => {
    const ly = M.top + plotH + 56 + i * 17;
    out.push(
      `<line x1="${M.left}" x2="${M.left + 26}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ""}/>`,
    );
    out.push(`<text x="${M.left + 32}" y="${ly + 4}" font-size="11">${esc(s.name)}</text>`);
  });
  out.push("</g>");
  return out.join("\n");
}

/** Panels side by side in one SVG document. */
export function chartSvg(panels: Panel[], caption: string): string {
  const width = W * panels.length;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H + 20}" viewBox="0 0 ${width} ${H + 20}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...panels.map((p, i) => panelSvg(p, i * W)),
    `<text x="${width / 2}" y="${H + 12}" text-anchor="middle" font-size="11" fill="#555">${esc(caption)}</text>`,
    "</svg>",
    "",
  ].join("\n");
}

// Line charts as SVG, written by the bench itself (no plotting dependency): one panel per attack family,
// detection rate (0..1) against attack strength, one line per algorithm.
export interface Panel {
  readonly title: string;
  readonly x: string;
  readonly series: ReadonlyArray<{ readonly name: string; readonly points: ReadonlyArray<readonly [number, number]> }>;
}

const COLOURS = ['#d62728', '#1f77b4', '#2ca02c', '#9467bd'];
const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');

export function lineChartsSvg(panels: ReadonlyArray<Panel>): string {
  const pw = 300,
    ph = 210,
    cols = 3,
    m = { l: 42, r: 12, t: 26, b: 36 };
  const rows = Math.ceil(panels.length / cols);
  const width = cols * pw,
    height = rows * ph + 30;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
  ];
  panels.forEach((panel, index) => {
    const ox = (index % cols) * pw,
      oy = Math.floor(index / cols) * ph;
    const xs = panel.series.flatMap((s) => s.points.map(([x]) => x));
    const x0 = Math.min(...xs),
      x1 = Math.max(...xs);
    const sx = (x: number) => ox + m.l + ((x - x0) / (x1 - x0 || 1)) * (pw - m.l - m.r);
    const sy = (y: number) => oy + m.t + (1 - y) * (ph - m.t - m.b);
    parts.push(
      `<text x="${ox + pw / 2}" y="${oy + 16}" text-anchor="middle" font-weight="bold">${escape(panel.title)}</text>`,
    );
    parts.push(
      `<line x1="${sx(x0)}" y1="${sy(0)}" x2="${sx(x1)}" y2="${sy(0)}" stroke="#444"/><line x1="${sx(x0)}" y1="${sy(0)}" x2="${sx(x0)}" y2="${sy(1)}" stroke="#444"/>`,
    );
    for (const y of [0, 0.5, 1])
      parts.push(
        `<text x="${sx(x0) - 4}" y="${sy(y) + 4}" text-anchor="end">${y}</text><line x1="${sx(x0)}" y1="${sy(y)}" x2="${sx(x1)}" y2="${sy(y)}" stroke="#ddd"/>`,
      );
    for (const x of [...new Set(xs)])
      parts.push(`<text x="${sx(x)}" y="${sy(0) + 14}" text-anchor="middle">${x}</text>`);
    parts.push(`<text x="${ox + pw / 2}" y="${sy(0) + 28}" text-anchor="middle">${escape(panel.x)}</text>`);
    panel.series.forEach((s, k) => {
      const path = [...s.points]
        .sort((a, b) => a[0] - b[0])
        .map(([x, y], i) => `${i ? 'L' : 'M'}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`)
        .join(' ');
      // Later series dashed, so a line hidden under another where both read 1 still shows.
      parts.push(
        `<path d="${path}" fill="none" stroke="${COLOURS[k % COLOURS.length]}" stroke-width="2"${k > 0 ? ' stroke-dasharray="6 4"' : ''}/>`,
      );
      for (const [x, y] of s.points)
        parts.push(
          `<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="2.5" fill="${COLOURS[k % COLOURS.length]}"/>`,
        );
    });
  });
  const names = panels[0]?.series.map((s) => s.name) ?? [];
  names.forEach((name, k) =>
    parts.push(
      `<rect x="${10 + k * 180}" y="${height - 20}" width="12" height="12" fill="${COLOURS[k % COLOURS.length]}"/><text x="${26 + k * 180}" y="${height - 10}">${escape(name)} (detection rate)</text>`,
    ),
  );
  parts.push('</svg>');
  return parts.join('\n');
}

#!/usr/bin/env node
// tests/node/png-stats.mjs - is a screenshot blank? Decodes an 8-bit RGB or RGBA
// PNG (what headless Chromium writes) with node's zlib, and prints
// "WIDTH HEIGHT COLOURS PERMILLE": its size, how many distinct colours it holds
// and how many pixels in a thousand are not white.
// Usage: node png-stats.mjs FILE.png
import fs from "node:fs";
import zlib from "node:zlib";

const b = fs.readFileSync(process.argv[2]);
if (b.toString("latin1", 1, 4) !== "PNG") throw new Error("not a PNG");
let p = 8, w = 0, h = 0, depth = 0, ct = 0, interlace = 0;
const idat = [];
while (p < b.length) {
	const len = b.readUInt32BE(p), type = b.toString("ascii", p + 4, p + 8), d = b.subarray(p + 8, p + 8 + len);
	if (type === "IHDR") [w, h, depth, ct, interlace] = [d.readUInt32BE(0), d.readUInt32BE(4), d[8], d[9], d[12]];
	if (type === "IDAT") idat.push(d);
	p += 12 + len;
}
if (depth !== 8 || (ct !== 2 && ct !== 6) || interlace) throw new Error(`unsupported PNG: depth ${depth}, colour type ${ct}`);
const bpp = ct === 6 ? 4 : 3, stride = w * bpp, raw = zlib.inflateSync(Buffer.concat(idat));
let prev = Buffer.alloc(stride), colours = new Set(), dark = 0;
for (let y = 0; y < h; y++) {
	const f = raw[y * (stride + 1)], line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)), cur = Buffer.alloc(stride);
	for (let i = 0; i < stride; i++) {
		const a = i >= bpp ? cur[i - bpp] : 0, up = prev[i], c = i >= bpp ? prev[i - bpp] : 0;
		let v = line[i];
		if (f === 1) v += a;
		else if (f === 2) v += up;
		else if (f === 3) v += (a + up) >> 1;
		else if (f === 4) {
			const q = a + up - c, pa = Math.abs(q - a), pb = Math.abs(q - up), pc = Math.abs(q - c);
			v += pa <= pb && pa <= pc ? a : pb <= pc ? up : c;
		}
		cur[i] = v & 255;
	}
	for (let x = 0; x < w; x++) {
		const r = cur[x * bpp], g = cur[x * bpp + 1], bl = cur[x * bpp + 2];
		if (colours.size < 100000) colours.add((r << 16) | (g << 8) | bl);
		if (r < 250 || g < 250 || bl < 250) dark++;
	}
	prev = cur;
}
console.log(w, h, colours.size, Math.floor((dark * 1000) / (w * h)));

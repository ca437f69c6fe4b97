// scripts/copy-assets.js — copies each node's icon (SVG/PNG) and codex
// file beside its compiled code in dist/ (what n8n-nodes-starter's gulp
// task does, without gulp).
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..');
let copied = 0;
function walk(dir) {
	for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
		const rel = path.join(dir, entry.name);
		if (entry.isDirectory()) walk(rel);
		else if (/\.(svg|png)$/.test(entry.name) || /\.node\.json$/.test(entry.name)) {
			fs.mkdirSync(path.join(root, 'dist', dir), { recursive: true });
			fs.copyFileSync(path.join(root, rel), path.join(root, 'dist', rel));
			copied++;
		}
	}
}
walk('nodes');
if (copied === 0) {
	console.error('copy-assets: no icon found under nodes/');
	process.exit(1);
}

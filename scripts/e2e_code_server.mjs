// Drives a real VS Code (code-server) in headless Chromium: opens a workspace
// with one narrow package, adds the repository root by rewriting the
// .code-workspace file, waits for Root Guard's status bar warning and saves a
// screenshot. Started by scripts/e2e_code_server.sh, which sets everything up.
//
//   node e2e_code_server.mjs URL WORKSPACE_FILE ROOT_FOLDER SCREENSHOT
//
// Needs NODE_PATH to hold playwright-core and CHROMIUM to name the browser.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

const [url, workspaceFile, rootFolder, screenshot] = process.argv.slice(2);
if (!screenshot || !process.env.CHROMIUM) {
  console.error('usage: CHROMIUM=/path/to/chromium node e2e_code_server.mjs URL WORKSPACE_FILE ROOT_FOLDER SCREENSHOT');
  process.exit(2);
}
const ITEM = '#workbench\\.parts\\.statusbar .statusbar-item[id$="rootguard.status"]';
const log = (message) => console.log(`[e2e] ${message}`);

async function statusText(page) {
  const item = page.locator(ITEM);
  return (await item.count()) > 0 ? (await item.first().innerText()).trim() : '';
}

async function waitForStatus(page, what, predicate, timeoutMs) {
  const started = Date.now();
  let last = '';
  while (Date.now() - started < timeoutMs) {
    last = await statusText(page);
    if (predicate(last)) {
      log(`${what}: "${last}"`);
      return last;
    }
    await page.waitForTimeout(500);
  }
  throw new Error(`timed out waiting for ${what}; status bar item text: "${last}"`);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  page.on('console', (m) => {
    if (m.type() === 'error' && /rootguard|Root Guard/i.test(m.text())) {
      log(`browser console: ${m.text()}`);
    }
  });
  log(`opening ${url}`);
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('#workbench\\.parts\\.statusbar', { timeout: 120_000 });
  const narrow = await waitForStatus(page, 'narrow status', (t) => /\broots?\b/.test(t), 120_000);
  if (/×|secrets/.test(narrow)) {
    throw new Error(`the narrow workspace already shows a widening: "${narrow}"`);
  }

  log(`adding ${rootFolder} to the workspace file`);
  const workspace = JSON.parse(readFileSync(workspaceFile, 'utf8'));
  workspace.folders.push({ path: rootFolder });
  writeFileSync(workspaceFile, JSON.stringify(workspace, null, 2));

  const widened = await waitForStatus(page, 'widening warning', (t) => /secrets file|×/.test(t), 180_000);
  const background = await page.locator(ITEM).first().evaluate((el) => getComputedStyle(el).backgroundColor);
  log(`status bar item background: ${background}`);

  // Hover to show the tooltip, then capture the bottom-left of the window.
  await page.locator(ITEM).first().hover();
  await page.waitForTimeout(1500);
  const hover = page.locator('.monaco-hover, .workbench-hover').first();
  const viewport = page.viewportSize();
  const itemBox = await page.locator(ITEM).first().boundingBox();
  let top = viewport.height - 260;
  let right = 900;
  if (await hover.isVisible().catch(() => false)) {
    const box = await hover.boundingBox();
    if (box) {
      top = Math.max(0, Math.floor(box.y) - 12);
      right = Math.ceil(Math.max(box.x + box.width, itemBox ? itemBox.x + itemBox.width : 0)) + 16;
    }
  } else {
    log('the tooltip did not appear; the screenshot shows the status bar only');
  }
  mkdirSync(dirname(screenshot), { recursive: true });
  await page.screenshot({ path: screenshot, clip: { x: 0, y: top, width: Math.min(right, viewport.width), height: viewport.height - top } });
  log(`saved ${screenshot} (${widened})`);

  // A click opens the widening report.
  await page.mouse.move(640, 200);
  await page.locator(ITEM).first().click();
  const tab = page.locator('.tabs-container .tab', { hasText: 'Widening Report' });
  await tab.first().waitFor({ timeout: 30_000 });
  log('clicking the status bar item opened the widening report');
  if (process.env.REPORT_SCREENSHOT) {
    await page.waitForTimeout(2000);
    await page.screenshot({ path: process.env.REPORT_SCREENSHOT });
    log(`saved ${process.env.REPORT_SCREENSHOT}`);
  }
} finally {
  await browser.close();
}

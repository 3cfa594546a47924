// Drives a real VS Code (code-server) in headless Chromium the way a person
// widens an agent's boundary, and checks what Root Guard shows:
//   1. opens one package as a single-folder window (?folder=),
//   2. F1 → "Workspaces: Add Folder to Workspace…" → types the repository root
//      into code-server's simple file dialog → "Add"; the window reloads into
//      an untitled workspace with both folders and the server starts afresh,
//   3. asserts the status bar warning (text and warning background), Root
//      Guard's notification with "Show report" and "Acknowledge", saves the
//      screenshot, and opens the report from the notification,
//   4. reopens the saved wide workspace (?workspace=) in a new window and
//      asserts the warning and the notification again,
//   5. acknowledges from the notification and asserts the warning clears.
// Every wait is on UI state; no fixed sleeps. Started by scripts/e2e_code_server.sh.
//
//   node e2e_code_server.mjs BASE_URL NARROW_FOLDER ROOT_FOLDER SCREENSHOT
//
// Needs NODE_PATH to hold playwright-core and CHROMIUM to name the browser.
import { createRequire } from 'node:module';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

const [baseUrl, narrowFolder, rootFolder, screenshot] = process.argv.slice(2);
if (!screenshot || !process.env.CHROMIUM) {
  console.error('usage: CHROMIUM=/path/to/chromium node e2e_code_server.mjs BASE_URL NARROW_FOLDER ROOT_FOLDER SCREENSHOT');
  process.exit(2);
}
const ITEM = '#workbench\\.parts\\.statusbar .statusbar-item[id$="rootguard.status"]';
const WIDENED = /secrets file|×|widened/;
const T0 = Date.now();
const log = (message) => console.log(`[e2e ${((Date.now() - T0) / 1000).toFixed(1)}s] ${message}`);

async function statusText(page) {
  const item = page.locator(ITEM);
  return (await item.count()) > 0 ? (await item.first().innerText()).trim() : '';
}

/** Waits until the Root Guard status bar item's text satisfies `predicate` (polled by Playwright). */
async function waitForStatus(page, what, predicate, timeout) {
  try {
    await page.waitForFunction(
      ([selector, source, flags]) => {
        const el = document.querySelector(selector);
        return !!el && new RegExp(source, flags).test(el.textContent ?? '');
      },
      [ITEM, predicate.source, predicate.flags],
      { timeout, polling: 250 },
    );
  } catch (error) {
    await page.screenshot({ path: `${screenshot}.timeout.png` }).catch(() => undefined);
    const folders = await page.locator('.explorer-folders-view .monaco-list-row').allInnerTexts().catch(() => []);
    throw new Error(`timed out waiting for ${what}; the status bar item says "${await statusText(page)}"; `
      + `explorer rows ${JSON.stringify(folders.slice(0, 5))}; screenshot ${screenshot}.timeout.png`);
  }
  const text = await statusText(page);
  log(`${what}: "${text}"`);
  return text;
}

/** The status item's background must be the theme's warning background, not the plain bar. */
async function assertWarningBackground(page) {
  const item = page.locator(ITEM).first();
  const [background, bar] = await Promise.all([
    item.evaluate((el) => getComputedStyle(el).backgroundColor),
    page.locator('#workbench\\.parts\\.statusbar').evaluate((el) => getComputedStyle(el).backgroundColor),
  ]);
  const transparent = /rgba\(0, 0, 0, 0\)|transparent/.test(background);
  if (transparent || background === bar) {
    throw new Error(`the status bar item has no warning background (item ${background}, bar ${bar})`);
  }
  log(`warning background: ${background} (bar ${bar})`);
}

/** Root Guard's widening notification with its two buttons; returns the toast. */
async function widenNotification(page, timeout) {
  const toast = page.locator('.notification-toast', { hasText: /Root Guard: .*widened/ }).first();
  await toast.waitFor({ state: 'visible', timeout });
  const message = (await toast.locator('.notification-list-item-message').innerText()).trim();
  const buttons = (await toast.locator('.notification-list-item-buttons-container .monaco-button').allInnerTexts()).map((t) => t.trim());
  for (const wanted of ['Show report', 'Acknowledge']) {
    if (!buttons.includes(wanted)) {
      throw new Error(`the notification "${message}" has buttons ${JSON.stringify(buttons)}, not "${wanted}"`);
    }
  }
  const all = await page.locator('.notification-toast', { hasText: /widened/ }).count();
  if (all !== 1) {
    throw new Error(`${all} widening notifications are shown; one is expected`);
  }
  log(`notification: "${message}" [${buttons.join(' | ')}]`);
  return toast;
}

async function openWorkbench(browser, url) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  page.on('console', (m) => {
    if (m.type() === 'error' && /rootguard|Root Guard/i.test(m.text())) {
      log(`browser console: ${m.text()}`);
    }
  });
  log(`opening ${url}`);
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('#workbench\\.parts\\.statusbar', { timeout: 120_000 });
  return page;
}

/** F1 → "Workspaces: Add Folder to Workspace…" → the simple file dialog → `folder` → Add. */
async function addFolderThroughTheUi(page, folder) {
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await page.locator('.monaco-workbench').click({ position: { x: 640, y: 300 } });
  await page.keyboard.press('F1');
  await input.waitFor({ state: 'visible', timeout: 30_000 });
  await input.fill('>Workspaces: Add Folder to Workspace');
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Add Folder to Workspace' }).first();
  await row.waitFor({ state: 'visible', timeout: 30_000 });
  await row.click();
  // code-server's simple file dialog: a quick input holding a path, with an "Add" button
  const add = page.locator('.quick-input-widget .monaco-button', { hasText: /^Add$/ }).first();
  await add.waitFor({ state: 'visible', timeout: 30_000 });
  const typed = folder.endsWith('/') ? folder : `${folder}/`;
  for (let attempt = 1; ; attempt += 1) {
    await input.click();
    await input.press('Control+A');
    await input.pressSequentially(typed, { delay: 5 });
    try {
      await page.waitForFunction(
        ([selector, wanted]) => document.querySelector(selector)?.value?.replace(/\/$/, '') === wanted,
        ['.quick-input-widget .quick-input-box input', folder.replace(/\/$/, '')],
        { timeout: 10_000 },
      );
      break;
    } catch (error) {
      const value = await input.inputValue().catch(() => '?');
      if (attempt >= 3) {
        throw new Error(`the file dialog holds "${value}" after typing "${typed}" three times`);
      }
      log(`the file dialog holds "${value}" after typing "${typed}"; typing again`);
    }
  }
  // the dialog has caught up with the typed path once it lists the folder (in its
  // parent) or the folder's own directories (inside it); either way "Add" takes the path
  const names = [basename(folder.replace(/\/$/, '')),
    ...readdirSync(folder, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name)];
  const escaped = names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: new RegExp(`(${escaped})`) }).first()
    .waitFor({ state: 'visible', timeout: 20_000 })
    .catch(async (error) => {
      await page.screenshot({ path: `${screenshot}.dialog.png` });
      log(`dialog rows: ${JSON.stringify(await page.locator('.quick-input-list .monaco-list-row').allInnerTexts())}`);
      throw error;
    });
  log(`add folder dialog: ${folder}`);
  // The dialog resolves the typed path asynchronously (its progress bar runs while it
  // does); a click while it is busy can be lost, and a second click during the reload
  // that the first one started opens the new window without folders. So: click only
  // when the dialog is idle, then wait for the reload; click again only if the dialog
  // is still open and idle a long while later.
  // "busy" shows its progress bar only after 800 ms, so idle also means: the dialog's
  // DOM has been quiet for a second (no list update in flight).
  const idle = async () => {
    await page.waitForFunction(
      () => !document.querySelector('.quick-input-widget .monaco-progress-container.active'),
      undefined, { timeout: 30_000, polling: 100 },
    ).catch(() => log('the dialog still shows progress; clicking anyway'));
    await page.evaluate(() => new Promise((resolve) => {
      const widget = document.querySelector('.quick-input-widget') ?? document.body;
      let timer = setTimeout(done, 1000);
      const deadline = setTimeout(done, 15_000);
      const observer = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(done, 1000); });
      observer.observe(widget, { subtree: true, childList: true, attributes: true, characterData: true });
      function done() { observer.disconnect(); clearTimeout(timer); clearTimeout(deadline); resolve(undefined); }
    }));
  };
  for (let attempt = 1; ; attempt += 1) {
    await idle();
    await add.click({ timeout: 10_000 }).catch((error) => log(`the "Add" click did not happen: ${String(error.message).split('\n')[0]}`));
    try {
      await page.waitForURL(/[?&]workspace=/, { timeout: 60_000, waitUntil: 'commit' });
      return;
    } catch (error) {
      if (!(await add.isVisible().catch(() => false))) {
        // the dialog closed: the click took; the reload is only slow
        await page.waitForURL(/[?&]workspace=/, { timeout: 120_000, waitUntil: 'commit' });
        return;
      }
      if (attempt >= 3) {
        await page.screenshot({ path: `${screenshot}.add-folder-failed.png` });
        throw new Error(`"Add" did not reload the window into a workspace (screenshot ${screenshot}.add-folder-failed.png)`);
      }
      log(`"Add" click ${attempt} did not reload the window; again`);
    }
  }
}

async function saveScreenshot(page, file) {
  await page.locator(ITEM).first().hover();
  const hover = page.locator('.monaco-hover, .workbench-hover').first();
  await hover.waitFor({ state: 'visible', timeout: 10_000 }).catch(() => log('the tooltip did not appear'));
  const viewport = page.viewportSize();
  let top = viewport.height - 260;
  for (const locator of [hover, page.locator('.notification-toast').first()]) {
    const box = await locator.boundingBox().catch(() => null);
    if (box) {
      top = Math.min(top, Math.max(0, Math.floor(box.y) - 12));
    }
  }
  mkdirSync(dirname(file), { recursive: true });
  await page.screenshot({ path: file, clip: { x: 0, y: top, width: viewport.width, height: viewport.height - top } });
  log(`saved ${file}`);
  await page.mouse.move(640, 200);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  // 1. a single-folder window on the narrow package
  const page = await openWorkbench(browser, `${baseUrl}/?folder=${encodeURIComponent(narrowFolder)}`);
  const narrow = await waitForStatus(page, 'narrow status', /\broots?\b/, 120_000);
  if (WIDENED.test(narrow)) {
    throw new Error(`the single-folder window already shows a widening: "${narrow}"`);
  }

  // 2. widen the way a person does; the window reloads into an untitled workspace
  await addFolderThroughTheUi(page, rootFolder);
  const workspaceUrl = page.url();
  log(`reloaded into ${decodeURIComponent(workspaceUrl)}`);
  const workspaceFile = new URL(workspaceUrl).searchParams.get('workspace');
  const folders = JSON.parse(readFileSync(workspaceFile, 'utf8')).folders.map((f) => decodeURIComponent(new URL(f.uri ?? `file://${f.path}`).pathname));
  if (!folders.includes(rootFolder.replace(/\/$/, '')) || !folders.includes(narrowFolder)) {
    throw new Error(`the workspace holds ${JSON.stringify(folders)}, not the package and ${rootFolder}`);
  }
  await page.waitForSelector('#workbench\\.parts\\.statusbar', { timeout: 120_000 });

  // 3. the warning, the notification and the report
  try {
    await waitForStatus(page, 'widening warning after Add Folder', WIDENED, 90_000);
  } catch (error) {
    // code-server sometimes opens the new untitled workspace before its folders are in
    // it: the window says "NO FOLDER OPENED" although the file holds both (seen in about
    // one run in eight; Root Guard rightly says "no folder"). A person reloads the page.
    const empty = await page.locator('.explorer-folders-view .monaco-list-row').count() === 0;
    if (!empty || !/no folder/.test(await statusText(page))) {
      throw error;
    }
    log('code-server opened the workspace without its folders; reloading the page as a person would');
    await page.reload({ waitUntil: 'domcontentloaded' });
    await page.waitForSelector('#workbench\\.parts\\.statusbar', { timeout: 120_000 });
    await waitForStatus(page, 'widening warning after Add Folder (reloaded)', WIDENED, 180_000);
  }
  await assertWarningBackground(page);
  const toast = await widenNotification(page, 60_000);
  await saveScreenshot(page, screenshot);
  await toast.hover();
  await toast.locator('.monaco-button', { hasText: 'Show report' }).click();
  await page.locator('.tabs-container .tab', { hasText: 'Widening Report' }).first().waitFor({ timeout: 30_000 });
  log('"Show report" opened the widening report');
  if (process.env.REPORT_SCREENSHOT) {
    await page.screenshot({ path: process.env.REPORT_SCREENSHOT });
    log(`saved ${process.env.REPORT_SCREENSHOT}`);
  }
  await page.close();

  // 4. the saved wide workspace, reopened, warns again
  const again = await openWorkbench(browser, workspaceUrl);
  await waitForStatus(again, 'widening warning in the reopened workspace', WIDENED, 180_000);
  await assertWarningBackground(again);
  const toastAgain = await widenNotification(again, 60_000);

  // 5. Acknowledge reaches the server, which records the union and says so in the status
  //    (a folder inside another folder stays shown as a widening)
  await toastAgain.hover();
  await toastAgain.locator('.monaco-button', { hasText: 'Acknowledge' }).click();
  await again.locator('.notification-toast', { hasText: /boundary is acknowledged/ }).first().waitFor({ state: 'visible', timeout: 30_000 });
  await waitForStatus(again, 'status after Acknowledge', /acknowledged/, 60_000);
  log('passed');
} finally {
  await browser.close();
}

// Real headless Chromium (Debian's) through playwright-core, with everything the page asks for
// recorded: console messages, page errors and network requests.
import { type Browser, chromium, type Page } from "playwright-core";

export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
}

export interface OpenedPage {
  page: Page;
  /** Console messages of type error or warning, and uncaught page errors. */
  problems: string[];
  requests: string[];
}

export async function openFile(browser: Browser, file: string): Promise<OpenedPage> {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const problems: string[] = [];
  const requests: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(`file://${file}`, { waitUntil: "load" });
  return { page, problems, requests };
}
